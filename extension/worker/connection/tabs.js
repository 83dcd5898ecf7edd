// Tab registry: what the daemon should believe about our tabs, and the events that keep it true.
import * as proto from '../../shared/protocol.js';
import { BUILTIN_TOOLS } from '../tools/builtins.js';
import { admitPageTools, withRefused } from '../../shared/page-tools.js';
import { getTab, isWebUrl, sendToPage } from '../frames/page.js';
import { findTab, queryTabs, seen, started } from '../frames/navigations.js';
import { offSite, shownPlace, toolOffer } from '../../shared/policy.js';
import { markAgentTab } from '../state/agent-tabs.js';

const pageTools = new Map(); // tabId -> tools the page registered through WebMCP
const refusedTools = new Map(); // tabId -> names of the page's tools refused for their size
const openRequests = new Map(); // tabId -> requestId of the openTab that created it
let focusedWindowId = chrome.windows.WINDOW_ID_NONE;
let focusedTabId = null;
let emit = () => {};
let focusHook = () => {};

// Tab events are handled one at a time: onCreated may have to wait for an openTab's
// chrome.tabs.create() to resolve (to learn its requestId), and the tabUpdated events
// that follow must not overtake the tabCreated.
let queue = Promise.resolve();
let opening = Promise.resolve();
// Resolves (or fails) once `fn` has had its turn.
function inTurn(fn) {
  const run = queue.then(fn);
  queue = run.catch((e) => console.warn('tab event', e));
  return run;
}
function serial(fn) {
  return (...args) => {
    inTurn(() => fn(...args));
  };
}

// What the daemons see: the tab's tools filtered by the user's site policy (policy.js), and
// what the policy hides with the reason: {tools, hidden}.
export function offerOf(tabId, url) {
  const offer = toolOffer(url, pageToolsOf(tabId), isWebUrl(url) ? BUILTIN_TOOLS : []);
  return withRefused(offer, refusedTools.get(tabId) || []);
}

export const toolsOf = (tabId, url) => offerOf(tabId, url).tools;

// The page's own tools, whether exposed or not (the popup shows both).
export const pageToolsOf = (tabId) => pageTools.get(tabId) || [];

// A tab of a site that is off is told by its origin only (policy.js shownPlace).
function toTab(tab) {
  const url = tab.url || tab.pendingUrl || '';
  const { tools, hidden } = offerOf(tab.id, url);
  const place = shownPlace(url, tab.title || '', { loading: tab.status === 'loading' });
  return { id: tab.id, title: place.title, url: place.url, tools, ...(hidden ? { hidden } : {}), focused: tab.id === focusedTabId };
}

export async function snapshot() {
  const tabs = await queryTabs({});
  return tabs.filter((t) => t.id !== chrome.tabs.TAB_ID_NONE).map(toTab);
}

// What a page registers is admitted by shared/page-tools.js: no built-in's name or one that
// passes for it, nothing too big for the daemon's frames.
async function setPageTools(tabId, tools) {
  const { tools: next, refused } = admitPageTools(tools);
  const prev = pageTools.get(tabId) || [];
  const prevRefused = refusedTools.get(tabId) || [];
  if (JSON.stringify(prev) === JSON.stringify(next) && JSON.stringify(prevRefused) === JSON.stringify(refused)) return;
  if (refused.length) console.warn(`tab ${tabId}: page tools not offered for their size: ${refused.join(', ')}`);
  if (refused.length) refusedTools.set(tabId, refused);
  else refusedTools.delete(tabId);
  if (next.length) pageTools.set(tabId, next);
  else pageTools.delete(tabId);
  const tab = await findTab(tabId);
  if (tab) emit(proto.toolsChanged(tabId, offerOf(tabId, tab.url || tab.pendingUrl)));
}

// Fresh tool list straight from the page (discoverTools, watching, the popup, and after a
// service-worker restart); returns the tab's offer ({tools, hidden}). A change is sent to the
// daemons before this resolves: in turn with the lists pages send themselves, so that one that
// came meanwhile is not still on its way. With `inject: false` a page whose top frame has no
// bridge is not given one (it has told nobody of any tools).
export async function refreshPageTools(tabId, timeoutMs = 2000, { inject = true } = {}) {
  const tab = await getTab(tabId);
  if (isWebUrl(tab.url)) {
    try {
      const tools = await sendToPage(tabId, { op: 'listTools' }, timeoutMs, { inject });
      await inTurn(() => setPageTools(tabId, tools));
    } catch (e) {
      console.debug('listTools', tabId, e.message);
    }
  } else {
    await inTurn(() => setPageTools(tabId, []));
  }
  return offerOf(tabId, tab.url);
}

