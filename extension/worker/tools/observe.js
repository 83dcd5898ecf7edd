// The agent's eyes on the page: the built-in tools that report what a page did (console,
// network, downloads), show it (screenshots) and reach the browser's other tabs, and the page
// events the daemons hear (`tabEvent`: consoleError, downloadFinished, navigated).
//
// Nothing of a site whose built-ins the user's policy hides (site off, or built-ins off) is
// recorded or reported. Everything recorded is bounded per tab (console-log.js, network-log.js,
// downloads.js) and forgotten when the tab closes. It lives in the service worker's memory, so
// a restarted worker starts empty.
import * as proto from '../../shared/protocol.js';
import * as consoleLog from '../observers/console-log.js';
import * as network from '../observers/network-log.js';
import * as downloads from '../observers/downloads.js';
import { screenshot } from './screenshot.js';
import { ACTIONS, browserTabs } from './browser-tabs.js';
import { frameBlock, hides, needsConsent, sitePolicy, siteOf } from '../../shared/policy.js';
import { reachOf } from '../frames/reach.js';
import { chainNow, chainOf, initFrameSites } from '../observers/frame-sites.js';
import { onSettingsChanged } from '../../shared/settings.js';
import { DEFAULT_BUDGET, MAX_BUDGET, MIN_BUDGET } from '../observers/ring.js';
import { onConnection } from '../state/badge.js';
import { isDriven } from '../frames/dialogs.js';
import { isManagedBrowser } from '../state/managed.js';
import { isAgentTab } from '../state/agent-tabs.js';
import { within } from '../../shared/within.js';

const target = {
  ref: { type: 'string', description: 'Element ref from the latest browser_snapshot, e.g. "e12"' },
  selector: { type: 'string', description: 'CSS selector, used when no ref is given' },
};
const paging = (noun) => ({
  since: { type: 'integer', minimum: 0, description: `Cursor from an earlier answer: only ${noun} after it, across page loads. Without it: ${noun} since the page loaded.` },
  limit: { type: 'integer', minimum: 1, maximum: 1000, default: 200, description: `At most this many ${noun}` },
  maxChars: { type: 'integer', minimum: MIN_BUDGET, maximum: MAX_BUDGET, default: DEFAULT_BUDGET, description: 'Character budget of the answer; what does not fit is summed up with the cursor to ask again with' },
});

const tool = (name, title, description, properties, annotations) => ({
  name,
  title,
  description,
  inputSchema: { type: 'object', properties, additionalProperties: false },
  annotations: { title, ...annotations },
});

const readOnly = { readOnlyHint: true, openWorldHint: false };

