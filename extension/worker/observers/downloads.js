// The downloads each tab started, from chrome.downloads: the last DOWNLOADS_KEPT per tab.
//
// chrome.downloads does not say which tab started a download, so it is traced: first to the tab
// that requested its URL (chrome.webRequest, the last minute), then to the tab whose page is the
// download's referrer, then, for blob: URLs, to the tab showing the blob's origin (the most
// recently used one if there are several). A download none of these finds belongs to no tab and
// is not reported. A tab's list goes when the tab closes (the files stay on disk).
//
// A download an agent's driving caused (a built-in call ran in its tab within the last 30 s)
// goes into one folder of the person's download directory, AGENT_FOLDER, where Chromium lets an
// extension name the file (downloads.onDeterminingFilename; Firefox has no such event, so
// there it lands where the person's downloads do). No tool reads a downloaded file back: the
// agent learns its name, size and where it was saved.
import { Code, ToolError } from '../../shared/protocol.js';
import { bounds, clip, clock, fit } from './ring.js';
import { responseSize, tabThatRequested } from './network-log.js';
import { isDriven } from '../frames/dialogs.js';

export const AGENT_FOLDER = 'browser-mcp';

export const DOWNLOADS_KEPT = 100;
export const WAIT_DEFAULT_MS = 20_000;
export const WAIT_MAX_MS = 120_000;

const byId = new Map(); // download id -> record (only downloads traced to a tab)
const tabs = new Map(); // tabId -> [download id], oldest first
let waiters = []; // {tabId, since, resolve, reject, timer}
let recording = () => true; // (tabId, url) => may this tab's downloads be recorded (site policy)
let onFinished = () => {};

const finished = (r) => r.state === 'complete' || r.state === 'interrupted';
const bare = (u) => String(u || '').split('#')[0];

function originOf(url) {
  try {
    const u = new URL(url.startsWith('blob:') ? url.slice(5) : url);
    return /^https?:$/.test(u.protocol) ? u.origin : null;
  } catch {
    return null;
  }
}

async function traceTab(item) {
  for (const url of [item.finalUrl, item.url]) {
    const tabId = url && tabThatRequested(url);
    if (tabId !== null && tabId !== undefined && tabId !== false) return tabId;
  }
  const open = (await chrome.tabs.query({})).filter((t) => t.id !== chrome.tabs.TAB_ID_NONE);
  if (item.referrer) {
    const exact = open.filter((t) => bare(t.url) === bare(item.referrer));
    if (exact.length) return newest(exact).id;
  }
  const origin = originOf(item.url) || originOf(item.referrer || '');
  const sameOrigin = origin ? open.filter((t) => originOf(t.url || '') === origin) : [];
  return sameOrigin.length ? newest(sameOrigin).id : null;
}

const newest = (ts) => ts.reduce((a, b) => ((b.lastAccessed ?? 0) > (a.lastAccessed ?? 0) ? b : a));

function update(r, item) {
  if (item.filename) r.filename = item.filename;
  if (item.finalUrl) r.finalUrl = clip(item.finalUrl, 2000);
  if (item.mime) r.mime = item.mime;
  if (Number.isFinite(item.bytesReceived)) r.bytes = item.bytesReceived;
  if (Number.isFinite(item.totalBytes) && item.totalBytes >= 0) r.totalBytes = item.totalBytes;
  if (item.state) r.state = item.state;
  // Firefox may leave bytesReceived at 0 for a small file that finished at once; its fileSize
  // (the size on disk) or totalBytes then says how big it is.
  if (r.state === 'complete' && !(r.bytes > 0)) {
    const size = [item.fileSize, item.totalBytes, r.totalBytes].find((n) => Number.isFinite(n) && n > 0);
    if (size) r.bytes = size;
  }
  if (item.error) r.error = item.error;
  if (item.endTime) r.endTime = Date.parse(item.endTime);
  if (typeof item.exists === 'boolean') r.exists = item.exists;
}