export async function callPageTool(tabId, name, args) {
  const tab = await getTab(tabId);
  if (!(pageTools.get(tabId) || []).some((t) => t.name === name)) {
    await refreshPageTools(tabId);
  }
  if (!(pageTools.get(tabId) || []).some((t) => t.name === name)) {
    throw new proto.ToolError(proto.Code.TOOL_NOT_FOUND, `tab ${tabId} (${tab.url}) has no tool named ${name}`);
  }
  return sendToPage(tabId, { op: 'callTool', name, args });
}

// --- requests from the daemon --------------------------------------------------------------------

// Tab groups (Chromium): an agent's tabs go into a group named after it, so the user sees which
// tabs it drives. Browsers without chrome.tabGroups (Firefox) leave the tab ungrouped.
export const canGroup = () => typeof chrome.tabGroups?.query === 'function' && typeof chrome.tabs.group === 'function';

// One grouping at a time, so two tabs opened together find one group rather than making two.
let grouping = Promise.resolve();

function groupTitle(group) {
  const title = typeof group?.title === 'string' ? group.title.trim() : '';
  return title ? title.slice(0, 40) : null;
}

// Puts the tab in its window's group of that title, making the group if there is none. A
// failure leaves the tab open and ungrouped: the tab is what was asked for.
function joinGroup(tab, title) {
  const run = grouping.then(async () => {
    const [found] = await chrome.tabGroups.query({ windowId: tab.windowId, title });
    if (found) {
      await chrome.tabs.group({ groupId: found.id, tabIds: [tab.id] });
    } else {
      const groupId = await chrome.tabs.group({ tabIds: [tab.id], createProperties: { windowId: tab.windowId } });
      await chrome.tabGroups.update(groupId, { title });
    }
  });
  grouping = run.catch((e) => console.warn('browser-mcp: could not group tab', tab.id, e.message));
  return grouping;
}

// groupTabs: existing tabs an agent is scoped to join its group. A tab the user already put in a
// group of their own stays there.
export async function groupTabs({ tabIds, group }) {
  const title = canGroup() ? groupTitle(group) : null;
  if (!title || !Array.isArray(tabIds)) return;
  for (const tabId of tabIds) {
    const tab = Number.isInteger(tabId) ? await chrome.tabs.get(tabId).catch(() => null) : null;
    if (tab && tab.groupId === chrome.tabGroups.TAB_GROUP_ID_NONE) await joinGroup(tab, title);
  }
}

export async function openTab({ url, focus, requestId, group }) {
  const target = url || 'about:blank';
  if (!isWebUrl(target) && target !== 'about:blank') {
    throw new proto.ToolError(proto.Code.INVALID_ARGUMENTS, `openTab accepts http(s) URLs or about:blank, not ${target}`);
  }
  const active = focus !== false;
  const title = canGroup() ? groupTitle(group) : null;
  // Remembered before onCreated looks at the tab (it waits for `opening`): Firefox does not say
  // where a new tab is going (navigations.js). Grouped before too, so the daemon's answer
  // (tabCreated) comes once the tab is in its group.
  const created = chrome.tabs.create({ url: target, active }).then(async (tab) => {
    await markAgentTab(tab.id);
    if (target !== 'about:blank') started(tab.id, target);
    if (title) await joinGroup(tab, title);
    return tab;
  });
  opening = Promise.allSettled([opening, created]);
  const tab = await created;
  if (requestId != null) openRequests.set(tab.id, requestId);
  if (active) await chrome.windows.update(tab.windowId, { focused: true }).catch(() => {});
}

// A tab of a site the user turned off is theirs alone: not closed, and the daemon is told why.
export async function closeTab(tabId) {
  const tab = await chrome.tabs.get(tabId).catch(() => null);
  const site = tab && offSite(tab.url || tab.pendingUrl);
  if (site) throw new proto.ToolError(proto.Code.SITE_DISABLED, `tab ${tabId} was not closed: browser-mcp is turned off for ${site} in this browser`);
  try {
    await chrome.tabs.remove(tabId);
  } catch {
    // The daemon believes in a tab we do not have: correct it.
    emit(proto.tabClosed(tabId));
  }
}

// --- browser events ---------------------------------------------------------------------------------

// The tab a call that names none goes to (the daemon's default target).
export const focusedTab = () => focusedTabId;
// One listener (kit-ahead.js) hears of a newly focused tab, and the one focused before (or null).
export const onFocus = (fn) => void (focusHook = fn);

