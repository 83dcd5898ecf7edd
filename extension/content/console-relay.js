// Isolated-world half of the console capture (page/document-start.js has the page-world half): takes
// the batches the page's world sends as DOM events and forwards them to the service worker, at
// most one message every SEND_MS, or at once when the worker asks (`take`, before a tool call
// reads the log). In a top frame from document_start while a daemon says an agent is at work
// (watch.js); otherwise, in any frame, from the first time the worker reads the log, or as a
// subframe starts in a tab an agent works in (observe.js; issue 30), the page's world keeping
// what came before. While no daemon is connected (the worker's `eyesLive` flag) nothing is
// sent unasked: the last KEEP entries wait here.
//
// The DOM event is visible to the page, so whatever arrives here is treated as the page's own
// words: parsed defensively, bounded, never a command. The worker checks it again.
(() => {
  if (globalThis.browserMcpConsole) return;

  const FROM_PAGE = 'browser-mcp:console';
  const FLUSH = 'browser-mcp:console-flush';
  const KEEP = 1500;
  const SEND_MS = 100;
  const LIVE = 'eyesLive';

  let queue = [];
  let dropped = 0;
  let timer = null;
  let live = false;

  const schedule = () => {
    if (live && !timer && (queue.length || dropped)) timer = setTimeout(send, SEND_MS);
  };
  const setLive = (on) => {
    live = on === true;
    schedule();
  };
  // The flag is read when the page first logs, not at load: a page that logs nothing pays for
  // no extension API (issue 30).
  let asked = false;
  function learnLive() {
    if (asked) return;
    asked = true;
    addEventListener('pagehide', send, true);
    chrome.storage.local.get(LIVE).then((v) => setLive(v[LIVE]), () => setLive(true));
    chrome.storage.onChanged.addListener((changes, area) => area === 'local' && LIVE in changes && setLive(changes[LIVE].newValue));
  }

  function take() {
    clearTimeout(timer);
    timer = null;
    const msg = { type: 'console', entries: queue, dropped };
    queue = [];
    dropped = 0;
    return msg;
  }

  function send() {
    timer = null;
    if (!live || (!queue.length && !dropped)) return;
    chrome.runtime.sendMessage(take()).catch(() => {}); // the worker restarting, or the extension reloaded
  }

  document.addEventListener(FROM_PAGE, (event) => {
    let batch;
    try {
      batch = JSON.parse(event.detail);
    } catch {
      return;
    }
    if (!batch || !Array.isArray(batch.entries)) return;
    event.preventDefault(); // taken: the page's world lets the batch go
    if (Number.isInteger(batch.dropped) && batch.dropped > 0) dropped += batch.dropped;
    for (const e of batch.entries) if (e && typeof e === 'object') queue.push(e);
    if (queue.length > KEEP) {
      dropped += queue.length - KEEP;
      queue = queue.slice(-KEEP);
    }
    learnLive();
    schedule();
  });

  // What the worker takes when it reads the log (observe.js, by chrome.scripting, so that this
  // frame needs no message listener): the page's world hands over what it holds synchronously
  // (a DOM event), so the answer carries everything logged up to now.
  globalThis.browserMcpConsole = {
    take() {
      document.dispatchEvent(new CustomEvent(FLUSH));
      return take();
    },
  };
  // Injected after the page's world began logging (by a read, observe.js, or as watching
  // starts, watch.js): what it holds comes over now, not at the next read. At document_start
  // nothing answers.
  document.dispatchEvent(new CustomEvent(FLUSH));
})();
