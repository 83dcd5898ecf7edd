// Built-in tools, offered on every http(s) tab so that a page without WebMCP is still useful.
// Tools that need the DOM run in the content scripts of the frame that owns their element
// (frames.js routes by ref); the rest need extension APIs.
import { Code, ToolError } from '../../shared/protocol.js';
import { committedTab, getTab, isWebUrl } from '../frames/page.js';
import { started } from '../frames/navigations.js';
import { consentWhy, hides, needsConsent, offSite, siteOf } from '../../shared/policy.js';
import { reachOf } from '../frames/reach.js';
import * as frames from '../frames/frames.js';
import { warmFrame } from '../frames/frame-channel.js';
import * as dialogs from '../frames/dialogs.js';
import { OBSERVE_TOOLS, callObserve, isObserveTool } from './observe.js';
import * as hands from './act.js';
import * as aftermath from './aftermath.js';

const ref = { type: 'string', description: 'Element ref from the latest browser_snapshot, e.g. "e12" (or "f3e12" inside a frame)' };
const selector = { type: 'string', description: 'CSS selector (top frame), used when no ref is given' };
const target = { ref, selector };
// Every action checks first that its element is there, rendered, enabled and, for a pointer,
// not covered by something else (content/dom-point.js); `force` skips those checks.
const force = {
  type: 'boolean',
  description: 'Act even if the element is covered by another, not rendered or disabled (skips the checks that otherwise fail with ELEMENT_COVERED or ELEMENT_NOT_INTERACTABLE)',
  default: false,
};
// Acting at a point (issue 57): what a screenshot shows, in the viewport's CSS pixels.
const coordinate = (what) => ({ type: 'number', description: `${what}, in CSS pixels of the viewport (a screenshot states its scale), instead of an element` });
const position = {
  type: 'object',
  properties: { x: { type: 'number' }, y: { type: 'number' } },
  required: ['x', 'y'],
  additionalProperties: false,
  description: 'Where in the element, in CSS pixels from its top left corner (default: its middle)',
};
const dialog = {
  type: 'string',
  enum: dialogs.POLICIES,
  description: 'How to answer a confirm/prompt the page opens during this call (default "dismiss"; alerts are closed either way)',
};
const EDIT = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true };
const ACT = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true };
const NAV = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true };

const tool = (name, title, description, properties, required, annotations) => ({
  name,
  title,
  description,
  inputSchema: { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false },
  annotations: { title, ...annotations },
});

