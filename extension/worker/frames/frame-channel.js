// The message channel to one frame's content script: send, inject the content scripts into a
// frame that has none yet, and word a frame or page that went away. It knows no tab-level rules
// (page.js) and no refs (frames.js), so both may use it.
import * as proto from '../../shared/protocol.js';
import { isFirefox } from '../../shared/platform.js';
import { within } from '../../shared/within.js';

// The isolated-world scripts of a frame an agent may use: dialogs, the console relay and the
// bridge. No longer in the manifest (issue 30: creating an isolated world costs a page 4-5 ms
// in a new renderer): a top frame gets them at document_start only while a daemon says an
// agent is at work (watch.js), a subframe while an agent drives its tab (dialogs.js, the
// dialogs alone), and any frame when a tool first needs it (inject below).
export const DIALOGS_SCRIPT = 'content/dom-dialogs.js';
export const ISOLATED_SCRIPTS = [DIALOGS_SCRIPT, 'content/console-relay.js', 'content/content.js'];
// What a frame that has none of ours gets: the isolated scripts, then the page-world ones the
// manifest gives every frame at load (a page from before the extension has those neither).
const frameScripts = () => [{ js: ISOLATED_SCRIPTS }, ...chrome.runtime.getManifest().content_scripts];

// The DOM tools, put into a frame the first time a tool needs them and kept for that document,
// so that a page no agent touches never pays for them (issue 30). In parts, minified (the frame
// parses all of a file it is given, about 0.1 ms a KB in a new renderer), so that a first call
// parses only what its tool uses:
// - `kit`: what reading the page needs (the accessible-name library, the shared part, the
//   snapshot), which every tool uses; compiled whole as the frame reads it (a snapshot runs
//   nearly all of it);
// - `page`: the reading part's half in the page's own world, which alone sees the handlers
//   frameworks keep on DOM nodes (React's props, Svelte's delegated events, jQuery's
//   delegations: issue 57); only a snapshot reads what it finds, and it does nothing until one
//   asks (a world of its own is an injection of its own, beside the kit's);
// - `hands`: what acting needs besides (the action point, actions, hover), compiled function
//   by function as used;
// - `points`: input at a point and the page's side of trusted input (drag, click_at, hover_at,
//   point_at, input_target, viewport), which the usual actions by ref or selector do without.
// scripts/minify-extension.mjs makes the files from the sources it lists. Paths from the
// extension's root: Firefox reads one without its slash from the calling page's.
const FILES = {
  kit: '/content/dom-kit.min.js',
  hands: '/content/dom-kit-hands.min.js',
  points: '/content/dom-kit-points.min.js',
};
const PAGE_WORLD = '/page/handlers.min.js';
// The files put in off a call's path, ahead of the calls that will use them (kit-ahead.js, and
// the acting part after a snapshot), each compiled whole as the frame reads it, so that those
// calls find their functions compiled: the acting part's file ahead holds `points` too.
const AHEAD = { kit: FILES.kit, hands: '/content/dom-kit-hands-ahead.min.js', points: FILES.points };
const ALL = ['kit', 'page', 'hands', 'points'];
// The DOM tools of the reading part; every other one needs the acting part too.
const READING = new Set(['snapshot']);
const AT_POINTS = new Set(['drag', 'drag_at', 'viewport', 'point_at', 'input_target', 'click_at', 'hover_at']);
// Firefox's injections do not say which document they reached, so a document's parts are not
// noted there (below), and a snapshot after an action could not tell that the page world is
// missing: there it goes in with the kit whatever the tool.
const partsFor = (name) => {
  if (READING.has(name)) return ['kit', 'page'];
  return [...(isFirefox ? ['kit', 'page'] : ['kit']), 'hands', ...(AT_POINTS.has(name) ? ['points'] : [])];
};
// The files of `parts`, in the order they use each other.
function filesFor(parts, ahead) {
  const held = ahead && parts.includes('hands') ? parts.filter((p) => p !== 'points') : parts;
  return held.filter((p) => p !== 'page').map((p) => (ahead ? AHEAD : FILES)[p]);
}

