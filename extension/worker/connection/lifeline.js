// Keeps something holding a port to the worker (content/lifeline.js), so that a stopped worker
// is started again by it reconnecting (issue 20). In Chromium that is an offscreen document of
// the extension's own, so no page of the person's carries it: in the tab that held it, every
// cross-site navigation paid for an isolated world and the script, 3.3 ms of a new renderer's
// main thread (issue 30). Elsewhere (Firefox has no offscreen documents) one web tab holds it,
// not every tab: when the page holding it goes (closed, navigated, put in the back/forward
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

// The offscreen document holding the line; true once it is there. Chromium keeps one at most,
// for as long as the browser runs; if its renderer dies, the lost port creates it again.
const OFFSCREEN = 'offscreen/lifeline.html';
async function holdOffscreen() {
  if (!chrome.offscreen?.createDocument) return false;
  try {
    await chrome.offscreen.createDocument({
      url: OFFSCREEN,
      reasons: ['WORKERS'],
      justification: 'Restarts the extension worker when the browser stops it, so the local browser-mcpd daemon reaches this browser again without a page of the user carrying the script.',
    });
  } catch (e) {
    const open = await chrome.runtime.getContexts?.({ contextTypes: ['OFFSCREEN_DOCUMENT'] }).catch(() => null);
    if (!open?.length) {
      console.warn('browser-mcp: no offscreen lifeline, one web tab carries it', e);
      return false;
    }
  }
  return true;
}

let inPages = false; // whether web tabs carry the line (no offscreen document here)

export function initLifeline() {
  chrome.runtime.onConnect.addListener((port) => {
    if (port.name !== NAME) return;
    ports.add(port);
    port.onDisconnect.addListener(() => {
      ports.delete(port);
      if (inPages) placeSoon(100);
      else holdOffscreen(); // its renderer went: a new one
    });
  });
  // A page that finished loading, while no page holds the line: at once, as the worker may be
  // stopped any moment. Added at start, as only such a listener wakes a stopped worker.
  chrome.webNavigation.onCompleted.addListener((d) => inPages && d.frameId === 0 && placeSoon(0));
  holdOffscreen().then((held) => {
    inPages = !held;
    if (inPages) placeSoon();
  });
}
