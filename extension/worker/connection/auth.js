// The trust handshake (src/protocol/auth.rs has the full description; keep the two in step):
// before the extension says anything about the browser, the daemon proves it holds a key we
// hold too (its token from the native host, or a pairing), then we prove the same. Neither
// side sends the key, so an impostor daemon learns a key id and a random nonce, nothing more.
// Pure functions over WebCrypto and two callbacks: no chrome.* here.

export const SUBPROTOCOL = 'browser-mcp.auth.v1';
const VERSION = 1;
const NONCE_LEN = 32;
const enc = new TextEncoder();

const LABEL = {
  daemon: 'browser-mcp daemon proof v1',
  browser: 'browser-mcp browser proof v1',
  pairingKey: 'browser-mcp pairing key v1',
  pairingId: 'browser-mcp pairing id v1',
  codeId: 'browser-mcp code id v1',
};

// Why a handshake failed, as the extension words it; `code` is the daemon's (or our own).
export class AuthFailure extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

export const b64 = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes)));

export function unb64(s, len) {
  let bin;
  try {
    bin = atob(String(s));
  } catch {
    return null;
  }
  if (bin.length !== len) return null;
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

const hex = (bytes) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, '0')).join('');

function concat(...parts) {
  const arrays = parts.map((p) => (typeof p === 'string' ? enc.encode(p) : new Uint8Array(p)));
  const out = new Uint8Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) {
    out.set(a, at);
    at += a.length;
  }
  return out;
}

const hmacKey = (raw) => crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);

async function hmac(raw, ...parts) {
  return new Uint8Array(await crypto.subtle.sign('HMAC', await hmacKey(raw), concat(...parts)));
}

function transcript(label, keyId, port, browserNonce, daemonNonce) {
  return [label, '\0', keyId, '\0', new Uint8Array([port >> 8, port & 0xff]), browserNonce, daemonNonce];
}

// Crockford's base32: no I, L, O or U; a code survives being read aloud and retyped.
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const CODE_CHARS = 16;

// A pairing code as a person may type it (any case, dashes and spaces, O for 0, I or L for
// 1) → its 10 secret bytes; throws AuthFailure('BAD_CODE', …) with what is wrong.
export function parseCode(typed) {
  let bits = 0n;
  let n = 0;
  for (const raw of String(typed)) {
    let c = raw.toUpperCase();
    if (c === '-' || c === ' ') continue;
    if (c === 'O') c = '0';
    if (c === 'I' || c === 'L') c = '1';
    const v = CROCKFORD.indexOf(c);
    if (v < 0) throw new AuthFailure('BAD_CODE', `“${raw}” is not in a pairing code`);
    bits = (bits << 5n) | BigInt(v);
    n += 1;
  }
  if (n !== CODE_CHARS) throw new AuthFailure('BAD_CODE', `a pairing code has ${CODE_CHARS} characters, not ${n}`);
  const out = new Uint8Array(10);
  for (let i = 0; i < 10; i++) out[i] = Number((bits >> BigInt(72 - 8 * i)) & 0xffn);
  return out;
}

// `code:ID`: the code's public commitment, so the daemon can say "unknown" or "used".
export async function codeKeyId(secret) {
  return `code:${hex((await hmac(secret, LABEL.codeId)).slice(0, 8))}`;
}

// The pairing a successful handshake with a code makes: both sides derive it, nobody sends it.
export async function pairingFromCode(secret, browserNonce, daemonNonce) {
  const key = await hmac(secret, LABEL.pairingKey, '\0', browserNonce, daemonNonce);
  const id = hex((await hmac(secret, LABEL.pairingId, '\0', browserNonce, daemonNonce)).slice(0, 8));
  return { id, key: b64(key) };
}

export async function daemonProof(key, keyId, port, browserNonce, daemonNonce) {
  return hmac(key, ...transcript(LABEL.daemon, keyId, port, browserNonce, daemonNonce));
}

export async function browserProof(key, keyId, port, browserNonce, daemonNonce) {
  return hmac(key, ...transcript(LABEL.browser, keyId, port, browserNonce, daemonNonce));
}

