// Keeps one page holding a port to the worker (content/lifeline.js), so that a stopped worker
// is started again by that page reconnecting (issue 20) — one page, not every page a person
// opens (issue 30). When the page holding it goes (closed, navigated, put in the back/forward
// cache), another web tab gets it; after a worker restart the page that held it reconnects, and
// only if none does within PLACE_MS is a new one placed.
const NAME = 'browser-mcp:wake';
const PLACE_MS = 1500;
const ports = new Set();
let timer = null;
let due = Infinity;

async function place() {
  timer = null;
  due = Infinity;
  if (ports.size) return;
  const tabs = await chrome.tabs.query({ url: ['http://*/*', 'https://*/*'] }).catch(() => []);
  // The active tab first: the likeliest to stay.
  tabs.sort((a, b) => Number(b.active) - Number(a.active));
  for (const t of tabs) {
    if (t.discarded || t.status === 'unloaded') continue;
    try {
      await chrome.scripting.executeScript({ target: { tabId: t.id, frameIds: [0] }, files: ['content/lifeline.js'] });
      return;
    } catch {
      // a page scripts may not reach (the site's own rules, an error page): the next one
    }
  }
}

// The sooner of this and any placement already planned.
function placeSoon(ms = PLACE_MS) {
  if (ports.size || Date.now() + ms >= due) return;
  clearTimeout(timer);
  due = Date.now() + ms;
  timer = setTimeout(place, ms);
}

export function initLifeline() {
  chrome.runtime.onConnect.addListener((port) => {
    if (port.name !== NAME) return;
    ports.add(port);
    port.onDisconnect.addListener(() => {
      ports.delete(port);
      placeSoon(100);
    });
  });
  // A page that finished loading, while no page holds the line: at once, as the worker may be
  // stopped any moment.
  chrome.webNavigation.onCompleted.addListener((d) => d.frameId === 0 && placeSoon(0));
  placeSoon();
}
