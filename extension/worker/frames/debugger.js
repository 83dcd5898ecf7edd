// A tab's DevTools session through chrome.debugger (Chromium only): what only the browser itself
// can do for an agent, trusted input (tools/input.js) and a whole page in one capture
// (tools/screenshot.js). It needs the optional "debugger" permission, the person's choice in the
// options page (a browser the daemon launched has it from its manifest, issue 57).
//
// While a session is attached Chromium shows its bar "browser-mcp started debugging this
// browser" (not in a browser the daemon launched: --silent-debugger-extension-api). So a session
// is attached when an action first needs it and kept while the agent goes on (an attach costs a
// page 6-18 ms, and the bar would flash at every call), then detached once the tab has had no
// use of it for IDLE_MS: the bar goes with the agent. The person's *Cancel* on the bar detaches
// every session (onDetach, canceled_by_user): what is in flight fails with Detached, and no
// session is attached again for PAUSE_MS, in any tab.
import { isFirefox } from '../../shared/platform.js';
import { isManagedBrowser } from '../state/managed.js';

// The drive window of dialogs.js: an agent that pauses longer has left the tab.
export const IDLE_MS = 30_000;
export const PAUSE_MS = 10 * 60_000;
const VERSION = '1.3';

// A session that went away under a command (the person's Cancel, the tab closed).
export class Detached extends Error {
  constructor(reason) {
    super(reason === 'canceled_by_user' ? 'the person stopped the debugging session (Cancel on Chrome\'s bar)' : `the debugging session ended (${reason})`);
    this.reason = reason;
  }
}

const sessions = new Map(); // tabId -> {ready: Promise, timer, gone: Detached|null, listeners: Set}
let cancelledAt = 0;
let grant = null; // Promise<boolean>, until the permission changes

export const supported = () => !isFirefox && !!chrome.permissions;

// Whether the person granted the permission (cached; the options page changes it).
export function granted() {
  if (!supported()) return Promise.resolve(false);
  grant ??= chrome.permissions.contains({ permissions: ['debugger'] }).catch(() => false);
  return grant;
}

// Why no session may be attached now (the person's Cancel), or null.
export function paused() {
  const left = cancelledAt + PAUSE_MS - Date.now();
  return left > 0 ? `the person stopped debugging with Cancel on Chrome's bar ${Math.round((Date.now() - cancelledAt) / 1000)} s ago; trusted input resumes in ${Math.ceil(left / 60_000)} min` : null;
}

// The tab's session, attached if need be; throws when it cannot be (another debugger on the
// tab, a page the browser keeps from extensions). The first session brings Chromium's bar
// (not in a browser the daemon launched), which takes its height from the viewport of the tab
// in front a moment after the attach (136 ms on a busy machine): a point read before then
// would be off by as much on a page laid out on the viewport's height (a board centred in it),
// and the page's `resize` closes what the action opens (Radix's Select closes on it). So that
// attach returns once the page itself has seen its viewport change (the tab's height changes
// first; the page learns it a little later), or after BAR_MS.
export async function attach(tabId) {
  hear();
  let s = sessions.get(tabId);
  if (!s) {
    const first = !isManagedBrowser() && sessions.size === 0;
    s = { ready: null, timer: null, gone: null, listeners: new Set() };
    sessions.set(tabId, s);
    s.ready = (async () => {
      const before = first ? await shownHeight(tabId) : null;
      const inPage = before === null ? null : await pageHeight(tabId);
      await chrome.debugger.attach({ tabId }, VERSION);
      if (before !== null) await barShown(tabId, before, inPage);
    })().catch((e) => {
      if (sessions.get(tabId) === s) sessions.delete(tabId);
      throw e;
    });
  }
  clearTimeout(s.timer);
  await s.ready;
  if (s.gone) throw s.gone;
  idle(tabId, s);
  return s;
}

const BAR_MS = 1000;
const BAR_POLL_MS = 16;

