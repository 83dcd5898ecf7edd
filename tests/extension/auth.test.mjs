// The browser's side of the trust handshake (extension/worker/connection/auth.js), held to the
// daemon's own HMACs: auth-vectors.json is what src/protocol/auth.rs computes (its test_vectors
// reads the same file), so a change on either side fails here or there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { webcrypto } from 'node:crypto';

globalThis.crypto ??= webcrypto; // Node 18 has WebCrypto only as node:crypto's webcrypto

const auth = await import('../../extension/worker/connection/auth.js');
const vectors = JSON.parse(readFileSync(new URL('./auth-vectors.json', import.meta.url)));

test('selfTest gives the daemon\'s vectors', async () => {
  assert.deepEqual(await auth.selfTest(), vectors);
});

test('a pairing code survives being read aloud and retyped', () => {
  const canonical = auth.parseCode('K7QM-2XHD-9RTA-4FNV');
  assert.equal(canonical.length, 10);
  assert.deepEqual(auth.parseCode('k7qm 2xhd 9rta 4fnv'), canonical);
  // O reads as 0, I and L as 1.
  assert.deepEqual(auth.parseCode('0000-0000-0000-0001'), auth.parseCode('OOOO-oooo-OOOO-OOOI'));
  assert.deepEqual(auth.parseCode('0000-0000-0000-0001'), auth.parseCode('0000-0000-0000-000L'));
});

test('a malformed code is refused with what is wrong', () => {
  assert.throws(() => auth.parseCode('K7QM-2XHD-9RTA-4FN'), (e) => e.code === 'BAD_CODE' && /16 characters, not 15/.test(e.message));
  assert.throws(() => auth.parseCode('K7QM-2XHD-9RTA-4FNU'), (e) => e.code === 'BAD_CODE' && /“U”/.test(e.message));
});

test('base64 keys of the wrong length or alphabet are refused', () => {
  assert.equal(auth.unb64(auth.b64(new Uint8Array(32)), 32).length, 32);
  assert.equal(auth.unb64(auth.b64(new Uint8Array(31)), 32), null);
  assert.equal(auth.unb64('!!!', 3), null);
  assert.equal(auth.keyBytes({ kind: 'pairing', key: 'short' }), null);
});

// A daemon on the other end of a scripted socket: it proves the key (or not) as the real one does.
function daemon({ key, keyId, port, prove = true }) {
  const sent = [];
  const inbox = new auth.Inbox(1000);
  const send = async (msg) => {
    sent.push(msg);
    if (msg.type === 'auth') {
      const nb = auth.unb64(msg.nonce, 32);
      const nd = new Uint8Array(32).fill(9);
      const proof = prove ? await auth.daemonProof(key, keyId, port, nb, nd) : new Uint8Array(32);
      inbox.push(JSON.stringify({ type: 'authChallenge', nonce: auth.b64(nd), proof: auth.b64(proof) }));
    } else if (msg.type === 'authProof') {
      inbox.push(JSON.stringify({ type: 'authOk' }));
    }
  };
  return { sent, send, next: () => inbox.next() };
}

test('the handshake completes with a daemon that holds the key', async () => {
  const token = 'the-daemon-token';
  const d = daemon({ key: new TextEncoder().encode(token), keyId: 'token', port: 8765 });
  const out = await auth.handshake({ send: d.send, next: d.next, port: 8765, candidate: { kind: 'token', token, keyId: 'token' }, label: 'Chromium' });
  assert.equal(out.daemonNonce.length, 32);
  assert.deepEqual(d.sent.map((m) => m.type), ['auth', 'authProof']);
  assert.equal(d.sent[1].browser, 'Chromium');
});

test('an impostor that cannot prove the key gets nothing but the auth message', async () => {
  const token = 'the-daemon-token';
  const d = daemon({ key: new TextEncoder().encode(token), keyId: 'token', port: 8765, prove: false });
  await assert.rejects(
    auth.handshake({ send: d.send, next: d.next, port: 8765, candidate: { kind: 'token', token, keyId: 'token' } }),
    (e) => e.code === 'DAEMON_UNPROVEN',
  );
  assert.deepEqual(d.sent.map((m) => m.type), ['auth']);
});

test('a proof for another port does not pass', async () => {
  const token = 't';
  const d = daemon({ key: new TextEncoder().encode(token), keyId: 'token', port: 8766 });
  await assert.rejects(
    auth.handshake({ send: d.send, next: d.next, port: 8765, candidate: { kind: 'token', token, keyId: 'token' } }),
    (e) => e.code === 'DAEMON_UNPROVEN',
  );
});

test('the inbox times out, and a closed socket rejects the waiter', async () => {
  const quiet = new auth.Inbox(20);
  await assert.rejects(quiet.next(), (e) => e.code === 'TIMEOUT');
  const closing = new auth.Inbox(1000);
  const waiting = closing.next();
  closing.close('socket closed');
  await assert.rejects(waiting, (e) => e.code === 'CLOSED' && e.message === 'socket closed');
  closing.push('not json');
});
