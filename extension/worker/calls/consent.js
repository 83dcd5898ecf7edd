// "Ask" mode: a call waits until the user allows or denies it, in a desktop notification or in
// the popup, and fails with USER_DENIED, or USER_CONSENT_TIMEOUT when nobody answers in time.
// The prompt names who asks (the agent), the site and the tool; the person allows this call
// once, allows the site for good ("always for this site": the site's mode becomes "allow"),
// remembers a narrower answer (issue 60: for this agent, and/or read only: a grant, listed in
// the options page with its date and taken back there), or denies.
import { Code, ToolError } from '../../shared/protocol.js';
import { normalize, settings } from '../../shared/settings.js';
import { granted } from '../../shared/policy.js';
import { uiChanged } from '../state/badge.js';
import { isFirefox } from '../../shared/platform.js';
import { answerWindows } from './answer-window.js';
import { noteText, promptArgs } from './prompt-args.js';

const pending = new Map(); // id -> Prompt
// How the last prompts ended (id -> allowed, denied, unanswered), so that a late answer from
// a terminal hears "answered already" or "lapsed" rather than "no such prompt".
const ended = new Map();
const ENDED_MAX = 100;
const popups = answerWindows((id) => pending.has(id));
let seq = 0;

// A daemon that times out an attempt may send the same call again: it joins the prompt that is
// already on screen instead of raising a second one.
const keyOf = (p) => `${p.tabId}|${p.agent}|${p.tool}|${p.argsText}`;

// `sites`: what "always" allows; `place`: how the prompt names where the call runs (the sites,
// and the page they are framed in or reached from).
// `access`: what the call needs, 'read' (it only looks) or 'act'. `opened(prompt)`: told the
// prompt the call waits on (a new one, or the one it joins). Resolves with the answer that let it
// through (CHOICES).
export function ask({ tabId, sites, place, tool, args, port, title, agent = null, access = 'act', opened = () => {} }) {
  const argsText = JSON.stringify(args ?? {});
  const same = [...pending.values()].find((p) => keyOf(p) === keyOf({ tabId, agent, tool, argsText }));
  if (same) {
    opened(same);
    return same.promise;
  }
  const timeoutMs = settings().consentTimeoutMs;
  const id = `browser-mcp-consent-${Date.now()}-${++seq}`;
  const site = place ?? sites.join(' → ');
  // What the person reads of the arguments (an upload's files by name, never their bytes).
  const shown = promptArgs(tool, args);
  const prompt = { id, tabId, sites, site, tool, argsText, shown, port, title, agent, access, createdAt: Date.now(), deadline: Date.now() + timeoutMs };
  prompt.promise = new Promise((resolve, reject) => {
    // `how`: the choice that allowed it, or null with the error that refused it.
    prompt.settle = (how, error) => {
      if (!pending.delete(id)) return;
      ended.set(id, how ? 'allowed' : error?.code === Code.USER_DENIED ? 'denied' : 'unanswered');
      if (ended.size > ENDED_MAX) ended.delete(ended.keys().next().value);
      clearTimeout(prompt.timer);
      if (chrome.notifications) chrome.notifications.clear(id).catch(() => {});
      popups.close(id);
      uiChanged();
      if (how) resolve(how);
      else reject(error);
    };
  });
  prompt.timer = setTimeout(() => {
    prompt.settle(null, new ToolError(Code.USER_CONSENT_TIMEOUT,
      `nobody answered the browser-mcp prompt for ${tool} on ${site} within ${formatMs(timeoutMs)}; the call did not run`));
  }, timeoutMs);
  pending.set(id, prompt);
  opened(prompt);
  notify(prompt);
  uiChanged();
  return prompt.promise;
}

// The answers: `once` this call; `always` every agent, read and act, on the prompt's sites from
// now on (their mode becomes "allow"); remembered grants (issue 60): `agent` this agent, read
// and act; `agent-read` this agent, read only; `site-read` every agent, read only; `deny`.
// The read-only ones answer only a call that reads, and the agent's only a named agent.
export const CHOICES = ['once', 'always', 'agent', 'agent-read', 'site-read', 'deny'];

export function choicesFor(p) {
  return CHOICES.filter((c) => (!c.endsWith('-read') || p.access === 'read') && (!c.startsWith('agent') || !!p.agent));
}

// `choice` one of CHOICES; true and false stand for once and deny; `by` who answered, for the
// activity log: `browser` (the popup, the notification) or `terminal` (`browserctl consent
// answer`, through a daemon: answerFrom). False when there is no such prompt, or the choice
// does not fit it.
export async function answer(id, choice, by = 'browser') {
  const p = pending.get(id);
  if (!p) return false;
  const how = choice === true ? 'once' : choice === false ? 'deny' : choice;
  if (!choicesFor(p).includes(how)) return false;
  p.by = by;
  if (how === 'deny') {
    p.settle(null, new ToolError(Code.USER_DENIED, `the user denied ${p.tool} on ${p.site}${p.agent ? ` for ${p.agent}` : ''}`));
    return true;
  }
  if (how === 'once') {
    p.settle(how);
    return true;
  }
  if (how === 'always') await allowSites(p.sites);
  else await remember(p.sites, how.startsWith('agent') ? p.agent : '*', how.endsWith('-read') ? 'read' : 'act');
  p.settle(how);
  // Other calls waiting on sites this answer now covers are let through by it too.
  for (const other of [...pending.values()]) {
    const covered = how === 'always'
      ? other.sites.every((site) => p.sites.includes(site))
      : other.sites.every((site) => granted(site, other.agent, other.access));
    if (covered) other.settle(how);
  }
  return true;
}

