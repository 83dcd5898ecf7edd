// Dialogs, one frame's part (isolated world): answers the page's alert/confirm/prompt for the
// page world (page/document-start.js) while an agent drives the tab, tells it until when the
// tab is driven (its beforeunload guard keeps leaving the page from stopping at a prompt
// meanwhile), and tells the service worker (dialogs.js) what happened.
//
// It stands alone, at document_start in every frame that starts while an agent drives a tab (a
// dialog may open before any tool has touched the frame), in a top frame that starts while a daemon
// says an agent is at work, and in the frames of a tab that becomes driven
// (worker/frames/dialogs.js, worker/ahead/watch.js, issue 30). The DOM tools (dom-tools.js) come
// when first needed.
(() => {
  if (globalThis.browserMcpDialogs) return; // injected twice (registered + on-demand injection)
  const ASK = 'browser-mcp:dialog';
  const ANSWER = 'browser-mcp:dialog-answer';
  const UNTIL = 'browser-mcp:dialog-until';

  // The tab's state as the service worker last told this frame: driven until `until` (ms since
  // the epoch), the policy for dialogs nobody asked about, and answers armed by
  // browser_handle_dialog for the next dialogs.
  let state = { until: 0, policy: 'dismiss', armed: [] };
  let during = null; // the dialogs of the DOM tool running now, to put in its result
  // Those answered while no DOM tool ran here (a page that alerts as it loads), for the next
  // tool's result in this frame: the worker's copy, sent at once, may come after that result.
  const unsaid = [];
  const MAX_UNSAID = 20;
  // What the document before this one in the tab said (sessionStorage, below), read when first
  // needed: a storage read at load would cost every page (issue 30).
  let inherited = null;
  const driven = () => {
    if (!state.until && inherited === null) {
      inherited = recalled();
      if (inherited) tellPage(inherited);
    }
    return Date.now() < Math.max(state.until, inherited || 0);
  };
  let seq = 0;
  let prefix = ''; // this frame's ref prefix, as the worker's requests say (content.js)

  function decide(kind) {
    if (!driven()) return null;
    if (state.armed.length) return { ...state.armed.shift(), by: 'browser_handle_dialog' };
    return { accept: kind === 'alert' || state.policy === 'accept', by: state.callPolicy ? 'this call\'s dialog policy' : `the default dialog policy (${state.policy})` };
  }

  document.addEventListener(ASK, (event) => {
    let req;
    try {
      req = JSON.parse(event.detail);
    } catch {
      return;
    }
    const kind = ['alert', 'confirm', 'prompt'].includes(req?.kind) ? req.kind : null;
    if (!kind) return;
    const answer = decide(kind);
    const reply = answer ? { accept: answer.accept, text: answer.text } : { native: true };
    // The native dialog blocks this frame from the moment we return; the note leaves first.
    if (!answer) chrome.runtime.sendMessage({ type: 'nativeDialog', kind, message: String(req.message ?? '') }).catch(() => {});
    if (answer) {
      const dialog = {
        id: `${Date.now().toString(36)}-${++seq}-${Math.random().toString(36).slice(2, 6)}`,
        kind,
        message: String(req.message ?? '').slice(0, 2000),
        ...(kind === 'prompt' ? { defaultText: String(req.defaultText ?? '').slice(0, 2000) } : {}),
        accepted: answer.accept,
        ...(kind === 'prompt' && answer.accept ? { text: typeof answer.text === 'string' ? answer.text : String(req.defaultText ?? '') } : {}),
        answeredBy: answer.by,
        url: location.href,
        frame: prefix || 'top',
      };
      if (during) during.push(dialog);
      else if (unsaid.push(dialog) > MAX_UNSAID) unsaid.shift();
      chrome.runtime.sendMessage({ type: 'dialog', dialog, usedArmed: answer.by === 'browser_handle_dialog' }).catch(() => {});
    }
    document.dispatchEvent(new CustomEvent(ANSWER, { detail: JSON.stringify(reply) }));
  });

  // What keeps the page's beforeunload handlers from running lives in the page's world
  // (page/document-start.js), in place before any page script whether or not this script is in
  // the frame yet: it is told the deadline, and takes the word by cancelling the event. Not
  // taken means that world's script has not run yet (an order between the worlds at
  // document_start is not promised): once more, after the scripts of this moment.
  let pageUntil = 0; // the latest word, which a retry carries
  const told = () => !document.dispatchEvent(new CustomEvent(UNTIL, { detail: String(pageUntil), cancelable: true }));
  function tellPage(until) {
    keepOnLeave();
    pageUntil = until;
    if (!told()) setTimeout(told, 0);
  }

  // The tab's sessionStorage carries "driven until" to the next document of the same origin in
  // this tab, which reads it synchronously at document_start: a page the agent's click opens may
  // alert while it loads, before any message from the service worker can arrive. Written as
  // the page is left (beforeunload, which comes before the next document is even asked for),
  // not each time the worker tells it: the first touch of sessionStorage is a synchronous trip
  // to the browser, 1-2 ms that the first tool call on every page would pay (issue 30).
  const KEY = 'browser-mcp:driven-until';
  let keeping = false;
  function keepOnLeave() {
    if (keeping) return;
    keeping = true;
    // Before the page world's guard (document-start.js), which stops the later listeners of a
    // driven tab's beforeunload: it is added once told, after this.
    addEventListener('beforeunload', () => {
      try {
        const until = Math.max(state.until, inherited || 0);
        if (until > Date.now()) sessionStorage.setItem(KEY, String(until));
        else sessionStorage.removeItem(KEY);
      } catch {
        // no storage here (opaque origin, storage off)
      }
    }, true);
  }
  function recalled() {
    try {
      return Number(sessionStorage.getItem(KEY)) || 0;
    } catch {
      return 0;
    }
  }

  function setState(next) {
    state = { until: Number(next.until) || 0, policy: next.policy === 'accept' ? 'accept' : 'dismiss', callPolicy: !!next.callPolicy, armed: Array.isArray(next.armed) ? next.armed : [] };
    inherited = 0; // the worker's word replaces the last page's
    tellPage(state.until);
  }

  // A new document learns whether its tab is driven from the service worker, which tells every
  // document that commits in a driven tab (dialogs.js) — before this script or after it — or
  // from the document before it in the tab. It asks nothing itself: a page no agent drives
  // pays no message (issue 30).
  if (globalThis.browserMcpDialogState) setState(globalThis.browserMcpDialogState);

  globalThis.browserMcpDialogs = {
    setState,
    set prefix(p) {
      prefix = p;
    },
    // Runs a DOM tool with its dialogs collected for its result.
    async around(fn) {
      const mine = unsaid.splice(0);
      const outer = during;
      during = mine;
      try {
        const result = await fn();
        if (mine.length && result && typeof result === 'object') result.dialogs = mine;
        return result;
      } finally {
        during = outer;
      }
    },
  };
})();
