import { test } from 'node:test';
import assert from 'node:assert/strict';
import { within } from '../../extension/shared/within.js';

const after = (ms, value) => new Promise((resolve) => setTimeout(() => resolve(value), ms));

test('what settles first: the promise, with its value', async () => {
  assert.equal(await within(after(5, 'done'), 1000), 'done');
});

test('what settles first: the wait, with undefined, while the work goes on', async () => {
  let finished = false;
  const work = after(80).then(() => (finished = true));
  const started = Date.now();
  assert.equal(await within(work, 10), undefined);
  assert.ok(Date.now() - started < 70, 'waited for the work');
  assert.equal(finished, false);
  await work;
  assert.equal(finished, true);
});

test('a failure before the wait is over is the caller’s', async () => {
  await assert.rejects(within(Promise.reject(new Error('boom')), 1000), /boom/);
});
