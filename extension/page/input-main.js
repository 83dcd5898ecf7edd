// Page world, every frame, document_start: the page-world half of the agent's input. Which
// elements the page listens on for a click, a press or a drop, and key events as old editors read
// them (below). A `<div>` made a button or a drop zone by addEventListener leaves no trace in
// the DOM, and the snapshot (content/dom-snapshot.js) should still give it a ref (issue 34).
// At load this only wraps addEventListener: each call costs one Set lookup, and a WeakSet add
// for the few types that matter. Nothing is sent anywhere until the DOM kit asks, once per
// snapshot, with the event below; then each such element still in the document answers with an
// event of its own, which the isolated world collects.
(() => {
  const GUARD = Symbol.for('browser-mcp.listeners');
  if (window[GUARD]) return; // injected twice (manifest + on-demand injection)
  Object.defineProperty(window, GUARD, { value: true });
  const ASK = 'browser-mcp:listeners';
  const MARK = 'browser-mcp:listens';
  const KEY = 'browser-mcp:key';
  // Bits: 1 a press or click, 2 a drop target.
  const KINDS = new Map([
    ['click', 1], ['dblclick', 1], ['mousedown', 1], ['mouseup', 1], ['pointerdown', 1], ['pointerup', 1], ['touchstart', 1],
    ['dragstart', 1], ['dragenter', 2], ['dragover', 2], ['drop', 2],
  ]);
  const proto = EventTarget.prototype;
  const add = proto.addEventListener;
  const { dispatchEvent } = proto;
  const Elem = Element;
  const Custom = CustomEvent;
  const WeakRefOf = WeakRef;
  const kinds = new WeakMap(); // element -> bits
  let held = []; // WeakRefs of the elements in `kinds`, for the answer
  // A page that nobody snapshots may make and drop listened-on elements all day (a long list
  // re-rendered): the dead refs are swept whenever the list has doubled since the last sweep.
  let sweepAt = 1024;
  function sweep() {
    const alive = [];
    for (let i = 0; i < held.length; i++) if (held[i].deref()) alive[alive.length] = held[i];
    held = alive;
    sweepAt = Math.max(1024, alive.length * 2);
  }

  function addEventListener(type, listener, options) {
    const bit = KINDS.get(type);
    if (bit && this instanceof Elem) {
      const had = kinds.get(this);
      if (had === undefined) {
        held[held.length] = new WeakRefOf(this);
        if (held.length > sweepAt) sweep();
      }
      if ((had | bit) !== had) kinds.set(this, had | bit);
    }
    return add.call(this, type, listener, options);
  }
  Object.defineProperty(proto, 'addEventListener', { value: addEventListener, writable: true, configurable: true, enumerable: true });

  // Key events with the legacy keyCode/which/charCode that older editors (CodeMirror 5) read:
  // an event's fields can only be given in the world that reads them, so the isolated world
  // (dom-actions.js) asks for each key event here: {type, init, keyCode, charCode} as JSON on
  // a request event whose target is the element.
  const Keyboard = KeyboardEvent;
  const { parse } = JSON;
  const define = Object.defineProperty;
  add.call(window, KEY, (e) => {
    let req;
    try {
      req = parse(e.detail);
    } catch {
      return;
    }
    const target = e.composedPath()[0];
    const ev = new Keyboard(req.type, { ...req.init, view: window });
    for (const [k, v] of [['keyCode', req.keyCode], ['which', req.keyCode], ['charCode', req.charCode]]) define(ev, k, { get: () => v });
    dispatchEvent.call(target, ev);
  }, true);

  add.call(document, ASK, () => {
    sweep();
    for (let i = 0; i < held.length; i++) {
      const el = held[i].deref();
      if (el?.isConnected) dispatchEvent.call(el, new Custom(MARK, { detail: kinds.get(el), composed: true }));
    }
  });
})();
