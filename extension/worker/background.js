// Service worker: finds browser-mcpd daemons, keeps one WebSocket to each, and answers their
// requests. Discovery: the native-messaging host pushes the live daemons (with their tokens);
// without a host, ports 8765–8785 on loopback are scanned. Discovery only finds: every socket
// starts with the trust handshake (auth.js), and a daemon that cannot prove it holds this
// browser's token or pairing hears nothing about the browser (issue 21).
import * as proto from '../shared/protocol.js';
import * as tabs from './connection/tabs.js';
import { callBuiltin, isBuiltinName } from './tools/builtins.js';
import { initObserve } from './tools/observe.js';
import { initDialogs } from './frames/dialogs.js';
import { initKitAhead, warmFront } from './ahead/kit-ahead.js';
import { initLifeline } from './connection/lifeline.js';
import { forgetTab } from './frames/frames.js';
import { loadSettings, onSettingsChanged, settings } from '../shared/settings.js';
import * as daemons from './connection/daemons.js';
import * as auth from './connection/auth.js';
import * as pairings from './connection/pairings.js';
import { setPairHandler } from './ui-api.js';
import { loadActivity, runCall } from './calls/activity.js';
import { siteOf } from '../shared/policy.js';
import { watched } from './calls/call-watch.js';
import { endHandoff, handOff } from './calls/handoff.js';
import { answerFrom } from './calls/consent.js';
import { isManagedBrowser, launchedSynthetic, setDaemonInput, setLaunchInput, setManagedBrowser } from './state/managed.js';
import { isFirefox } from '../shared/platform.js';
import * as watch from './ahead/watch.js';

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

const HANDSHAKE_MS = 5_000; // a daemon answers the trust handshake at once
// The daemon's BiDi input (issue 57) takes a few milliseconds; a drag's paced moves under 1 s.
const INPUT_MS = 10_000;
let inputSeq = 0;

const conns = new Map(); // port -> Connection
const tokens = new Map(); // port -> token last heard from the native host
// port -> what the last failed handshake there was tried with and against: a scan does not
// knock again on a daemon that refused the same keys, until the keys or the daemon change.
const attempted = new Map();
let nativePort = null;
let nativeServers = null; // Map port -> token while the native host is authoritative
let scanTimer = null;
let scanDelay = BACKOFF.first;
let ready = null; // resolves when the session id and tab state are loaded

const backoff = (ms) => Math.min(ms * 2, BACKOFF.max);

