// Dialogs (alert, confirm, prompt, beforeunload) of the tabs an agent drives: their policy, the
// answers browser_handle_dialog arms, and the dialogs each call's result reports. The frames
// answer synchronously (dom-dialogs.js); this keeps them told.
//
// A tab is driven for DRIVE_MS after each built-in call on it. Only then are dialogs answered
// for the page: the person's own browsing keeps its native dialogs.
//
// An answer browser_handle_dialog arms (a prompt's text may be a PIN) stays here until the
// agent acts in a frame: that frame's document alone is given it, and keeps it until a dialog
// of its own uses it, it leaves, or the agent acts in another frame (issue 58). Every frame
// learns the policy and until when the tab is driven, none the armed answers.
import { Code, ToolError } from '../../shared/protocol.js';
import { DIALOGS_SCRIPT } from './frame-channel.js';
import { registration } from './registrations.js';
import { within } from '../../shared/within.js';

export const DRIVE_MS = 30_000;
const REBROADCAST_MS = 10_000; // tell the frames again when their deadline is this close
const MAX_KEPT = 20; // dialogs kept per tab until a result reports them
export const POLICIES = ['accept', 'dismiss'];
const DEFAULT_POLICY = 'dismiss';

const MAX_REMEMBERED = 50; // ids of dialogs reported, per tab: a copy that comes later is dropped

const tabs = new Map(); // tabId -> {until, told, policy, callPolicy, armed, lent, unreported, reported}

function stateOf(tabId) {
  let s = tabs.get(tabId);
  if (!s) tabs.set(tabId, (s = { until: 0, told: 0, callPolicy: null, armed: [], lent: null, unreported: [], reported: [] }));
  return s;
}

// What every frame is told; `lent`: the armed answers too, for the frame that holds them.
const forFrames = (s, lent = false) => ({ until: s.until, policy: s.callPolicy || DEFAULT_POLICY, callPolicy: !!s.callPolicy, armed: lent ? s.armed : [] });

// A frame's dialog state, set by chrome.scripting (a frame needs no message listener for it,
// content.js). A frame that was there before its tab was driven may have no dom-dialogs.js
// (issue 30, below), so the state waits in a global the script reads when it arrives; says
// whether the frame had it.
function setDialogState(state) {
  const dialogs = globalThis.browserMcpDialogs;
  if (dialogs) dialogs.setState(state);
  else globalThis.browserMcpDialogState = state;
  return !!dialogs;
}

// Every frame of the tab at once, the top one too, then dom-dialogs.js into those that had none.
// A frame blocked by a native dialog never answers, so nobody waits for more than TELL_MS.
const TELL_MS = 250;
async function tellFrames(tabId, state) {
  const results = await chrome.scripting.executeScript({ target: { tabId, allFrames: true }, func: setDialogState, args: [state] });
  const missing = results.filter((r) => r.result === false).map((r) => r.frameId);
  if (missing.length) await chrome.scripting.executeScript({ target: { tabId, frameIds: missing }, files: [DIALOGS_SCRIPT] });
}
function tell(tabId, s) {
  s.told = s.until;
  coverSubframes();
  const sent = tellFrames(tabId, forFrames(s))
    .then(() => s.lent !== null && tellFrame(tabId, s.lent, forFrames(s, true)))
    .catch(() => {});
  return within(sent, TELL_MS);
}

const tellFrame = (tabId, frameId, state) =>
  chrome.scripting.executeScript({ target: { tabId, frameIds: [frameId] }, func: setDialogState, args: [state] }).catch(() => {});

// Before the agent acts in a frame: the armed answers go to it, and leave the frame that held
// them before.
export async function lend(tabId, frameId) {
  const s = tabs.get(tabId);
  if (!s?.armed.length || s.lent === frameId) return;
  const before = s.lent;
  s.lent = frameId;
  const sent = (before === null ? Promise.resolve() : tellFrame(tabId, before, forFrames(s)))
    .then(() => tellFrame(tabId, frameId, forFrames(s, true)));
  await within(sent, TELL_MS);
}

// No frame gets dom-dialogs.js at load: an isolated world costs a frame 0.4-0.6 ms at load, 4-5
// ms in a new process (issue 30), and a person's own browsing needs none. A top frame has it
// while a daemon says an agent is at work (watch.js). While an agent drives any tab, every
// frame that starts, subframes too, gets it at document_start, so that a dialog it opens while
// loading is answered, or named as blocking. Registered for every tab (a content script cannot
// be limited to some), and removed once no tab is driven; a restarted worker, which drives
// nothing yet, removes what its predecessor left (registrations.js).
const everyFrame = registration('browser-mcp-subframe-dialogs', { js: [DIALOGS_SCRIPT], allFrames: true });
let uncover = null;
function coverSubframes() {
  const last = Math.max(0, ...[...tabs.values()].map((s) => s.until));
  clearTimeout(uncover);
  if (last > Date.now()) uncover = setTimeout(coverSubframes, last - Date.now() + 100);
  everyFrame.set(last > Date.now());
}

// A document that starts in a driven tab is told at once, so that a dialog it opens while
// loading is answered too (its own question, dom-dialogs.js, may come back too late).
function onCommitted({ tabId, frameId }) {
  const s = tabs.get(tabId);
  // The document that held the armed answers went with them; the next action lends them again.
  if (s && (s.lent === frameId || (s.lent !== null && frameId === 0))) s.lent = null;
  if (!s || Date.now() >= s.until) return;
  chrome.scripting.executeScript({
    target: { tabId, frameIds: [frameId] },
    injectImmediately: true,
    func: setDialogState,
    args: [forFrames(s)],
  }).catch(() => {});
}

