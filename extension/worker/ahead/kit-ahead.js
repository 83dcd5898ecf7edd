// The DOM tools go into a page ahead of an agent's call, so that the call does not wait for
// their compile and first run in the page (issue 30). Where an agent's next call will likely go:
// - a page that has loaded in a tab an agent drives (or opened): an agent navigates, or clicks a
//   link, and then looks;
// - the page in the focused tab, where a call that names no tab goes: once as an agent starts
//   work (the page the person has in front of them, when they ask an agent about it), and while
//   the agent follows the person (the focused tab was one it drove when the person turned to
//   another, for as long as a tab counts as driven) the page each tab they turn to shows, and
//   each that loads in front.
// The injection waits for the page's load event, so it does not compete with the page's own
// loading; a call that comes sooner waits for it instead of starting another
// (frame-channel.js). Any other page keeps paying nothing (a person browsing while an agent
// works in a tab of its own included), and so does a site the person has not left open to
// agents (off, built-ins off, or asked about call by call).
import { DRIVE_MS, isDriven } from '../frames/dialogs.js';
import { isAgentTab } from '../state/agent-tabs.js';
import { warmFrame } from '../frames/frame-channel.js';
import { isWebUrl } from '../frames/page.js';
import { focusedTab, onFocus } from '../connection/tabs.js';
import { isWatching } from './watch.js';
import { siteOf, sitePolicy } from '../../shared/policy.js';

function openToAgents(url) {
  const site = siteOf(url);
  if (!site) return true; // not a web page: nothing a site policy covers
  const p = sitePolicy(site);
  return p.mode === 'allow' && p.builtins;
}

let followsUntil = 0; // the agent follows the person's focused tab until then
const follows = () => Date.now() < followsUntil && isWatching();

// Every top frame's load in the browser comes here: the tab is asked first (lookups), so the
// person's own pages cost no URL parse or policy.
async function onCompleted({ tabId, frameId, url }) {
  if (frameId !== 0) return;
  const front = tabId === focusedTab() && follows();
  if (!front && !isDriven(tabId) && !(await isAgentTab(tabId))) return;
  if (openToAgents(url)) await warmFrame(tabId, 0, { ahead: true });
}

// The focused tab's page, if it has loaded (a loading one is warmed by onCompleted), while an
// agent is at work. warmFrame does nothing where the document has the tools already.
export async function warmFront(tabId = focusedTab()) {
  if (tabId === null || !isWatching()) return;
  const tab = await chrome.tabs.get(tabId).catch(() => null);
  if (tab?.status !== 'complete' || tab.discarded || !isWebUrl(tab.url) || !openToAgents(tab.url)) return;
  await warmFrame(tabId, 0, { ahead: true });
}

function focused(tabId, before) {
  if (before !== null && isDriven(before)) followsUntil = Date.now() + DRIVE_MS;
  if (follows()) warmFront(tabId);
}

export function initKitAhead() {
  chrome.webNavigation.onCompleted.addListener(onCompleted);
  onFocus(focused);
}
