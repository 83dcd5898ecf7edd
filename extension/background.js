// Service worker: finds browser-mcpd daemons, keeps one WebSocket to each, and answers their
// requests. Discovery: the native-messaging host pushes the live daemons (with their tokens);
// without a host, ports 8765–8785 on loopback are scanned.
import * as proto from './protocol.js';
import * as tabs from './tabs.js';
import { callBuiltin, isBuiltinName } from './builtins.js';
import { initObserve } from './observe.js';
import { initDialogs } from './dialogs.js';
import { forgetTab } from './frames.js';
import { loadSettings, onSettingsChanged, settings } from './settings.js';
import * as daemons from './daemons.js';
import { loadActivity, runCall } from './activity.js';
import { siteOf } from './policy.js';
import './ui-api.js';

const NATIVE_HOST = 'dev.browsermcp.host';
// 8765–8785 unless the user chose another range in the options.
const scanPorts = () => {
  const { first, last } = settings().scanPorts;
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
};
const PING_MS = 20_000; // an MV3 worker dies 30 s after its last activity
const WATCHDOG = 'browser-mcp-watchdog';
const BACKOFF = { first: 500, max: 30_000 };
const SCAN_MAX_MS = 10_000; // a daemon started after the browser is found within 10 s

const conns = new Map(); // port -> Connection
const tokens = new Map(); // port -> token last heard from the native host
let nativePort = null;
let nativeServers = null; // Map port -> token while the native host is authoritative
let scanTimer = null;
let scanDelay = BACKOFF.first;
let ready = null; // resolves when the session id and tab state are loaded

const backoff = (ms) => Math.min(ms * 2, BACKOFF.max);

class Connection {
  constructor(port, token) {
    this.port = port;
    this.token = token || null;
    this.ws = null;
    this.retryDelay = BACKOFF.first;
    this.retryTimer = null;
    this.closed = false; // closed on purpose: do not come back
    this.everOpened = false;
    this.held = null; // messages waiting for `connected`
    this.open();
  }

  get isOpen() {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  open() {
    const query = this.token ? `?token=${encodeURIComponent(this.token)}` : '';
    const ws = new WebSocket(`ws://127.0.0.1:${this.port}/${query}`);
    this.ws = ws;
    let wsOpened = false;
    daemons.connecting(this.port, nativeServers?.has(this.port) ? 'native host' : 'port scan');
    ws.onopen = async () => {
      wsOpened = true;
      daemons.opened(this.port);
      this.everOpened = true;
      this.retryDelay = BACKOFF.first;
      console.info(`browser-mcp: connected to daemon on port ${this.port}`);
      await this.sendConnected();
    };
    ws.onmessage = (event) => this.receive(event.data);
    ws.onclose = (event) => {
      if (this.ws !== ws) return;
      this.ws = null;
      const retryInMs = !this.closed && nativeServers?.has(this.port) ? this.retryDelay : null;
      daemons.closed(this.port, event, { wasOpen: wsOpened, retryInMs });
      if (this.everOpened) console.info(`browser-mcp: daemon on port ${this.port} went away`);
      this.lost();
    };
    ws.onerror = () => {}; // onclose follows and decides; Chromium already logs the failure
  }

  // Tab events that happen while the snapshot is taken are held back and sent after it, so the
  // daemon never hears of a tab before `connected` (a repeated event is harmless).
  async sendConnected() {
    this.held = [];
    await ready;
    const msg = proto.connected(await proto.browserInfo(), await tabs.snapshot());
    const held = this.held;
    this.held = null;
    for (const m of [msg, ...held]) this.send(m);
  }

  send(msg) {
    if (this.held) this.held.push(msg);
    else if (this.isOpen) this.ws.send(JSON.stringify(msg));
  }

  close() {
    this.closed = true;
    clearTimeout(this.retryTimer);
    conns.delete(this.port);
    daemons.forget(this.port);
    try {
      this.ws?.close(1000);
    } catch {
      // already closing
    }
  }

  // A daemon the native host told us about is retried with backoff; a scanned port is dropped
  // and left to the next scan, which also covers a daemon that restarts on another port.
  lost() {
    if (this.closed) return;
    if (nativeServers?.has(this.port)) {
      this.retryTimer = setTimeout(() => !this.closed && this.open(), this.retryDelay);
      this.retryDelay = backoff(this.retryDelay);
      return;
    }
    conns.delete(this.port);
    if (this.everOpened) scanSoon();
  }

  async receive(data) {
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      console.warn('browser-mcp: ignoring a non-JSON message');
      return;
    }
    try {
      await handle(this, msg);
    } catch (e) {
      console.warn('browser-mcp: failed to handle', msg?.type, e);
    }
  }
}

