// A hand-off (issue 60): an agent asks the person to take over its tab (a sign-in, a 2FA code, a
// CAPTCHA). The tab is brought forward (the one time an agent moves the person's focus: it asks
// them to look there), a notification and the popup say who asks and why, and the call waits
// until the person clicks Done (it returns a fresh snapshot and what changed) or I can't
// (HANDOFF_DECLINED), or its time runs out (HANDOFF_TIMEOUT); the person may give it more time.
// The page is told nothing. The daemon refuses other calls on the tab meanwhile.
import { Code, ToolError } from '../../shared/protocol.js';
import { isFirefox } from '../../shared/platform.js';
import { answerWindows } from './answer-window.js';
import { hides, needsConsent, siteOf } from '../../shared/policy.js';
import { uiChanged } from '../state/badge.js';
import { getTab } from '../frames/page.js';
import { reachOf } from '../frames/reach.js';
import { callBuiltin, HANDOFF_LIMITS } from '../tools/builtins.js';

const { DEFAULT_SEC, MAX_SEC, REASON_MAX } = HANDOFF_LIMITS;

// What one "more time" gives, and the most a hand-off may last in all; the daemon waits as
// long (src/daemon/calls/policy.rs HANDOFF_CEILING).
export const EXTEND_MS = 600_000;
const LONGEST_MS = 2 * 3600_000;
// An idle MV3 worker is stopped 30 s after its last event or extension API call, and a hand-off
// waits minutes: what keeps the worker alive is the daemon's connection, which the hand-off's
// answer needs anyway (background.js pings on it, and makes an API call, every 20 s).

const pending = new Map(); // id -> hand-off
const popups = answerWindows((id) => pending.has(id));
let seq = 0;

function checked(args) {
  const reason = typeof args.reason === 'string' ? args.reason.trim() : '';
  if (!reason) throw new ToolError(Code.INVALID_ARGUMENTS, '"reason" must say what the person should do (e.g. "sign in to your bank")');
  if (reason.length > REASON_MAX) throw new ToolError(Code.INVALID_ARGUMENTS, `"reason" is longer than ${REASON_MAX} characters`);
  const sec = args.timeoutSec ?? DEFAULT_SEC;
  if (typeof sec !== 'number' || !(sec > 0) || sec > MAX_SEC) throw new ToolError(Code.INVALID_ARGUMENTS, `"timeoutSec" must be a number of seconds above 0 and at most ${MAX_SEC}`);
  return { reason, ms: Math.round(sec * 1000) };
}

const formatMin = (ms) => (ms >= 60_000 ? `${Math.round(ms / 60_000)} min` : `${Math.ceil(ms / 1000)} s`);

export async function handOff({ tabId, args, agent, port }) {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new ToolError(Code.INVALID_ARGUMENTS, 'args must be an object');
  const { reason, ms } = checked(args);
  const tab = await getTab(tabId);
  const before = { url: tab.url || '', title: tab.title || '' };
  const now = Date.now();
  const h = { id: `browser-mcp-handoff-${now}-${++seq}`, tabId, agent: typeof agent === 'string' && agent.trim() ? agent.trim().slice(0, 60) : null, port, reason, title: before.title, site: siteOf(before.url), createdAt: now, deadline: now + ms };
  const answered = new Promise((resolve, reject) => {
    h.settle = (how, error) => {
      if (!pending.delete(h.id)) return;
      clearTimeout(h.timer);
      if (chrome.notifications) chrome.notifications.clear(h.id).catch(() => {});
      popups.close(h.id);
      uiChanged();
      error ? reject(error) : resolve(how);
    };
  });
  arm(h);
  pending.set(h.id, h);
  const onRemoved = (id) => id === tabId && h.settle(null, new ToolError(Code.TAB_NOT_FOUND, `tab ${tabId} was closed during the hand-off`));
  chrome.tabs.onRemoved.addListener(onRemoved);
  try {
    await bringForward(tab);
    notify(h);
    uiChanged();
    await answered;
  } finally {
    chrome.tabs.onRemoved.removeListener(onRemoved);
    h.settle(null, null); // a throw above: the hand-off is over either way
  }
  return done(tabId, h, before);
}

function arm(h) {
  clearTimeout(h.timer);
  h.timer = setTimeout(() => h.settle(null, new ToolError(Code.HANDOFF_TIMEOUT,
    `the person did not answer the hand-off ("${h.reason}") within ${formatMin(h.deadline - h.createdAt)}`)), Math.max(0, h.deadline - Date.now()));
}

async function bringForward(tab) {
  await chrome.tabs.update(tab.id, { active: true }).catch(() => {});
  if (tab.windowId != null) await chrome.windows.update(tab.windowId, { focused: true }).catch(() => {});
}

