// The page world's framework handlers (extension/page/handlers.js, issue 57): asked by a
// snapshot, it marks the elements React, Svelte 5 and jQuery dispatch presses and drops to,
// below the elements the page listens on (which page/document-start.js marks first). Run here on
// a few elements made of Node's EventTarget, in the source and in the minified file alike; the
// real frameworks are the corpus's business (tests/it/browser/hands/frameworks/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import vm from 'node:vm';

const FILES = ['handlers.js', 'handlers.min.js'].map((file) => [file, readFileSync(new URL(`../../extension/page/${file}`, import.meta.url), 'utf8')]);
const ASK = 'browser-mcp:listeners';
const MARK = 'browser-mcp:listens';

// An element as much as the file reads of one: its children, its own properties.
class El extends EventTarget {
  constructor(own = {}, children = []) {
    super();
    Object.defineProperty(this, 'kids', { value: children });
    Object.defineProperty(this, 'parent', { value: null, writable: true });
    Object.defineProperty(this, 'marks', { value: [] });
    for (const c of children) c.parent = this;
    Object.assign(this, own);
    this.addEventListener(MARK, (e) => this.marks.push(e.detail));
  }
  get nodeType() { return 1; }
  get shadowRoot() { return null; }
  get firstElementChild() { return this.kids[0] ?? null; }
  get lastElementChild() { return this.kids.at(-1) ?? null; }
  get previousElementSibling() {
    const sibs = this.parent?.kids ?? [];
    return sibs[sibs.indexOf(this) - 1] ?? null;
  }
}

// A page with the file in it; `ask(listened)` is a snapshot's question, the elements in
// `listened` marked first as document-start.js marks the ones the page listens on.
function page(source, globals = {}) {
  const window = new EventTarget();
  const document = new EventTarget();
  Object.assign(window, globals);
  vm.runInNewContext(source, { window, document, EventTarget, CustomEvent, Symbol });
  // As document-start.js answers: before the file, one event per element, seen on the window.
  const answerFirst = (listened) => {
    for (const el of listened) {
      const e = new CustomEvent(MARK, { detail: 1 });
      e.composedPath = () => [el];
      window.dispatchEvent(e);
    }
  };
  const question = (listened) => {
    answerFirst(listened);
    document.dispatchEvent(new CustomEvent(ASK)); // after document-start.js's answer
  };
  return { window, document, question };
}

for (const [file, source] of FILES) {
  test(`${file}: React's handlers below its root, from the props on its nodes`, () => {
    const add = new El({ __reactProps$k1: { className: 'add', onClick() {} } });
    const hover = new El({ __reactProps$k1: { onMouseEnter() {} } });
    const drop = new El({ __reactProps$k1: { onDrop() {}, onDragOver() {} } });
    const text = new El({ __reactProps$k1: { children: 'Travel mug' } });
    const root = new El({ __reactContainer$k1: {} }, [new El({}, [add, hover, drop, text])]);
    const p = page(source);
    p.question([root]);
    assert.deepEqual([add.marks, hover.marks, drop.marks, text.marks, root.marks], [[1], [1], [2], [], []]);
  });

  test(`${file}: nothing before a snapshot asks, and nothing below a root no framework owns`, () => {
    const add = new El({ __reactProps$k1: { onClick() {} } });
    const root = new El({ __reactContainer$k1: {} }, [add]);
    const plain = new El({}, [new El({ onclick: null })]);
    const p = page(source);
    assert.deepEqual(add.marks, [], 'not at load');
    p.question([plain]);
    assert.deepEqual([add.marks, plain.kids[0].marks], [[], []]);
    p.question([root]);
    assert.deepEqual(add.marks, [1]);
  });

  test(`${file}: Svelte 5's delegated handlers, under its symbol and its first releases' names`, () => {
    const events = Symbol('events');
    const now = new El({ [events]: { click: () => {} } });
    const before = new El({ __click: () => {} });
    const none = new El({ [events]: { keydown: () => {} } });
    const root = new El({}, [now, before, none]);
    const p = page(source, { __svelte: { v: new Set(['5']) } });
    p.question([root]);
    assert.deepEqual([now.marks, before.marks, none.marks], [[1], [1], []]);
  });

  test(`${file}: jQuery's delegations, by their selectors`, () => {
    const items = [new El(), new El()];
    const other = new El();
    const p = page(source);
    // jQuery as the file reads it: the delegations on the document, the elements a selector finds.
    const jQuery = (host) => ({ find: (selector) => ({ get: () => (selector === '.item' && host === p.document ? items : []) }) });
    jQuery._data = (host) => (host === p.document ? { click: [{ selector: '.item' }, { selector: '' }], keydown: [{ selector: '.other' }] } : undefined);
    p.window.jQuery = jQuery;
    p.question([]);
    assert.deepEqual([items[0].marks, items[1].marks, other.marks], [[1], [1], []]);
  });
}