// A WebSocket that offers the trust handshake; resolves once open, with the queue the
// handshake reads from. Nothing about the browser is sent on it before `auth.handshake` ends.
function openSocket(port) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/`, [auth.SUBPROTOCOL]);
    const inbox = new auth.Inbox(HANDSHAKE_MS);
    let opened = false;
    ws.onmessage = (e) => inbox.push(e.data);
    ws.onopen = () => {
      opened = true;
      resolve({ ws, inbox });
    };
    ws.onclose = (event) => {
      inbox.close(`closed (${event.code}${event.reason ? `: ${event.reason}` : ''})`);
      if (!opened) reject(event);
    };
    ws.onerror = () => {}; // onclose follows and decides; Chromium already logs the failure
  });
}

function closeQuietly(ws) {
  try {
    ws.close(1000);
  } catch {
    // already closing
  }
}

// Who this browser is, for the daemon's list of pairings.
async function pairingLabel() {
  const b = await proto.browserInfo();
  return { name: b.name, version: b.version, sessionId: await proto.loadSessionId() };
}

// The trust handshake on an open socket; `null` when it succeeded, the AuthFailure otherwise.
async function authenticate(sock, port, candidate, label) {
  if (sock.ws.protocol !== auth.SUBPROTOCOL) {
    return new auth.AuthFailure('NO_HANDSHAKE', 'it does not authenticate itself');
  }
  try {
    const nonces = await auth.handshake({ send: (m) => sock.ws.send(JSON.stringify(m)), next: () => sock.inbox.next(), port, candidate, label });
    return { ok: true, ...nonces };
  } catch (e) {
    return e instanceof auth.AuthFailure ? e : new auth.AuthFailure('MALFORMED', String(e?.message ?? e));
  }
}

class Connection {
  constructor(port, source) {
    this.port = port;
    this.source = source; // 'native host' | 'port scan'
    this.token = nativeServers?.get(port) ?? null;
    this.ws = null;
    this.retryDelay = BACKOFF.first;
    this.retryTimer = null;
    this.closed = false; // closed on purpose: do not come back
    this.everOpened = false;
    this.held = null; // messages waiting for `connected`
    this.inputs = new Map(); // requestId -> {resolve, reject, timer}: trusted input the daemon performs
    this.open();
  }

  get isOpen() {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  // The keys to try, best first: the token the native host gave for this port, then this
  // profile's pairings (a scanned daemon, or one whose discovery file has no token).
  candidates() {
    const token = this.token ?? tokens.get(this.port);
    const list = token ? [{ kind: 'token', keyId: 'token', token }] : [];
    if (this.source === 'port scan' || !token) list.push(...pairings.candidates(this.port));
    return list;
  }

  async open() {
    // Never decide inside the constructor: the caller puts us in `conns` after it returns,
    // and an outcome decided before that would leave a dead entry there.
    await null;
    if (this.closed) return;
    daemons.connecting(this.port, this.source);
    const candidates = this.candidates();
    if (!candidates.length) return this.untrusted(new auth.AuthFailure('NO_KEY', 'no key to try'), candidates);
    let failure = null;
    for (const candidate of candidates) {
      let sock;
      try {
        sock = await openSocket(this.port);
      } catch (event) {
        return this.unreachable(event);
      }
      if (this.closed) return closeQuietly(sock.ws);
      const result = await authenticate(sock, this.port, candidate);
      if (result.ok) return this.established(sock, candidate);
      closeQuietly(sock.ws);
      failure = result;
      // Another pairing may be the one this daemon knows.
      if (failure.code !== 'UNKNOWN_PAIRING') break;
    }
    if (this.closed) return;
    if (failure.code === 'CLOSED' || failure.code === 'TIMEOUT') return this.unreachable({ code: 1006, reason: failure.message }, true);
    this.untrusted(failure, candidates);
  }

  established(sock, candidate) {
    const ws = sock.ws;
    this.ws = ws;
    attempted.delete(this.port);
    this.trust = candidate.kind === 'token' ? 'native host' : 'paired';
    this.pairingId = candidate.kind === 'pairing' ? candidate.id : null;
    if (this.pairingId) pairings.used(this.pairingId);
    ws.onmessage = (event) => this.receive(event.data);
    ws.onclose = (event) => {
      watch.forget(ws);
      for (const w of this.inputs.values()) {
        clearTimeout(w.timer);
        w.reject(new proto.ToolError(proto.Code.TOOL_ERROR, 'the daemon went away before it said whether it performed the input'));
      }
      this.inputs.clear();
      if (this.ws !== ws) return;
      this.ws = null;
      // Closed on purpose, or replaced by a newer connection to the port (a pairing, new servers
      // from the native host): the port's entry in the list is the newer one's now, and a late
      // close of this socket (the daemon's 4000 among them) must not mark it lost.
      if (this.closed || conns.get(this.port) !== this) return;
      const retryInMs = this.source === 'native host' ? this.retryDelay : null;
      daemons.closed(this.port, event, { wasOpen: true, retryInMs });
      console.info(`browser-mcp: daemon on port ${this.port} went away`);
      this.lost();
    };
    daemons.opened(this.port, this.trust, candidate.id);
    this.everOpened = true;
    this.retryDelay = BACKOFF.first;
    console.info(`browser-mcp: connected to daemon on port ${this.port} (${this.trust})`);
    this.sendConnected();
    // A Firefox the daemon launched: the daemon makes its trusted input (WebDriver BiDi).
    if (isFirefox && isManagedBrowser() && !launchedSynthetic()) setDaemonInput((tabId, actions, probe) => this.input(tabId, actions, probe));
  }

  // Trusted input the daemon performs for tab `tabId`: `input` out, `inputDone` back.
  input(tabId, actions, probe) {
    if (!this.isOpen) return Promise.reject(new proto.ToolError('UNSUPPORTED', 'the daemon that launched this browser is not connected'));
    const requestId = `input_${++inputSeq}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.inputs.delete(requestId);
        reject(new proto.ToolError(proto.Code.TOOL_ERROR, `the daemon did not perform the input within ${INPUT_MS / 1000} s`));
      }, INPUT_MS);
      this.inputs.set(requestId, { resolve, reject, timer });
      this.send(proto.input(requestId, tabId, actions, probe));
    });
  }

  inputDone(msg) {
    const waiting = this.inputs.get(msg.requestId);
    if (!waiting) return;
    this.inputs.delete(msg.requestId);
    clearTimeout(waiting.timer);
    if (msg.error) waiting.reject(new proto.ToolError(msg.error.code || proto.Code.TOOL_ERROR, msg.error.message || 'the daemon did not perform the input'));
    else waiting.resolve();
  }

  // Nothing to talk to (or it hung up during the handshake): as a lost connection.
  unreachable(event, wasOpen = false) {
    if (this.closed) return;
    const retryInMs = this.source === 'native host' ? this.retryDelay : null;
    daemons.closed(this.port, event, { wasOpen, retryInMs });
    this.lost();
  }

  // It answered but did not prove it is the user's daemon, or knows none of our keys.
  untrusted(failure, candidates) {
    if (this.closed) return;
    const unpaired = failure.code === 'UNKNOWN_PAIRING' || failure.code === 'NO_KEY';
    if (unpaired) daemons.unpaired(this.port, failure.code === 'NO_KEY' ? 'none' : 'unknown');
    else daemons.refused(this.port, failure.code);
    console.warn(`browser-mcp: port ${this.port}: ${unpaired ? 'not paired' : 'refused'} (${failure.code})`);
    attempted.set(this.port, signature(this.port, candidates));
    if (this.source === 'native host') {
      this.retryTimer = setTimeout(() => !this.closed && this.open(), this.retryDelay);
      this.retryDelay = backoff(this.retryDelay);
      return;
    }
    if (conns.get(this.port) === this) conns.delete(this.port);
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

  // Only on an authenticated socket: `this.ws` is set by `established` alone.
  send(msg) {
    if (this.held) this.held.push(msg);
    else if (this.isOpen) this.ws.send(JSON.stringify(msg));
  }

  // `replaced`: a new connection to the same daemon follows at once (after a pairing), so what
  // is known of the daemon (its version, from `GET /`) stays: the new one is not probed again.
  close({ replaced = false } = {}) {
    this.closed = true;
    clearTimeout(this.retryTimer);
    if (conns.get(this.port) === this) conns.delete(this.port);
    if (!replaced) daemons.forget(this.port);
    if (this.ws) closeQuietly(this.ws);
  }

  // A daemon the native host told us about is retried with backoff; a scanned port is dropped
  // and left to the next scan, which also covers a daemon that restarts on another port.
  lost() {
    if (this.closed) return;
    if (this.source === 'native host' && nativeServers?.has(this.port)) {
      this.retryTimer = setTimeout(() => !this.closed && this.open(), this.retryDelay);
      this.retryDelay = backoff(this.retryDelay);
      return;
    }
    if (conns.get(this.port) === this) conns.delete(this.port);
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

// What a handshake at `port` would be tried with, and what the port said it is.
function signature(port, candidates) {
  return JSON.stringify([candidates.map((c) => c.keyId), daemons.identity(port)]);
}

// --- pairing (popup → worker) -----------------------------------------------------------------

const PAIR_WORDS = {
  BAD_CODE: null, // parseCode's own words
  NO_DAEMON: null,
  UNKNOWN_CODE: 'No daemon knows this code: check it for a typo, or run `browserctl pair` again.',
  CODE_USED: 'This code was already used. Run `browserctl pair` for a new one.',
  CODE_EXPIRED: 'This code has expired. Run `browserctl pair` for a new one.',
  UNAVAILABLE: 'The daemon could not save the pairing (see its log).',
};

// Tries a code printed by `browserctl pair` with every daemon found that this browser does not
// trust yet; the one that proves it holds the code is paired with. Another user's program
// answering on a port learns the code's id and a nonce, nothing it can use.
async function pairWithCode(typed) {
  const secret = auth.parseCode(typed);
  const keyId = await auth.codeKeyId(secret);
  const label = await pairingLabel();
  const found = daemons.pairable();
  if (!found.length) {
    const { first, last } = settings().scanPorts;
    throw new auth.AuthFailure('NO_DAEMON', `No daemon found on ports ${first}–${last}. Start browser-mcpd, then try again.`);
  }
  const failures = [];
  for (const port of found) {
    let sock;
    try {
      sock = await openSocket(port);
    } catch {
      continue;
    }
    const result = await authenticate(sock, port, { kind: 'code', keyId, secret }, label);
    closeQuietly(sock.ws);
    if (!result.ok) {
      failures.push(result.code);
      continue;
    }
    const pairing = await auth.pairingFromCode(secret, result.browserNonce, result.daemonNonce);
    await pairings.addPairing({ ...pairing, port });
    console.info(`browser-mcp: paired with the daemon on port ${port} (pairing ${pairing.id})`);
    attempted.delete(port);
    conns.get(port)?.close({ replaced: true });
    const source = nativeServers?.has(port) ? 'native host' : 'port scan';
    conns.set(port, new Connection(port, source));
    return { paired: true, port, id: pairing.id };
  }
  // The most telling answer: a daemon that knew the code beats one that did not.
  const code = ['CODE_USED', 'CODE_EXPIRED', 'UNAVAILABLE', 'UNKNOWN_CODE'].find((c) => failures.includes(c));
  if (code) throw new auth.AuthFailure(code, PAIR_WORDS[code]);
  throw new auth.AuthFailure('NO_DAEMON', 'No daemon that answered could prove it printed this code. Is browser-mcpd running as you?');
}

setPairHandler(async (typed) => {
  try {
    return await pairWithCode(typed);
  } catch (e) {
    return { paired: false, code: e.code || 'ERROR', message: e.message };
  }
});

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
      // requestId: not in seed 001 (additive); a daemon that sends none hears the refusal as
      // an error it cannot place, and its close times out as before.
      try {
        await tabs.closeTab(msg.tabId);
      } catch (e) {
        conn.send(proto.requestFailed(msg.requestId ?? null, e));
      }
      return;
    case 'groupTabs':
      return tabs.groupTabs(msg);
    case 'endHandoff':
      return endHandoff(msg.tabId, msg.answer);
    case 'answerConsent':
      // The person at a terminal (issue 60): answered as a click in the popup would be.
      try {
        conn.send(proto.answeredConsent(msg.requestId ?? null, msg.promptId, await answerFrom(msg.promptId, msg.choice, msg.by)));
      } catch (e) {
        conn.send(proto.requestFailed(msg.requestId ?? null, e));
      }
      return;
    case 'watch': {
      // The vote is this socket's: it goes when the socket closes, and an answer is not sent on
      // one that replaced it.
      const { ws } = conn;
      const on = msg.watching === true;
      await watch.watch(ws, on);
      if (conn.ws === ws) conn.send(proto.watching(msg.requestId ?? null, on));
      if (on) warmFront(); // after the answer: the agent's listing does not wait for it
      return;
    }
    case 'discoverTools':
      try {
        conn.send(proto.toolsDiscovered(msg.callId, msg.tabId, await tabs.refreshPageTools(msg.tabId)));
      } catch (e) {
        conn.send(proto.toolsDiscovered(msg.callId, msg.tabId, null, e));
      }
      return;
    case 'inputDone':
      return conn.inputDone(msg);
    case 'callTool':
      try {
        const run = () => watched(msg.tabId, msg.toolName, () => callTool(msg, conn.port));
        conn.send(proto.toolResult(msg.callId, await runCall(msg, conn.port, run, (note) => conn.send(note))));
      } catch (e) {
        conn.send(proto.toolResult(msg.callId, null, e));
      }
      return;
    default:
      console.debug('browser-mcp: ignoring message type', msg.type);
  }
}

