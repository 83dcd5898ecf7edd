// The seed-001 message shapes the extension sends (extension/shared/protocol.js), field by field,
// as ../shared/seeds 001 writes them; the daemon's serde types (src/protocol/bridge.rs) read
// these names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as proto from '../../extension/shared/protocol.js';

const tab = { id: 2, title: 'New Tab', url: 'https://example.com', tools: [] };

test('connected carries the browser, the tabs and the features beyond seed 001', () => {
  const m = proto.connected({ name: 'Chrome', version: '120.0.0.0' }, [tab]);
  assert.deepEqual(Object.keys(m), ['type', 'sessionId', 'browser', 'tabs', 'features']);
  assert.equal(m.type, 'connected');
  assert.deepEqual(m.tabs, [tab]);
  // A daemon sends `watch` only to an extension that says it understands it.
  assert.deepEqual(m.features, ['watch']);
  m.features.push('x');
  assert.deepEqual(proto.connected({}, []).features, ['watch'], 'each message has its own list');
});

test('watching answers a watch with its request id and the word it acknowledges', () => {
  assert.deepEqual(proto.watching('watch_1', true), { type: 'watching', sessionId: null, requestId: 'watch_1', watching: true });
  assert.deepEqual(proto.watching(7, false), { type: 'watching', sessionId: null, requestId: 7, watching: false });
});

test('tab messages', () => {
  assert.deepEqual(proto.tabCreated(tab, 'open_1'), { type: 'tabCreated', sessionId: null, tab, requestId: 'open_1' });
  assert.deepEqual(proto.tabCreated(tab), { type: 'tabCreated', sessionId: null, tab });
  assert.deepEqual(proto.tabUpdated(tab), { type: 'tabUpdated', sessionId: null, tab });
  assert.deepEqual(proto.tabClosed(2), { type: 'tabClosed', sessionId: null, tabId: 2 });
});

test('an offer adds `hidden` only when the policy holds something back', () => {
  const tools = [{ name: 'search' }];
  assert.deepEqual(proto.toolsChanged(1, { tools, hidden: null }), { type: 'toolsChanged', sessionId: null, tabId: 1, tools });
  const hidden = { tools: ['browser_click'], reason: 'off' };
  assert.deepEqual(proto.tabFocused(1, { tools, hidden }), { type: 'tabFocused', sessionId: null, tabId: 1, tools, hidden });
});

test('toolResult: a result with error null, or a null result with {code, message}', () => {
  assert.deepEqual(proto.toolResult('call_1', { data: 'x' }), { type: 'toolResult', sessionId: null, callId: 'call_1', result: { data: 'x' }, error: null });
  assert.deepEqual(proto.toolResult('call_1', undefined), { type: 'toolResult', sessionId: null, callId: 'call_1', result: null, error: null });
  const failed = proto.toolResult('call_2', null, new proto.ToolError(proto.Code.ELEMENT_NOT_FOUND, 'no e7'));
  assert.deepEqual(failed.error, { code: 'ELEMENT_NOT_FOUND', message: 'no e7' });
  assert.equal(failed.result, null);
});

test('any thrown value becomes a typed error body', () => {
  assert.deepEqual(proto.errorBody(new Error('boom')), { code: 'TOOL_ERROR', message: 'boom' });
  assert.deepEqual(proto.errorBody('plain'), { code: 'TOOL_ERROR', message: 'plain' });
  assert.deepEqual(proto.errorBody({ code: 'TAB_NOT_FOUND', message: 7 }), { code: 'TAB_NOT_FOUND', message: '7' });
  assert.ok(Object.isFrozen(proto.Code));
});

test('discovery answers carry tools, or no tools and the error', () => {
  const ok = proto.toolsDiscovered('discover_1', 1, { tools: [{ name: 'a' }], hidden: null });
  assert.deepEqual(ok, { type: 'toolsDiscovered', sessionId: null, callId: 'discover_1', tabId: 1, tools: [{ name: 'a' }] });
  const bad = proto.toolsDiscovered('discover_1', 1, null, new Error('gone'));
  assert.deepEqual(bad, { type: 'toolsDiscovered', sessionId: null, callId: 'discover_1', tabId: 1, tools: [], error: { code: 'TOOL_ERROR', message: 'gone' } });
});

// Last: it sets the module's session id. A browser the daemon launched learns its session id
// from the native host while the stored one may still be loading; the daemon's must win, or
// the daemon would not know the browser it launched (issue 32).
test("a launched browser's session id wins over the stored one, even mid-load", async () => {
  let answer;
  globalThis.chrome = {
    storage: { local: { get: () => new Promise((resolve) => { answer = resolve; }), set: async () => {} } },
  };
  const loading = proto.loadSessionId();
  proto.useSessionId('managed-0123');
  answer({ sessionId: 'stored-id' });
  assert.equal(await loading, 'managed-0123');
  assert.equal(proto.connected({ name: 'Chrome', version: '1' }, []).sessionId, 'managed-0123');
});
