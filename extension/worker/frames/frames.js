// Every frame of a tab, seen as one page: the snapshot asks each frame (chrome.webNavigation
// frame ids, content scripts in all frames) and splices the frames in where their <iframe>
// stands; a ref names its frame ("f12e7" is e7 of frame 12, "e7" is the top frame's), so every
// DOM tool is routed to the frame that owns its element.
import { Code, ToolError } from '../../shared/protocol.js';
import { domToFrame, forgetTabDocuments } from './frame-channel.js';
import { frameBlock, frameReach } from '../../shared/policy.js';
import { iframesSeen, noteIframes, reachOf } from './reach.js';
import { lend } from './dialogs.js';

export const DEFAULT_MAX_CHARS = 20_000;
const MIN_MAX_CHARS = 500;
const MAX_MAX_CHARS = 500_000;
// Kept free for the "truncated: …" line, so that the whole text stays within the budget.
const MARKER_ROOM = 400;
// A frame that does not answer in this time (busy, or blocked by a dialog) is named, not waited for.
const FRAME_ANSWER_MS = 3000;
// The frame a snapshot is of has no one to be named by: it is waited for longer, as a page busy
// for a few seconds still has a snapshot to give (a Firefox test page once took over 3 s under
// load). The daemon's deadline bounds the call as a whole.
const ROOT_ANSWER_MS = 10_000;

// The document each frame showed in the latest snapshot, per tab (the DOM tools' name for it): a
// ref used after its frame has moved to another document is refused instead of finding a
// stranger with the same number.
const documents = new Map(); // tabId -> Map(frameId -> document)

export function forgetTab(tabId) {
  documents.delete(tabId);
  forgetTabDocuments(tabId);
}

// "e7" → top frame; "f12e7" → frame 12. Anything else is not a ref of ours.
export function parseRef(ref) {
  const m = /^(?:f(\d+))?(e\d+)$/.exec(ref);
  if (!m) throw new ToolError(Code.INVALID_ARGUMENTS, `"${ref}" is not a ref from browser_snapshot (refs look like e12, or f3e12 inside a frame)`);
  return { frameId: m[1] ? Number(m[1]) : 0, local: m[2] };
}

export const framePrefix = (frameId) => (frameId === 0 ? '' : `f${frameId}`);

async function allFrames(tabId) {
  const frames = await chrome.webNavigation.getAllFrames({ tabId });
  if (!frames) throw new ToolError(Code.TAB_NOT_FOUND, `no tab with id ${tabId}`);
  return frames;
}

// The URLs from a frame up to the page.
function chainOf(frameId, byId) {
  const chain = [];
  for (let f = byId.get(frameId); f && chain.length < 64; f = byId.get(f.parentFrameId)) chain.push(f.url || '');
  return chain;
}

// Why a frame's content is not shown, or null when it may be: the user's site policy covers
// frames too, and a frame inside a hidden one belongs to the hidden site (policy.js frameBlock).
const chainBlock = (frameId, byId) => frameBlock(chainOf(frameId, byId));

// The ref of an <iframe>'s line ("[iframe f3e2] Title …"), or null.
const lineRef = (line) => /^\[\S+ ((?:f\d+)?e\d+)\]/.exec(line)?.[1] ?? null;

function unreachableWhy(frame, error) {
  const url = frame.url || '';
  if (/^chrome-error:/.test(url) || frame.errorOccurred) return 'the frame failed to load (the browser shows its error page)';
  if (/^(chrome|chrome-extension|devtools|edge|about:(?!blank|srcdoc))/.test(url)) return `the browser does not let extensions into ${url.split('/')[0]}// frames`;
  const msg = error?.message || String(error);
  if (/timed out/.test(msg)) return `the frame did not answer within ${FRAME_ANSWER_MS / 1000} s (busy, or blocked by a dialog)`;
  return msg;
}

// A DOM tool in one frame, with that frame's ref prefix; refs in `args` are local by now. With
// `byRef`, only the document the refs came from may answer.
async function inFrame(tabId, frameId, name, args, { timeoutMs, byRef = false } = {}) {
  const document = byRef ? documents.get(tabId)?.get(frameId) : undefined;
  try {
    return (await domToFrame(tabId, frameId, { name, args, frame: framePrefix(frameId), document }, { timeoutMs })).value;
  } catch (e) {
    if (e.code !== 'FRAME_GONE') throw e;
    const now = await chrome.webNavigation.getFrame({ tabId, frameId }).catch(() => null);
    const where = frameId === 0 ? 'the page' : `frame f${frameId}`;
    throw new ToolError(Code.ELEMENT_NOT_FOUND, `${where} ${now ? 'has loaded another document' : 'is gone'} since the snapshot that gave this ref; take a new browser_snapshot`);
  }
}

