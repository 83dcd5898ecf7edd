// What of a tab a call may reach, beyond the tab's own site (issue 58): a frame of another
// site is the call's only when the person allowed that site, or when the call named it (a ref
// inside the frame, or the ref of the <iframe> that holds it, which a snapshot shows; the page
// browser_navigate goes to) and so had the person asked first (calls/activity.js). In a tab
// that is the agent's own, a site on the default is the agent's too; one the person set to ask
// never is. policy.js holds the rule (needsConsent, frameReach); this knows the tab.
import { needsConsent, siteOf, tabSites } from '../../shared/policy.js';
import { seen } from './navigations.js';
import { isAgentTab } from '../state/agent-tabs.js';
import { isManagedBrowser } from '../state/managed.js';

const REF_KEYS = ['ref', 'startRef', 'endRef'];
const MAX_DEPTH = 64;

// The <iframe> refs of each tab's latest snapshot and the frame behind each, so that a call by
// such a ref names the frame it shows (browser_snapshot {"ref": …} of a hidden frame asks).
const iframes = new Map(); // tabId -> Map(ref -> frameId)

export function noteIframes(tabId, refs) {
  iframes.set(tabId, refs);
}

// What the latest snapshots showed: a snapshot of part of the page adds to it.
export const iframesSeen = (tabId) => iframes.get(tabId) ?? new Map();

// Registered at module load, so it is there when the worker starts.
chrome.webNavigation.onCommitted.addListener(({ tabId, frameId }) => frameId === 0 && iframes.delete(tabId));
chrome.tabs.onRemoved.addListener((tabId) => iframes.delete(tabId));

// The frames a call's refs point into: each ref's frame, and the frame an <iframe>'s ref shows.
// A malformed ref names nothing (the tool refuses it itself).
export function namedFrames(tabId, args) {
  const named = new Set();
  if (!args || typeof args !== 'object') return named;
  for (const key of REF_KEYS) {
    const m = typeof args[key] === 'string' && /^(?:f(\d+))?e\d+$/.exec(args[key]);
    if (!m) continue;
    named.add(m[1] ? Number(m[1]) : 0);
    const behind = iframes.get(tabId)?.get(args[key]);
    if (behind !== undefined) named.add(behind);
  }
  return named;
}

// The sites from each named frame up to the page, as the browser has the frames now.
async function namedSites(tabId, named) {
  const sites = new Set();
  if (![...named].some((id) => id !== 0)) return sites;
  const frames = (await chrome.webNavigation.getAllFrames({ tabId }).catch(() => null)) || [];
  const byId = new Map(frames.map((f) => [f.frameId, f]));
  for (const id of named) {
    let depth = 0;
    for (let f = byId.get(id); f && depth < MAX_DEPTH; f = byId.get(f.parentFrameId), depth++) {
      const site = siteOf(f.url || '');
      if (site) sites.add(site);
    }
  }
  return sites;
}

// The navigation target a call names (browser_navigate's page): its site, or null.
const targetOf = (tool, args) => (tool === 'browser_navigate' && typeof args?.url === 'string' ? siteOf(args.url) : null);

const freeTab = async (tabId) => isManagedBrowser() || isAgentTab(tabId);

// The reach of a call of `tool` with `args` on tab `tabId` that got through activity.js: its
// tab's sites, and what it named (asked about there if it needed the person).
export async function reachOf(tabId, tool, args) {
  const tab = await chrome.tabs.get(tabId).then(seen, () => null);
  const cleared = new Set(tab ? tabSites(tab) : []);
  for (const site of await namedSites(tabId, namedFrames(tabId, args))) cleared.add(site);
  const target = targetOf(tool, args);
  if (target) cleared.add(target);
  return { cleared, free: await freeTab(tabId) };
}

// Before a call runs (activity.js): the sites it names beyond the tab's own (`tabSites`) that
// need the person's answer, and the frames it names (whose documents the answer is for).
export async function beyondTab(tabId, tool, args, tabSitesNow) {
  const reach = { cleared: new Set(tabSitesNow), free: await freeTab(tabId) };
  const frames = namedFrames(tabId, args);
  const named = [...(await namedSites(tabId, frames))];
  const target = targetOf(tool, args);
  if (target) named.push(target);
  return {
    sites: [...new Set(named.filter((site) => needsConsent(site, reach)))],
    frames: [...frames].filter((id) => id !== 0),
    navigating: !!target,
  };
}