async function verifyDaemonProof(key, keyId, port, browserNonce, daemonNonce, proof) {
  const k = await hmacKey(key);
  return crypto.subtle.verify('HMAC', k, proof, concat(...transcript(LABEL.daemon, keyId, port, browserNonce, daemonNonce)));
}

// The key bytes of a candidate: a token is its UTF-8 text, a pairing key base64, a code its
// secret bytes.
export function keyBytes(candidate) {
  if (candidate.kind === 'token') return enc.encode(candidate.token);
  if (candidate.kind === 'pairing') return unb64(candidate.key, 32);
  return candidate.secret;
}

// Runs the browser's side of the handshake. `send(obj)` writes a message; `next()` resolves
// with the next message the daemon sent (parsed), or rejects when the socket closed or the
// time is up. Resolves with {browserNonce, daemonNonce} once the daemon said authOk; rejects
// with an AuthFailure otherwise, having sent nothing but the `auth` message and, only to a
// daemon that proved itself, our proof.
export async function handshake({ send, next, port, candidate, label }) {
  const key = keyBytes(candidate);
  if (!key) throw new AuthFailure('MALFORMED', 'a stored key is damaged');
  const browserNonce = crypto.getRandomValues(new Uint8Array(NONCE_LEN));
  send({ type: 'auth', v: VERSION, key: candidate.keyId, nonce: b64(browserNonce) });
  const challenge = await next();
  if (challenge?.type === 'authError') throw new AuthFailure(String(challenge.code || 'MALFORMED'), 'the daemon refused the key');
  const daemonNonce = challenge?.type === 'authChallenge' ? unb64(challenge.nonce, NONCE_LEN) : null;
  const proof = challenge?.type === 'authChallenge' ? unb64(challenge.proof, 32) : null;
  if (!daemonNonce || !proof || !(await verifyDaemonProof(key, candidate.keyId, port, browserNonce, daemonNonce, proof))) {
    throw new AuthFailure('DAEMON_UNPROVEN', 'the daemon could not prove it holds the key');
  }
  const mine = await browserProof(key, candidate.keyId, port, browserNonce, daemonNonce);
  send({ type: 'authProof', proof: b64(mine), ...(label ? { browser: label } : {}) });
  const ok = await next();
  if (ok?.type === 'authError') throw new AuthFailure(String(ok.code || 'MALFORMED'), 'the daemon refused our proof');
  if (ok?.type !== 'authOk') throw new AuthFailure('MALFORMED', 'no authOk from the daemon');
  return { browserNonce, daemonNonce };
}

// A queue of incoming messages that `next()` takes from, for the handshake.
export class Inbox {
  constructor(timeoutMs) {
    this.timeoutMs = timeoutMs;
    this.items = [];
    this.waiter = null;
    this.closedWith = null;
  }

  push(data) {
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      msg = { type: 'invalid' };
    }
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w.resolve(msg);
    } else {
      this.items.push(msg);
    }
  }

  close(why) {
    this.closedWith = why;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w.reject(new AuthFailure('CLOSED', why));
    }
  }

  next() {
    if (this.items.length) return Promise.resolve(this.items.shift());
    if (this.closedWith) return Promise.reject(new AuthFailure('CLOSED', this.closedWith));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = null;
        reject(new AuthFailure('TIMEOUT', 'the daemon did not answer the handshake'));
      }, this.timeoutMs);
      this.waiter = {
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
    });
  }
}

// Checks this file against the vectors of src/protocol/auth.rs (tests/it/security/trust_browser.rs and
// browser/face/firefox.rs run it in the real extension and compare with the daemon's own code).
export async function selfTest() {
  const secret = parseCode('K7QM-2XHD-9RTA-4FNV');
  const keyId = await codeKeyId(secret);
  const nb = new Uint8Array(32).fill(1);
  const nd = new Uint8Array(32).fill(2);
  const pairing = await pairingFromCode(secret, nb, nd);
  return {
    codeId: keyId.slice('code:'.length),
    daemonProof: b64(await daemonProof(secret, keyId, 8765, nb, nd)),
    browserProof: b64(await browserProof(secret, keyId, 8765, nb, nd)),
    pairingKey: pairing.key,
    pairingId: pairing.id,
  };
}
