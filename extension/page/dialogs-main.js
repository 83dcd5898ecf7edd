// Page world, every frame, document_start: alert/confirm/prompt ask the extension first
// (dom-dialogs.js, isolated world) through synchronous DOM events. While an agent drives the tab
// the extension answers at once by its dialog policy, so a native dialog never blocks a call;
// otherwise (the person's own browsing) the native dialog opens as usual. The frame's isolated
// world, and dom-dialogs.js with it, may come only once the tab is driven (issue 30): what has
// to be in place before the page's own scripts is here.
(() => {
  const GUARD = Symbol.for('browser-mcp.dialogs');
  if (window[GUARD]) return; // injected twice (manifest + on-demand injection)
  Object.defineProperty(window, GUARD, { value: true });
  const ASK = 'browser-mcp:dialog';
  const ANSWER = 'browser-mcp:dialog-answer';
  const UNTIL = 'browser-mcp:dialog-until';
  // Kept from before any page script runs, so a page that replaces them does not break us.
  const native = { alert: window.alert, confirm: window.confirm, prompt: window.prompt };
  const { addEventListener, removeEventListener, dispatchEvent } = EventTarget.prototype;
  const { preventDefault, stopImmediatePropagation } = Event.prototype;
  const { parse, stringify } = JSON;
  const Custom = CustomEvent;
  const detailOf = Object.getOwnPropertyDescriptor(CustomEvent.prototype, 'detail').get;
  const now = Date.now;
  const toNumber = Number;
  const isTop = window === window.top;

  // While driven, the page's own beforeunload handlers are not run, so a navigation the agent
  // asked for never stops at "Leave site?". (Chromium only shows that prompt after real user
  // input; the agent's input is synthetic, a person's is not.) The guard has to be the first
  // listener: Chromium runs a target's listeners in the order they were added, and one added
  // once the tab was driven ran after the page's own, and the prompt stopped the agent (seen in
  // CI). So it is added here, before any page script, in the top frame. A subframe gets it only
  // once it hears that its tab is driven (at document_start when the worker's word was there
  // first, worker/dialogs.js): a beforeunload listener in every frame would make each of them a
  // stop on every navigation of the person's pages. It reads no storage: leaving a page must
  // not cost every page either.
  let drivenUntil = 0;
  let guarding = false;
  function guard() {
    if (guarding) return;
    guarding = true;
    addEventListener.call(window, 'beforeunload', (event) => {
      if (now() < drivenUntil) stopImmediatePropagation.call(event);
    }, true);
  }
  if (isTop) guard();
  // dom-dialogs.js says until when the tab is driven (a string: only strings cross between the
  // worlds), and is told it was heard by the cancelled event. Listened for on the window in the
  // capture phase, so that no listener of the page's hears it first. The page can forge it: then
  // it only skips its own beforeunload handlers, which is its own business.
  addEventListener.call(window, UNTIL, (event) => {
    preventDefault.call(event);
    drivenUntil = toNumber(detailOf.call(event)) || 0;
    if (now() < drivenUntil) guard();
  }, true);

  function ask(kind, message, defaultText) {
    let answer = null;
    const take = (e) => {
      answer = e.detail;
    };
    addEventListener.call(document, ANSWER, take);
    try {
      dispatchEvent.call(document, new Custom(ASK, { detail: stringify({ kind, message: message === undefined ? '' : String(message), defaultText }) }));
    } finally {
      removeEventListener.call(document, ANSWER, take);
    }
    try {
      return typeof answer === 'string' ? parse(answer) : null;
    } catch {
      return null;
    }
  }

  window.alert = function alert(message) {
    const a = ask('alert', message);
    if (!a || a.native) return native.alert.apply(this, arguments);
  };
  window.confirm = function confirm(message) {
    const a = ask('confirm', message);
    if (!a || a.native) return native.confirm.apply(this, arguments);
    return a.accept === true;
  };
  window.prompt = function prompt(message, defaultText) {
    const def = defaultText === undefined ? '' : String(defaultText);
    const a = ask('prompt', message, def);
    if (!a || a.native) return native.prompt.apply(this, arguments);
    return a.accept === true ? (typeof a.text === 'string' ? a.text : def) : null;
  };
})();
