// Isolated-world bridge: relays between the service worker (chrome.runtime messages) and the
// WebMCP adapter in the page's own world (webmcp-shim.js, DOM CustomEvents).
//
// The events travel through the shared DOM, so the page can see and forge them. That is
// acceptable: they only carry the page's own tools and results. Nothing arriving from the page
// is ever treated as a command.
(() => {
  if (globalThis.browserMcpBridge) return; // injected twice (manifest + on-demand injection)
  globalThis.browserMcpBridge = true;

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

  const report = (tools) => chrome.runtime.sendMessage({ type: 'pageTools', tools }).catch(() => {});

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

  chrome.runtime.onMessage.addListener((req, sender, sendResponse) => {
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
    } else if (req?.op === 'dom') {
      work = globalThis.browserMcpDom.run(req.name, req.args, req.frame);
    } else {
      return false;
    }
    asReply(work).then(sendResponse);
    return true; // async sendResponse
  });

  // WebMCP tools are the top frame's (webmcp-shim.js runs there only); subframes carry this
  // script for the DOM tools and need not tell the worker anything at load.
  if (window !== window.top) return;
  // A new document has no tools until its adapter says so; this also clears the previous page's.
  report([]);
  // The adapter may have started before this listener existed; ask it to push its state.
  toPage({ kind: 'sync' });
  // A page restored from the back/forward cache keeps its tools but the registry forgot them.
  addEventListener('pageshow', (e) => e.persisted && toPage({ kind: 'sync' }));

  // The worker's lifeline (issue 20). Chromium stops a service worker that idles or misbehaves
  // (and DevTools can stop it); its daemons then lose the browser until some event starts it
  // again, such as the 30 s alarm. This port breaks when the worker stops, and connecting again
  // is such an event: the worker comes back, reconnects and reports its tabs within a second.
  // A port that breaks at once (the worker cannot start) is retried with backoff.
  const wake = (delay) => {
    let port;
    try {
      port = chrome.runtime.connect({ name: 'browser-mcp:wake' });
    } catch {
      return; // the extension was reloaded or removed: this script is an orphan now
    }
    const opened = Date.now();
    port.onDisconnect.addListener(() => {
      void chrome.runtime.lastError;
      const next = Date.now() - opened > 5000 ? 100 : Math.min(delay * 2, 30_000);
      setTimeout(() => wake(next), next + Math.random() * 100);
    });
  };
  wake(100);
})();
