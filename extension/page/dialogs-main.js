// Page world, every frame, document_start: alert/confirm/prompt ask the extension first
// (dom-dialogs.js, isolated world) through synchronous DOM events. While an agent drives the tab
// the extension answers at once by its dialog policy, so a native dialog never blocks a call;
// otherwise (the person's own browsing) the native dialog opens as usual.
(() => {
  const GUARD = Symbol.for('browser-mcp.dialogs');
  if (window[GUARD]) return; // injected twice (manifest + on-demand injection)
  Object.defineProperty(window, GUARD, { value: true });
  const ASK = 'browser-mcp:dialog';
  const ANSWER = 'browser-mcp:dialog-answer';
  // Kept from before any page script runs, so a page that replaces them does not break us.
  const native = { alert: window.alert, confirm: window.confirm, prompt: window.prompt };
  const { addEventListener, removeEventListener, dispatchEvent } = EventTarget.prototype;
  const { parse, stringify } = JSON;
  const Custom = CustomEvent;

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
