// The page world's beforeunload handling (extension/page/document-start.js, the dialogs part):
// the page's own listeners and handler are skipped while its tab is driven and run as ever
// otherwise, and the page still removes and reads back what it added. The file runs here on a
// window made of Node's EventTarget; the browsers' own ordering of listeners is the e2e tests'
// business (tests/it/browser/hands/input.rs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inPage } from './page-world.mjs';

const stay = (event) => event.preventDefault();

test('the page\'s beforeunload listeners run while the tab is not driven, and not while it is', () => inPage((page) => {
  const seen = [];
  page.window.addEventListener('beforeunload', (event) => {
    seen.push('function');
    stay(event);
  });
  page.window.addEventListener('beforeunload', { handleEvent: (event) => seen.push(`object ${event.type}`) });
  assert.equal(page.leave(), true);
  assert.deepEqual(seen, ['function', 'object beforeunload']);

  assert.equal(page.drivenUntil(Date.now() + 60_000), true, 'the page world takes the word');
  assert.equal(page.leave(), false, 'nothing asks to stay while driven');
  assert.equal(seen.length, 2);

  page.drivenUntil(0);
  assert.equal(page.leave(), true);
  assert.equal(seen.length, 4);
}));

test('the page removes a beforeunload listener it added, once per capture flag', () => inPage((page) => {
  let calls = 0;
  const count = () => calls++;
  page.window.addEventListener('beforeunload', count);
  page.window.addEventListener('beforeunload', count); // the same listener twice: once
  page.window.addEventListener('beforeunload', count, { capture: true });
  page.leave();
  assert.equal(calls, 2);
  page.window.removeEventListener('beforeunload', count, { capture: true }); // Node's EventTarget takes no bare boolean here
  page.leave();
  assert.equal(calls, 3);
  page.window.removeEventListener('beforeunload', count);
  page.leave();
  assert.equal(calls, 3);
}));

test('other targets and types keep the page\'s own listener', () => inPage((page) => {
  const other = new EventTarget();
  let calls = 0;
  const count = () => calls++;
  other.addEventListener('beforeunload', count);
  other.removeEventListener('beforeunload', count);
  page.window.addEventListener('pagehide', count);
  page.window.removeEventListener('pagehide', count);
  other.dispatchEvent(new Event('beforeunload'));
  page.window.dispatchEvent(new Event('pagehide'));
  assert.equal(calls, 0);
}));

test('the window\'s handler, set before or after the tab is driven, is skipped while driven and reads back as the page\'s', () => inPage((page) => {
  const early = () => 'Leave?';
  page.window.onbeforeunload = early;
  assert.equal(page.leave(), true, 'a handler that returns a string asks to stay');
  page.drivenUntil(Date.now() + 60_000);
  assert.equal(page.leave(), false);
  assert.equal(page.window.onbeforeunload, early);

  const later = (event) => stay(event);
  page.window.onbeforeunload = later; // in the first one's place, before the guard
  assert.equal(page.window.onbeforeunload, later);
  assert.equal(page.leave(), false);

  page.drivenUntil(0);
  assert.equal(page.leave(), true, 'the page\'s handler runs again once the tab is not driven');
  page.window.onbeforeunload = null;
  assert.equal(page.window.onbeforeunload, null);
  assert.equal(page.leave(), false);
}));
