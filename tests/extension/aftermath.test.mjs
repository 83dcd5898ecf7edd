// What followed an action, in the one line its result ends with (extension/worker/tools/
// aftermath.js, issue 57): the frame's facts first, then what only the worker saw, nothing said
// twice, and no line when nothing followed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { line } from '../../extension/worker/tools/aftermath.js';

test('nothing followed: no line', () => {
  assert.equal(line({ after: [], navigating: null }), '');
  assert.equal(line({}), '');
});

test("the frame's facts, in its words", () => {
  assert.equal(line({ after: ['focus moved to textbox "After" (e7)'] }), 'Then: focus moved to textbox "After" (e7).');
});

test('a navigation the frame did not see is the worker\'s; one it saw is not said twice', () => {
  assert.equal(line({ after: [], went: 'https://shop.test/cart' }), 'Then: the page is loading https://shop.test/cart.');
  const seen = ['the page is loading https://shop.test/cart'];
  assert.equal(line({ after: seen, navigating: 'https://shop.test/cart', went: 'https://shop.test/cart' }), 'Then: the page is loading https://shop.test/cart.');
  assert.equal(line({ after: ['the address changed to https://shop.test/#b'], moved: 'https://shop.test/#b' }), 'Then: the address changed to https://shop.test/#b.');
  assert.equal(line({ after: [], moved: 'https://shop.test/#b' }), 'Then: the address changed to https://shop.test/#b.');
});

test('a tab this one opened, by id, with its address once it has one', () => {
  const opened = [{ id: 12, pendingUrl: 'https://pay.test/' }, { id: 13, url: 'about:blank' }];
  assert.equal(line({ after: ['focus moved to button "Pay" (e3)'], opened }), 'Then: focus moved to button "Pay" (e3); a new tab opened: tab 12 https://pay.test/; a new tab opened: tab 13.');
});

test('what is not a phrase is left out', () => {
  assert.equal(line({ after: [null, 3, '', 'focus moved to link "Next" (e2)'] }), 'Then: focus moved to link "Next" (e2).');
  assert.equal(line({ after: 'focus' }), '');
});