// A hand-off to the person (issue 60): listed here, run by worker/calls/handoff.js, which
// waits for the person rather than the page.
export const HANDOFF_LIMITS = { DEFAULT_SEC: 600, MAX_SEC: 3600, REASON_MAX: 500 };
const { DEFAULT_SEC, MAX_SEC, REASON_MAX } = HANDOFF_LIMITS;
const HANDOFF_TOOL = {
  name: 'browser_handoff',
  title: 'Hand off to the person',
  description: `Ask the person at the browser to take over this tab (sign in, a 2FA code, a CAPTCHA) and wait until they click Done or "I can't" in browser-mcp's popup. The tab is brought forward and a notification says who asks and why; the page is not told. Returns a fresh snapshot of the tab and what changed (URL, title). Fails with HANDOFF_DECLINED, HANDOFF_TIMEOUT (default ${DEFAULT_SEC} s; the person may give more time), or NO_PERSON in a headless browser the daemon launched. Never retried.`,
  inputSchema: {
    type: 'object',
    properties: {
      reason: { type: 'string', description: 'What the person should do, in their words (e.g. "sign in to your bank")', maxLength: REASON_MAX },
      timeoutSec: { type: 'number', description: `How long to wait for the person, in seconds (default ${DEFAULT_SEC}, at most ${MAX_SEC})`, exclusiveMinimum: 0, maximum: MAX_SEC },
    },
    required: ['reason'],
    additionalProperties: false,
  },
  annotations: { title: 'Hand off to the person', readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
};

export const BUILTIN_TOOLS = [
  tool('browser_navigate', 'Navigate', 'Load a URL in this tab and wait until it has loaded.',
    { url: { type: 'string', description: 'Absolute http(s) URL' }, dialog }, ['url'],
    { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true }),
  tool('browser_navigate_back', 'Go back', 'Go back one page in this tab\'s history and wait until it has loaded.', { dialog }, [], NAV),
  tool('browser_navigate_forward', 'Go forward', 'Go forward one page in this tab\'s history and wait until it has loaded.', { dialog }, [], NAV),
  tool('browser_reload', 'Reload', 'Reload this tab\'s page and wait until it has loaded.', { dialog }, [], NAV),
  tool('browser_snapshot', 'Page snapshot',
    `Readable text of the page and of every frame in it, with its interactive elements; each element carries a ref (e.g. "e12", or "f3e12" inside a frame) that the other browser_* tools accept. At most maxChars characters (default ${frames.DEFAULT_MAX_CHARS}); a longer page ends with a "truncated: N more elements" line that says how to see the rest.`,
    {
      ref: { type: 'string', description: 'Only the part of the page under this element (a ref from an earlier snapshot; an iframe\'s ref shows that frame)' },
      selector: { type: 'string', description: 'Only the part of the page under the first element matching this CSS selector (top frame)' },
      interactiveOnly: { type: 'boolean', description: 'List only the interactive elements, without the page text', default: false },
      maxChars: { type: 'integer', description: `Character budget of the text (default ${frames.DEFAULT_MAX_CHARS})`, minimum: 500, maximum: 500000 },
    }, [], { readOnlyHint: true, openWorldHint: false }),
  tool('browser_click', 'Click', 'Click an element (by ref or CSS selector) or a point of the viewport (x, y); doubleClick for a double click (grids and file lists edit or open on it). The result says whether the browser made the input (input: trusted) or the page got synthetic events.',
    {
      ...target,
      x: coordinate('The point\'s x'),
      y: coordinate('The point\'s y'),
      position,
      button: { type: 'string', enum: ['left', 'middle', 'right'], default: 'left' },
      clickCount: { type: 'integer', minimum: 1, maximum: 3, description: 'Presses in a row (2: a double click; default 1)' },
      doubleClick: { type: 'boolean', description: 'Double-click (two presses, then dblclick); the same as clickCount 2', default: false },
      force,
      dialog,
    }, [], ACT),
  tool('browser_hover', 'Hover', 'Move the mouse over an element, or to a point of the viewport (x, y). With trusted input the page\'s :hover styles apply; with synthetic events, pointer and mouse over/enter/move events and a copy of its readable :hover rules.',
    { ...target, x: coordinate('The point\'s x'), y: coordinate('The point\'s y'), position, force }, [], { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true }),
  tool('browser_drag', 'Drag and drop',
    'Drag one element onto another, or by an offset (a slider\'s handle): pointer down, moves in steps, up; HTML5 drag and drop (dragstart … drop) when the pressed element is draggable by then, as sortable lists make it on pointerdown. Both elements must be in the same frame.',
    {
      startRef: { ...ref, description: 'Ref of the element to drag' },
      startSelector: { type: 'string', description: 'CSS selector of the element to drag, when no startRef is given' },
      endRef: { ...ref, description: 'Ref of the element to drop onto' },
      endSelector: { type: 'string', description: 'CSS selector of the element to drop onto, when no endRef is given' },
      endPosition: {
        type: 'object',
        properties: { x: { type: 'number', minimum: 0, maximum: 1 }, y: { type: 'number', minimum: 0, maximum: 1 } },
        additionalProperties: false,
        description: 'Where in the drop target to release, as fractions of its width and height (default the centre, {x: 0.5, y: 0.5}); e.g. {x: 0.75} on a slider\'s track',
      },
      offset: {
        type: 'object',
        properties: { x: { type: 'number' }, y: { type: 'number' } },
        additionalProperties: false,
        description: 'Without a drop target: how far to move, in CSS pixels from the centre of the dragged element',
      },
      startX: coordinate('Where the drag starts, x'),
      startY: coordinate('Where the drag starts, y'),
      endX: coordinate('Where the drag ends, x'),
      endY: coordinate('Where the drag ends, y'),
      force,
      dialog,
    }, [], ACT),
  tool('browser_type', 'Type text', 'Replace the text of an input, textarea or editable element; optionally submit its form. With slowly, type it key by key at the caret instead (keydown, beforeinput, input, keyup per character; "\\n" presses Enter), for editors and fields that react to each key.',
    {
      ...target,
      text: { type: 'string' },
      submit: { type: 'boolean', description: 'Submit (Enter) after typing', default: false },
      slowly: { type: 'boolean', description: 'Type one key at a time, appending at the caret, instead of replacing the value', default: false },
      force,
      dialog,
    },
    ['text'], EDIT),
  tool('browser_select', 'Select option', 'Choose an option of a <select> by value or visible label.',
    { ...target, value: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }], description: 'Option value or visible label, or several for a multiple select' }, force, dialog },
    ['value'], { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true }),
  tool('browser_press_key', 'Press key',
    'Press a key on the focused element (or on the element given by ref/selector, focused first), e.g. "Enter", "Tab", "Shift+Tab", "Escape", "a", "Control+a". With trusted input the browser does what the key does; with synthetic events the common default actions are done by hand: Enter submits forms and activates buttons, Tab moves focus, characters are typed into text fields, Control/Meta+a selects all.',
    { key: { type: 'string', description: 'Key name or character, with modifiers joined by "+" (Control, Shift, Alt, Meta)' }, ...target, force, dialog }, ['key'], ACT),
  tool('browser_file_upload', 'Upload files',
    'Set the files of a file chooser (<input type=file>; a drop zone gets them dropped), firing the input and change events the page listens for. Files are paths the daemon reads, or inline base64 content.',
    {
      ...target,
      paths: { type: 'array', items: { type: 'string' }, description: 'Absolute paths of files the daemon\'s user can read' },
      files: {
        type: 'array',
        description: 'Inline files',
        items: {
          type: 'object',
          properties: { name: { type: 'string' }, mimeType: { type: 'string' }, data: { type: 'string', description: 'base64 content' } },
          required: ['name', 'data'],
          additionalProperties: false,
        },
      },
      dialog,
    }, [], EDIT),
  tool('browser_handle_dialog', 'Answer dialogs',
    'Set the answer to the next alert/confirm/prompt this tab opens (in any frame). Dialogs never block a call: each is answered when it opens — by this answer, by the calling tool\'s "dialog" argument, or by the default policy (dismiss) — and reported in that call\'s result.',
    { accept: { type: 'boolean', description: 'Accept (OK) or dismiss (Cancel)' }, promptText: { type: 'string', description: 'Text a prompt gets when accepted (default: its default text)' } },
    ['accept'], { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false }),
  tool('browser_wait_for', 'Wait for', 'Wait until an element matching a selector is visible, or a text appears on the page.',
    {
      selector: { type: 'string' },
      text: { type: 'string' },
      timeout: { type: 'number', description: 'Milliseconds, default 5000, at most 60000', minimum: 0, maximum: 60000 },
    }, [], { readOnlyHint: true, openWorldHint: false }),
  tool('browser_evaluate', 'Evaluate JavaScript',
    'Evaluate a JavaScript expression in the page and return its JSON value. Off unless enabled in the extension options.',
    { expression: { type: 'string' } }, ['expression'], ACT),
  ...OBSERVE_TOOLS,
  HANDOFF_TOOL,
];

