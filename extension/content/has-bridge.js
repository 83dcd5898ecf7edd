// The last file of the DOM tools' injection (worker/frames/frame-channel.js): its value, the
// injection's result, says whether the frame has its isolated scripts (content.js and the ones
// before it), which a page that loaded while no agent was at work, or before the extension,
// has not. Nothing listens for the worker because of it: that costs a frame its first use of
// the extension API (issue 30).
globalThis.browserMcpBridge !== undefined;