// The frame a tool call acts in, and its arguments with local refs. Tools that name two
// elements (drag) must keep them in one frame.
export function route(args, refKeys = ['ref']) {
  let frameId = null;
  let byRef = false;
  const local = { ...args };
  for (const key of refKeys) {
    if (typeof args[key] !== 'string' || !args[key]) continue;
    const r = parseRef(args[key]);
    if (frameId !== null && r.frameId !== frameId) throw new ToolError(Code.INVALID_ARGUMENTS, `${refKeys.join(' and ')} are in different frames; both elements must be in one frame`);
    frameId = r.frameId;
    byRef = true;
    local[key] = r.local;
  }
  return { frameId: frameId ?? 0, args: local, byRef };
}

// A frame the browser does not list (Chromium leaves out blob: frames) has no place to judge
// it by, and no snapshot gave a ref into it: refused like a frame that is gone.
export async function checkFramePolicy(tabId, frameId) {
  if (frameId === 0) return;
  const byId = new Map((await allFrames(tabId)).map((f) => [f.frameId, f]));
  if (!byId.has(frameId)) throw new ToolError(Code.ELEMENT_NOT_FOUND, `frame f${frameId} is gone, or is not a frame of this page; take a new browser_snapshot`);
  const why = chainBlock(frameId, byId);
  if (why) throw new ToolError(Code.SITE_DISABLED, `frame f${frameId} cannot be used: ${why}`);
}

// A DOM tool by ref, in whichever frame owns the ref; that frame alone holds the dialog
// answers the agent armed (dialogs.js).
export async function domCall(tabId, name, args, { refKeys = ['ref'], timeoutMs } = {}) {
  const r = route(args, refKeys);
  await checkFramePolicy(tabId, r.frameId);
  await lend(tabId, r.frameId);
  return inFrame(tabId, r.frameId, name, r.args, { timeoutMs, byRef: r.byRef });
}

// Where frame `frameId`'s viewport starts in the top-level one (CSS pixels): the offsets of the
// <iframe>s above it, outermost first so each scroll happens before the next measure.
async function frameOffset(tabId, frameId) {
  const chain = [];
  for (let id = frameId; id !== 0; ) {
    const frame = await chrome.webNavigation.getFrame({ tabId, frameId: id });
    if (!frame) throw new ToolError(Code.ELEMENT_NOT_FOUND, `frame f${id} is gone; take a new browser_snapshot`);
    const { index } = await inFrame(tabId, id, 'frame_index', {}, { byRef: true });
    chain.unshift({ parent: frame.parentFrameId, index });
    id = frame.parentFrameId;
  }
  let x = 0;
  let y = 0;
  for (const link of chain) {
    const box = await inFrame(tabId, link.parent, 'frame_box', { index: link.index });
    x += box.x;
    y += box.y;
  }
  return { x, y };
}

// An element's box in the top-level viewport (CSS pixels): the frame's own answer plus the
// offsets of the frames above it.
export async function bounds(tabId, args) {
  const r = route(args);
  await checkFramePolicy(tabId, r.frameId);
  const { x, y } = await frameOffset(tabId, r.frameId);
  const b = await inFrame(tabId, r.frameId, 'bounds', r.args, { byRef: r.byRef });
  return { ...b, x: b.x + x, y: b.y + y };
}

// Where an action on an element lands, for input the worker makes itself (trusted input, issue
// 57): the frame's answer after the checks every action makes (content/dom-point.js: attached,
// rendered, enabled, not covered, or a typed error such as ELEMENT_COVERED; `force` skips them),
// in top-level viewport CSS pixels, with the frame that owns the element and the point in it.
// args: ref or selector, position ({x, y} CSS pixels in the element), force, enabled, hit.
export async function actionPoint(tabId, args) {
  const r = route(args);
  await checkFramePolicy(tabId, r.frameId);
  const { x, y } = await frameOffset(tabId, r.frameId);
  const p = await inFrame(tabId, r.frameId, 'action_point', r.args, { byRef: r.byRef });
  return { ...p, x: p.x + x, y: p.y + y, frameId: r.frameId, local: { x: p.x, y: p.y } };
}

// A DOM tool in one frame, by its id (a point's frame, the top frame's viewport).
export async function frameTool(tabId, frameId, name, args) {
  await checkFramePolicy(tabId, frameId);
  return inFrame(tabId, frameId, name, args);
}

