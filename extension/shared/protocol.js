// Message shapes of the seed-001 bridge protocol (extension side). Only this file knows the wire
// field names, so the daemon's serde types can be checked against one place.
import { isFirefox } from './platform.js';

// A tool failure that travels to the daemon as {code, message}.
export class ToolError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

export const Code = Object.freeze({
  ELEMENT_NOT_FOUND: 'ELEMENT_NOT_FOUND',
  ELEMENT_NOT_INTERACTABLE: 'ELEMENT_NOT_INTERACTABLE',
  NAVIGATION_FAILED: 'NAVIGATION_FAILED',
  TOOL_NOT_FOUND: 'TOOL_NOT_FOUND',
  TAB_NOT_FOUND: 'TAB_NOT_FOUND',
  // The page the call ran on navigated away before the call finished (call-watch.js).
  PAGE_NAVIGATED: 'PAGE_NAVIGATED',
  INVALID_ARGUMENTS: 'INVALID_ARGUMENTS',
  EVALUATE_DISABLED: 'EVALUATE_DISABLED',
  WAIT_TIMEOUT: 'WAIT_TIMEOUT',
  TOOL_ERROR: 'TOOL_ERROR',
  // A native dialog blocks the page (dialogs.js): only a navigation or reload closes it.
  DIALOG_BLOCKING: 'DIALOG_BLOCKING',
  // The user's per-site policy (policy.js, consent.js).
  SITE_DISABLED: 'SITE_DISABLED',
  USER_DENIED: 'USER_DENIED',
  USER_CONSENT_TIMEOUT: 'USER_CONSENT_TIMEOUT',
  // A terminal's answer to a prompt (consent.js answerFrom) that came too late.
  CONSENT_NOT_FOUND: 'CONSENT_NOT_FOUND',
  CONSENT_ANSWERED: 'CONSENT_ANSWERED',
  // A hand-off to the person (handoff.js).
  HANDOFF_DECLINED: 'HANDOFF_DECLINED',
  HANDOFF_TIMEOUT: 'HANDOFF_TIMEOUT',
});

export function errorBody(err) {
  if (err && typeof err.code === 'string') return { code: err.code, message: String(err.message) };
  return { code: Code.TOOL_ERROR, message: String(err?.message ?? err) };
}

// The daemon recognises a browser across reconnects (and service-worker restarts) by this id,
// so it lives in storage rather than in memory.
let sessionId = null;

export async function loadSessionId() {
  if (sessionId) return sessionId;
  const { sessionId: stored } = await chrome.storage.local.get('sessionId');
  // The id of a browser the daemon launched (useSessionId) may have come while storage
  // answered: it wins, or the daemon would not know its own browser.
  if (sessionId) return sessionId;
  sessionId = stored || crypto.randomUUID();
  if (!stored) await chrome.storage.local.set({ sessionId });
  return sessionId;
}

// A browser the daemon launched connects under the session id the daemon chose (its native
// host says which), so the daemon knows it as the one it launched.
export function useSessionId(id) {
  sessionId = id;
}


function message(type, fields = {}) {
  return { type, sessionId, ...fields };
}

let browser = null;

// Brands are more honest than the UA string (which says "HeadlessChrome" or freezes the version);
// a vendor brand such as "Google Chrome" wins over the generic "Chromium". Firefox has no brands
// but says who it is (name "Firefox", the full version such as "153.7.0").
export async function browserInfo() {
  if (browser) return browser;
  if (isFirefox) {
    try {
      const { name, version } = await chrome.runtime.getBrowserInfo();
      browser = { name, version };
      return browser;
    } catch {
      // fall through to the UA string
    }
  }
  let brands = [];
  try {
    const high = await navigator.userAgentData.getHighEntropyValues(['fullVersionList']);
    brands = (high.fullVersionList || []).filter((b) => !/not.?a.?brand/i.test(b.brand));
  } catch {
    // userAgentData is missing outside Chromium; fall through to the UA string.
  }
  const pick = brands.find((b) => b.brand !== 'Chromium') || brands.find((b) => b.brand === 'Chromium');
  if (pick) {
    browser = { name: pick.brand, version: pick.version };
  } else {
    const m = navigator.userAgent.match(/(Chrome|Chromium|Firefox)\/([\d.]+)/);
    browser = { name: m ? m[1] : 'unknown', version: m ? m[2] : '' };
  }
  return browser;
}