async function focusChanged(tabId) {
  if (tabId === focusedTabId) return;
  const before = focusedTabId;
  focusedTabId = tabId;
  focusHook(tabId, before);
  const tab = await findTab(tabId);
  if (tab) emit(proto.tabFocused(tabId, offerOf(tabId, tab.url || tab.pendingUrl)));
}

const onCreated = serial(async (created) => {
  await opening;
  const requestId = openRequests.get(created.id);
  openRequests.delete(created.id);
  const tab = await findTab(created.id);
  if (tab) emit(proto.tabCreated(toTab(tab), requestId));
});

// A tab's page tools, offered and refused, are gone with its page.
function forget(tabId) {
  pageTools.delete(tabId);
  refusedTools.delete(tabId);
}

const onUpdated = serial(async (tabId, change, tab) => {
  if (change.url && !isWebUrl(change.url)) forget(tabId);
  if (change.url !== undefined || change.title !== undefined || change.status === 'complete') {
    emit(proto.tabUpdated(toTab(seen(tab))));
  }
});

const onRemoved = serial(async (tabId) => {
  forget(tabId);
  openRequests.delete(tabId);
  if (focusedTabId === tabId) focusedTabId = null;
  emit(proto.tabClosed(tabId));
});

// Prerendering and instant pages swap one tab id for another.
const onReplaced = serial(async (addedId, removedId) => {
  forget(removedId);
  emit(proto.tabClosed(removedId));
  const tab = await findTab(addedId);
  if (tab) emit(proto.tabCreated(toTab(tab)));
});

const onActivated = serial(async ({ tabId, windowId }) => {
  if (windowId === focusedWindowId || focusedWindowId === chrome.windows.WINDOW_ID_NONE) await focusChanged(tabId);
});

const onWindowFocus = serial(async (windowId) => {
  if (windowId === chrome.windows.WINDOW_ID_NONE) return; // the browser lost focus: keep the last one
  focusedWindowId = windowId;
  const [tab] = await chrome.tabs.query({ active: true, windowId });
  if (tab) await focusChanged(tab.id);
});

// A new page in the tab: the last one's tools are gone (a page with none says nothing, issue 30).
// The new page is asked once too, in case what it said (a fast page, one restored from the
// back/forward cache) arrived before this; one without a bridge said nothing and is left alone.
const onTopCommitted = serial(async (d) => {
  if (d.frameId !== 0 || d.tabId < 0 || (!pageTools.has(d.tabId) && !refusedTools.has(d.tabId))) return;
  await setPageTools(d.tabId, []);
  setTimeout(() => refreshPageTools(d.tabId, 2000, { inject: false }).catch(() => {}), 300);
});

const onPageMessage = (msg, sender) => {
  if (msg?.type !== 'pageTools' || !sender.tab || sender.frameId !== 0) return;
  serial(setPageTools)(sender.tab.id, msg.tools);
};

// The site policy changed: every tab it covers sends its new list at once.
export const republish = serial(async (affects) => {
  for (const tab of await queryTabs({})) {
    const url = tab.url || tab.pendingUrl;
    if (!isWebUrl(url) || !affects(url)) continue;
    emit(proto.toolsChanged(tab.id, offerOf(tab.id, url)));
    // Then its place: a site turned off keeps its title and path to itself from now on.
    emit(proto.tabUpdated(toTab(tab)));
  }
});

// Listeners must be added synchronously at service-worker start, or the events that wake the
// worker are lost; hence a separate init rather than registering inside async code.
export function initTabs(emitter) {
  emit = emitter;
  chrome.tabs.onCreated.addListener(onCreated);
  chrome.tabs.onUpdated.addListener(onUpdated);
  chrome.tabs.onRemoved.addListener(onRemoved);
  chrome.tabs.onReplaced.addListener(onReplaced);
  chrome.tabs.onActivated.addListener(onActivated);
  chrome.windows.onFocusChanged.addListener(onWindowFocus);
  chrome.runtime.onMessage.addListener(onPageMessage);
  chrome.webNavigation.onCommitted.addListener(onTopCommitted);
}

// State is only in memory, so a restarted worker asks every page again before it reports: those
// that have a bridge (an agent worked there, or a daemon watched as they loaded), since only
// those can have told of any tools; a page no agent needed gets nothing put in.
export async function loadState() {
  const win = await chrome.windows.getLastFocused().catch(() => null);
  if (win) focusedWindowId = win.id;
  const [active] = await chrome.tabs.query(win ? { active: true, windowId: win.id } : { active: true });
  focusedTabId = active ? active.id : null;
  const tabs = await chrome.tabs.query({});
  await Promise.all(tabs.filter((t) => isWebUrl(t.url)).map((t) => refreshPageTools(t.id, 1500, { inject: false })));
}
