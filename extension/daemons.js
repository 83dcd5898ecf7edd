// What the user is told about the daemons: every port we are connected to, or were until
// recently, with its version, since when, and why it went away. background.js owns the
// connections and reports to this module; the popup, the options page and the badge read it.
import * as badge from './badge.js';
import { settings } from './settings.js';

const entries = new Map(); // port -> Entry
const FORGET_AFTER_MS = 10 * 60_000; // a daemon that left for good stops being news
let native = { state: 'starting', detail: 'asking the native-messaging host', since: Date.now() };

const entry = (port) => {
  let e = entries.get(port);
  if (!e) {
    e = { port, state: 'connecting', source: 'port scan', version: null, since: Date.now(), reason: null, refusal: null, attempts: 0, retryAt: null, identified: false };
    entries.set(port, e);
  }
  return e;
};

export function connecting(port, source) {
  const e = entry(port);
  e.source = source;
  e.attempts += 1;
  // A retry does not erase why the last attempt failed; `opened` will.
  if (!['reconnecting', 'failed', 'lost'].includes(e.state)) e.state = 'connecting';
  e.retryAt = null;
  publish();
}

export function opened(port) {
  const e = entry(port);
  Object.assign(e, { state: 'connected', since: Date.now(), reason: null, refusal: null, attempts: 0, retryAt: null, identified: true });
  publish();
}

// A WebSocket close: `retryInMs` when background.js will try this port again by itself.
export function closed(port, { code, reason }, { wasOpen, retryInMs }) {
  const e = entries.get(port);
  if (!e) return;
  // A socket that never opened says nothing (1006); what `GET /` answered says why.
  const why = !wasOpen && e.refusal ? e.refusal : describeClose(code, reason, wasOpen);
  // A scanned port that never opened and never said it is browser-mcpd is some other program.
  if (!wasOpen && !e.identified && retryInMs == null) {
    entries.delete(port);
    publish();
    return;
  }
  const orderly = code === 1000 || code === 1001;
  e.since = Date.now();
  e.reason = why;
  if (retryInMs != null) {
    e.state = 'reconnecting';
    e.retryAt = Date.now() + retryInMs;
  } else {
    e.state = orderly ? 'stopped' : wasOpen ? 'lost' : 'failed';
    e.retryAt = null;
  }
  publish();
}

export function forget(port) {
  if (entries.delete(port)) publish();
}

// What `GET /` on a scanned port said: our daemon names itself and its version; a daemon that
// wants a token refuses with 401 and an error body.
export async function probed(port, response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    return;
  }
  const e = entries.get(port) || (body?.name === 'browser-mcpd' || body?.error?.code ? entry(port) : null);
  if (!e) return;
  if (body?.name === 'browser-mcpd') {
    e.identified = true;
    if (body.version) e.version = String(body.version);
  } else if (body?.error?.code) {
    e.identified = true;
    e.version = null; // whoever answered before on this port may not be who refuses now
    e.refusal = `refused: ${body.error.code} — ${body.error.message || 'no reason given'}`;
    if (e.state !== 'connected') Object.assign(e, { state: 'failed', reason: e.refusal });
  }
  publish();
}

// The native host's list names the daemons and their versions.
export function nativeList(servers) {
  const n = servers.length;
  setNative('connected', `lists ${n} daemon${n === 1 ? '' : 's'}`);
  for (const s of servers) {
    if (!Number.isInteger(s?.port)) continue;
    const e = entry(s.port);
    e.identified = true;
    e.source = 'native host';
    if (s.version) e.version = String(s.version);
  }
  publish();
}

export function setNative(state, detail) {
  native = { state, detail, since: Date.now() };
  publish();
}

export function inScanRange(port) {
  const { first, last } = settings().scanPorts;
  return port >= first && port <= last;
}

function describeClose(code, reason, wasOpen) {
  if (!wasOpen) return 'could not connect';
  const words = {
    1000: 'closed',
    1001: 'the daemon shut down',
    1006: 'connection dropped',
    1008: 'refused by the daemon',
    1009: 'message too big',
    1011: 'daemon error',
  }[code] || 'closed';
  return `${words} (${code}${reason ? `: ${reason}` : ''})`;
}

function prune() {
  const now = Date.now();
  for (const [port, e] of entries) {
    if (['stopped', 'lost', 'failed'].includes(e.state) && now - e.since > FORGET_AFTER_MS) entries.delete(port);
  }
}

export function snapshot() {
  prune();
  return {
    native: { ...native },
    scanPorts: { ...settings().scanPorts },
    daemons: [...entries.values()].sort((a, b) => a.port - b.port).map((e) => ({ ...e })),
  };
}

function publish() {
  prune();
  const all = [...entries.values()];
  const up = all.filter((e) => e.state === 'connected');
  const bad = all.filter((e) => ['reconnecting', 'lost', 'failed'].includes(e.state));
  const name = (e) => `127.0.0.1:${e.port}${e.version ? ` (v${e.version})` : ''}`;
  if (up.length) {
    badge.setConnection('connected', up.length === 1 ? `connected to ${name(up[0])}` : `connected to ${up.length} daemons`);
  } else if (bad.length) {
    badge.setConnection('error', `${name(bad[0])}: ${bad[0].reason || bad[0].state}`);
  } else {
    const { first, last } = settings().scanPorts;
    badge.setConnection('none', native.state === 'connected' ? 'no daemon running (native host lists none)' : `no daemon found on ports ${first}–${last}`);
  }
}

publish();
