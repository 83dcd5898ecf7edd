// Where a tab is and where it is going, the same way in both browser families.
//
// Chromium says so itself: a new tab's `url` is '' until its first navigation commits, and
// `pendingUrl` names the target of any navigation in flight. Firefox has no `pendingUrl` and
// shows about:blank meanwhile, so a tab opened by openTab would offer no built-ins and a call
// could not tell "loading" from "blank". Firefox's tabs are therefore seen through `seen()`,
// which fills in `pendingUrl` (and the empty `url`) from the navigations this extension started
// (openTab, browser_navigate), until they commit.
import { isFirefox } from '../../shared/platform.js';

const STALE_MS = 60_000; // a navigation that never commits (cancelled, a download) is forgotten
const starting = new Map(); // tabId -> {url, at}

export function started(tabId, url) {
  if (isFirefox && Number.isInteger(tabId)) starting.set(tabId, { url, at: Date.now() });
}

// The tab as Chromium would describe it (a copy; the argument is left alone).
export function seen(tab) {
  if (!tab || !isFirefox) return tab;
  const going = starting.get(tab.id);
  if (!going) return tab;
  if (Date.now() - going.at > STALE_MS) {
    starting.delete(tab.id);
    return tab;
  }
  const blank = !tab.url || tab.url === 'about:blank';
  return { ...tab, url: blank ? '' : tab.url, pendingUrl: going.url };
}

export const findTab = (tabId) => chrome.tabs.get(tabId).then(seen, () => null);

export const queryTabs = async (query) => (await chrome.tabs.query(query)).map(seen);

// Registered at module load, before the listeners of the modules that import this one, so they
// see a committed tab without its old pendingUrl. Firefox reports the commit as a change of
// `url` (the about:blank it starts from is not one).
if (isFirefox) {
  chrome.tabs.onUpdated.addListener((tabId, change) => {
    if (change.url && change.url !== 'about:blank') starting.delete(tabId);
  });
  chrome.tabs.onRemoved.addListener((tabId) => starting.delete(tabId));
}
