// Isolated-world bridge: relays between the service worker (chrome.runtime messages) and the
// WebMCP adapter in the page's own world (page/document-start.js, DOM CustomEvents).
//
// The events travel through the shared DOM, so the page can see and forge them. That is
// acceptable: they only carry the page's own tools and results. Nothing arriving from the page
// is ever treated as a command.
//
// It is in a top frame from document_start only while a daemon says an agent is at work
// (worker/ahead/watch.js); any other frame gets it when the worker first needs it (a tool, a
// daemon's discoverTools, the popup: worker/frames/frame-channel.js inject). Until then the page's
// tools reach nobody, and a page nobody uses pays nothing for them (issue 30).
//
// It touches no extension API at load (issue 30: the first use of `chrome` in a frame costs the
// page about a millisecond): the worker's requests find no listener in a frame it has not
// spoken to, and it then calls `listen()` (worker/frames/frame-channel.js), once per document. The
// DOM tools do not come through here: the worker calls them with an injected function, so a
// page whose agent only reads and acts on it never listens.
(() => {
  if (globalThis.browserMcpBridge) return; // injected twice (registered + on-demand injection)

  const TO_PAGE = 'browser-mcp:to-page';
  const FROM_PAGE = 'browser-mcp:from-page';
  const pending = new Map();
  let seq = 0;

  // Only strings cross between worlds intact; an object detail arrives as null.
  const toPage = (msg) => document.dispatchEvent(new CustomEvent(TO_PAGE, { detail: JSON.stringify(msg) }));

  function askPage(msg, timeoutMs) {
    const id = `${Date.now()}-${++seq}`;
    return new Promise((resolve, reject) => {
      const timer = timeoutMs && setTimeout(() => {
        pending.delete(id);
        reject(Object.assign(new Error('the page did not answer (WebMCP adapter missing?)'), { code: 'TOOL_ERROR' }));
      }, timeoutMs);
      pending.set(id, (reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
      toPage({ ...msg, id });
    });
  }

  // A page restored from the back/forward cache keeps its tools but the registry forgot them:
  // listened for once the page has reported tools (a page without any needs no listener).
  let restoring = false;
  const report = (tools) => {
    if (!restoring && window === window.top) {
      restoring = true;
      addEventListener('pageshow', (e) => e.persisted && toPage({ kind: 'sync' }));
    }
    chrome.runtime.sendMessage({ type: 'pageTools', tools }).catch(() => {});
  };

  document.addEventListener(FROM_PAGE, (event) => {
    let msg;
    try {
      msg = JSON.parse(event.detail);
    } catch {
      return;
    }
    if (msg?.kind === 'tools' && Array.isArray(msg.tools)) report(msg.tools);
    else if (msg?.kind === 'reply' && pending.has(msg.id)) {
      const done = pending.get(msg.id);
      pending.delete(msg.id);
      done(msg);
    }
  });

  const asReply = (p) =>
    p.then(
      (result) => ({ result: result ?? null }),
      (e) => ({ error: { code: e?.code || 'TOOL_ERROR', message: String(e?.message ?? e) } }),
    );

  function onRequest(req, sender, sendResponse) {
    if (sender.id !== chrome.runtime.id) return false;
    let work;
    if (req?.op === 'listTools') {
      work = askPage({ kind: 'list' }, 1000).then((r) => r.tools || []);
    } else if (req?.op === 'callTool') {
      // No deadline here: the daemon owns the call's deadline.
      work = askPage({ kind: 'call', name: req.name, args: req.args ?? {} }, 0).then((r) => {
        if (r.error) throw r.error;
        return r.result;
      });
    } else {
      return false;
    }
    asReply(work).then(sendResponse);
    return true; // async sendResponse
  }

  // The worker asks from the page's world whether this frame has a bridge (frame-channel.js):
  // asking from here would create this world in a frame that has none.
  document.addEventListener('browser-mcp:bridge', (event) => event.preventDefault());

  let listening = false;
  globalThis.browserMcpBridge = {
    listen() {
      if (!listening) chrome.runtime.onMessage.addListener(onRequest);
      listening = true;
      return true;
    },
    // Asks the WebMCP adapter to say what it holds: for a bridge put in after the page's own
    // world had its adapter (frame-channel.js injects into pages that loaded while no agent was
    // at work, from before the extension, or from before its reload). At document_start this
    // script runs first and asks nothing: the adapter speaks up once the page has tools (issue
    // 30).
    sync() {
      if (window === window.top) toPage({ kind: 'sync' });
      return true;
    },
  };
})();