export function checkPolicy(value, key = 'dialog') {
  if (value === undefined) return null;
  if (!POLICIES.includes(value)) throw new ToolError(Code.INVALID_ARGUMENTS, `"${key}" must be "accept" or "dismiss"`);
  return value;
}

// Before a built-in call: the tab is driven from now on, with this call's policy if it has one.
export async function drive(tabId, callPolicy) {
  const s = stateOf(tabId);
  const now = Date.now();
  const changed = (callPolicy || null) !== s.callPolicy;
  s.until = now + DRIVE_MS;
  s.callPolicy = callPolicy || null;
  if (changed || s.told - now < DRIVE_MS - REBROADCAST_MS) await tell(tabId, s);
}

// Whether an agent drives the tab now: a built-in call ran in it within the last DRIVE_MS.
export const isDriven = (tabId) => Date.now() < (tabs.get(tabId)?.until ?? 0);

// A native dialog that blocks the tab (one the extension could not answer in time), or null. A
// navigation or reload closes it.
export function blockingDialog(tabId) {
  return tabs.get(tabId)?.native || null;
}

export function clearBlocking(tabId) {
  const s = tabs.get(tabId);
  if (s) s.native = null;
}

// After the call: a call's own policy ends with it.
export function release(tabId) {
  const s = tabs.get(tabId);
  if (s?.callPolicy) {
    s.callPolicy = null;
    tell(tabId, s);
  }
}

// The dialogs to report with a call's result: those the frame put in it, and any that opened
// elsewhere (another frame, later) since the last report; each once, though a frame's message
// about it and a result that carries it may come in either order.
export function takeDialogs(tabId, inResult = []) {
  if (!inResult.length && !tabs.has(tabId)) return [];
  // Noted even for a tab no call has driven yet, so the frame's message after it is not news.
  const s = stateOf(tabId);
  const done = new Set(s.reported);
  const found = [];
  for (const d of [...inResult, ...s.unreported]) {
    if (done.has(d.id)) continue;
    done.add(d.id);
    found.push(d);
  }
  s.unreported = [];
  s.reported = [...s.reported, ...found.map((d) => d.id)].slice(-MAX_REMEMBERED);
  return found;
}

export function describe(d) {
  const what = d.kind === 'prompt' ? `prompt ${JSON.stringify(d.message)} (default ${JSON.stringify(d.defaultText ?? '')})` : `${d.kind} ${JSON.stringify(d.message)}`;
  const answer = d.kind === 'alert' ? 'closed' : d.accepted ? (d.kind === 'prompt' ? `accepted with ${JSON.stringify(d.text)}` : 'accepted') : 'dismissed';
  const where = d.frame && d.frame !== 'top' ? ` in frame ${d.frame}` : '';
  return `Dialog${where}: ${what} → ${answer} by ${d.answeredBy}.`;
}

// browser_handle_dialog: the answer for the next dialog of this tab (in any frame).
export async function arm(tabId, args) {
  if (typeof args.accept !== 'boolean') throw new ToolError(Code.INVALID_ARGUMENTS, '"accept" must be true or false');
  if (args.promptText !== undefined && typeof args.promptText !== 'string') throw new ToolError(Code.INVALID_ARGUMENTS, '"promptText" must be a string');
  const s = stateOf(tabId);
  s.armed = [{ accept: args.accept, ...(args.promptText !== undefined ? { text: args.promptText } : {}) }];
  s.lent = null; // told below, with every frame: no frame holds an answer until the agent acts
  s.until = Date.now() + DRIVE_MS;
  await tell(tabId, s);
  const how = args.accept ? `accepted${args.promptText !== undefined ? ` (a prompt gets ${JSON.stringify(args.promptText)})` : ''}` : 'dismissed';
  return `The next dialog this tab opens will be ${how}. Dialogs never stay open: each one is answered when it opens, so run the action that opens it now.`;
}

function onMessage(msg, sender) {
  const tabId = sender.tab?.id;
  if (sender.id !== chrome.runtime.id || tabId === undefined) return false;
  if (msg?.type === 'nativeDialog') {
    // Opened before this frame knew the tab is driven: it blocks the page until answered.
    const s = tabs.get(tabId);
    if (s && Date.now() < s.until) s.native = { kind: String(msg.kind), message: String(msg.message ?? '').slice(0, 500) };
    return false;
  }
  if (msg?.type === 'dialog' && msg.dialog && typeof msg.dialog === 'object') {
    const s = stateOf(tabId);
    if (s.reported.includes(msg.dialog.id)) return false; // a result said it already
    // The frame as the worker knows it: a frame no tool touched yet does not know its prefix.
    s.unreported.push({ ...msg.dialog, frame: sender.frameId ? `f${sender.frameId}` : 'top' });
    if (s.unreported.length > MAX_KEPT) s.unreported.shift();
    // Only the frame that holds the answers can have used one (it dropped it itself).
    if (msg.usedArmed && s.armed.length && sender.frameId === s.lent) {
      s.armed.shift();
      if (!s.armed.length) s.lent = null;
    }
  }
  return false;
}

export function initDialogs() {
  chrome.runtime.onMessage.addListener(onMessage);
  chrome.webNavigation.onCommitted.addListener(onCommitted);
  chrome.tabs.onRemoved.addListener((tabId) => tabs.delete(tabId));
}
