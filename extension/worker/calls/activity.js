// Every tool call passes through here: the site policy decides (and in "ask" mode the user),
// then the call runs; each call is counted while in flight (badge) and logged when done
// (popup: recent calls of the tab; options: the activity log, which the user can clear).
// The log keeps tool, agent, site, tab title, timing, outcome and the person's answer when one
// was asked for (`consent`: a choice of consent.js, `remembered` when a grant answered, `deny`,
// `no answer`; `answeredBy`: `browser` or `terminal`, issue 60), never the arguments or results.
import { setInFlight, uiChanged } from '../state/badge.js';
import { checkCall, granted, siteOf, tabSites } from '../../shared/policy.js';
import * as consent from './consent.js';
import { getTab } from '../frames/page.js';
import { isBuiltinName, isReadOnlyBuiltin } from '../tools/builtins.js';
import { isAgentTab } from '../state/agent-tabs.js';
import { isManagedBrowser } from '../state/managed.js';
import { beyondTab, namedFrames } from '../frames/reach.js';
import { Code, ToolError, consentAnswered, consentRequested, errorBody } from '../../shared/protocol.js';

const LIMIT = 200;
const running = new Map(); // id -> entry
let log = []; // finished calls, newest first
let seq = 0;
let saveTimer = null;

export async function loadActivity() {
  const { activity } = await chrome.storage.local.get('activity');
  if (Array.isArray(activity)) log = [...log, ...activity].slice(0, LIMIT);
}

// Who asks, as the daemon names it (an MCP client's name, `browserctl`), cut to a line.
function agentOf(agent) {
  return typeof agent === 'string' && agent.trim() ? agent.trim().slice(0, 60) : null;
}

// `tell(message)`: to the daemon that sent the call (its consent prompt's messages).
export async function runCall({ callId, tabId, toolName, args, agent }, port, call, tell = () => {}) {
  const e = { id: `${Date.now()}-${++seq}`, tabId, tool: String(toolName ?? ''), agent: agentOf(agent), port, at: Date.now(), state: 'running', site: null, title: '', waitMs: 0 };
  running.set(e.id, e);
  changed();
  try {
    // Malformed requests are left to `call`, which names what is wrong.
    if (Number.isInteger(tabId) && typeof toolName === 'string' && toolName) await consented(e, { callId, tabId, toolName, args, port, tell });
    const result = await call();
    finish(e, null);
    return result;
  } catch (err) {
    finish(e, err);
    throw err;
  }
}

// Whether the call may run: the policy of its tab's sites, and of what it names beyond them (a
// frame of another site, the page browser_navigate goes to: reach.js), asking the person when
// that is the rule. An answer is for the documents the person saw named: one that a page (or a
// frame the call names) left while the prompt waited fails the call, which never runs on the
// page that came instead (issue 58).
async function consented(e, { callId, tabId, toolName, args, port, tell }) {
  const builtin = isBuiltinName(toolName);
  const moved = builtin ? watchDocuments(tabId, [0, ...namedFrames(tabId, args)]) : watchDocuments(tabId, [0]);
  try {
    const tab = await getTab(tabId);
    e.site = siteOf(tab.url || tab.pendingUrl);
    e.title = tab.title || '';
    const { mode, sites, explicit } = checkCall(tab, toolName, builtin);
    // The agent's own tab, or a browser the daemon launched: the default does not ask there.
    const free = !explicit && (isManagedBrowser() || (await isAgentTab(tabId)));
    const mine = mode === 'ask' && !free ? sites : [];
    const beyond = builtin ? await beyondTab(tabId, toolName, args, sites) : { sites: [] };
    // What the call needs: a built-in that only looks reads; anything else (a page's own tool
    // too: what it does is the page's to say, not ours to trust) acts.
    const access = builtin && isReadOnlyBuiltin(toolName) ? 'read' : 'act';
    const wanted = [...new Set([...mine, ...beyond.sites])];
    const asked = wanted.filter((site) => !granted(site, e.agent, access));
    if (wanted.length && !asked.length) e.consent = 'remembered';
    if (!asked.length) return;
    // The sites asked about, and where they are seen from when the tab's own is not asked.
    const from = !mine.length && sites.length ? ` (${beyond.navigating ? 'going there from' : 'framed in'} ${sites.join(' → ')})` : '';
    e.state = 'waiting';
    changed();
    const since = Date.now();
    // The daemon hears of the prompt, so that its caller can say what it waits for (issue 59).
    let prompt = null;
    let outcome = 'allowed';
    const opened = (p) => {
      prompt = p;
      tell(consentRequested(callId, tabId, { promptId: p.id, agent: e.agent, site: p.site, tool: toolName, argsSummary: p.shown || null, timeoutMs: p.deadline - p.createdAt, choices: consent.choicesFor(p) }));
    };
    try {
      e.consent = await consent.ask({ tabId, sites: asked, place: asked.join(' → ') + from, tool: toolName, args, port, title: e.title, agent: e.agent, access, opened });
    } catch (err) {
      e.consent = err?.code === Code.USER_DENIED ? 'deny' : 'no answer';
      outcome = err?.code === Code.USER_DENIED ? 'denied' : 'unanswered';
      throw err;
    } finally {
      e.waitMs = Date.now() - since;
      if (prompt?.by) e.answeredBy = prompt.by;
      if (prompt) tell(consentAnswered(callId, tabId, prompt.id, outcome, prompt.by));
    }
    const now = await getTab(tabId);
    if (moved.left(tab.pendingUrl) || tabSites(now).some((site) => !sites.includes(site))) {
      throw new ToolError(Code.PAGE_NAVIGATED, `the page in tab ${tabId} navigated away while the person was asked about ${toolName} on ${asked.join(' → ')}; the answer was for that page, and the call did not run`);
    }
    e.state = 'running';
    changed();
  } finally {
    moved.stop();
  }
}

// Whether any of `frameIds` of the tab starts loading another document from now on (a
// same-document navigation keeps the document), other than the top frame's arrival at
// `expected`, the page a loading tab was asked about.
function watchDocuments(tabId, frameIds) {
  const went = [];
  const on = (d) => {
    if (d.tabId === tabId && frameIds.includes(d.frameId)) went.push(d);
  };
  chrome.webNavigation.onBeforeNavigate.addListener(on);
  chrome.webNavigation.onCommitted.addListener(on);
  return {
    left: (expected) => went.some((d) => !(d.frameId === 0 && expected && d.url === expected)),
    stop() {
      chrome.webNavigation.onBeforeNavigate.removeListener(on);
      chrome.webNavigation.onCommitted.removeListener(on);
    },
  };
}

function finish(e, err) {
  running.delete(e.id);
  const done = { ...e, ms: Date.now() - e.at, ok: !err };
  delete done.state;
  if (err) Object.assign(done, errorBody(err));
  log.unshift(done);
  if (log.length > LIMIT) log.length = LIMIT;
  save();
  changed();
}

function changed() {
  setInFlight(running.size);
  uiChanged();
}

function save() {
  clearTimeout(saveTimer);
  saveTimer = setTimeout(() => chrome.storage.local.set({ activity: log }).catch(() => {}), 300);
}

export async function clearActivity() {
  clearTimeout(saveTimer);
  log = [];
  await chrome.storage.local.set({ activity: [] });
  uiChanged();
}

// Running calls first, then finished ones; optionally only those of one tab.
export function recent(tabId, limit = LIMIT) {
  const all = [...[...running.values()].reverse(), ...log];
  return (tabId == null ? all : all.filter((e) => e.tabId === tabId)).slice(0, limit);
}