// What is at (x, y) of the top-level viewport (CSS pixels), through the frames it falls into:
// the innermost frame's id, the point in its viewport, and the element there in a few words.
export async function atPoint(tabId, x, y) {
  let frameId = 0;
  let local = { x, y };
  for (let depth = 0; depth < 16; depth++) {
    const hit = await frameTool(tabId, frameId, 'point_at', local);
    if (hit.frame === undefined) return { frameId, x: local.x, y: local.y, element: hit.element };
    const children = (await allFrames(tabId)).filter((f) => f.parentFrameId === frameId);
    let child = null;
    for (const c of children) {
      const { index } = await inFrame(tabId, c.frameId, 'frame_index', {}, { timeoutMs: FRAME_ANSWER_MS }).catch(() => ({ index: -1 }));
      if (index === hit.frame) child = c;
      if (child) break;
    }
    if (!child) return { frameId, x: local.x, y: local.y, element: hit.element };
    frameId = child.frameId;
    local = { x: hit.x, y: hit.y };
  }
  throw new ToolError(Code.TOOL_ERROR, `frames nested too deep at (${x}, ${y})`);
}

// Where the frames the policy hides stand, in top-level viewport CSS pixels: those whose parent
// is shown (a frame inside one is inside its box). Pixels are the one way their content would
// still reach an agent, so a screenshot paints these boxes over. A hidden frame that cannot be
// placed fails the screenshot rather than show it.
export async function hiddenBoxes(tabId) {
  const frames = await allFrames(tabId);
  const byId = new Map(frames.map((f) => [f.frameId, f]));
  const outermost = frames.filter((f) => f.frameId !== 0 && chainBlock(f.frameId, byId) && !chainBlock(f.parentFrameId, byId));
  return Promise.all(outermost.map(async (f) => {
    try {
      let x = 0;
      let y = 0;
      let box = null;
      for (let id = f.frameId; id !== 0; ) {
        const frame = byId.get(id);
        const { index } = await inFrame(tabId, id, 'frame_index', {}, { timeoutMs: FRAME_ANSWER_MS });
        const at = await inFrame(tabId, frame.parentFrameId, 'frame_box', { index, scroll: false }, { timeoutMs: FRAME_ANSWER_MS });
        if (box) {
          x += at.x;
          y += at.y;
        } else box = at.box;
        id = frame.parentFrameId;
      }
      return { x: box.x + x, y: box.y + y, width: box.width, height: box.height };
    } catch (e) {
      throw new ToolError(Code.SITE_DISABLED, `the page holds a frame browser-mcp keeps hidden (${chainBlock(f.frameId, byId)}) and it could not be located to leave it out of the screenshot: ${e.message}`);
    }
  }));
}

function clampChars(v) {
  if (v === undefined) return DEFAULT_MAX_CHARS;
  if (!Number.isInteger(v) || v < MIN_MAX_CHARS || v > MAX_MAX_CHARS) {
    throw new ToolError(Code.INVALID_ARGUMENTS, `"maxChars" must be an integer from ${MIN_MAX_CHARS} to ${MAX_MAX_CHARS}`);
  }
  return v;
}

