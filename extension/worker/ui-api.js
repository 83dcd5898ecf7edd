// What the popup and the options page may ask the service worker. Settings are not here: the
// pages read and write chrome.storage themselves (settings.js).
import * as daemons from './connection/daemons.js';
import * as consent from './calls/consent.js';
import * as handoff from './calls/handoff.js';
import * as activity from './calls/activity.js';
import * as pairings from './connection/pairings.js';
import { badgeState } from './state/badge.js';
import { BUILTIN_TOOLS } from './tools/builtins.js';
import { isWebUrl } from './frames/page.js';
import { findTab } from './frames/navigations.js';
import { sitePolicy, siteOf } from '../shared/policy.js';
import { pageToolsOf, refreshPageTools, toolsOf } from './connection/tabs.js';
import { within } from '../shared/within.js';

// A page that loaded while no agent was at work has no bridge, so it told nobody of its tools
// (issue 30): the first time the popup shows its document, it is asked (which puts the bridge
// in, and the bridge reports later changes itself), waiting at most ASK_MS; an answer that
// comes later shows at the popup's next render.
const ASK_MS = 400;
const asked = new Set(); // tabs whose current document was asked
chrome.webNavigation.onCommitted.addListener(({ tabId, frameId }) => frameId === 0 && asked.delete(tabId));
chrome.tabs.onRemoved.addListener((tabId) => asked.delete(tabId));
async function askPageTools(tabId) {
  if (asked.has(tabId)) return;
  asked.add(tabId);
  await within(refreshPageTools(tabId, ASK_MS).catch(() => {}), ASK_MS);
}

async function tabView(tabId) {
  const tab = await findTab(tabId);
  if (!tab) return null;
  if (isWebUrl(tab.url)) await askPageTools(tab.id);
  const url = tab.url || tab.pendingUrl || '';
  const site = siteOf(url);
  const exposed = new Set(toolsOf(tab.id, url).map((t) => t.name));
  const mark = (kind) => (t) => ({ ...t, kind, exposed: exposed.has(t.name) });
  return {
    id: tab.id,
    title: tab.title || '',
    url,
    site,
    policy: site ? sitePolicy(site) : null,
    tools: [...pageToolsOf(tab.id).map(mark('page')), ...(isWebUrl(url) ? BUILTIN_TOOLS : []).map(mark('builtin'))],
  };
}

// Set by background.js, which owns the sockets a pairing is tried on.
let pairHandler = null;
export function setPairHandler(fn) {
  pairHandler = fn;
}

async function answer(msg) {
  switch (msg.type) {
    case 'face:state': {
      const tabId = Number.isInteger(msg.tabId) ? msg.tabId : null;
      return {
        ...daemons.snapshot(),
        pairings: pairings.list().map(({ id, port, pairedAt, lastUsedAt }) => ({ id, port, pairedAt, lastUsedAt })),
        badge: badgeState(),
        tab: tabId == null ? null : await tabView(tabId),
        pending: consent.list(tabId),
        handoffs: handoff.list(tabId),
        calls: activity.recent(tabId, tabId == null ? undefined : 20),
      };
    }
    case 'face:answer':
      // `choice`: one of consent.CHOICES; `allow` (a boolean) is once or deny.
      return { answered: await consent.answer(msg.id, consent.CHOICES.includes(msg.choice) ? msg.choice : msg.allow === true) };
    case 'face:handoff':
      // `choice`: done, cant or extend.
      return { answered: handoff.answer(msg.id, msg.choice) };
    case 'face:pair':
      return pairHandler ? pairHandler(String(msg.code ?? '')) : { paired: false, code: 'ERROR', message: 'not ready yet' };
    case 'face:forgetPairing':
      await pairings.forgetPairing(String(msg.id));
      return { forgotten: true };
    case 'face:clearActivity':
      await activity.clearActivity();
      return { cleared: true };
    default:
      return undefined;
  }
}

// Only our own pages (the popup and options, also when opened in a tab), never content scripts.
chrome.runtime.onMessage.addListener((msg, sender, sendResponse) => {
  if (typeof msg?.type !== 'string' || !msg.type.startsWith('face:') || msg.type === 'face:changed') return false;
  if (sender.id !== chrome.runtime.id || !sender.url?.startsWith(chrome.runtime.getURL(''))) return false;
  answer(msg).then(sendResponse, (e) => sendResponse({ error: String(e?.message ?? e) }));
  return true;
});