const NAMES = new Set(BUILTIN_TOOLS.map((t) => t.name));
export const isBuiltinName = (name) => NAMES.has(name) || name.startsWith('browser_');
// The built-ins that only look (snapshot, screenshot, console, network…): what a read-only
// grant covers (issue 60). Said once, by each tool's own readOnlyHint.
const READ_ONLY = new Set(BUILTIN_TOOLS.filter((t) => t.annotations.readOnlyHint === true).map((t) => t.name));
export const isReadOnlyBuiltin = (name) => READ_ONLY.has(name);

const text = (s) => ({ content: [{ type: 'text', text: s }] });

function requireString(args, key) {
  if (typeof args[key] !== 'string' || !args[key]) throw new ToolError(Code.INVALID_ARGUMENTS, `"${key}" must be a non-empty string`);
  return args[key];
}

// How Chromium and Firefox report a load that was stopped before it committed.
const ABORTED = new Set(['net::ERR_ABORTED', 'Error code 2152398850']);

// Runs `start` (which begins a navigation of the tab) and resolves when the top frame has
// loaded the new document, or after a same-document navigation (history API, #fragment). With
// `startMs`, a navigation that has not even begun by then fails with `noStart`.
function navigation(tabId, start, { timeoutMs = 30_000, startMs, noStart } = {}) {
  return new Promise((resolve, reject) => {
    let committed = false;
    const nav = chrome.webNavigation;
    const done = (err) => {
      clearTimeout(timer);
      clearTimeout(startTimer);
      clearInterval(abortPoll);
      for (const [event, listener] of listeners) event.removeListener(listener);
      err ? reject(err) : resolve();
    };
    // Events of a navigation that was still going on when this one began (a click's, say)
    // may arrive after it: only the top frame's, from now on, count; an error only for the
    // navigation this one started.
    const since = Date.now() - 1;
    let ours = null;
    const top = (d) => d.tabId === tabId && d.frameId === 0 && !(d.timeStamp < since);
    const onBefore = (d) => {
      if (!top(d)) return;
      ours = d.url;
      clearTimeout(startTimer);
    };
    const onCommitted = (d) => {
      if (!top(d)) return;
      committed = true;
      clearTimeout(startTimer);
    };
    const onCompleted = (d) => top(d) && committed && done();
    // Firefox commits its error page (connection refused, DNS) without an onCompleted; the tab
    // still reports its load complete.
    const onTabLoaded = (id, change) => id === tabId && change.status === 'complete' && committed && done();
    const onSameDocument = (d) => top(d) && done();
    // An aborted load is not always the end: Firefox restarts a load that moves to another
    // content process, reporting a second onBeforeNavigate and an abort of the first attempt
    // ("Error code 2152398850", NS_BINDING_ABORTED). So an abort fails the call only once the
    // tab has stopped loading without committing anything.
    let abortPoll = null;
    const onError = (d) => {
      if (!top(d) || d.url !== ours) return;
      const aborted = ABORTED.has(d.error);
      const why = aborted ? 'the navigation was cancelled (or became a download)' : d.error;
      const err = new ToolError(Code.NAVIGATION_FAILED, `could not load ${d.url}: ${why}`);
      if (!aborted) return done(err);
      clearInterval(abortPoll);
      abortPoll = setInterval(async () => {
        const tab = await chrome.tabs.get(tabId).catch(() => null);
        if (committed) clearInterval(abortPoll);
        else if (!tab || tab.status !== 'loading') done(err);
      }, 250);
    };
    const onRemoved = (id) => id === tabId && done(new ToolError(Code.NAVIGATION_FAILED, 'tab was closed'));
    const timer = setTimeout(() => done(new ToolError(Code.NAVIGATION_FAILED, `page did not load within ${timeoutMs} ms`)), timeoutMs);
    const startTimer = startMs && setTimeout(() => done(new ToolError(Code.NAVIGATION_FAILED, noStart)), startMs);
    // Every event this navigation listens to, added and removed as one set.
    const listeners = [
      [nav.onBeforeNavigate, onBefore],
      [nav.onCommitted, onCommitted],
      [nav.onCompleted, onCompleted],
      [nav.onHistoryStateUpdated, onSameDocument],
      [nav.onReferenceFragmentUpdated, onSameDocument],
      [nav.onErrorOccurred, onError],
      [chrome.tabs.onRemoved, onRemoved],
      [chrome.tabs.onUpdated, onTabLoaded],
    ];
    for (const [event, listener] of listeners) event.addListener(listener);
    Promise.resolve().then(start).catch((e) => done(e instanceof ToolError ? e : new ToolError(Code.NAVIGATION_FAILED, e.message)));
  });
}

