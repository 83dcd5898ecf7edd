// The eyes' memory and answer budget (extension/worker/observers/ring.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ring, mergeById, bounds, fit, clip, DEFAULT_BUDGET, MIN_BUDGET, MAX_LIMIT } from '../../extension/worker/observers/ring.js';

test('a full ring drops the oldest entry, counts it and hands it over', () => {
  const dropped = [];
  const r = new Ring(3, (e) => dropped.push(e.id));
  for (let id = 1; id <= 5; id++) r.push({ id });
  assert.equal(r.size, 3);
  assert.equal(r.dropped, 2);
  assert.deepEqual(dropped, [1, 2]);
  assert.deepEqual(r.toArray().map((e) => e.id), [3, 4, 5]);
});

test('a ring that has not wrapped keeps insertion order', () => {
  const r = new Ring(4);
  r.push({ id: 1 });
  r.push({ id: 2 });
  assert.deepEqual(r.toArray().map((e) => e.id), [1, 2]);
  assert.equal(r.dropped, 0);
});

test('merging id-ordered lists gives one list, oldest first', () => {
  assert.deepEqual(mergeById([{ id: 1 }, { id: 4 }], [{ id: 2 }, { id: 3 }]).map((e) => e.id), [1, 2, 3, 4]);
  assert.deepEqual(mergeById([], [{ id: 7 }]).map((e) => e.id), [7]);
});

test('bounds fills defaults, clamps, and refuses what is not a number', () => {
  assert.deepEqual(bounds({}), { maxChars: DEFAULT_BUDGET, limit: 200 });
  assert.deepEqual(bounds({ maxChars: 1, limit: 1e9 }), { maxChars: MIN_BUDGET, limit: MAX_LIMIT });
  assert.deepEqual(bounds({ maxChars: 1234.9, limit: 3.2 }), { maxChars: 1234, limit: 3 });
  assert.throws(() => bounds({ maxChars: 'lots' }), (e) => e.code === 'INVALID_ARGUMENTS' && /maxChars/.test(e.message));
});

test('clip keeps short text and marks what it cut', () => {
  assert.equal(clip('short', 10), 'short');
  assert.equal(clip('x'.repeat(50), 10), `${'x'.repeat(9)}…`);
  assert.equal(clip(null, 3), '');
});

test('fit stays within its budget and names the cursor to ask again with', () => {
  const entries = Array.from({ length: 100 }, (_, i) => ({ id: i + 1, text: `entry ${i + 1} `.repeat(5) }));
  const out = fit({ header: 'Log', entries, line: (e) => `${e.id}: ${e.text}`, maxChars: 1000, limit: 100, noun: ['entry', 'entries'], hint: 'level' });
  assert.ok(out.text.length <= 1000, `${out.text.length} chars`);
  assert.ok(out.shown.length > 0 && out.shown.length < 100);
  assert.equal(out.more, 100 - out.shown.length);
  assert.equal(out.cursor, out.shown.at(-1).id);
  assert.match(out.text, new RegExp(`${out.more} more entries not shown \\(the budget of 1,000 characters\\)\\. Ask again with since=${out.cursor}`));
});

test('fit stops at the entry limit and says so', () => {
  const entries = [1, 2, 3].map((id) => ({ id }));
  const out = fit({ header: 'H', entries, line: (e) => `#${e.id}`, maxChars: 10_000, limit: 2, since: 0, noun: ['entry', 'entries'] });
  assert.deepEqual(out.shown.map((e) => e.id), [1, 2]);
  assert.match(out.text, /^H\n#1\n#2\n… truncated: 1 more entry not shown \(the limit of 2\)/);
});

test('one entry longer than the whole budget is cut rather than blocking the rest', () => {
  const out = fit({ header: 'H', entries: [{ id: 1 }], line: () => 'y'.repeat(5000), maxChars: 1000, limit: 10, noun: ['entry', 'entries'] });
  assert.equal(out.shown.length, 1);
  assert.ok(out.text.length <= 1000);
  assert.match(out.text, /y…$/);
});