export const OBSERVE_TOOLS = [
  tool('browser_console_messages', 'Console messages',
    'The console messages of this tab (every frame) and its uncaught errors and unhandled promise rejections, oldest first: level, text, source URL and line, time. Since the page loaded, or after a cursor.',
    {
      level: { type: 'string', enum: consoleLog.LEVELS, description: 'Only this level and more severe (debug < log < info < warn < error)' },
      text: { type: 'string', description: 'Only messages containing this text (case-insensitive)' },
      ...paging('messages'),
    }, readOnly),
  tool('browser_network_requests', 'Network requests',
    'The requests of this tab, oldest first: method, URL, status, resource type, size where known, timing, the failure or block reason. Since the page loaded, or after a cursor.',
    {
      url: { type: 'string', description: 'Only URLs containing this text, or matching it with * wildcards ("*://api.example.com/*")' },
      type: {
        oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
        description: `Resource type(s): ${network.TYPES.join(', ')} (also document, fetch, xhr)`,
      },
      status: { oneOf: [{ type: 'integer' }, { type: 'string' }], description: 'A status code (404), a class ("4xx"), "failed" (no response), "error" (failed or ≥ 400), or "pending"' },
      captureBodies: { type: 'boolean', description: `Record request bodies of this tab from now on (true) or stop (false); each is cut to ${network.BODY_MAX} characters. Response bodies are not available.` },
      ...paging('requests'),
    }, { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false }),
  tool('browser_downloads', 'Downloads',
    'The downloads this tab started (file name, URL, state, bytes, where saved); with wait, waits until one has finished.',
    {
      wait: { type: 'boolean', description: 'Wait until a download has finished: the one newer than "since", else the tab\'s newest (or its first)' },
      since: { type: 'integer', minimum: 0, description: 'A download id (cursor) from an earlier answer: only downloads after it' },
      timeout: { type: 'number', minimum: 0, maximum: downloads.WAIT_MAX_MS, description: `With wait: milliseconds, default ${downloads.WAIT_DEFAULT_MS}` },
      limit: paging('downloads').limit,
      maxChars: paging('downloads').maxChars,
    }, readOnly),
  tool('browser_screenshot', 'Screenshot',
    'An image of this tab (brought to the front first): the visible viewport, one element (by ref or selector), or the full page.',
    {
      ...target,
      fullPage: { type: 'boolean', description: 'The whole page, top to bottom, not just the viewport', default: false },
      format: { type: 'string', enum: ['png', 'jpeg'], default: 'png' },
      quality: { type: 'integer', minimum: 0, maximum: 100, description: 'JPEG quality, default 80' },
    }, readOnly),
  tool('browser_tabs', 'Browser tabs',
    'The browser\'s tabs: list them, select (bring to the front), open or close one.',
    {
      action: { type: 'string', enum: ACTIONS, default: 'list' },
      tabId: { oneOf: [{ type: 'integer' }, { type: 'string' }], description: 'For select and close: a tab id from the list (7, or "b1:7")' },
      url: { type: 'string', description: 'For open: an http(s) URL' },
      background: { type: 'boolean', description: 'For open: leave the new tab in the background', default: false },
    }, { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true }),
];

const NAMES = new Set(OBSERVE_TOOLS.map((t) => t.name));
export const isObserveTool = (name) => NAMES.has(name);

export function held() {
  const c = consoleLog.held();
  const n = network.held();
  const d = downloads.held();
  return {
    tabIds: [...new Set([...c.tabs, ...n.tabs, ...d.tabs])].sort((a, b) => a - b),
    consoleMessages: c.messages,
    networkRequests: n.requests,
    downloads: d.downloads,
  };
}

// Tabs that were open before the extension loaded have no capture yet: it starts now, with the
// rest of the page world's file (its guard keeps a frame that has it from running it twice; each
// frame's relay comes with the read that follows, flushConsole).
async function ensureConsoleCapture(tabId) {
  if (consoleLog.knows(tabId)) return;
  try {
    await chrome.scripting.executeScript({ target: { tabId, allFrames: true }, files: ['page/document-start.min.js'], world: 'MAIN' });
  } catch (e) {
    console.debug('browser-mcp: console capture', tabId, e.message);
  }
}

// What frames of a site this call's consent does not cover logged or requested stays out of
// its answer (reach.js), whenever it was recorded.
async function visibleTo(tabId, name, args) {
  const reach = await reachOf(tabId, name, args);
  return (sites) => !sites.some((site) => needsConsent(site, reach));
}

export async function callObserve(tabId, name, args) {
  switch (name) {
    case 'browser_console_messages':
      watched.add(tabId);
      await ensureConsoleCapture(tabId);
      await flushConsole(tabId);
      return consoleLog.query(tabId, args, await visibleTo(tabId, name, args));
    case 'browser_network_requests':
      return network.query(tabId, args, await visibleTo(tabId, name, args));
    case 'browser_downloads':
      return downloads.query(tabId, args);
    case 'browser_screenshot':
      return screenshot(tabId, args);
    case 'browser_tabs':
      return browserTabs(tabId, args, held);
    default:
      throw new proto.ToolError(proto.Code.TOOL_NOT_FOUND, `no built-in tool named ${name}`);
  }
}

// --- recording and events -----------------------------------------------------------------------

let emit = () => {};
const topUrls = new Map(); // tabId -> URL of its top document, for decisions that cannot wait
// Tabs closed lately: a frame's last words may arrive after its tab is gone, and must not bring
// back what the closing freed.
const closed = new Set();
const CLOSED_KEPT = 200;

