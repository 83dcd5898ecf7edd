// Connection failures that need no daemon: a server that never answers the upgrade, a
// refused port, options.

import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { test } from 'node:test';
import { ErrorCodes, JsonRpcError, SocketNativeClient } from '../socket-native-client.js';
import { options } from './helpers.js';

test('connect() rejects after connectionTimeout when the upgrade is never answered', { timeout: 10000 }, async (t) => {
  const sockets = [];
  const silent = net.createServer((s) => sockets.push(s)); // accepts TCP, says nothing
  silent.listen(0, '127.0.0.1');
  await once(silent, 'listening');
  t.after(() => {
    for (const s of sockets) s.destroy();
    silent.close();
  });
  const { port } = silent.address();
  const client = new SocketNativeClient(options({ serverUrl: `ws://127.0.0.1:${port}`, connectionTimeout: 300 }));
  const disconnects = [];
  client.on('disconnect', (...a) => disconnects.push(a));
  await assert.rejects(client.connect(), (e) => {
    assert.ok(e instanceof JsonRpcError);
    assert.equal(e.code, ErrorCodes.CONNECTION_ERROR);
    assert.match(e.message, /no welcome from 127\.0\.0\.1:\d+ within 300 ms/);
    return true;
  });
  assert.equal(sockets.length, 1, 'the client did reach the server');
  assert.equal(client.isConnected(), false);
  assert.deepEqual(disconnects, [], 'a connection that never came up does not disconnect');
});

test('connect() rejects when the port refuses', { timeout: 10000 }, async () => {
  const probe = net.createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address();
  await new Promise((r) => probe.close(r));
  const client = new SocketNativeClient(options({ serverUrl: `ws://127.0.0.1:${port}` }));
  await assert.rejects(client.connect(), (e) => e.code === ErrorCodes.CONNECTION_ERROR);
});

test('options are checked and defaulted', () => {
  assert.throws(() => new SocketNativeClient({}), TypeError);
  assert.throws(() => new SocketNativeClient(options({ serverUrl: 'http://127.0.0.1:1' })), /ws:\/\/ or wss:\/\//);
  assert.throws(
    () => new SocketNativeClient(options({ serverUrl: 'ws://127.0.0.1:1', clientType: 'robot' })),
    /clientType/,
  );
  const platform = globalThis.WebSocket;
  delete globalThis.WebSocket; // as on Node 18
  try {
    assert.throws(() => new SocketNativeClient({ serverUrl: 'ws://127.0.0.1:1' }), /no WebSocket/);
  } finally {
    if (platform !== undefined) globalThis.WebSocket = platform;
  }
  const a = new SocketNativeClient(options({ serverUrl: 'ws://127.0.0.1:1' }));
  const b = new SocketNativeClient(options({ serverUrl: 'ws://127.0.0.1:1' }));
  assert.match(a.getSessionId(), /^[A-Za-z0-9_.:@-]{1,128}$/, 'a session id the daemon accepts');
  assert.notEqual(a.getSessionId(), b.getSessionId());
  assert.equal(a.isConnected(), false);
});
