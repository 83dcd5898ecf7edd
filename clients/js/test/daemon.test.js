// SocketNativeClient against a real browser-mcpd: register, answer browserctl's calls,
// agents, reconnection after a restart, giving up.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCodes, JsonRpcError, SocketNativeClient } from '../socket-native-client.js';
import { Daemon, nextEvent, options, waitFor, webSocketConstructor } from './helpers.js';

const GREET = {
  name: 'greet',
  description: 'Greet a person by name',
  inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
};
const ANY = { type: 'object', properties: {} };

/** A tool provider with the seed's greet and a few tools that return other kinds of values. */
function provider(d, extra) {
  const client = new SocketNativeClient(options({ serverUrl: d.url, ...extra }));
  client.registerHandler('greet', async (args) => `Hello, ${args.name}!`);
  return client;
}

const TOOLS = [
  GREET,
  { name: 'fail', description: 'Always throws', inputSchema: ANY },
  { name: 'stats', description: 'Returns an object', inputSchema: ANY },
  { name: 'shaped', description: 'Returns its own content', inputSchema: ANY },
];

function addHandlers(client) {
  client.registerHandler('fail', () => {
    throw new Error('the button is gone');
  });
  client.registerHandler('stats', () => ({ clicks: 3, ok: true }));
  client.registerHandler('shaped', () => ({
    content: [
      { type: 'text', text: 'one' },
      { type: 'text', text: 'two' },
    ],
  }));
}

test('registers tools and answers calls made by browserctl', { timeout: 30000 }, async (t) => {
  const d = await Daemon.start();
  t.after(() => d.stop());
  const client = provider(d, { sessionId: 'js-register' });
  addHandlers(client);
  t.after(() => client.disconnect());
  const connected = nextEvent(client, 'connect');
  await client.connect();
  await connected;
  assert.equal(client.isConnected(), true);
  assert.equal(client.getSessionId(), 'js-register');
  await client.registerTools(TOOLS);

  const [browser] = await d.browsersOf('js-register');
  assert.equal(browser.dialect, 'jsonrpc');
  const { tools } = await d.ctlJson(['tools', '--browser', browser.id]);
  assert.deepEqual(tools.map((x) => x.name).sort(), ['fail', 'greet', 'shaped', 'stats']);
  assert.deepEqual(tools.find((x) => x.name === 'greet').inputSchema, GREET.inputSchema);

  const seen = [];
  client.on('toolCall', (request) => seen.push(request));
  const out = await d.ctl(['call', 'greet', '--browser', browser.id, '--name', 'Ada']);
  assert.equal(out.code, 0, out.stderr);
  assert.equal(out.stdout.trim(), 'Hello, Ada!');
  assert.equal(seen.length, 1);
  assert.equal(seen[0].method, 'tools/call');
  assert.deepEqual(seen[0].params, { name: 'greet', arguments: { name: 'Ada' } });

  // The result as the daemon received it (--json prints the answer, the result under
  // `result` next to the tab that answered): the seed's {content, isError}.
  const answer = await d.ctlJson(['call', 'greet', '--tab', browser.id, '--name', 'Grace']);
  assert.equal(answer.tab, browser.id);
  const called = answer.result;
  assert.deepEqual(called, { content: [{ type: 'text', text: 'Hello, Grace!' }], isError: false });
  const stats = (await d.ctlJson(['call', 'stats', '--browser', browser.id])).result;
  assert.deepEqual(stats, {
    content: [{ type: 'text', text: JSON.stringify({ clicks: 3, ok: true }) }],
    isError: false,
  });
  const shaped = (await d.ctlJson(['call', 'shaped', '--browser', browser.id])).result;
  assert.deepEqual(shaped.content.map((c) => c.text), ['one', 'two']);
  assert.equal(shaped.isError, false);

  // A thrown error: isError with its message; browserctl exits 7 (TOOL_ERROR) on it, with
  // --json after printing the answer.
  const thrownOut = await d.ctl(['--json', 'call', 'fail', '--browser', browser.id]);
  assert.equal(thrownOut.code, 7, thrownOut.stderr);
  const thrown = JSON.parse(thrownOut.stdout).result;
  assert.deepEqual(thrown, { content: [{ type: 'text', text: 'the button is gone' }], isError: true });
  const failed = await d.ctl(['call', 'fail', '--browser', browser.id]);
  assert.equal(failed.code, 7, failed.stderr);
  assert.equal(failed.stderr.trim(), 'browserctl: TOOL_ERROR: the button is gone');

  // registerTools replaces the set.
  await client.registerTools([GREET]);
  const after = await d.ctlJson(['tools', '--browser', browser.id]);
  assert.deepEqual(after.tools.map((x) => x.name), ['greet']);
});