// `reach`: the call's, taken before it moved the tab (reach.js).
async function loaded(tabId, verb, reach) {
  // Chromium shows its own error page for DNS/connection failures, and scripting refuses it.
  const tab = await getTab(tabId);
  // A redirect, or history, may end on a site the built-ins may not see: it is named, no more.
  if (hides(tab.url)) throw new ToolError(Code.SITE_DISABLED, `the tab went to ${siteOf(tab.url)}, which browser-mcp's settings in this browser keep from its tools: nothing of that page is shown`);
  try {
    await chrome.scripting.executeScript({ target: { tabId }, func: () => true });
  } catch (e) {
    throw new ToolError(Code.NAVIGATION_FAILED, `could not load ${tab.url}: ${e.message}`);
  }
  // A redirect, or history, may end on a site the person was not asked about for this call: it
  // is named by its origin, and the next call there asks.
  const site = siteOf(tab.url);
  if (needsConsent(site, reach)) return text(`${verb} ${site}/ (its page is not shown: ${consentWhy(site)}; a call there asks the person first)`);
  return text(`${verb} ${tab.url} — "${tab.title}"`);
}

async function navigate(tabId, args) {
  const url = requireString(args, 'url');
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw new ToolError(Code.INVALID_ARGUMENTS, `not an absolute URL: ${url}`);
  }
  if (!isWebUrl(parsed.href)) throw new ToolError(Code.INVALID_ARGUMENTS, `only http(s) URLs can be opened, not ${parsed.protocol}`);
  const off = offSite(parsed.href);
  if (off) throw new ToolError(Code.SITE_DISABLED, `browser-mcp is turned off for ${off} in this browser: the tab was not navigated`);
  const reach = await reachOf(tabId, 'browser_navigate', args);
  await navigation(tabId, () => {
    started(tabId, parsed.href);
    return chrome.tabs.update(tabId, { url: parsed.href });
  });
  return loaded(tabId, 'Loaded', reach);
}

