// browser_tabs: the browser's own tabs, so that an agent working in one tab can reach the
// others — list, select (bring to the front), open, close. The daemon's tab tools stay; this is
// the same from inside the browser. Tabs of sites the user turned off are listed (the daemon
// lists them too) but cannot be selected or closed from here.
import { Code, ToolError } from '../../shared/protocol.js';
import { isWebUrl } from '../frames/page.js';
import { findTab, queryTabs, started } from '../frames/navigations.js';
import { offSite, shownPlace } from '../../shared/policy.js';

export const ACTIONS = ['list', 'select', 'open', 'close'];

// A tab id as a number, "7", or a daemon tab ref such as "b1:7".
function tabIdOf(args) {
  const v = args.tabId;
  if (Number.isInteger(v)) return v;
  const m = typeof v === 'string' && /^(?:b\d+:)?(\d+)$/.exec(v.trim());
  if (m) return Number(m[1]);
  throw new ToolError(Code.INVALID_ARGUMENTS, '"tabId" is the id of a tab from the list (7, or "b1:7")');
}

async function existing(tabId) {
  const tab = await findTab(tabId);
  if (!tab) throw new ToolError(Code.TAB_NOT_FOUND, `no tab with id ${tabId}`);
  return tab;
}

function refuseOff(tab, what) {
  const site = offSite(tab.url || tab.pendingUrl);
  if (site) throw new ToolError(Code.SITE_DISABLED, `cannot ${what} tab ${tab.id}: browser-mcp is turned off for ${site} in this browser`);
}

// A tab of a site that is off shows its origin only (policy.js shownPlace).
const describe = (t, self) => {
  const real = t.url || t.pendingUrl || '';
  const { url, title } = shownPlace(real, t.title || '', { loading: t.status === 'loading' });
  return {
    id: t.id,
    title,
    url,
    active: t.active,
    windowId: t.windowId,
    ...(t.id === self ? { current: true } : {}),
    ...(offSite(real) ? { siteOff: true } : {}),
  };
};

async function list(self, held) {
  const all = (await queryTabs({})).filter((t) => t.id !== chrome.tabs.TAB_ID_NONE);
  const tabs = all.map((t) => describe(t, self));
  const lines = tabs.map((t) => `${t.id}${t.active ? '*' : ' '} ${t.title || '(untitled)'} — ${t.url}${t.current ? '  ← this tab' : ''}${t.siteOff ? '  (site turned off in browser-mcp)' : ''}`);
  const text = `${tabs.length} tab${tabs.length === 1 ? '' : 's'} in this browser (* = active in its window):\n${lines.join('\n')}`;
  return { content: [{ type: 'text', text }], structuredContent: { tabs, held: held() } };
}

async function select(args) {
  const tab = await existing(tabIdOf(args));
  refuseOff(tab, 'select');
  await chrome.tabs.update(tab.id, { active: true });
  await chrome.windows.update(tab.windowId, { focused: true }).catch(() => {});
  return { content: [{ type: 'text', text: `Selected tab ${tab.id}: ${tab.title || tab.url}` }], structuredContent: { tab: describe({ ...tab, active: true }) } };
}

async function open(args) {
  if (typeof args.url !== 'string' || !args.url) throw new ToolError(Code.INVALID_ARGUMENTS, '"url" is needed to open a tab');
  let url;
  try {
    url = new URL(args.url).href;
  } catch {
    throw new ToolError(Code.INVALID_ARGUMENTS, `not an absolute URL: ${args.url}`);
  }
  if (!isWebUrl(url) && url !== 'about:blank') throw new ToolError(Code.INVALID_ARGUMENTS, 'only http(s) URLs and about:blank can be opened');
  if (args.background !== undefined && typeof args.background !== 'boolean') throw new ToolError(Code.INVALID_ARGUMENTS, '"background" must be true or false');
  const tab = await chrome.tabs.create({ url, active: args.background !== true });
  if (url !== 'about:blank') started(tab.id, url);
  return { content: [{ type: 'text', text: `Opened tab ${tab.id}: ${url}` }], structuredContent: { tab: describe(tab) } };
}

async function close(args) {
  const tab = await existing(tabIdOf(args));
  refuseOff(tab, 'close');
  await chrome.tabs.remove(tab.id);
  return { content: [{ type: 'text', text: `Closed tab ${tab.id}: ${tab.title || tab.url}` }], structuredContent: { closed: tab.id } };
}

// `held` reports what the extension keeps in memory per tab (observe.js), shown with the list.
export function browserTabs(tabId, args, held) {
  const action = args.action ?? 'list';
  switch (action) {
    case 'list':
      return list(tabId, held);
    case 'select':
      return select(args);
    case 'open':
      return open(args);
    case 'close':
      return close(args);
    default:
      throw new ToolError(Code.INVALID_ARGUMENTS, `"action" is one of ${ACTIONS.join(', ')}`);
  }
}