// browser_snapshot over every frame (or the part under a ref or selector), within a budget.
export async function snapshot(tabId, args) {
  const maxChars = clampChars(args.maxChars);
  if (args.ref !== undefined && typeof args.ref !== 'string') throw new ToolError(Code.INVALID_ARGUMENTS, '"ref" must be a string');
  if (args.selector !== undefined && typeof args.selector !== 'string') throw new ToolError(Code.INVALID_ARGUMENTS, '"selector" must be a string');
  const scope = args.ref ? parseRef(args.ref) : null;
  const rootId = scope ? scope.frameId : 0;
  if (scope) await checkFramePolicy(tabId, rootId);

  const frames = await allFrames(tabId);
  const byId = new Map(frames.map((f) => [f.frameId, f]));
  if (!byId.has(rootId)) throw new ToolError(Code.ELEMENT_NOT_FOUND, `frame f${rootId} is gone; take a new browser_snapshot`);
  const children = new Map();
  for (const f of frames) {
    if (!children.has(f.parentFrameId)) children.set(f.parentFrameId, []);
    children.get(f.parentFrameId).push(f);
  }
  // Only the scope's frame and the frames below it are asked.
  // A hidden frame is not asked, nor is any frame inside it: one of a site turned off, or of a
  // site this call's consent does not cover (reach.js).
  const reach = await reachOf(tabId, 'browser_snapshot', args);
  const wanted = [];
  const blocked = new Map();
  const visit = (id) => {
    wanted.push(byId.get(id));
    const out = frameReach(chainOf(id, byId), reach);
    if (out) blocked.set(id, out);
    else for (const c of children.get(id) || []) visit(c.frameId);
  };
  visit(rootId);
  if (blocked.has(rootId)) throw new ToolError(Code.SITE_DISABLED, `${rootId ? `frame f${rootId}` : 'the page'} cannot be used: ${blocked.get(rootId).why}`);

  const base = { maxChars, interactiveOnly: args.interactiveOnly === true };
  const answers = new Map();
  const docs = new Map(documents.get(tabId) || []);
  await Promise.all(wanted.map(async (f) => {
    if (blocked.has(f.frameId)) {
      answers.set(f.frameId, blocked.get(f.frameId));
      return;
    }
    const frameArgs = { ...base };
    if (f.frameId === rootId && scope) frameArgs.scopeRef = scope.local;
    if (f.frameId === 0 && !scope && args.selector) frameArgs.scopeSelector = args.selector;
    try {
      const { value, document } = await domToFrame(tabId, f.frameId, { name: 'snapshot', args: frameArgs, frame: framePrefix(f.frameId) }, { timeoutMs: f.frameId === rootId ? ROOT_ANSWER_MS : FRAME_ANSWER_MS });
      answers.set(f.frameId, { value });
      docs.set(f.frameId, document);
    } catch (e) {
      if (f.frameId === rootId) throw e; // the page itself (or the scope) must answer
      answers.set(f.frameId, { why: unreachableWhy(f, e) });
    }
  }));
  documents.set(tabId, docs);

  // Splice: each frame's items, with its children's items (indented) at their placeholders.
  // The whole text stays within maxChars: header, lines, and room for the truncation line.
  const top = answers.get(rootId).value;
  const header = !scope && !args.selector ? `# ${top.title}\nURL: ${top.url}\n\n` : `Part of ${top.url} under ${args.ref || JSON.stringify(args.selector)}:\n\n`;
  const out = [];
  const elements = [];
  let chars = header.length + MARKER_ROOM;
  let more = 0;
  let full = false;
  const regions = [];
  const add = (line, depth) => {
    const s = '  '.repeat(depth) + line;
    if (full || chars + s.length + 1 > maxChars) {
      full = true;
      return false;
    }
    chars += s.length + 1;
    out.push(s);
    return true;
  };
  const emitted = new Set();
  const iframeRefs = new Map(scope ? iframesSeen(tabId) : []);
  const emit = (frameId, depth) => {
    emitted.add(frameId);
    const a = answers.get(frameId).value;
    const kids = children.get(frameId) || [];
    const claimed = new Set();
    for (const item of a.items) {
      if (item.frame === undefined) {
        if (add(item.line, depth)) {
          if (item.el) elements.push(item.el);
        } else if (item.el) more++;
        continue;
      }
      // The child frame behind this <iframe>: by its index among the parent's frames, or (for a
      // frame that could not say) the first unclaimed child whose index is unknown.
      const indexOf = (k) => answers.get(k.frameId)?.value?.index ?? -1;
      const child = kids.find((k) => !claimed.has(k.frameId) && item.frame >= 0 && indexOf(k) === item.frame)
        || kids.find((k) => !claimed.has(k.frameId) && answers.has(k.frameId) && indexOf(k) < 0);
      if (!child) {
        add(`${item.line} (not loaded)`, depth);
        continue;
      }
      claimed.add(child.frameId);
      const got = answers.get(child.frameId);
      const iframeRef = lineRef(item.line);
      if (iframeRef) iframeRefs.set(iframeRef, child.frameId);
      if (!got.value) {
        const how = got.asks && iframeRef ? `; browser_snapshot with {"ref": "${iframeRef}"} asks the person` : '';
        add(`${item.line} (not shown: ${got.why}${how})`, depth);
        continue;
      }
      if (!add(item.line, depth)) continue; // counted below, with the frames never reached
      emit(child.frameId, depth + 1);
    }
    more += a.more;
    regions.push(...a.regions);
  };
  emit(rootId, 0);
  noteIframes(tabId, iframeRefs);
  // Frames past the budget (or behind a placeholder past it) still count.
  for (const f of wanted) {
    const a = answers.get(f.frameId)?.value;
    if (a && !emitted.has(f.frameId)) more += a.more + a.items.filter((i) => i.el).length;
  }

  let text = header + out.join('\n');
  if (full || more) {
    const tail = [
      '{"selector": "CSS"}',
      ...(base.interactiveOnly ? [] : ['{"interactiveOnly": true}']),
      `{"maxChars": ${Math.min(maxChars * 4, MAX_MAX_CHARS)}}`,
    ];
    const marker = (shown) => {
      const scopes = shown.length ? `{"ref": "…"} for one of ${shown.join(', ')}` : '{"ref": "…"} for a part of the page';
      return `\n… truncated: ${more} more element${more === 1 ? '' : 's'} not shown (budget ${maxChars} characters). Ask with ${[scopes, ...tail].join(', or ')} to see them.`;
    };
    let shown = regions.slice(0, 8);
    while (shown.length && marker(shown).length > MARKER_ROOM) shown = shown.slice(0, -1);
    text += marker(shown);
  }
  return {
    content: [{ type: 'text', text }],
    structuredContent: { url: top.url, title: top.title, elements, truncated: full || more > 0, moreElements: more },
  };
}