// history.go in the page rather than chrome.tabs.goBack: the browser's back button skips
// entries a page added without user activation (Chromium's history intervention), and the
// agent's clicks are synthetic, so the page it just left would be skipped.
async function history(tabId, step) {
  const which = step < 0 ? 'earlier' : 'later';
  const reach = await reachOf(tabId, 'history', {});
  await navigation(tabId, () => frames.domCall(tabId, 'history_go', { step }), {
    startMs: 2000,
    noStart: `there is no ${which} page in this tab's history (nothing happened)`,
  });
  return loaded(tabId, step < 0 ? 'Went back to' : 'Went forward to', reach);
}

async function reload(tabId) {
  const reach = await reachOf(tabId, 'browser_reload', {});
  await navigation(tabId, () => chrome.tabs.reload(tabId));
  return loaded(tabId, 'Reloaded', reach);
}

// Runs in the page's own world, so it sees the page's globals; must be self-contained.
function evaluateInPage(expression) {
  const settle = (value) => {
    if (value === undefined) return { value: null };
    try {
      return { value: JSON.parse(JSON.stringify(value)) };
    } catch {
      return { value: String(value) };
    }
  };
  try {
    return Promise.resolve((0, eval)(expression)).then(settle, (e) => ({ error: String(e && e.message ? e.message : e) }));
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
}

async function evaluate(tabId, args) {
  const expression = requireString(args, 'expression');
  const { evaluateEnabled } = await chrome.storage.local.get('evaluateEnabled');
  if (evaluateEnabled !== true) {
    throw new ToolError(Code.EVALUATE_DISABLED, 'browser_evaluate is off; enable it in the browser-mcp extension options');
  }
  const [frame] = await chrome.scripting.executeScript({ target: { tabId }, world: 'MAIN', func: evaluateInPage, args: [expression] });
  const out = frame?.result;
  if (!out) throw new ToolError(Code.TOOL_ERROR, 'the page returned nothing');
  if (out.error) throw new ToolError(Code.TOOL_ERROR, out.error);
  return { ...text(JSON.stringify(out.value)), structuredContent: { value: out.value } };
}

async function fileUpload(tabId, args) {
  if (args.paths !== undefined) {
    // The daemon turns paths into inline files before the call reaches us (a page never reads
    // the disk); a path here means the call did not come through browser-mcpd.
    throw new ToolError(Code.INVALID_ARGUMENTS, '"paths" are read by browser-mcpd; give the files inline ("files") when calling the extension directly');
  }
  if (!Array.isArray(args.files) || !args.files.length) throw new ToolError(Code.INVALID_ARGUMENTS, 'give "paths" or "files" (one or more)');
  return frames.domCall(tabId, 'file_upload', args);
}

// What a DOM tool reports: its result, with the dialogs that opened meanwhile (in any frame).
function withDialogs(tabId, result) {
  const found = dialogs.takeDialogs(tabId, result?.dialogs);
  if (result && typeof result === 'object') delete result.dialogs;
  if (!found.length) return result;
  const out = { ...result, content: [...(result?.content || []), { type: 'text', text: found.map(dialogs.describe).join('\n') }] };
  out.structuredContent = { ...(result?.structuredContent || {}), dialogs: found };
  return out;
}

export async function callBuiltin(tabId, name, args = {}) {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new ToolError(Code.INVALID_ARGUMENTS, 'args must be an object');
  await committedTab(tabId);
  // The eyes only look (console, network, downloads, screenshots, tabs): no dialog to answer,
  // and a dialog that blocks the page must not hide what the page did.
  if (isObserveTool(name)) return callObserve(tabId, name, args);
  const callPolicy = dialogs.checkPolicy(args.dialog);
  const { dialog: _, ...rest } = args;
  const blocking = dialogs.blockingDialog(tabId);
  if (blocking && !['browser_navigate', 'browser_reload', 'browser_handle_dialog'].includes(name)) {
    throw new ToolError(Code.DIALOG_BLOCKING, `the page shows a native ${blocking.kind} ${JSON.stringify(blocking.message)} that opened before browser-mcp could answer it, and waits for a person; browser_reload or browser_navigate closes it (the page's unsaved state is lost)`);
  }
  if (blocking && name !== 'browser_handle_dialog') dialogs.clearBlocking(tabId);
  // The page's DOM tools go in (first call on a page) while the frames hear of the drive; a
  // built-in's DOM tool is its name without the prefix (browser_snapshot: snapshot).
  const warm = ['browser_navigate', 'browser_reload', 'browser_handle_dialog'].includes(name) ? null : warmFrame(tabId, 0, { tool: name.slice('browser_'.length) });
  await Promise.all([dialogs.drive(tabId, callPolicy), warm]);
  const seen = aftermath.ACTIONS.has(name) ? aftermath.watch(tabId) : null;
  try {
    const result = await run(tabId, name, rest);
    return withDialogs(tabId, seen ? await seen.say(result) : result);
  } finally {
    seen?.stop();
    dialogs.release(tabId);
  }
}

function run(tabId, name, args) {
  switch (name) {
    case 'browser_navigate':
      return navigate(tabId, args);
    case 'browser_navigate_back':
      return history(tabId, -1);
    case 'browser_navigate_forward':
      return history(tabId, 1);
    case 'browser_reload':
      return reload(tabId);
    case 'browser_evaluate':
      return evaluate(tabId, args);
    case 'browser_snapshot':
      return frames.snapshot(tabId, args);
    case 'browser_handle_dialog':
      return dialogs.arm(tabId, args).then(text);
    case 'browser_file_upload':
      return fileUpload(tabId, args);
    case 'browser_drag':
    case 'browser_click':
    case 'browser_hover':
    case 'browser_type':
    case 'browser_select':
    case 'browser_press_key':
      return hands.act(tabId, name, args);
    case 'browser_wait_for':
      return frames.domCall(tabId, name.slice('browser_'.length), args);
    default:
      throw new ToolError(Code.TOOL_NOT_FOUND, `no built-in tool named ${name}`);
  }
}