// The parts each frame's current document has, per tab: a DOM tool's first call on a document
// puts them in with its isolated scripts in one injection instead of finding out by failed
// messages, and later calls ask nothing first. A frame that commits another document leaves (a
// top frame takes its tab's subframes with it). Kept in Chromium; in Firefox, whose injections
// do not say which document they reached, the failures say what is missing.
const ready = new Map(); // tabId -> Map(frameId -> Set(part))
export function forgetTabDocuments(tabId) {
  ready.delete(tabId);
}
// At module load, so it is registered when the worker starts (background.js imports this).
chrome.webNavigation.onCommitted.addListener(({ tabId, frameId }) => {
  if (frameId === 0) ready.delete(tabId);
  else ready.get(tabId)?.delete(frameId);
});
// What of `parts` the frame's document lacks: all of them without the first (a document that
// has no kit has no hands either, whatever was noted for the frame before it).
function lacking(tabId, frameId, parts) {
  const has = ready.get(tabId)?.get(frameId);
  return has?.has('kit') ? parts.filter((p) => !has.has(p)) : parts;
}

// The DOM tools into the frame's current document, with the frame's isolated scripts if it has
// none yet (no agent watched it load, or it is from before the extension). `ahead`: off a
// call's path, each part compiled whole.
async function prepare(tabId, frameId, parts, { ahead = false } = {}) {
  const target = { tabId, frameIds: [frameId] };
  // A page world the frame will not let in (a sandboxed frame) only costs the snapshot its
  // framework handlers.
  const page = parts.includes('page') ? chrome.scripting.executeScript({ target, world: 'MAIN', files: [PAGE_WORLD] }).catch(() => null) : null;
  // The page world alone (a snapshot after an action) goes where the kit already is.
  const files = filesFor(parts, ahead);
  const own = files.length ? chrome.scripting.executeScript({ target, files: [...files, '/content/has-bridge.js'] }) : null;
  const [isolated, main] = await Promise.all([own, page]);
  const answer = isolated?.[0];
  // Firefox says in the result, not by failing, that a file did not load or threw.
  if (answer?.error) throw new proto.ToolError(proto.Code.TOOL_ERROR, `the DOM tools did not load in ${frameName(tabId, frameId)}: ${answer.error}`);
  if (isolated && answer?.result !== true) await addFrameScripts(target);
  // A document the injection names is one it reached (Chromium; no webNavigation.getFrame first).
  const documentId = (answer ?? main?.[0])?.documentId;
  if (!documentId) return;
  if (!ready.has(tabId)) ready.set(tabId, new Map());
  const frames = ready.get(tabId);
  if (!frames.has(frameId)) frames.set(frameId, new Set());
  for (const p of parts) frames.get(frameId).add(p);
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new proto.ToolError(proto.Code.TOOL_ERROR, `${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// A frame's bridge listens for the worker only once asked (content.js: a page no agent uses
// calls no extension API, issue 30). A frame that has no bridge (a top frame that loaded while
// no agent was at work, any frame from before the extension) gets its content scripts first,
// unless `add` is false: then only a bridge already there is woken, and whether there is one is
// asked from the page's world, as a script of ours in the isolated world would create that
// world in a frame that has none (what a restarted worker's question would cost every open
// page). Says whether a bridge listens.
export async function inject(tabId, frameId, { add = true } = {}) {
  const target = { tabId, frameIds: [frameId] };
  const run = async (how) => (await chrome.scripting.executeScript({ target, ...how }))[0]?.result === true;
  const listen = () => run({ func: () => globalThis.browserMcpBridge?.listen() === true });
  if (!add) return (await run({ world: 'MAIN', func: bridged })) && listen();
  if (await listen()) return true;
  return addFrameScripts(target, { listen: true });
}

// What a frame that has none of ours gets. The page's world may have had its WebMCP adapter, and
// tools, from before (a page loaded while no agent was at work, an extension reloaded): it says
// what it holds now that a bridge hears it. With `listen`, the bridge listens first; says
// whether it does.
async function addFrameScripts(target, { listen = false } = {}) {
  const run = async (func) => (await chrome.scripting.executeScript({ target, func }))[0]?.result === true;
  for (const cs of frameScripts()) {
    await chrome.scripting.executeScript({ target, files: cs.js, ...(cs.world === 'MAIN' ? { world: 'MAIN' } : {}) });
  }
  const listening = listen && (await run(() => globalThis.browserMcpBridge?.listen() === true));
  await run(() => globalThis.browserMcpBridge?.sync() === true);
  return listening;
}

// Runs in the page's world: whether the frame has a bridge (content.js takes the question by
// cancelling it). The page can answer for it: then it gets an isolated world it did not need, or
// keeps its own tools from the extension.
function bridged() {
  return !globalThis.document.dispatchEvent(new CustomEvent('browser-mcp:bridge', { cancelable: true }));
}

const noReceiver = (e) => /Receiving end does not exist|Could not establish connection|No frame with id|No document with id/i.test(e?.message || '');

// Puts the DOM tools that DOM tool `tool` needs (both parts for any but a reading one) into the
// frame's current document if it has not got them yet, unless they are on their way (Firefox,
// which cannot tell, only waits for those). A call may start this early, beside its other
// preparations, and so may a page's load in a tab an agent drives (kit-ahead.js) and a
// snapshot's answer (`ahead`: what the document lacks of both parts, compiled as read; in
// Firefox `parts`, what the answer says it lacks); the call that follows words anything that
// went wrong.
const warming = new Map(); // `${tabId}/${frameId}` -> the injection under way
// The longest a call waits for an injection under way: one held up (by a native dialog, or
// aimed at a document on its way out) must not hold the call, which then asks the frame itself
// and words what it finds.
const WARM_WAIT_MS = 3000;
export async function warmFrame(tabId, frameId, { ahead = false, tool, parts: only } = {}) {
  const parts = only ?? (ahead ? ALL : partsFor(tool));
  if (!lacking(tabId, frameId, parts).length) return;
  const key = `${tabId}/${frameId}`;
  // One under way may bring what this call needs (a snapshot's part, before a click's).
  const under = warming.has(key);
  await settled(tabId, frameId);
  const missing = lacking(tabId, frameId, parts);
  if (!missing.length || warming.has(key) || (isFirefox && (under || !ahead))) return;
  const done = prepare(tabId, frameId, missing, { ahead })
    .catch(() => {})
    .finally(() => warming.delete(key));
  warming.set(key, done);
  await within(done, WARM_WAIT_MS);
}

// Once the injection under way into the frame, if any, has landed: a call by ref that does not
// warm (Firefox, where nothing says what a document holds) must not race the acting part that
// a snapshot's answer sent after it, and put it in a second time.
async function settled(tabId, frameId) {
  const under = warming.get(`${tabId}/${frameId}`);
  if (under) await within(under, WARM_WAIT_MS);
}

// A DOM tool in one frame: a function injected into the frame's isolated world calls the DOM
// tools there (content/dom-tools.js `answer`), put in first if the frame's document has none,
// and its value is the answer: `{value, document}`, the document's name for later calls with its
// refs. No message listener takes it: a frame's first use of the extension API would cost the
// page 1-2 ms in the call (issue 30). With `document`, only that document may answer: a frame
// that shows another one refuses with code FRAME_GONE.
export async function domToFrame(tabId, frameId, req, { timeoutMs = 300_000 } = {}) {
  const parts = partsFor(req.name);
  // A ref's document has the first part already (another one is not worth any): an action by a
  // ref from a snapshot may need the second, which warmFrame finds out.
  if (req.document === undefined || ready.get(tabId)?.get(frameId)?.has('kit')) await warmFrame(tabId, frameId, { tool: req.name });
  else await settled(tabId, frameId);
  const target = { tabId, frameIds: [frameId] };
  const where = frameName(tabId, frameId);
  const failed = async (e) => {
    if (e instanceof proto.ToolError) return e; // timed out
    if (/error page/i.test(e?.message || '')) return errorPage(tabId, frameId);
    if (unscriptable(e)) return new proto.ToolError(proto.Code.TOOL_ERROR, `cannot reach ${where}: ${e.message}`);
    await frameGone(tabId, frameId);
    return pageGone(tabId, e);
  };
  const ask = async () => {
    try {
      const run = chrome.scripting.executeScript({ target, func: answerIn, args: [req], injectImmediately: true });
      return (await withTimeout(run, timeoutMs, `browser_${req.name}`))[0]?.result;
    } catch (e) {
      throw await failed(e);
    }
  };
  let reply = await ask();
  // What the answer says is missing (Firefox, or a warm that did not land): no DOM tools at all,
  // or, for an acting tool, its acting parts.
  const code = reply?.error?.code;
  const lacks = (p) => (p === 'hands' && reply.hands === false) || (p === 'points' && reply.points === false);
  const missing = code === 'DOM_NOT_LOADED' ? parts : code === 'TOOL_NOT_FOUND' ? parts.filter(lacks) : null;
  if (missing?.length) {
    try {
      await prepare(tabId, frameId, missing);
    } catch (e) {
      throw await failed(e);
    }
    reply = await ask();
  }
  const value = await resultOf(tabId, frameId, reply);
  // An agent looks before it acts: after a reading tool's answer that says the document lacks
  // the acting part, that part follows the answer into the document, off the call's path (the
  // answer goes first), so that the action by ref that comes next finds it there, compiled. The
  // answer tells: Firefox's injections do not say which document they reached, so there it is
  // the acting parts alone (in Chromium, what `ready` says the document lacks of all).
  if (READING.has(req.name) && reply.hands === false) {
    const what = isFirefox ? { ahead: true, parts: ['hands', 'points'] } : { ahead: true };
    setTimeout(() => warmFrame(tabId, frameId, what), 0);
  }
  return { value, document: reply.document };
}

// A frame's answer as the call's result. Ours always answer, so no answer at all means the
// document went before it could (a navigation, a close): Chromium resolved the message or the
// injection with nothing, or the DOM tools saw the page hide. That is the page going away, for
// call-watch.js to word once it shows.
async function resultOf(tabId, frameId, reply) {
  if (!reply || reply.gone) {
    await frameGone(tabId, frameId);
    throw goneError(`page in tab ${tabId} went away: ${frameId ? `frame ${frameId} ` : ''}did not answer`);
  }
  if (reply.error) throw new proto.ToolError(reply.error.code || proto.Code.TOOL_ERROR, reply.error.message);
  return reply.result;
}

// Runs in the frame's isolated world (chrome.scripting serializes it): the DOM tools' answer.
// A frame without them is not showing the document a ref came from, which had them.
function answerIn(req) {
  const kit = globalThis.browserMcpDom;
  // Whether the document has the acting parts (dom-actions.js adds click, dom-drag.js drag).
  if (kit?.answer) return kit.answer(req).then((reply) => ({ ...reply, hands: Object.hasOwn(kit.tools, 'click'), points: Object.hasOwn(kit.tools, 'drag') }));
  const missing = req.document === undefined;
  return { error: { code: missing ? 'DOM_NOT_LOADED' : 'FRAME_GONE', message: missing ? 'the DOM tools are not in this frame yet' : 'the frame shows another document' } };
}

// What the browser refuses to script, whichever document the frame shows: its own pages, other
// extensions', error pages, a site the extension may not reach.
const unscriptable = (e) => /Cannot access|cannot be scripted|error page|permission/i.test(e?.message || '');

// A frame that shows the browser's error page, in a person's words and with the address that
// failed, not Chromium's ("Frame with ID 0 is showing error page") with a bare tab id (issue 59).
async function errorPage(tabId, frameId) {
  const frame = await chrome.webNavigation.getFrame({ tabId, frameId }).catch(() => null);
  const tab = frameId ? null : await chrome.tabs.get(tabId).catch(() => null);
  const url = [tab?.url, tab?.pendingUrl, frame?.url].find((u) => u && !/^chrome-error:/.test(u));
  const what = `${frameId ? `frame ${frameId}` : 'the page'}${url ? ` at ${url}` : ''}`;
  return new proto.ToolError(proto.Code.TOOL_ERROR, `${what} did not load: the browser shows its error page there, with nothing to read or act on; navigate again (browser_navigate) or elsewhere`);
}

const frameName = (tabId, frameId) => `${frameId ? `frame ${frameId} of ` : 'the page in '}tab ${tabId}`;

async function frameGone(tabId, frameId) {
  const frame = await chrome.webNavigation.getFrame({ tabId, frameId }).catch(() => null);
  if (!frame) throw new proto.ToolError('FRAME_GONE', `frame ${frameId} of tab ${tabId} is gone`);
}

// One request to one frame's content script (not the DOM tools: domToFrame). With
// `inject: false` nothing is put into the frame: only a bridge it already has is asked (a page
// no agent needs keeps paying nothing).
export async function sendToFrame(tabId, frameId, msg, { timeoutMs = 300_000, inject: mayInject = true } = {}) {
  const send = () => chrome.tabs.sendMessage(tabId, msg, { frameId });
  // The frame's bridge made to listen, and put in first if the frame has none (unless
  // `inject` is false).
  const reach = async () => {
    try {
      return await withTimeout(send(), timeoutMs, msg.op);
    } catch (e) {
      if (!noReceiver(e)) throw pageGone(tabId, e);
      await frameGone(tabId, frameId);
      let listening;
      try {
        listening = await inject(tabId, frameId, { add: mayInject });
      } catch (injectErr) {
        throw new proto.ToolError(proto.Code.TOOL_ERROR, `cannot reach ${frameName(tabId, frameId)}: ${injectErr.message}`);
      }
      if (!listening && !mayInject) throw new proto.ToolError(proto.Code.TOOL_ERROR, `${frameName(tabId, frameId)} has no bridge to the extension`);
      return withTimeout(send(), timeoutMs, msg.op).catch((e2) => {
        throw pageGone(tabId, e2);
      });
    }
  };
  return resultOf(tabId, frameId, await reach());
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
