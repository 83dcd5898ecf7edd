// The page world hooks navigator and console at the page's first read of each (issue 30: many
// pages never read them, and the read costs a frame): until then the window's property is a
// getter of ours that looks like the browser's, and from then on the browser's own is back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inPage } from './page-world.mjs';

test('console is wrapped at its first read, and is a plain property again after', () => inPage(({ window, browsers }) => {
  const waiting = Object.getOwnPropertyDescriptor(window, 'console');
  assert.equal(waiting.get.name, 'get console');
  assert.equal(waiting.enumerable, false, 'as the browser\'s console: not enumerable');
  assert.equal(browsers.console.log, browsers.methods.log, 'nothing wrapped before the read');
  assert.equal(window.console, browsers.console);
  assert.deepEqual(Object.getOwnPropertyDescriptor(window, 'console'), { value: browsers.console, writable: true, enumerable: false, configurable: true });
  for (const [name, method] of Object.entries(browsers.methods)) {
    assert.notEqual(browsers.console[name], method, `console.${name} is wrapped`);
    assert.equal(browsers.console[name].name, name);
  }
}));

test('a console the page sets before reading one is the page\'s, and ours is left alone', () => inPage(({ window, browsers }) => {
  const own = { log() {} };
  const { log } = own;
  window.console = own;
  assert.equal(window.console, own);
  assert.equal(own.log, log);
  assert.equal(browsers.console.log, browsers.methods.log);
  assert.equal(Object.getOwnPropertyDescriptor(window, 'console').writable, true);
}));

test('the first line\'s console.log reaches the relay', async () => {
  const seen = [];
  inPage(({ window, document }) => {
    document.addEventListener('browser-mcp:console', (e) => {
      e.preventDefault();
      seen.push(...JSON.parse(e.detail).entries.map((entry) => `${entry.level} ${entry.text}`));
    });
    window.console.log('%s has %d items', 'cart', 3);
  });
  await new Promise((r) => setTimeout(r, 120));
  // One from each file: the source and the made one.
  assert.deepEqual(seen, ['log cart has 3 items', 'log cart has 3 items']);
});

test('navigator gets its WebMCP placeholder at its first read, and the browser\'s getter back', () => inPage(({ window, browsers }) => {
  const waiting = Object.getOwnPropertyDescriptor(window, 'navigator');
  assert.notEqual(waiting.get, browsers.getNavigator);
  assert.equal(waiting.get.name, 'get navigator');
  assert.equal(waiting.enumerable, true);
  assert.equal('modelContext' in browsers.navigator, false, 'navigator untouched before the read');
  assert.equal(window.navigator, browsers.navigator);
  assert.equal(Object.getOwnPropertyDescriptor(window, 'navigator').get, browsers.getNavigator);
  assert.equal('modelContext' in browsers.navigator, true);
}));