// Whether the site policy lets the built-ins see this page (mode not off, built-ins on).
function exposes(url) {
  const site = siteOf(url);
  if (!site) return false;
  const p = sitePolicy(site);
  return p.mode !== 'off' && p.builtins;
}

// A request is the business of the page, the frame that makes it (and every frame above that),
// the origin that starts it and the one it goes to: if any of them is hidden, it is not recorded.
// Recorded, it keeps the sites of the page and of the frames that made it, for the reads.
function mayRecordRequest(tabId, d) {
  if (closed.has(tabId)) return null;
  if (d.type === 'main_frame') return exposes(d.url) ? [siteOf(d.url)] : null;
  const top = topUrls.get(tabId) ?? d.documentUrl ?? d.initiator;
  if (top && !exposes(top)) return null;
  if ([d.url, d.initiator, d.documentUrl].some((u) => u && hides(u))) return null;
  const chain = chainNow(tabId, d.type === 'sub_frame' ? d.parentFrameId : d.frameId);
  if (frameBlock(chain) !== null) return null;
  return [...new Set([...chain, top ?? ''].map(siteOf).filter(Boolean))];
}

// consoleError events: at most ERROR_EVENTS per tab in ERROR_WINDOW_MS; the first one after a
// full window says how many were left out.
const ERROR_EVENTS = 10;
const STALE_EVENT_MS = 10_000;
const ERROR_WINDOW_MS = 10_000;
const errorRate = new Map(); // tabId -> {since, sent, suppressed}

function consoleErrorEvent(tabId, m) {
  const now = Date.now();
  let r = errorRate.get(tabId);
  if (!r || now - r.since >= ERROR_WINDOW_MS) {
    r = { since: now, sent: 0, suppressed: r?.suppressed ?? 0 };
    errorRate.set(tabId, r);
  }
  if (r.sent >= ERROR_EVENTS) {
    r.suppressed += 1;
    return;
  }
  r.sent += 1;
  const data = { id: m.id, level: m.level, source: m.source, text: m.text.slice(0, 500), time: m.time };
  for (const k of ['url', 'line', 'column', 'frameUrl']) if (m[k] !== undefined) data[k] = m[k];
  if (r.suppressed) {
    data.suppressed = r.suppressed;
    r.suppressed = 0;
  }
  emit(proto.tabEvent(tabId, 'consoleError', data));
}

// When the policy last changed, per site and for the defaults: console entries reach the worker
// up to ~150 ms after they were logged, and one logged while its site was hidden must not be
// recorded because it arrived after the site came back.
const policyChangedAt = new Map(); // site -> ms
let defaultsChangedAt = 0;

// Only a change that shows what was hidden drops what was logged before it: "ask" hides nothing
// from the eyes, so a site allowed from a consent prompt (or "Allow everywhere") keeps its log.
function onPolicyChanged(keys, before, now) {
  const t = Date.now();
  const hidden = (p) => p.mode === 'off' || !p.builtins;
  if (keys.includes('builtinsByDefault') || (keys.includes('defaultMode') && before.defaultMode === 'off')) defaultsChangedAt = t;
  // The console of a page whose site goes hidden goes with it, as what it logs meanwhile is not
  // recorded: entries the worker had are dropped here, those still in the page as they arrive.
  for (const [tabId, url] of topUrls) {
    const site = siteOf(url);
    if (site && !hidden(sitePolicy(site, before)) && hidden(sitePolicy(site, now))) consoleLog.clear(tabId);
  }
  if (!keys.includes('sites')) return;
  for (const site of new Set([...Object.keys(before.sites), ...Object.keys(now.sites)])) {
    if (JSON.stringify(before.sites[site]) !== JSON.stringify(now.sites[site]) && hidden(sitePolicy(site, before))) policyChangedAt.set(site, t);
  }
}