async function onCreated(item) {
  const tabId = await traceTab(item).catch(() => null);
  if (tabId === null || tabId === undefined) return;
  const tab = await chrome.tabs.get(tabId).catch(() => null);
  if (!tab || !recording(tabId, tab.url || tab.pendingUrl)) return;
  const r = { id: item.id, tabId, url: clip(item.url, 2000), state: 'in_progress', bytes: 0, startTime: Date.parse(item.startTime) || Date.now() };
  update(r, item);
  byId.set(item.id, r);
  const list = tabs.get(tabId) || [];
  list.push(item.id);
  while (list.length > DOWNLOADS_KEPT) byId.delete(list.shift());
  tabs.set(tabId, list);
  // onChanged may have come first (the trace above awaits): catch up with the browser's view.
  const [now] = await chrome.downloads.search({ id: item.id }).catch(() => []);
  if (now) update(r, now);
  settled(r);
}

function onChanged(delta) {
  const r = byId.get(delta.id);
  if (!r) return;
  const was = finished(r);
  const flat = {};
  for (const [k, v] of Object.entries(delta)) if (v && typeof v === 'object' && 'current' in v) flat[k] = v.current;
  update(r, flat);
  if (!was) settled(r);
}

// Called whenever a record may have finished.
function settled(r) {
  if (!finished(r) || r.reported) return;
  // The file name arrives in its own change, sometimes after the state: ask once more.
  r.reported = true;
  catchUp(r).finally(() => {
    r.caughtUp = true;
    onFinished(r.tabId, view(r));
    for (const w of waiters.filter((w) => w.tabId === r.tabId && wants(w, r))) w.done(r);
  });
}

// The browser's view of a finished download. Firefox can call a small file complete with no
// byte count at all (0 bytes, no totalBytes or fileSize, for a 27-byte file, now and then): a
// complete file of no bytes is asked about again a few times, 50 ms apart (so an empty file is
// reported 250 ms later), then sized by its response's Content-Length if one was recorded.
async function catchUp(r) {
  for (let i = 0; i < 6; i++) {
    if (i) await new Promise((resolve) => setTimeout(resolve, 50));
    const [item] = await chrome.downloads.search({ id: r.id }).catch(() => []);
    if (item) update(r, item);
    if (r.state !== 'complete' || r.bytes > 0) return;
  }
  // Still nothing: what the server declared for the URL, as the network log recorded it.
  const declared = responseSize(r.finalUrl || r.url);
  if (declared > 0) r.bytes = declared;
  // Nobody said: the size is unknown, which 0 would misreport.
  else if (!(r.totalBytes >= 0)) delete r.bytes;
}

const view = ({ tabId, reported, caughtUp, ...r }) => r;

function wants(w, r) {
  if (w.since !== null) return r.id > w.since;
  return r.id === w.target || w.target === null;
}

export function forget(tabId) {
  for (const id of tabs.get(tabId) || []) byId.delete(id);
  tabs.delete(tabId);
  for (const w of waiters.filter((x) => x.tabId === tabId)) w.fail(new ToolError(Code.TAB_NOT_FOUND, `tab ${tabId} was closed while waiting for its download`));
}

export const held = () => ({ tabs: [...tabs].filter(([, ids]) => ids.length).map(([id]) => id), downloads: byId.size });

// Chromium waits for this before it writes the file; `suggest` is called once, later (true).
function onDeterminingFilename(item, suggest) {
  traceTab(item).then((tabId) => {
    if (tabId === null || tabId === undefined || !isDriven(tabId)) return suggest();
    const name = String(item.filename || '').split(/[\\/]/).pop() || 'download';
    suggest({ filename: `${AGENT_FOLDER}/${name}`, conflictAction: 'uniquify' });
  }, () => suggest());
  return true;
}