test('a tool without a handler is answered with -32601', { timeout: 30000 }, async (t) => {
  const d = await Daemon.start();
  t.after(() => d.stop());
  const client = new SocketNativeClient(options({ serverUrl: d.url, sessionId: 'js-nohandler' }));
  t.after(() => client.disconnect());
  await client.registerTools([{ name: 'orphan', inputSchema: ANY }]); // before connect: sent on connect
  await client.connect();
  const [browser] = await waitFor('the browser', () => d.browsersOf('js-nohandler').then((b) => b.length && b));
  assert.equal(browser.tools, 1);
  const out = await d.ctl(['--json', 'call', 'orphan', '--browser', browser.id]);
  assert.notEqual(out.code, 0);
  assert.equal(JSON.parse(out.stdout || out.stderr).error.code, 'TOOL_NOT_FOUND');
});

test('a page-like script drives the daemon end to end as browser and agent', { timeout: 30000 }, async (t) => {
  const d = await Daemon.start();
  t.after(() => d.stop());
  // The provider: tools with their handlers, as a page would register them.
  const page = new SocketNativeClient(options({ serverUrl: d.url, sessionId: 'js-e2e' }));
  t.after(() => page.disconnect());
  await page.connect();
  await page.registerTools([{ ...GREET, handler: ({ name }) => `Hello, ${name}!` }]);

  // No token: the daemon refuses agents before the upgrade.
  const anonymous = new SocketNativeClient(
    options({ serverUrl: d.url, sessionId: 'js-e2e', clientType: 'agent', autoReconnect: false }),
  );
  await assert.rejects(anonymous.connect(), (e) => e instanceof JsonRpcError && e.code === ErrorCodes.CONNECTION_ERROR);
  assert.equal(anonymous.isConnected(), false);

  const agent = new SocketNativeClient(
    options({ serverUrl: d.url, sessionId: 'js-e2e', clientType: 'agent', token: d.token }),
  );
  t.after(() => agent.disconnect());
  await agent.connect();
  assert.deepEqual(await agent.sendRequest('ping'), { pong: true });
  const joined = await agent.sendRequest('session/join', { sessionId: 'js-e2e' });
  assert.equal(joined.tools, 1);
  const listed = await agent.sendRequest('tools/list', {});
  assert.deepEqual(listed.tools.map((x) => x.name), ['greet']);
  const result = await agent.sendRequest('tools/call', { name: 'greet', arguments: { name: 'Linus' }, timeout: 5000 });
  assert.deepEqual(result, { content: [{ type: 'text', text: 'Hello, Linus!' }], isError: false });

  // Errors come back as JsonRpcError with the server's code and data.
  await assert.rejects(agent.sendRequest('tools/call', { name: 'nope', arguments: {} }), (e) => {
    assert.ok(e instanceof JsonRpcError);
    assert.equal(e.code, ErrorCodes.INVALID_PARAMS);
    assert.equal(e.data.code, 'TOOL_NOT_FOUND');
    return true;
  });
  await assert.rejects(agent.sendRequest('tools/call', { name: 'greet', arguments: {} }), (e) => {
    assert.equal(e.data.code, 'INVALID_ARGUMENTS');
    return true;
  });
});

test('reconnects after the daemon restarts and registers its tools again', { timeout: 30000 }, async (t) => {
  let d = await Daemon.start();
  t.after(() => d.stop());
  const client = provider(d, { sessionId: 'js-restart', maxReconnectAttempts: 20 });
  t.after(() => client.disconnect());
  await client.connect();
  await client.registerTools([GREET]);

  const dropped = nextEvent(client, 'disconnect');
  const port = d.port;
  await d.stop();
  const [code, reason] = await dropped;
  assert.equal(code, 1001, `disconnect(${code}, ${reason})`);
  assert.equal(client.isConnected(), false);

  const reconnected = nextEvent(client, 'connect', 20000);
  d = await Daemon.start({ port });
  await reconnected;
  assert.equal(client.isConnected(), true);
  const [browser] = await d.browsersOf('js-restart');
  assert.equal(browser.tools, 1, 'the tools came back without a registerTools call');
  const out = await d.ctl(['call', 'greet', '--browser', browser.id, '--name', 'again']);
  assert.equal(out.code, 0, out.stderr);
  assert.equal(out.stdout.trim(), 'Hello, again!');
});