// `chain` is the URLs of the frame that logged and of the frames above it (frame-sites.js).
function acceptConsole(tabId, tabUrl, frame, chain, batch) {
  const url = tabUrl || topUrls.get(tabId);
  if (closed.has(tabId) || !exposes(url) || frameBlock(chain) !== null) return;
  const sites = [url, ...chain].map(siteOf).filter(Boolean);
  const since = Math.max(defaultsChangedAt, ...sites.map((site) => policyChangedAt.get(site) ?? 0));
  if (since && Array.isArray(batch.entries)) {
    batch = { ...batch, entries: batch.entries.filter((e) => !(Number.isFinite(e?.time) && e.time < since)) };
  }
  const stored = consoleLog.record(tabId, { ...frame, sites: [...new Set(sites)] }, batch);
  // Errors logged while no daemon was connected reach the worker when one connects: they are in
  // the log, but they are not news.
  const recent = Date.now() - STALE_EVENT_MS;
  for (const m of stored) if (m.level === 'error' && m.time >= recent) consoleErrorEvent(tabId, m);
}

// A subframe's words may reach us before the top frame's own do (or before webNavigation
// reports its commit), and must count for the page that holds them, not for the one before it.
async function acceptFrameConsole(tabId, tabUrl, frame, batch) {
  const { urls, topDocumentId } = await chainOf(tabId, frame);
  acceptConsole(tabId, tabUrl, { ...frame, topDocumentId }, urls, batch);
}

function onConsoleBatch(msg, sender) {
  if (msg?.type !== 'console' || sender.id !== chrome.runtime.id || !sender.tab || sender.tab.id < 0) return;
  acceptFrameConsole(sender.tab.id, sender.tab.url, { frameId: sender.frameId, documentId: sender.documentId, url: sender.url }, msg);
}

// Before the log is read: every frame hands over what it has not sent yet, so a message logged
// just before the call is in the answer.
async function flushConsole(tabId) {
  const frames = (await chrome.webNavigation.getAllFrames({ tabId }).catch(() => null)) || [];
  const tab = await chrome.tabs.get(tabId).catch(() => null);
  await Promise.all(frames.map((f) => {
    // A frame empties its queue when it answers, so an answer that comes after we stop waiting
    // is still recorded (for the next read); only the wait is bounded.
    // By chrome.scripting: the relay has no message listener (content.js).
    // A frame without the relay (a subframe, a top frame that loaded while no agent was at
    // work) gets it the first time its log is read (issue 30); until then its page's world
    // keeps what was logged (page/document-start.js).
    const target = { tabId, frameIds: [f.frameId] };
    const take = () => chrome.scripting.executeScript({ target, func: () => globalThis.browserMcpConsole?.take() ?? 'no relay' });
    const accepted = take()
      .then(async ([answer]) => {
        if (answer?.result !== 'no relay') return answer;
        await chrome.scripting.executeScript({ target, files: ['content/console-relay.js'] });
        return (await take())[0];
      })
      .then((answer) => {
        const batch = answer?.result;
        if (batch?.type === 'console' && (batch.entries?.length || batch.dropped)) {
          return acceptFrameConsole(tabId, tab?.url, { frameId: f.frameId, documentId: f.documentId, url: f.url }, batch);
        }
      })
      .catch(() => {}); // a frame gone, or one no script may reach
    return within(accepted, 500);
  }));
}

// A subframe's relay comes with the first read of its log (issue 30), so its lines wait in its
// page's world and go with its document if it navigates away first. In a tab an agent works in
// (driven now, whose console it has read, that it opened, or any tab of a browser the daemon
// launched), a subframe document gets its relay as it starts, as a top frame does while a daemon
// says an agent is at work (watch.js), and its lines flow as they come (within ~150 ms:
// page/document-start.js, console-relay.js).
const watched = new Set();
const agentWorksIn = async (tabId) => watched.has(tabId) || isDriven(tabId) || isManagedBrowser() || isAgentTab(tabId);
async function subframeStarted(d) {
  if (d.frameId === 0 || d.tabId < 0 || d.documentLifecycle === 'prerender' || !(await agentWorksIn(d.tabId))) return;
  chrome.scripting
    .executeScript({ target: { tabId: d.tabId, frameIds: [d.frameId] }, files: ['content/console-relay.js'], injectImmediately: true })
    .catch(() => {}); // a frame no script may reach (or gone already)
}

