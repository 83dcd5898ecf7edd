// The page world (extension/page/document-start.js) run in Node, for the tests of its parts: a
// window made of Node's EventTarget, with what the file reaches for at load.
import { readFileSync } from 'node:fs';

// The source and the file the browser runs, made from it by scripts/minify-extension.mjs: each
// test runs on both.
export const FILES = ['document-start.js', 'document-start.min.js'].map((file) => [file, readFileSync(new URL(`../../extension/page/${file}`, import.meta.url), 'utf8')]);
const UNTIL = 'browser-mcp:dialog-until';
const LEVELS = ['debug', 'log', 'info', 'warn', 'error', 'trace', 'dir', 'dirxml', 'table', 'assert'];

// A fresh window with the file run in it, as at document_start. The file wraps
// EventTarget.prototype's methods; `done` puts Node's back.
export function pageWorld(source) {
  const proto = EventTarget.prototype;
  const kept = { add: proto.addEventListener, remove: proto.removeEventListener };
  const window = new EventTarget();
  window.top = window;
  for (const name of ['alert', 'confirm', 'prompt']) window[name] = () => undefined;
  // The window's beforeunload handler as HTML defines it: one listener, added when a handler is
  // first set, that keeps its place when the handler is set again.
  let handler = null;
  let added = false;
  Object.defineProperty(window, 'onbeforeunload', {
    get: () => handler,
    set(h) {
      handler = typeof h === 'function' ? h : null;
      if (!handler || added) return;
      added = true;
      kept.add.call(window, 'beforeunload', (event) => {
        if (handler?.call(window, event) != null) event.preventDefault();
      });
    },
    configurable: true,
    enumerable: true,
  });
  // navigator and console as a browser's window has them: the file hooks each at its first read.
  const console = Object.fromEntries(LEVELS.map((level) => [level, function () {}]));
  const navigator = {};
  const browsers = { navigator: { get navigator() { return navigator; } }, console: { ...console } };
  Object.defineProperty(window, 'navigator', { ...Object.getOwnPropertyDescriptor(browsers.navigator, 'navigator'), configurable: true });
  Object.defineProperty(window, 'console', { value: console, writable: true, configurable: true });
  const document = new EventTarget();
  new Function('window', 'globalThis', 'document', 'navigator', 'console', source)(window, window, document, navigator, console);
  return {
    window,
    document,
    // What the window had before the file ran: navigator's getter, console's methods.
    browsers: { getNavigator: Object.getOwnPropertyDescriptor(browsers.navigator, 'navigator').get, navigator, console, methods: browsers.console },
    // What dom-dialogs.js tells the page: driven until then (ms since the epoch); says whether
    // the page world heard it.
    drivenUntil: (until) => !window.dispatchEvent(new CustomEvent(UNTIL, { detail: String(until), cancelable: true })),
    // A beforeunload event: whether anything asked to stay.
    leave: () => !window.dispatchEvent(new Event('beforeunload', { cancelable: true })),
    done() {
      Object.assign(proto, { addEventListener: kept.add, removeEventListener: kept.remove });
    },
  };
}

// Runs `body` with a fresh page world of each file, and puts Node's EventTarget back after.
export function inPage(body) {
  for (const [file, source] of FILES) {
    const page = pageWorld(source);
    try {
      body(page);
    } catch (e) {
      e.message = `${file}: ${e.message}`;
      throw e;
    } finally {
      page.done();
    }
  }
}