// What the agent gets back: where the tab is now, what changed, and its snapshot when the
// site's settings let the built-ins see it.
async function done(tabId, h, before) {
  const tab = await getTab(tabId);
  const after = { url: tab.url || '', title: tab.title || '' };
  const changed = { url: before.url !== after.url, title: before.title !== after.title };
  const lines = [`The person finished the hand-off ("${h.reason}") after ${formatMin(Date.now() - h.createdAt)}.`];
  lines.push(changed.url ? `URL: ${before.url} → ${after.url}` : `URL: ${after.url} (unchanged)`);
  lines.push(changed.title ? `Title: "${before.title}" → "${after.title}"` : `Title: "${after.title}" (unchanged)`);
  const structured = { answer: 'done', before, after, changed };
  let snapshot = null;
  const site = siteOf(after.url);
  if (hides(after.url)) lines.push(`(no snapshot: browser-mcp's settings keep ${site} from its tools)`);
  else if (needsConsent(site, await reachOf(tabId, 'browser_snapshot', {}))) lines.push(`(no snapshot: ${site} asks the person first; call browser_snapshot)`);
  else {
    try {
      snapshot = await callBuiltin(tabId, 'browser_snapshot', {});
    } catch (e) {
      lines.push(`(no snapshot: ${e.message})`);
    }
  }
  return {
    content: [{ type: 'text', text: lines.join('\n') }, ...(snapshot?.content ?? [])],
    structuredContent: { ...structured, ...(snapshot?.structuredContent ? { snapshot: snapshot.structuredContent } : {}) },
  };
}

// `choice`: 'done', 'cant' or 'extend' (EXTEND_MS more, up to LONGEST_MS in all).
export function answer(id, choice) {
  const h = pending.get(id);
  if (!h) return false;
  if (choice === 'done') h.settle('done', null);
  else if (choice === 'cant') h.settle(null, new ToolError(Code.HANDOFF_DECLINED, `the person answered the hand-off ("${h.reason}") with "I can't"`));
  else if (choice === 'extend') {
    h.deadline = Math.min(h.deadline + EXTEND_MS, h.createdAt + LONGEST_MS);
    arm(h);
    uiChanged();
  } else return false;
  return true;
}

// The daemon's word on the tab's hand-off from elsewhere: with `answer` ('done' or 'cant'), the
// person answered in the agent's own client (MCP elicitation), first answer wins; without, nobody
// waits for it any more (its agent went away). Either way it leaves the person's screen.
export function endHandoff(tabId, answer) {
  for (const h of [...pending.values()]) {
    if (h.tabId !== tabId) continue;
    if (answer === 'done') h.settle('done', null);
    else if (answer === 'cant') h.settle(null, new ToolError(Code.HANDOFF_DECLINED, `the person answered the hand-off ("${h.reason}") with "I can't" in the agent's client`));
    else h.settle(null, new ToolError(Code.TOOL_ERROR, 'the agent stopped waiting for the hand-off'));
  }
}

export function list(tabId) {
  return [...pending.values()]
    .filter((h) => tabId == null || h.tabId === tabId)
    .map(({ id, tabId: t, agent, port, reason, title, site, createdAt, deadline }) => ({ id, tabId: t, agent, port, reason, title, site, createdAt, deadline, longest: createdAt + LONGEST_MS }));
}

// Chromium's notification carries the two answers; a click on it opens the popup, where the
// person may also ask for more time. Firefox's have no buttons: a click opens the popup.
function notify(h) {
  if (!chrome.notifications) return;
  const who = h.agent ? `“${h.agent}”` : 'A program using browser-mcpd';
  const common = { type: 'basic', iconUrl: chrome.runtime.getURL('icons/icon128.png'), title: `${who} needs you in “${h.title || h.site}”` };
  const wait = `It waits ${formatMin(h.deadline - h.createdAt)}`;
  const options = isFirefox
    ? { ...common, message: `${h.reason}. Click to answer when done. ${wait}.` }
    : { ...common, message: h.reason, contextMessage: `${wait}. Click here for more time`, buttons: [{ title: 'Done' }, { title: 'I can\'t' }], requireInteraction: true, priority: 2 };
  chrome.notifications.create(h.id, options).catch((e) => console.info('browser-mcp: no notification (answer in the popup)', e.message));
}

const ours = (id) => typeof id === 'string' && id.startsWith('browser-mcp-handoff-');
chrome.notifications?.onButtonClicked?.addListener((id, button) => ours(id) && answer(id, button === 0 ? 'done' : 'cant'));
chrome.notifications?.onClicked.addListener((id) => ours(id) && popups.open(id, pending.get(id)?.tabId));
