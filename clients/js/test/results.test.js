// How handler values become tool results, and the executor.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCodes, JsonRpcError, ToolExecutor, toToolResult } from '../socket-native-client.js';

test('handler values become {content, isError}', () => {
  const text = (t) => ({ content: [{ type: 'text', text: t }], isError: false });
  assert.deepEqual(toToolResult('Clicked: .submit-btn'), text('Clicked: .submit-btn'));
  assert.deepEqual(toToolResult({ a: 1 }), text('{"a":1}'));
  assert.deepEqual(toToolResult([1, 2]), text('[1,2]'));
  assert.deepEqual(toToolResult(42), text('42'));
  assert.deepEqual(toToolResult(null), text('null'));
  assert.deepEqual(toToolResult(false), text('false'));
  assert.deepEqual(toToolResult(undefined), { content: [], isError: false });
  const image = { type: 'image', data: 'AAAA', mimeType: 'image/png' };
  assert.deepEqual(toToolResult(image), { content: [image], isError: false });
  assert.deepEqual(toToolResult([image, { type: 'text', text: 'x' }]).content.length, 2);
  assert.deepEqual(toToolResult({ content: [image] }), { content: [image], isError: false });
  assert.deepEqual(toToolResult({ content: [], isError: true, structuredContent: { n: 1 } }), {
    content: [],
    isError: true,
    structuredContent: { n: 1 },
  });
  // Data that merely has a `type` is data.
  assert.deepEqual(toToolResult({ type: 'text' }), text('{"type":"text"}'));
  const cyclic = {};
  cyclic.self = cyclic;
  assert.equal(toToolResult(cyclic).content[0].type, 'text');
});

test('the executor runs handlers and turns throws into isError', async () => {
  const ex = new ToolExecutor();
  ex.registerHandler('greet', async ({ name }) => `Hello, ${name}!`);
  ex.registerHandler('boom', () => {
    throw new Error('no such element: #go');
  });
  ex.registerHandler('reject', () => Promise.reject('plain string'));
  assert.deepEqual(ex.getHandlerNames(), ['greet', 'boom', 'reject']);
  assert.deepEqual(await ex.execute('greet', { name: 'Ada' }), {
    content: [{ type: 'text', text: 'Hello, Ada!' }],
    isError: false,
  });
  assert.deepEqual(await ex.execute('boom', {}), {
    content: [{ type: 'text', text: 'no such element: #go' }],
    isError: true,
  });
  assert.deepEqual((await ex.execute('reject')).content[0].text, 'plain string');
  await assert.rejects(ex.execute('missing', {}), (e) => e instanceof JsonRpcError && e.code === ErrorCodes.METHOD_NOT_FOUND);
  assert.equal(ex.unregisterHandler('boom'), true);
  assert.equal(ex.hasHandler('boom'), false);
  assert.throws(() => ex.registerHandler('x', 'not a function'), TypeError);
});
