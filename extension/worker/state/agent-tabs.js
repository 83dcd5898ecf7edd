// The tabs an agent opened (the daemon's openTab): the agent's own, so a call there does not
// wait for the person's consent the way a call on a tab the person opened does (issue 31).
// Kept in chrome.storage.session too, so a service worker that stops and starts again still
// knows them; a tab leaves the set when it closes. The person can still mark a site "ask"
// (popup or options): a site's own setting holds in every tab, the agent's too.

const KEY = 'agentTabs';
const tabs = new Set();
let loaded = null;

function load() {
  loaded ??= (chrome.storage.session?.get(KEY) ?? Promise.resolve({}))
    .then((stored) => {
      for (const id of stored?.[KEY] ?? []) if (Number.isInteger(id)) tabs.add(id);
    })
    .catch(() => {});
  return loaded;
}

function save() {
  chrome.storage.session?.set({ [KEY]: [...tabs] }).catch(() => {});
}

export async function markAgentTab(tabId) {
  await load();
  tabs.add(tabId);
  save();
}

export async function isAgentTab(tabId) {
  await load();
  return tabs.has(tabId);
}

// Registered at module load, i.e. synchronously at service-worker start.
chrome.tabs.onRemoved.addListener(async (tabId) => {
  await load();
  if (tabs.delete(tabId)) save();
});