// A daemon's `answerConsent` (issue 60): the person answered at a terminal. The same answer
// as a click in the popup, or a ToolError that says why not (CONSENT_NOT_FOUND,
// CONSENT_ANSWERED, INVALID_ARGUMENTS for a choice the prompt does not offer).
export async function answerFrom(id, choice, by) {
  const p = pending.get(id);
  if (!p) {
    const outcome = ended.get(id);
    if (outcome === 'allowed' || outcome === 'denied') throw new ToolError(Code.CONSENT_ANSWERED, `prompt ${id} was answered already (${outcome}); the first answer stands`);
    throw new ToolError(Code.CONSENT_NOT_FOUND, outcome ? `no consent prompt ${id} waits: it lapsed unanswered` : `no consent prompt ${id} waits in this browser`);
  }
  if (!CHOICES.includes(choice) || !choicesFor(p).includes(choice)) {
    throw new ToolError(Code.INVALID_ARGUMENTS, `prompt ${id} does not offer \`${choice}\`; it offers ${choicesFor(p).join(', ')}`);
  }
  if (!(await answer(id, choice, typeof by === 'string' && by ? by.slice(0, 20) : 'terminal'))) {
    throw new ToolError(Code.CONSENT_ANSWERED, `prompt ${id} was answered meanwhile; the first answer stands`);
  }
  return choice;
}

// Read-modify-write of the sites' entries, as the popup writes them; the worker's settings
// follow through chrome.storage.onChanged.
async function allowSites(sites) {
  const { sites: stored = {} } = await chrome.storage.local.get('sites');
  const next = { ...stored };
  for (const site of sites) next[site] = { ...next[site], mode: 'allow' };
  await chrome.storage.local.set({ sites: next });
}

// A grant for each site, replacing a narrower or equal one of the same agent; the in-memory
// settings are updated at once, so the next call needs no wait for storage's change event.
async function remember(sites, agent, access) {
  const { grants: stored } = await chrome.storage.local.get('grants');
  const kept = normalize('grants', stored).filter((g) => !(sites.includes(g.site) && g.agent === agent && (access === 'act' || g.access === 'read')));
  const next = [...kept, ...sites.map((site) => ({ site, agent, access, at: Date.now() }))];
  settings().grants = next;
  await chrome.storage.local.set({ grants: next });
}

export function list(tabId) {
  return [...pending.values()]
    .filter((p) => tabId == null || p.tabId === tabId)
    .map((p) => ({ id: p.id, tabId: p.tabId, site: p.site, tool: p.tool, args: p.shown, port: p.port, title: p.title, agent: p.agent, access: p.access, choices: choicesFor(p), createdAt: p.createdAt, deadline: p.deadline }));
}

function formatMs(ms) {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

// Chromium's notifications carry two answer buttons (allow once, deny: a notification has no
// room for a third), a click on the notification itself opens the popup with all three, and
// closing one denies. Firefox's have no
// buttons nor requireInteraction, and its onClosed claims byUser for every close (also when the
// desktop expires the notification, or has no notification service at all), so there the
// notification says "click to answer", a click opens the popup in a small window, and closing
// it means nothing: an unanswered prompt is denied by its timeout.
function notify(p) {
  if (!chrome.notifications) return;
  const { heading, message } = noteText(p);
  const deadline = `Unanswered, it lapses in ${formatMs(p.deadline - p.createdAt)} and the call does not run`;
  const common = { type: 'basic', iconUrl: chrome.runtime.getURL('icons/icon128.png'), title: heading };
  const options = isFirefox
    ? { ...common, message: `${message} Click to answer. ${deadline}.` }
    : { ...common, message, contextMessage: `${deadline}. Click here to allow this site always`, buttons: [{ title: 'Allow once' }, { title: 'Deny' }], requireInteraction: true, priority: 2 };
  chrome.notifications.create(p.id, options).catch((e) => console.info('browser-mcp: no notification (answer in the popup)', e.message));
}

// Registered at module load, i.e. synchronously at service-worker start.
chrome.notifications?.onButtonClicked?.addListener((id, button) => answer(id, button === 0 ? 'once' : 'deny'));
chrome.notifications?.onClicked.addListener((id) => popups.open(id, pending.get(id)?.tabId));
if (!isFirefox) chrome.notifications?.onClosed.addListener((id, byUser) => byUser && answer(id, 'deny'));