test('gives up after maxReconnectAttempts with a disconnect event', { timeout: 30000 }, async (t) => {
  const d = await Daemon.start();
  const client = provider(d, { sessionId: 'js-giveup', maxReconnectAttempts: 3, reconnectDelay: 20 });
  t.after(() => client.disconnect());
  await client.connect();
  const disconnects = [];
  const attempts = [];
  const errors = [];
  client.on('disconnect', (code, reason) => disconnects.push({ code, reason }));
  client.on('reconnecting', (attempt, delay) => attempts.push({ attempt, delay }));
  client.on('error', (e) => errors.push(e));
  await d.stop('SIGKILL'); // the port closes: every attempt is refused

  await waitFor('the final disconnect', () => disconnects.length === 2);
  assert.equal(disconnects[0].code, 1006, 'a killed daemon closes nothing');
  assert.equal(disconnects[1].code, 1006);
  assert.match(disconnects[1].reason, /gave up reconnecting after 3 attempts/);
  assert.deepEqual(attempts, [
    { attempt: 1, delay: 20 },
    { attempt: 2, delay: 40 },
    { attempt: 3, delay: 80 },
  ]);
  assert.equal(errors.length, 1);
  assert.match(errors[0].message, /gave up/);
  assert.equal(client.isConnected(), false);
});

test('disconnect() closes with 1000 and does not reconnect', { timeout: 30000 }, async (t) => {
  const d = await Daemon.start();
  t.after(() => d.stop());
  const client = provider(d, { sessionId: 'js-bye' });
  await client.connect();
  await client.registerTools([GREET]);
  const events = [];
  client.on('disconnect', (code, reason) => events.push([code, reason]));
  client.on('reconnecting', () => events.push(['reconnecting']));
  client.disconnect();
  assert.deepEqual(events, [[1000, 'client disconnect']]);
  await waitFor('the browser to leave', async () => (await d.browsersOf('js-bye')).length === 0);
  await assert.rejects(client.sendRequest('ping'), /not connected/);
  // connect() again works, with the same session and tools.
  await client.connect();
  const [browser] = await d.browsersOf('js-bye');
  assert.equal(browser.tools, 1);
  client.disconnect();
  assert.deepEqual(events, [
    [1000, 'client disconnect'],
    [1000, 'client disconnect'],
  ]);
});

test('an injected WebSocket constructor is the one used', { timeout: 30000 }, async (t) => {
  const d = await Daemon.start();
  t.after(() => d.stop());
  const Base = webSocketConstructor();
  const urls = [];
  class Counting extends Base {
    constructor(url) {
      super(url);
      urls.push(url);
    }
  }
  const client = new SocketNativeClient({ serverUrl: d.url, WebSocket: Counting, sessionId: 'js-inject' });
  t.after(() => client.disconnect());
  await client.connect();
  assert.equal(urls.length, 1);
  const url = new URL(urls[0]);
  assert.equal(url.pathname, '/ws');
  assert.deepEqual(Object.fromEntries(url.searchParams), {
    sessionId: 'js-inject',
    clientType: 'browser',
    version: '1.0.0',
  });
});

test('a connection replaced by a newer one of its session does not reconnect', { timeout: 30000 }, async (t) => {
  const d = await Daemon.start();
  t.after(() => d.stop());
  const first = provider(d, { sessionId: 'js-twice' });
  const second = provider(d, { sessionId: 'js-twice' });
  t.after(() => first.disconnect());
  t.after(() => second.disconnect());
  await first.connect();
  const reconnecting = [];
  first.on('reconnecting', (n) => reconnecting.push(n));
  const replaced = nextEvent(first, 'disconnect');
  await second.connect();
  const [code, reason] = await replaced;
  assert.equal(code, 4000);
  assert.match(reason, /replaced/);
  // Reconnection would have been scheduled in the same turn as the disconnect event.
  assert.deepEqual(reconnecting, []);
  assert.equal(first.isConnected(), false);
  assert.equal(second.isConnected(), true);
  assert.equal((await d.browsersOf('js-twice')).length, 1);
});
