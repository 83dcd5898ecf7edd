// A page cannot make its tab's message too big for the daemon (issue 35, item 5).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MAX_PAGE_TOOLS, MAX_PAGE_TOOLS_BYTES, MAX_TOOL_BYTES, REFUSED_REASON, admitPageTools, withRefused,
} from '../../extension/shared/page-tools.js';

const tool = (name, description = 'does things') => ({ name, description, inputSchema: { type: 'object' } });

test('an oversized tool is refused by name; the others stay, in order', () => {
  const huge = tool('huge', 'x'.repeat(17 * 1024 * 1024));
  const { tools, refused } = admitPageTools([tool('a'), huge, tool('b')]);
  assert.deepEqual(tools.map((t) => t.name), ['a', 'b']);
  assert.deepEqual(refused, ['huge']);
  assert.ok(JSON.stringify(tools).length < MAX_PAGE_TOOLS_BYTES);
});

test('a page gets at most so many tools and bytes', () => {
  const many = Array.from({ length: MAX_PAGE_TOOLS + 5 }, (_, i) => tool(`t${i}`));
  assert.equal(admitPageTools(many).tools.length, MAX_PAGE_TOOLS);
  const big = Array.from({ length: 20 }, (_, i) => tool(`b${i}`, 'y'.repeat(MAX_TOOL_BYTES - 200)));
  const { tools, refused } = admitPageTools(big);
  assert.ok(JSON.stringify(tools).length <= MAX_PAGE_TOOLS_BYTES);
  assert.equal(tools.length + refused.length, 20);
  assert.ok(refused.length > 0);
});

test('built-in-looking and nameless tools are dropped, not reported', () => {
  const { tools, refused } = admitPageTools([tool('browser_click'), { description: 'no name' }, null, tool('ok')]);
  assert.deepEqual(tools.map((t) => t.name), ['ok']);
  assert.deepEqual(refused, []);
  assert.deepEqual(admitPageTools('not a list'), { tools: [], refused: [] });
});

test('the daemon is told which were refused and why', () => {
  const plain = withRefused({ tools: [tool('a')], hidden: null }, ['huge']);
  assert.deepEqual(plain.hidden, { tools: ['huge'], reason: REFUSED_REASON });
  const both = withRefused({ tools: [], hidden: { tools: ['a'], reason: 'this site is off' } }, ['huge']);
  assert.deepEqual(both.hidden.tools, ['a', 'huge']);
  assert.ok(both.hidden.reason.startsWith('this site is off; huge: '));
  const none = { tools: [tool('a')], hidden: null };
  assert.equal(withRefused(none, []), none);
});
