// Whether the extension watches: while any connected daemon's last word was yes
// (extension/worker/ahead/votes.js, used by worker/ahead/watch.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Votes } from '../../extension/worker/ahead/votes.js';

test('on while any voter says yes, off once none does', () => {
  const v = new Votes();
  assert.equal(v.any, false);
  assert.equal(v.set('a', true), true);
  assert.equal(v.set('b', true), true);
  assert.equal(v.set('a', false), true, 'b still says yes');
  assert.equal(v.set('b', false), false);
});

test("a voter's last word counts, once", () => {
  const v = new Votes();
  v.set('a', true);
  v.set('a', true);
  assert.equal(v.set('a', false), false, 'two yeses from one voter are one vote');
  v.set('a', false);
  assert.equal(v.set('b', true), true, 'two noes from one voter do not cancel another yes');
});

test('a voter that leaves takes its vote with it', () => {
  const v = new Votes();
  const first = {};
  const second = {};
  v.set(first, true);
  v.set(second, false);
  assert.equal(v.drop(second), true);
  assert.equal(v.drop(first), false);
  assert.equal(v.any, false);
});

test('only true is a yes', () => {
  const v = new Votes();
  for (const word of ['true', 1, {}, undefined]) assert.equal(v.set('a', word), false);
});
