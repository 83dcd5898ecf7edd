// Where a frame stands: its URL and the URLs of the frames above it up to the page, so that what
// a hidden site's frame, or a frame inside it, logs or requests is kept back like the rest of
// that site (policy.js frameBlock). A request must be judged the moment it starts, so each tab's
// frames are also tracked as they navigate; a console batch can wait for the browser's answer.

const trees = new Map(); // tabId -> Map(frameId -> {parent, url})
const MAX_DEPTH = 64;

function treeOf(tabId) {
  let t = trees.get(tabId);
  if (!t) trees.set(tabId, (t = new Map()));
  return t;
}

function note(tabId, frameId, parent, url, newDocument = false) {
  if (tabId < 0 || !Number.isInteger(frameId)) return;
  // A new page in the tab: its frames are new too.
  if (frameId === 0 && newDocument) trees.delete(tabId);
  const t = treeOf(tabId);
  const was = t.get(frameId);
  t.set(frameId, { parent: Number.isInteger(parent) ? parent : was?.parent ?? -1, url: url ?? was?.url ?? '' });
}

// The URLs from `frameId` up to the page, as last seen navigating (may be short after a
// service-worker restart, until the tabs are read again).
export function chainNow(tabId, frameId) {
  const t = trees.get(tabId);
  const chain = [];
  for (let f = t?.get(frameId); f && chain.length < MAX_DEPTH; f = t.get(f.parent)) chain.push(f.url);
  return chain;
}

// The URLs from a frame's document up to the page, asked of the browser, and the page's
// document id (Chromium names documents, so a batch from a page that is already gone counts
// for that page; elsewhere the frame ids are followed).
export async function chainOf(tabId, { frameId, documentId, url }) {
  const urls = [url || ''];
  const get = (q) => chrome.webNavigation.getFrame({ tabId, ...q }).catch(() => null);
  let f = documentId ? await get({ documentId }) : await get({ frameId });
  let topDocumentId = frameId === 0 ? documentId : undefined;
  for (let depth = 0; f && f.parentFrameId !== -1 && depth < MAX_DEPTH; depth++) {
    f = f.parentDocumentId ? await get({ documentId: f.parentDocumentId }) : await get({ frameId: f.parentFrameId });
    if (f) urls.push(f.url || '');
    if (f?.parentFrameId === -1) topDocumentId = f.documentId;
  }
  if (!topDocumentId && frameId !== 0) topDocumentId = (await get({ frameId: 0 }))?.documentId;
  return { urls, topDocumentId };
}

async function readTab(tabId) {
  const frames = await chrome.webNavigation.getAllFrames({ tabId }).catch(() => null);
  for (const f of frames || []) if (!trees.get(tabId)?.has(f.frameId)) note(tabId, f.frameId, f.parentFrameId, f.url);
}

// Listeners are added at service-worker start (background.js), before any request is judged.
export function initFrameSites() {
  chrome.webNavigation.onBeforeNavigate.addListener((d) => note(d.tabId, d.frameId, d.parentFrameId, undefined));
  chrome.webNavigation.onCommitted.addListener((d) => note(d.tabId, d.frameId, d.parentFrameId, d.url, true));
  chrome.webNavigation.onHistoryStateUpdated.addListener((d) => note(d.tabId, d.frameId, d.parentFrameId, d.url));
  chrome.tabs.onRemoved.addListener((tabId) => trees.delete(tabId));
  chrome.tabs.onReplaced.addListener((added, removed) => trees.delete(removed));
  chrome.tabs.query({}).then((tabs) => Promise.all(tabs.map((t) => readTab(t.id))), () => {});
}