function navigated(d, sameDocument) {
  if (d.frameId !== 0 || d.tabId < 0 || d.documentLifecycle === 'prerender') return;
  topUrls.set(d.tabId, d.url);
  if (!sameDocument) {
    consoleLog.newPage(d.tabId, d.documentId);
    network.newPage(d.tabId, d.url);
  }
  if (!exposes(d.url)) return;
  const data = { url: d.url, transition: d.transitionType, sameDocument };
  if (d.transitionQualifiers?.length) data.qualifiers = d.transitionQualifiers;
  emit(proto.tabEvent(d.tabId, 'navigated', data));
}

function navigationFailed(d) {
  // ERR_ABORTED: replaced by another navigation, stopped, or turned into a download.
  if (d.frameId !== 0 || d.tabId < 0 || d.error === 'net::ERR_ABORTED' || d.documentLifecycle === 'prerender') return;
  if (exposes(d.url)) emit(proto.tabEvent(d.tabId, 'navigated', { url: d.url, error: d.error, sameDocument: false }));
}

function forget(tabId) {
  watched.delete(tabId);
  consoleLog.forget(tabId);
  network.forget(tabId);
  downloads.forget(tabId);
  topUrls.delete(tabId);
  errorRate.delete(tabId);
  closed.add(tabId);
  if (closed.size > CLOSED_KEPT) closed.delete(closed.values().next().value);
}

// Pages send their console batches only while a daemon is connected (console-relay.js reads
// this flag; chrome.storage.local is open to content scripts): without one, every page's logs
// would keep waking the worker for nothing. Meanwhile each frame holds its last entries.
const LIVE_KEY = 'eyesLive';
let live = null;
function setLive(on) {
  if (on === live) return;
  live = on;
  chrome.storage.local.set({ [LIVE_KEY]: on }).catch(() => {});
}

// Listeners must be added synchronously at service-worker start (background.js), or the
// events that wake the worker are lost.
export function initObserve(emitter) {
  emit = emitter;
  setLive(false);
  onConnection((state) => setLive(state === 'connected'));
  onSettingsChanged(onPolicyChanged);
  chrome.runtime.onMessage.addListener(onConsoleBatch);
  initFrameSites();
  network.initNetwork(mayRecordRequest, hides);
  downloads.initDownloads(
    (tabId, url) => exposes(url),
    (tabId, d) => emit(proto.tabEvent(tabId, 'downloadFinished', d)),
  );
  chrome.webNavigation.onCommitted.addListener((d) => {
    navigated(d, false);
    subframeStarted(d);
  });
  chrome.webNavigation.onHistoryStateUpdated.addListener((d) => navigated(d, true));
  chrome.webNavigation.onReferenceFragmentUpdated.addListener((d) => navigated(d, true));
  chrome.webNavigation.onErrorOccurred.addListener(navigationFailed);
  chrome.tabs.onUpdated.addListener((tabId, change) => change.url && topUrls.set(tabId, change.url));
  chrome.tabs.onRemoved.addListener(forget);
  chrome.tabs.onReplaced.addListener((added, removed) => forget(removed));
  chrome.tabs.query({}).then((all) => {
    for (const t of all) if (t.url && !topUrls.has(t.id)) topUrls.set(t.id, t.url);
  }, () => {});
  for (const ms of [500, 1500, 4000, 10000]) setTimeout(restartStalledLoads, ms);
}

// Chromium resets its network plumbing when an extension with the webRequest permission loads;
// a navigation that was under way at that moment (the start-up page, with --load-extension)
// can stall for good: the tab says "complete" yet never committed its pending URL. Such a
// navigation is started again, once.
const restarted = new Set();
async function restartStalledLoads() {
  const all = await chrome.tabs.query({}).catch(() => []);
  for (const t of all) {
    if (t.url || !/^https?:/i.test(t.pendingUrl || '') || t.status !== 'complete' || restarted.has(t.id)) continue;
    restarted.add(t.id);
    console.info(`browser-mcp: restarting the stalled load of ${t.pendingUrl} in tab ${t.id}`);
    chrome.tabs.update(t.id, { url: t.pendingUrl }).catch(() => {});
  }
}
