// The message channel to one frame's content script: send, inject the content scripts into a
// frame that has none yet, and word a frame or page that went away. It knows no tab-level rules
// (page.js) and no refs (frames.js), so both may use it.
import * as proto from '../shared/protocol.js';

// The isolated-world scripts every frame gets (manifest content_scripts), and the page-world ones.
const contentScripts = () => chrome.runtime.getManifest().content_scripts;

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new proto.ToolError(proto.Code.TOOL_ERROR, `${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Content scripts only arrive in pages loaded after the extension; tabs that were already open
// (install, reload, update) get them injected on first use.
async function inject(tabId, frameId) {
  const target = { tabId, frameIds: [frameId] };
  for (const cs of contentScripts()) {
    await chrome.scripting.executeScript({ target, files: cs.js, ...(cs.world === 'MAIN' ? { world: 'MAIN' } : {}) });
  }
}

const noReceiver = (e) => /Receiving end does not exist|Could not establish connection|No frame with id|No document with id/i.test(e?.message || '');

// One request to one frame's content script. With `documentId`, only that document may answer:
// when the frame has moved on, the error has code FRAME_GONE.
export async function sendToFrame(tabId, frameId, msg, { documentId, timeoutMs = 300_000, inject: mayInject = true } = {}) {
  const send = () => chrome.tabs.sendMessage(tabId, msg, documentId ? { frameId, documentId } : { frameId });
  const frameGone = async () => {
    const frame = await chrome.webNavigation.getFrame({ tabId, frameId }).catch(() => null);
    if (!frame || (documentId && frame.documentId !== documentId)) {
      throw new proto.ToolError('FRAME_GONE', `frame ${frameId} of tab ${tabId} is gone`);
    }
  };
  let reply;
  try {
    reply = await withTimeout(send(), timeoutMs, msg.op === 'dom' ? `browser_${msg.name}` : msg.op);
  } catch (e) {
    if (!noReceiver(e)) throw pageGone(tabId, e);
    await frameGone();
    if (!mayInject) throw pageGone(tabId, e);
    try {
      await inject(tabId, frameId);
    } catch (injectErr) {
      throw new proto.ToolError(proto.Code.TOOL_ERROR, `cannot reach ${frameId ? `frame ${frameId} of ` : 'the page in '}tab ${tabId}: ${injectErr.message}`);
    }
    reply = await withTimeout(send(), timeoutMs, msg.op).catch((e2) => {
      throw pageGone(tabId, e2);
    });
  }
  if (!reply) {
    // Our listener always answers, so the document that took the request was not the one that
    // runs it: it was on its way out (a navigation, a close) and Chromium resolved the message
    // with nothing. That is the page going away, for call-watch.js to word once it shows.
    await frameGone();
    throw goneError(`page in tab ${tabId} went away: ${frameId ? `frame ${frameId} ` : ''}did not answer`);
  }
  if (reply.error) throw new proto.ToolError(reply.error.code || proto.Code.TOOL_ERROR, reply.error.message);
  return reply.result;
}

function pageGone(tabId, e) {
  if (e instanceof proto.ToolError) return e;
  // The usual cause: the page navigated or closed while the call was running.
  return goneError(`page in tab ${tabId} went away: ${e.message}`);
}

// A failure because the page itself went away: call-watch.js gives the navigation behind it a
// moment to show before it words the error.
export function goneError(message) {
  const e = new proto.ToolError(proto.Code.TOOL_ERROR, message);
  e.pageGone = true;
  return e;
}