// The height of the tab's page if it is in front (a tab behind is laid out anew when shown).
async function shownHeight(tabId) {
  const tab = await chrome.tabs.get(tabId).catch(() => null);
  return tab?.active && Number.isFinite(tab.height) ? tab.height : null;
}

async function barShown(tabId, before, inPage) {
  const started = Date.now();
  const late = () => Date.now() - started >= BAR_MS;
  const pause = () => new Promise((r) => setTimeout(r, BAR_POLL_MS));
  for (;;) {
    const tab = await chrome.tabs.get(tabId).catch(() => null);
    if (!tab) return;
    if (tab.height !== before) break;
    if (late()) return;
    await pause();
  }
  // A page we cannot script (the browser's own) has no resize of ours to wait for.
  while (inPage !== null && !late() && (await pageHeight(tabId)) === inPage) await pause();
}

// The page's viewport height as its next frame sees it: by then the browser has run its resize
// steps, and fired `resize`, for a change it was told of (a page that draws no frame answers
// after 100 ms). Null where we may not script.
async function pageHeight(tabId) {
  const frame = () => new Promise((resolve) => {
    const height = () => resolve(globalThis.innerHeight);
    globalThis.requestAnimationFrame(height);
    setTimeout(height, 100);
  });
  const [answer] = await chrome.scripting.executeScript({ target: { tabId }, func: frame }).catch(() => []);
  return Number.isFinite(answer?.result) ? answer.result : null;
}

function idle(tabId, s) {
  clearTimeout(s.timer);
  s.timer = setTimeout(() => detach(tabId), IDLE_MS);
}

// A command on the tab's session; rejects with Detached when the session went away.
export function send(tabId, method, params = {}) {
  const s = sessions.get(tabId);
  if (!s) return Promise.reject(new Detached('not attached'));
  if (s.gone) return Promise.reject(s.gone);
  idle(tabId, s);
  return chrome.debugger.sendCommand({ tabId }, method, params).catch((e) => {
    throw s.gone || (sessions.get(tabId) === s ? e : new Detached('detached'));
  });
}

// The session's events while `listener` is on (Input.dragIntercepted).
export function listen(tabId, listener) {
  const s = sessions.get(tabId);
  s?.listeners.add(listener);
  return () => s?.listeners.delete(listener);
}

export const attached = (tabId) => sessions.has(tabId);

export async function detach(tabId) {
  const s = sessions.get(tabId);
  if (!s) return;
  sessions.delete(tabId);
  clearTimeout(s.timer);
  await s.ready.catch(() => {});
  await chrome.debugger.detach({ tabId }).catch(() => {});
}

// Chromium detached a session we did not: the person's Cancel on the bar, or the tab is gone.
// (The extension's own detach() fires nothing.) Exported for the test of the Cancel, which a
// headless browser has no bar to click for (tests/it/browser/hands/trusted.rs).
export function detached(source, reason) {
  const s = sessions.get(source.tabId);
  if (reason === 'canceled_by_user') cancelledAt = Date.now();
  if (!s) return;
  sessions.delete(source.tabId);
  clearTimeout(s.timer);
  s.gone = new Detached(reason);
  for (const l of s.listeners) l(null, s.gone);
}

// chrome.debugger exists only once the permission is granted, so it is listened to from the
// first attach on.
let hearing = false;
function hear() {
  if (hearing) return;
  hearing = true;
  chrome.debugger.onDetach.addListener(detached);
  chrome.debugger.onEvent.addListener((source, method, params) => {
    for (const l of sessions.get(source.tabId)?.listeners ?? []) l({ method, params });
  });
}
if (supported()) {
  const changed = () => {
    grant = null;
  };
  chrome.permissions.onAdded?.addListener(changed);
  chrome.permissions.onRemoved?.addListener(changed);
}
chrome.tabs.onRemoved.addListener((tabId) => sessions.delete(tabId));
// The test of the person's Cancel reaches the handler here (there is no bar to click headless).
globalThis.browserMcpDebugger = { detached };