// Not in seed 001: what this extension understands beyond it, so that a daemon sends only what
// it will be answered. `watch`: the daemon says when an agent is at work (worker/ahead/watch.js).
export const FEATURES = Object.freeze(['watch']);
export const connected = (browserInfo, tabs) => message('connected', { browser: browserInfo, tabs, features: [...FEATURES] });
export const ping = () => message('ping');
export const tabCreated = (tab, requestId) =>
  message('tabCreated', requestId == null ? { tab } : { tab, requestId });
export const tabUpdated = (tab) => message('tabUpdated', { tab });
export const tabClosed = (tabId) => message('tabClosed', { tabId });
// An offer is {tools, hidden} (policy.js toolOffer). `hidden` is not in seed 001: it names the tools
// the user's site policy keeps back, with the reason, and is left out when nothing is hidden.
const offered = ({ tools, hidden }) => (hidden ? { tools, hidden } : { tools });
export const tabFocused = (tabId, offer) => message('tabFocused', { tabId, ...offered(offer) });
export const toolsChanged = (tabId, offer) => message('toolsChanged', { tabId, ...offered(offer) });
export const toolsDiscovered = (callId, tabId, offer, error) =>
  message('toolsDiscovered', error ? { callId, tabId, tools: [], error: errorBody(error) } : { callId, tabId, ...offered(offer) });
export const toolResult = (callId, result, error) =>
  message('toolResult', error ? { callId, result: null, error: errorBody(error) } : { callId, result: result ?? null, error: null });
// Not in seed 001: something a page did that scripts may react to. `event` is consoleError,
// downloadFinished or navigated; `data` is that event's object (docs/built-in-tools.md, "Page events").
export const tabEvent = (tabId, event, data) => message('tabEvent', { tabId, event, data });
// Not in seed 001: the answer to a daemon's `watch`, with the word it acknowledges.
export const watching = (requestId, on) => message('watching', { requestId, watching: on });
// Not in seed 001 (issue 59): the call `callId` waits for the person's answer to a prompt, and
// then no longer does (`outcome`: allowed, denied, unanswered); the daemon publishes both as events.
export const consentRequested = (callId, tabId, fields) => message('consentRequested', { callId, tabId, ...fields });
// `by`: who answered (`browser`, `terminal`); absent when nobody did.
export const consentAnswered = (callId, tabId, promptId, outcome, by) => message('consentAnswered', { callId, tabId, promptId, outcome, ...(by ? { by } : {}) });
// The answer to a daemon's `answerConsent` (issue 60): the prompt took `choice`.
export const answeredConsent = (requestId, promptId, choice) => message('answeredConsent', { requestId, promptId, choice });
// Not in seed 001: a request that has no success reply of its own (openTab) failed.
export const requestFailed = (requestId, error) => message('error', { requestId, error: errorBody(error) });
// Not in seed 001 (issue 57): trusted input the daemon performs in a browser it launched and
// drives over WebDriver BiDi (a Firefox): `actions` are input.performActions' sources, for the
// top-level context of tab `tabId`. `probe`: the tab's document carries this nonce in its
// `data-browser-mcp-input` attribute while the request is out, so the daemon can find the tab's
// context the first time. Answered by `inputDone` with the same requestId, and `error` when it
// was not done (code UNKNOWN_TAB: ask again with a probe; UNSUPPORTED: no trusted input here).
export const input = (requestId, tabId, actions, probe) => message('input', { requestId, tabId, actions, ...(probe ? { probe } : {}) });
