// The DOM tools go into a page of a tab an agent drives (or opened) as soon as the page has
// loaded: an agent navigates, or clicks a link, and then looks, and its next call would
// otherwise wait for the tools' compile and first run in the page (issue 30). The injection
// waits for the page's load event, so it does not compete with the page's own loading; a call
// that comes sooner waits for it instead of starting another (frame-channel.js). A page the
// person opened in a tab no agent drives keeps paying nothing, and so does a site the person
// has not left open to agents (off, built-ins off, or asked about call by call).
import { isDriven } from './dialogs.js';
import { isAgentTab } from './agent-tabs.js';
import { warmFrame } from './frame-channel.js';
import { siteOf, sitePolicy } from '../shared/policy.js';

function openToAgents(url) {
  const site = siteOf(url);
  if (!site) return true; // not a web page: nothing a site policy covers
  const p = sitePolicy(site);
  return p.mode === 'allow' && p.builtins;
}

// Every top frame's load in the browser comes here: the tab is asked first (a lookup), so the
// person's own pages cost no URL parse or policy.
async function onCompleted({ tabId, frameId, url }) {
  if (frameId !== 0) return;
  if (!isDriven(tabId) && !(await isAgentTab(tabId))) return;
  if (openToAgents(url)) await warmFrame(tabId, 0, { ahead: true });
}

export function initKitAhead() {
  chrome.webNavigation.onCompleted.addListener(onCompleted);
}
