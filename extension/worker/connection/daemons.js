// What the user is told about the daemons: every port we are connected to, or were until
// recently, with its version, since when, why it went away, and whether it is trusted (issue
// 21): `trust` is 'native host' (proved the token the native host gave us), 'paired' (proved
// a pairing), 'unpaired' (found, but shares no key with this browser: pair it) or 'refused'
// (answered, but could not prove it is the user's browser-mcpd). background.js owns the
// connections and reports to this module; the popup, the options page and the badge read it.
import * as badge from '../state/badge.js';
import { settings } from '../../shared/settings.js';

const entries = new Map(); // port -> Entry
const FORGET_AFTER_MS = 10 * 60_000; // a daemon that left for good stops being news
let native = { state: 'starting', detail: 'asking the native-messaging host', since: Date.now() };

const entry = (port) => {
  let e = entries.get(port);
  if (!e) {
    e = { port, state: 'connecting', source: 'port scan', version: null, since: Date.now(), reason: null, refusal: null, attempts: 0, retryAt: null, identified: false, identity: null, trust: null, pairingId: null };
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

export function opened(port, trust, pairingId = null) {
  const e = entry(port);
  Object.assign(e, { state: 'connected', since: Date.now(), reason: null, refusal: null, attempts: 0, retryAt: null, identified: true, trust, pairingId });
  publish();
}

// Found, but it knows none of this browser's keys (`why`: 'none' when the browser has none to
// offer, 'unknown' when the daemon knew none of them, e.g. a revoked pairing).
export function unpaired(port, why) {
  const e = entry(port);
  const reason = why === 'unknown' ? 'it knows none of this browser’s pairings (revoked?)' : 'this browser is not paired with it';
  if (e.state !== 'unpaired' || e.reason !== reason) e.since = Date.now();
  Object.assign(e, { state: 'unpaired', trust: 'unpaired', reason, retryAt: null, identified: true, pairingId: null });
  publish();
}

// Answered, but did not prove it holds the key it was asked for: another user's program, or
// something that is not browser-mcpd. Our words only: what an unproven daemon says is not shown.
export function refused(port, code) {
  const e = entry(port);
  const reason = code === 'NO_HANDSHAKE'
    ? 'refused: it does not authenticate itself (not browser-mcpd, or an older one)'
    : code === 'BAD_PROOF'
      ? 'refused: it did not accept this browser’s proof'
      : 'refused: it could not prove it is your browser-mcpd (another user’s program?)';
  if (e.state !== 'refused' || e.reason !== reason) e.since = Date.now();
  Object.assign(e, { state: 'refused', trust: 'refused', reason, retryAt: null, identified: true, pairingId: null });
  publish();
}

// Nothing answers on a scanned port any more.
export function gone(port) {
  const e = entries.get(port);
  if (e && ['unpaired', 'refused'].includes(e.state)) forget(port);
}

// What `GET /` said the daemon on `port` is (name, version, start), or null when it did not
// say it is browser-mcpd: only those are asked for the handshake.
export const identity = (port) => entries.get(port)?.identity ?? null;

// The ports a pairing code is tried on: daemons found that this browser does not trust yet,
// or, when there are none, every daemon found.
export function pairable() {
  const found = [...entries.values()].filter((e) => e.identified && e.identity);
  const untrusted = found.filter((e) => e.state !== 'connected');
  return (untrusted.length ? untrusted : found).map((e) => e.port);
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
    e.identity = JSON.stringify([body.name, body.version ?? null, body.startedAt ?? null]);
    if (body.version) e.version = String(body.version);
  } else if (body?.error?.code) {
    e.identified = true;
    e.version = null; // whoever answered before on this port may not be who refuses now
    e.identity = null;
    // The code only: the message is the words of a program that has not proved who it is.
    e.refusal = `refused: ${body.error.code}`;
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
  const bad = all.filter((e) => ['reconnecting', 'lost', 'failed', 'unpaired', 'refused'].includes(e.state));
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
