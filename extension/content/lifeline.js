// The worker's lifeline (issue 20), carried by no page of the person's in Chromium (an offscreen
// document loads this, offscreen/lifeline.html) and by one web tab at a time elsewhere (issue 30;
// worker/connection/lifeline.js places it). Chromium stops a service worker that idles or
// misbehaves (and DevTools can stop it); its daemons then lose the browser until some event starts
// it again. This port breaks when the worker stops, and connecting again is such an event: the
// worker comes back, reconnects and reports its tabs within a second. A port that breaks at once
// (the worker cannot start) is retried with backoff.
(() => {
  if (globalThis.browserMcpLifeline) return;
  globalThis.browserMcpLifeline = true;
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