function callTool({ tabId, toolName, args, agent }, port) {
  if (typeof toolName !== 'string' || !toolName) throw new proto.ToolError(proto.Code.INVALID_ARGUMENTS, 'toolName is missing');
  if (!Number.isInteger(tabId)) throw new proto.ToolError(proto.Code.INVALID_ARGUMENTS, 'tabId must be an integer');
  // It waits for the person, not the page: its own path (handoff.js).
  if (toolName === 'browser_handoff') return handOff({ tabId, args: args ?? {}, agent, port });
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
      // Before any connection: a launched browser connects under the daemon's session id.
      if (typeof msg.managed === 'string' && msg.managed) {
        setManagedBrowser(true);
        setLaunchInput(msg.input);
        proto.useSessionId(msg.managed);
      }
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
    if (conn.source !== 'native host' || !nativeServers.has(port) || nativeServers.get(port) !== conn.token) conn.close();
  }
  for (const [port, token] of nativeServers) {
    if (token) tokens.set(port, token);
    if (!conns.has(port)) conns.set(port, new Connection(port, 'native host'));
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
    await daemons.probed(port, response);
    if (nativeServers || conns.has(port) || !daemons.identity(port)) return;
    // Found: whether it is trusted is for the handshake to say. A daemon that refused the
    // same keys before is not asked again until the keys or the daemon change.
    const candidates = [...(tokens.has(port) ? [{ keyId: 'token' }] : []), ...pairings.candidates(port)];
    if (attempted.get(port) === signature(port, candidates)) return;
    conns.set(port, new Connection(port, 'port scan'));
  } catch {
    // nothing listening (or not HTTP): try again next round
    if (!conns.has(port)) daemons.gone(port);
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
initKitAhead();
initLifeline();
chrome.tabs.onRemoved.addListener(forgetTab);
// No daemon hears of a tab before the site policy (and the scan range) is known.
const settingsLoaded = Promise.all([
  loadSettings().catch((e) => console.warn('browser-mcp: loading settings', e)),
  pairings.loadPairings().catch((e) => console.warn('browser-mcp: loading pairings', e)),
]);
// A pairing made or forgotten elsewhere (options page): knock again on the daemons found.
pairings.onPairingsChanged(() => {
  attempted.clear();
  const kept = new Set(pairings.list().map((p) => p.id));
  for (const [, conn] of conns) if (conn.pairingId && !kept.has(conn.pairingId)) conn.close();
  if (!nativeServers) scanSoon();
});
ready = (async () => {
  await settingsLoaded;
  await loadActivity().catch((e) => console.warn('browser-mcp: loading the activity log', e));
  await proto.loadSessionId();
  await tabs.loadState().catch((e) => console.warn('browser-mcp: loading tab state', e));
})();
settingsLoaded.then(startNative);
