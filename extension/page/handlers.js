// The page's own world, put in for a snapshot (worker/frames/frame-channel.js), never at
// load: which elements a framework acts on for a press though no listener of their own says so
// (issue 57). React keeps its handlers in props on its DOM nodes (`__reactProps$…`: onClick,
// onMouseDown, onMouseEnter…) and listens on its root; Svelte 5 keeps delegated handlers on the
// elements (a symbol's `events`, or `__click` in its first releases) and listens on its root;
// Vue 3 keeps its invokers in `_vei`; Solid keeps a delegated handler on its element as `$$click`
// and listens on the document (the event names in `document._$DX_DELEGATE`); jQuery's `.on(type, selector, …)` listens on an ancestor
// for descendants matching a selector. Only this world sees those properties. Nothing of it runs
// until a snapshot asks, by the event page/document-start.js answers (`browser-mcp:listeners`);
// it answers after it, the same way: each element found gets a `browser-mcp:listens` event whose
// detail says how it is used (1 a press, a click or a pointer over it; 2 a drop). The page can
// see and forge all of this: it only decides which of its own elements get refs.
(() => {
  const GUARD = Symbol.for('browser-mcp.handlers');
  if (window[GUARD]) return;
  Object.defineProperty(window, GUARD, { value: true });
  const ASK = 'browser-mcp:listeners';
  const MARK = 'browser-mcp:listens';
  const { addEventListener: listen, dispatchEvent: dispatch } = EventTarget.prototype;
  const { getOwnPropertySymbols, keys } = Object;
  // The most elements one answer looks at: a page of 50,000 elements costs a snapshot a few
  // milliseconds more here.
  const MAX_ELEMENTS = 100_000;

  const KINDS = new Map([
    ['click', 1], ['dblclick', 1], ['doubleclick', 1], ['mousedown', 1], ['mouseup', 1], ['pointerdown', 1], ['pointerup', 1],
    ['touchstart', 1], ['dragstart', 1], ['mouseenter', 1], ['mouseover', 1], ['pointerenter', 1], ['pointerover', 1],
    ['dragenter', 2], ['dragover', 2], ['drop', 2],
  ]);
  // "onClick", "onDoubleClickCapture", Vue's "onMousedownOnce", or a plain "click": its bits.
  const kindOf = (name) => KINDS.get(String(name).toLowerCase().replace(/^on/, '').replace(/(capture|once|passive)+$/, '')) | 0;
  const handlerBits = (handlers, live = (v) => typeof v === 'function') => {
    let bits = 0;
    for (const k in handlers) if (live(handlers[k])) bits |= kindOf(k);
    return bits;
  };

  // The elements the page listens on itself, as document-start.js marks them (they come first).
  let marked = [];
  let answering = false;
  listen.call(window, MARK, (e) => {
    const el = e.composedPath()[0];
    if (!answering && el?.nodeType === 1) marked.push(el);
  }, true);

  // React's props key, from a root container's own keys (`__reactContainer$x` →
  // `__reactProps$x`), or from an element's (React 16's `__reactEventHandlers$x`).
  function reactProps(el) {
    for (const k of keys(el)) {
      if (k.startsWith('__reactContainer$')) return `__reactProps$${k.slice(17)}`;
      if (k.startsWith('__reactProps$') || k.startsWith('__reactEventHandlers$')) return k;
    }
    return null;
  }

  // Svelte 5's delegated handlers: `el[events]` ({click: fn}) with `events` a symbol of its
  // own, found on the first element that has one.
  let svelteEvents = null;
  function svelteBits(el) {
    let bits = 0;
    for (const k of ['__click', '__dblclick', '__mousedown', '__mouseup', '__pointerdown', '__pointerup', '__touchstart', '__mouseover', '__pointerover']) {
      if (el[k] != null) bits |= kindOf(k.slice(2));
    }
    if (!svelteEvents) for (const s of getOwnPropertySymbols(el)) if (s.description === 'events') svelteEvents = s;
    const events = svelteEvents && el[svelteEvents];
    return events && typeof events === 'object' ? bits | handlerBits(events, (v) => v != null) : bits;
  }

  // The event types Solid delegates to the document that matter here (none without Solid).
  function solidTypes() {
    const types = document._$DX_DELEGATE;
    return types instanceof Set ? [...types].filter((t) => typeof t === 'string' && kindOf(t)) : [];
  }

  // jQuery's delegated handlers on `host`: the descendants their selectors match.
  function jquery($, host, found) {
    let events;
    try {
      events = $._data(host, 'events');
    } catch {
      return;
    }
    for (const type in events || {}) {
      const bit = kindOf(type);
      if (!bit) continue;
      for (const h of events[type] || []) {
        if (!h?.selector) continue;
        let hits;
        try {
          hits = $(host).find(h.selector).get();
        } catch {
          continue;
        }
        for (const el of hits) found.set(el, (found.get(el) | 0) | bit);
      }
    }
  }

  // Every element under `root` (open shadow roots too), at most `budget.left` of them.
  function* under(root, budget) {
    const stack = [root];
    while (stack.length && budget.left > 0) {
      const el = stack.pop();
      budget.left--;
      yield el;
      for (let c = el.lastElementChild; c; c = c.previousElementSibling) stack.push(c);
      if (el.shadowRoot) for (let c = el.shadowRoot.lastElementChild; c; c = c.previousElementSibling) stack.push(c);
    }
  }

  function answer() {
    const roots = marked;
    marked = [];
    const found = new Map();
    const $ = window.jQuery;
    if (typeof $?._data === 'function') for (const host of [document, ...roots]) jquery($, host, found);
    // The frameworks listen on their root: what they dispatch to is below an element the page
    // listens on that holds others.
    const svelte = window.__svelte !== undefined;
    const solid = solidTypes();
    const seen = new WeakSet();
    const budget = { left: MAX_ELEMENTS };
    for (const root of solid.length && document.body ? [document.body, ...roots] : roots) {
      if (seen.has(root) || !root.firstElementChild) continue;
      const props = reactProps(root) ?? reactProps(root.firstElementChild);
      if (!props && !svelte && !solid.length) continue;
      for (const el of under(root, budget)) {
        seen.add(el);
        let bits = 0;
        const p = props && el[props];
        if (p) bits |= handlerBits(p);
        if (svelte) bits |= svelteBits(el);
        for (const t of solid) if (el[`$$${t}`] != null) bits |= kindOf(t);
        const vei = el._vei;
        if (vei) bits |= handlerBits(vei, (v) => v?.value != null);
        if (bits) found.set(el, (found.get(el) | 0) | bits);
      }
    }
    answering = true;
    try {
      for (const [el, bits] of found) dispatch.call(el, new CustomEvent(MARK, { detail: bits, composed: true }));
    } finally {
      answering = false;
    }
  }
  listen.call(document, ASK, answer);
})();