async function handle(conn, msg) {
  switch (msg.type) {
    case 'connect': // the daemon's session id: we go by our own, sent in every message
    case 'pong':
      return;
    case 'openTab':
      try {
        await tabs.openTab(msg);
      } catch (e) {
        conn.send(proto.requestFailed(msg.requestId ?? null, e));
      }
      return;
    case 'closeTab':
      return tabs.closeTab(msg.tabId);
    case 'discoverTools':
      try {
        conn.send(proto.toolsDiscovered(msg.callId, msg.tabId, await tabs.refreshPageTools(msg.tabId)));
      } catch (e) {
        conn.send(proto.toolsDiscovered(msg.callId, msg.tabId, null, e));
      }
      return;
    case 'callTool':
      try {
        conn.send(proto.toolResult(msg.callId, await runCall(msg, conn.port, () => callTool(msg))));
      } catch (e) {
        conn.send(proto.toolResult(msg.callId, null, e));
      }
      return;
    default:
      console.debug('browser-mcp: ignoring message type', msg.type);
  }
}

function callTool({ tabId, toolName, args }) {
  if (typeof toolName !== 'string' || !toolName) throw new proto.ToolError(proto.Code.INVALID_ARGUMENTS, 'toolName is missing');
  if (!Number.isInteger(tabId)) throw new proto.ToolError(proto.Code.INVALID_ARGUMENTS, 'tabId must be an integer');
  return isBuiltinName(toolName) ? callBuiltin(tabId, toolName, args ?? {}) : tabs.callPageTool(tabId, toolName, args ?? {});
}

function broadcast(msg) {
  for (const conn of conns.values()) conn.send(msg);
}

// --- discovery: native host first ----------------------------------------------------------------

function startNative() {
  if (nativePort) return;
  let port;
  try {
    port = chrome.runtime.connectNative(NATIVE_HOST);
  } catch (e) {
    console.info('browser-mcp: no native host, scanning ports', e.message);
    daemons.setNative('unavailable', e.message);
    scanIfIdle();
    return;
  }
  nativePort = port;
  // A host that never reports must not leave us blind.
  const silence = setTimeout(() => nativeServers || scanIfIdle(), 2000);
  port.onMessage.addListener((msg) => {
    if (msg?.type === 'servers' && Array.isArray(msg.servers)) {
      clearTimeout(silence);
      daemons.nativeList(msg.servers);
      applyServers(msg.servers);
    }
  });
  port.onDisconnect.addListener(() => {
    clearTimeout(silence);
    // Chromium says why in runtime.lastError, Firefox in port.error.
    const why = chrome.runtime.lastError?.message || port.error?.message || 'host exited';
    console.info(`browser-mcp: native host ${NATIVE_HOST} unavailable (${why}); scanning ports`);
    daemons.setNative('unavailable', why);
    nativePort = null;
    nativeServers = null;
    scanIfIdle();
  });
}

function applyServers(servers) {
  nativeServers = new Map();
  for (const s of servers) {
    if (Number.isInteger(s?.port) && s.port > 0 && s.port < 65536) nativeServers.set(s.port, typeof s.token === 'string' ? s.token : null);
  }
  clearTimeout(scanTimer);
  scanTimer = null;
  for (const [port, conn] of conns) {
    if (!nativeServers.has(port) || nativeServers.get(port) !== conn.token) conn.close();
  }
  for (const [port, token] of nativeServers) {
    if (token) tokens.set(port, token);
    if (!conns.has(port)) conns.set(port, new Connection(port, token));
  }
}

// --- discovery fallback: port scan ----------------------------------------------------------------

// A lost daemon is probably restarting: look again quickly.
function scanSoon() {
  scanDelay = BACKOFF.first;
  scheduleScan(0);
}

