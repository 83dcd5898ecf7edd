// What the client does with server behaviour browser-mcpd never shows: requests for
// tools/list and ping, unknown methods, batches, a server without `hello`, a ping left
// unanswered.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCodes, SocketNativeClient } from '../socket-native-client.js';
import { fakeServer } from './fake-server.js';
import { Daemon, nextEvent, options, waitFor } from './helpers.js';

const answerHello = (peer, m) => {
  if (m.method === 'hello') peer.send({ jsonrpc: '2.0', id: m.id, result: {} });
};

test('answers the server: tools/list, ping, unknown methods, batches', { timeout: 10000 }, async (t) => {
  const got = [];
  let peer;
  const server = await fakeServer((p, m) => {
    peer = p;
    got.push(m);
    answerHello(p, m);
    if (m.method === 'tools/register') p.send({ jsonrpc: '2.0', id: m.id, result: { registered: m.params.tools.length } });
  });
  t.after(() => server.close());
  const client = new SocketNativeClient(options({ serverUrl: server.url, sessionId: 's-1', autoReconnect: false }));
  t.after(() => client.disconnect());
  const tool = { name: 'greet', inputSchema: { type: 'object' } };
  await client.connect();
  assert.deepEqual(got.map((m) => m.method), ['hello']);
  assert.deepEqual(got[0].params, { clientType: 'browser', version: '1.0.0' });
  await client.registerTools([tool]);
  assert.deepEqual(got[1].params, { tools: [tool] });

  const listed = nextEvent(client, 'toolsList');
  const answers = () => got.filter((m) => m.method === undefined);
  peer.send({ jsonrpc: '2.0', id: 'l1', method: 'tools/list', params: {} });
  const [request] = await listed;
  assert.equal(request.id, 'l1');
  peer.send([
    { jsonrpc: '2.0', id: 'p1', method: 'ping' },
    { jsonrpc: '2.0', id: 7, method: 'resources/list' },
    { jsonrpc: '2.0', method: 'notifications/whatever' },
  ]);
  await waitFor('three answers', () => answers().length === 3);
  assert.deepEqual(answers(), [
    { jsonrpc: '2.0', id: 'l1', result: { tools: [tool] } },
    { jsonrpc: '2.0', id: 'p1', result: { pong: true } },
    {
      jsonrpc: '2.0',
      id: 7,
      error: { code: ErrorCodes.METHOD_NOT_FOUND, message: 'Method not found: resources/list' },
    },
  ]);
});

test('a server without hello is still fine', { timeout: 10000 }, async (t) => {
  const server = await fakeServer((peer, m) => {
    if (m.method === 'hello') {
      peer.send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'Method not found' } });
    }
  });
  t.after(() => server.close());
  const client = new SocketNativeClient(options({ serverUrl: server.url, autoReconnect: false }));
  t.after(() => client.disconnect());
  await client.connect();
  assert.equal(client.isConnected(), true);
});

test('a ping left unanswered ends the connection', { timeout: 10000 }, async (t) => {
  const pings = [];
  const server = await fakeServer((peer, m) => {
    answerHello(peer, m);
    if (m.method === 'ping') pings.push(m);
  });
  t.after(() => server.close());
  const client = new SocketNativeClient(options({ serverUrl: server.url, pingInterval: 100, autoReconnect: false }));
  t.after(() => client.disconnect());
  await client.connect();
  const [code, reason] = await nextEvent(client, 'disconnect');
  assert.equal(code, 1006);
  assert.match(reason, /no answer to ping/);
  assert.ok(pings.length >= 1);
  assert.equal(pings[0].params, undefined, 'the seed ping has no params');
  assert.equal(client.isConnected(), false);
});

test('pings against the daemon keep the connection up', { timeout: 10000 }, async (t) => {
  const d = await Daemon.start();
  t.after(() => d.stop());
  const client = new SocketNativeClient(options({ serverUrl: d.url, pingInterval: 50 }));
  t.after(() => client.disconnect());
  const pongs = [];
  client.on('message', (m) => {
    if (m.result && m.result.pong === true) pongs.push(m);
  });
  const drops = [];
  client.on('disconnect', (...a) => drops.push(a));
  await client.connect();
  await waitFor('five pongs', () => pongs.length >= 5);
  assert.deepEqual(drops, []);
  assert.equal(client.isConnected(), true);
});