export function initDownloads(mayRecord, finishedHook) {
  recording = mayRecord;
  onFinished = finishedHook;
  chrome.downloads.onDeterminingFilename?.addListener(onDeterminingFilename);
  chrome.downloads.onCreated.addListener((item) => onCreated(item).catch((e) => console.warn('browser-mcp: download', e)));
  chrome.downloads.onChanged.addListener(onChanged);
}

// --- the tool ------------------------------------------------------------------------------------

function lineOf(r) {
  const size = r.bytes === undefined ? 'size not reported by the browser' : r.totalBytes > 0 && r.bytes !== r.totalBytes ? `${r.bytes}/${r.totalBytes} bytes` : `${r.bytes} bytes`;
  const state = r.state === 'interrupted' ? `interrupted (${r.error || 'unknown reason'})` : r.state === 'in_progress' ? 'in progress' : 'complete';
  return `#${r.id} ${state}, ${size}${r.mime ? `, ${r.mime}` : ''}, started ${clock(r.startTime)}\n    from ${r.url}\n    saved as ${r.filename || '(not yet named)'}`;
}

function waitFor(tabId, since, timeoutMs) {
  const list = (tabs.get(tabId) || []).map((id) => byId.get(id)).filter(Boolean);
  // Without `since`: the tab's newest download, or the first one it starts.
  const target = since === null && list.length ? list[list.length - 1].id : null;
  const ready = list.find((r) => finished(r) && r.caughtUp && (since !== null ? r.id > since : r.id === target));
  if (ready) return Promise.resolve(ready);
  return new Promise((resolve, reject) => {
    const w = { tabId, since, target };
    const stop = () => {
      clearTimeout(w.timer);
      waiters = waiters.filter((x) => x !== w);
    };
    w.done = (r) => {
      stop();
      resolve(r);
    };
    w.fail = (e) => {
      stop();
      reject(e);
    };
    w.timer = setTimeout(() => w.fail(new ToolError(Code.WAIT_TIMEOUT, `no download of tab ${tabId}${since !== null ? ` after #${since}` : ''} finished within ${timeoutMs} ms`)), timeoutMs);
    waiters.push(w);
  });
}

export async function query(tabId, args) {
  if (args.since !== undefined && !(Number.isInteger(args.since) && args.since >= 0)) {
    throw new ToolError(Code.INVALID_ARGUMENTS, '"since" must be a download id from an earlier answer');
  }
  if (args.wait !== undefined && typeof args.wait !== 'boolean') throw new ToolError(Code.INVALID_ARGUMENTS, '"wait" must be true or false');
  if (args.timeout !== undefined && !(typeof args.timeout === 'number' && args.timeout >= 0)) {
    throw new ToolError(Code.INVALID_ARGUMENTS, '"timeout" is in milliseconds');
  }
  const since = args.since ?? null;
  if (args.wait) {
    const r = await waitFor(tabId, since, Math.min(args.timeout ?? WAIT_DEFAULT_MS, WAIT_MAX_MS));
    const head = r.state === 'complete' ? `Download #${r.id} finished.` : `Download #${r.id} was interrupted: ${r.error || 'unknown reason'}.`;
    return { content: [{ type: 'text', text: `${head}\n${lineOf(r)}` }], structuredContent: { downloads: [view(r)], cursor: r.id } };
  }
  const { maxChars, limit } = bounds(args);
  const all = tabs.get(tabId) || [];
  const list = all.map((id) => byId.get(id)).filter((r) => r && (since === null || r.id > since));
  const scope = since !== null ? ` after #${since}` : '';
  const out = fit({
    header: list.length ? `Downloads of tab ${tabId}${scope}: ${list.length}.` : `No downloads of tab ${tabId}${scope}.`,
    entries: list, line: lineOf, maxChars, limit, since: since ?? 0, noun: ['download', 'downloads'], hint: '',
  });
  const newest = all.length ? all[all.length - 1] : 0;
  return {
    content: [{ type: 'text', text: out.text }],
    structuredContent: { downloads: out.shown.map(view), cursor: out.more ? out.cursor : Math.max(out.cursor ?? 0, newest), more: out.more },
  };
}