// The watchdog retries a missing native host every 30 s; that must not restart a scan that has
// already backed off.
function scanIfIdle() {
  if (!scanTimer) scheduleScan(0);
}

function scheduleScan(delay) {
  if (nativeServers) return; // the host knows better than a scan
  clearTimeout(scanTimer);
  scanTimer = setTimeout(scan, delay);
}

// Ports are probed with a plain HTTP request first and only answering ones get a WebSocket:
// Chromium delays every new WebSocket by up to 5 s once a worker has had many failed ones
// (services/network/websocket_throttler.cc), which a WebSocket per port would cause at once.
const probing = new Set();

async function probe(port) {
  probing.add(port);
  try {
    const response = await fetch(`http://127.0.0.1:${port}/`, { cache: 'no-store', credentials: 'omit', signal: AbortSignal.timeout(2000) });
    daemons.probed(port, response);
    if (!nativeServers && !conns.has(port)) conns.set(port, new Connection(port, tokens.get(port)));
  } catch {
    // nothing listening (or not HTTP): try again next round
  } finally {
    probing.delete(port);
  }
}

function scan() {
  scanTimer = null;
  if (nativeServers) return;
  for (const port of scanPorts()) {
    if (!conns.has(port) && !probing.has(port)) probe(port);
  }
  scheduleScan(scanDelay);
  scanDelay = Math.min(scanDelay * 2, SCAN_MAX_MS);
}

// --- keeping the worker alive ----------------------------------------------------------------------

// Chromium keeps the worker alive while its WebSockets carry messages. Firefox suspends an
// event page 30 s after its last extension API call whatever its sockets do (except while a
// native-messaging port is open), so a connected Firefox also makes one cheap API call here.
setInterval(() => {
  broadcast(proto.ping());
  if ([...conns.values()].some((c) => c.isOpen)) chrome.runtime.getPlatformInfo().catch(() => {});
}, PING_MS);

// If the worker was killed anyway (no daemon for 30 s), the alarm wakes it and the top-level
// code below starts over; if it is alive, this notices a lost native host or a stalled scan.
chrome.alarms.onAlarm.addListener((alarm) => {
  if (alarm.name !== WATCHDOG) return;
  settingsLoaded.then(() => {
    if (!nativePort) startNative();
    else if (!nativeServers) scanIfIdle();
  });
});

chrome.alarms.get(WATCHDOG).then((a) => a || chrome.alarms.create(WATCHDOG, { periodInMinutes: 0.5 }));

// The user changed a site's policy (popup, options): the tabs it covers tell the daemons at
// once. A new scan range drops scanned daemons outside it and looks again.
onSettingsChanged((keys, before, now) => {
  if (keys.some((k) => ['defaultMode', 'builtinsByDefault', 'evaluateEnabled'].includes(k))) {
    tabs.republish(() => true);
  } else if (keys.includes('sites')) {
    const changed = new Set(Object.keys({ ...before.sites, ...now.sites }).filter((site) => JSON.stringify(before.sites[site]) !== JSON.stringify(now.sites[site])));
    tabs.republish((url) => changed.has(siteOf(url)));
  }
  if (keys.includes('scanPorts') && !nativeServers) {
    for (const [port, conn] of conns) if (!daemons.inScanRange(port)) conn.close();
    for (const { port } of daemons.snapshot().daemons) if (!daemons.inScanRange(port)) daemons.forget(port);
    scanSoon();
  }
});

// --- start: top-level, so every wake-up (install, browser start, alarm, message) connects ---------

tabs.initTabs(broadcast);
initObserve(broadcast);
initDialogs();
chrome.tabs.onRemoved.addListener(forgetTab);
// No daemon hears of a tab before the site policy (and the scan range) is known.
const settingsLoaded = loadSettings().catch((e) => console.warn('browser-mcp: loading settings', e));
ready = (async () => {
  await settingsLoaded;
  await loadActivity().catch((e) => console.warn('browser-mcp: loading the activity log', e));
  await proto.loadSessionId();
  await tabs.loadState().catch((e) => console.warn('browser-mcp: loading tab state', e));
})();
settingsLoaded.then(startNative);
