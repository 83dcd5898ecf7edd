// The last file of the DOM tools' injection (worker/frame-channel.js): the frame's bridge starts
// listening for the worker, and the injection's result says whether the bridge was there (a
// page loaded before the extension has none yet).
globalThis.browserMcpBridge?.listen() === true;
