// The hands' input (issue 57). Trusted where the browser makes it: Chromium's own input through
// the DevTools protocol (frames/debugger.js: the person's choice in the options page, on by
// default in a browser the daemon launched), or, in a Firefox the daemon launched, WebDriver
// BiDi's input.performActions, which the daemon performs over its own session with that browser
// (state/managed.js). A page then sees what a person's mouse and keyboard make: isTrusted events,
// real :hover, user activation, the browser's own editing (beforeinput included). Elsewhere the
// DOM-level events of content/dom-*.js, as before. Every action's result says which was used
// (`input: trusted|synthetic`, in its text and structuredContent) and, when trusted input was
// expected and could not be had, why.
//
// The page still says where an action lands (frames.actionPoint: the element scrolled into view
// and checked, the point in top-level viewport CSS pixels) and which element keys go to, focused
// (content/dom-input.js); the browser makes the input at that point.
/* global document */
import { Code, ToolError } from '../../shared/protocol.js';
import { isFirefox } from '../../shared/platform.js';
import * as frames from '../frames/frames.js';
import * as dbg from '../frames/debugger.js';
import { daemonInput, isManagedBrowser, launchedSynthetic } from '../state/managed.js';
import { keyDef, parseKey } from './keys.js';
import * as steps from './steps.js';

const DRAG_STEPS = 6;
const STEP_MS = 4;
// A person rests a moment over the drop target (sortable lists ignore moves right after one
// they acted on), as content/dom-drag.js does.
const DWELL_MS = 40;
// How long a move that may start an HTML5 drag is given to say so (Input.dragIntercepted).
const DRAG_START_MS = 50;
const BUTTONS = ['left', 'middle', 'right'];
const MAX_CLICKS = 3;

// --- devices -------------------------------------------------------------------------------------

// Chromium's input through the tab's DevTools session. Commands between two pauses go out
// together (each waits for the page to take its event: one at a time, a click's three took 30
// ms, together 5); `delivered` counts those that reached the page, so that a session lost
// midway can tell whether the page saw anything.
class Cdp {
  constructor(tabId) {
    this.tabId = tabId;
    this.via = 'cdp';
    this.delivered = 0;
  }

  async play(list) {
    const state = (states.get(this.tabId) ?? states.set(this.tabId, { x: 0, y: 0, buttons: 0, modifiers: 0 }).get(this.tabId));
    const commands = steps.cdpCommands(list, state, keyDef);
    let batch = [];
    const flush = async () => {
      const sent = batch.map((c) => dbg.send(this.tabId, c.method, c.params).then(() => this.delivered++));
      batch = [];
      await Promise.all(sent);
    };
    for (const c of commands) {
      if (c.pause === undefined) batch.push(c);
      else {
        await flush();
        await sleep(c.pause);
      }
    }
    await flush();
  }
}
const states = new Map(); // tabId -> the pointer and modifiers, as the page last saw them

// A Firefox the daemon launched: the daemon plays the steps through WebDriver BiDi. The daemon
// knows a tab's BiDi context once a probe showed it which: the tab's top document carries a
// nonce while one request is out, and the daemon acts only where exactly one top-level context
// shows it. The page can see the nonce for those milliseconds, but all it can do with it is
// misdirect its own input (to a window of its own, or nowhere: two that show it are refused).
class Bidi {
  constructor(tabId, ask) {
    this.tabId = tabId;
    this.ask = ask;
    this.via = 'bidi';
    this.delivered = 0;
  }

  async play(list) {
    const actions = steps.bidiActions(list);
    try {
      await this.ask(this.tabId, actions);
    } catch (e) {
      // Not for good: the daemon may take its session with the browser a moment after the
      // extension connected.
      if (e.code === 'UNSUPPORTED') throw new Unavailable(e.message);
      if (e.code !== 'UNKNOWN_TAB') throw e;
      await this.probed(actions);
    }
    this.delivered += list.length;
  }

  async probed(actions) {
    const nonce = crypto.randomUUID();
    const mark = (value) =>
      chrome.scripting.executeScript({
        target: { tabId: this.tabId, frameIds: [0] },
        func: (v) => (v ? document.documentElement.setAttribute('data-browser-mcp-input', v) : document.documentElement.removeAttribute('data-browser-mcp-input')),
        args: [value],
      });
    await mark(nonce);
    try {
      await this.ask(this.tabId, actions, nonce);
    } finally {
      await mark(null).catch(() => {});
    }
  }
}

// The daemon turned out to have no trusted input for this browser: nothing reached the page.
class Unavailable extends Error {}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The device for a tab: {device}, or {why} there is none (said in the result when it is news to
// the agent: trusted input expected and not had).
export async function device(tabId) {
  // Firefox gives an extension no trusted input; the daemon that launched it does.
  if (isFirefox) {
    const ask = daemonInput();
    if (ask) return { device: new Bidi(tabId, ask) };
    return { why: isManagedBrowser() && !launchedSynthetic() ? 'the daemon that launched this Firefox offers no trusted input' : null };
  }
  if (!(await dbg.granted())) return { why: null };
  const paused = dbg.paused();
  if (paused) return { why: paused };
  try {
    await dbg.attach(tabId);
  } catch (e) {
    // Another debugger on the tab (DevTools in a browser that allows one client, another
    // extension), or a page the browser keeps from extensions.
    return { why: `Chromium did not let browser-mcp debug the tab (${e.message})` };
  }
  return { device: new Cdp(tabId) };
}

// Plays `list` on `dev`; a session lost before any event reached the page is null (the caller
// falls back to synthetic input, saying why), one lost midway a typed error: the page saw part
// of the action, and doing it again by other means could do it twice.
async function play(dev, list) {
  const before = dev.delivered;
  try {
    await dev.play(list);
    return true;
  } catch (e) {
    if (e instanceof Unavailable) return { lost: e.message };
    if (!(e instanceof dbg.Detached)) throw e instanceof ToolError ? e : new ToolError(Code.TOOL_ERROR, `trusted input failed: ${e.message}`);
    if (dev.delivered === before) return { lost: e.message };
    throw new ToolError('INPUT_CANCELLED', `${e.message} in the middle of the action: the page saw part of it (${dev.delivered - before} events); take a new browser_snapshot before acting again`);
  }
}

// --- arguments -----------------------------------------------------------------------------------

const finite = (v) => typeof v === 'number' && Number.isFinite(v);

// x, y in the top-level viewport, in CSS pixels, or null when not given; outside it (or half
// given) is refused.
export async function pointArgs(tabId, args, [kx, ky] = ['x', 'y']) {
  const has = (k) => args[k] !== undefined;
  if (!has(kx) && !has(ky)) return null;
  if (!finite(args[kx]) || !finite(args[ky])) throw new ToolError(Code.INVALID_ARGUMENTS, `"${kx}" and "${ky}" are numbers, both given: a point in the viewport in CSS pixels (a screenshot states its scale)`);
  const view = await frames.frameTool(tabId, 0, 'viewport', {});
  const [x, y] = [args[kx], args[ky]];
  if (x < 0 || y < 0 || x >= view.width || y >= view.height) {
    throw new ToolError(Code.INVALID_ARGUMENTS, `(${x}, ${y}) is outside the viewport, which is ${view.width}×${view.height} CSS pixels (x from 0 to ${view.width - 1}, y from 0 to ${view.height - 1}); scroll, or take a new screenshot`);
  }
  return { x, y, hidden: view.hidden === true };
}

function clickOptions(args) {
  const button = args.button ?? 'left';
  if (!BUTTONS.includes(button)) throw new ToolError(Code.INVALID_ARGUMENTS, `"button" is one of ${BUTTONS.join(', ')}`);
  const clickCount = args.clickCount ?? (args.doubleClick === true ? 2 : 1);
  if (!Number.isInteger(clickCount) || clickCount < 1 || clickCount > MAX_CLICKS) throw new ToolError(Code.INVALID_ARGUMENTS, `"clickCount" is 1 to ${MAX_CLICKS}`);
  return { button, clickCount };
}

// Where an action on an element lands: the page's action point, after the checks every action
// makes (content/dom-point.js), in top-level viewport CSS pixels.
async function pointOn(tabId, args, opts) {
  const target = args.ref ? { ref: args.ref } : { selector: args.selector };
  const p = await frames.actionPoint(tabId, { ...target, position: args.position, force: args.force === true, ...opts });
  return { x: p.x, y: p.y, element: p.element, covered: p.covered === true, hidden: p.hidden === true };
}

// --- results -------------------------------------------------------------------------------------

// How long the frame is given to say what followed the input: one that went with a navigation
// says nothing, and the worker sees that navigation itself (aftermath.js).
const FOLLOWED_MS = 500;

// What the frame of the element acted on saw follow the input since its point or input target
// (content/dom-point.js after_action: a navigation it began, the focus moving away), for the
// line aftermath.js adds to the result, as the synthetic actions put it in theirs.
async function followed(tabId, ref, selector) {
  try {
    const seen = await frames.domCall(tabId, 'after_action', ref ? { ref } : selector ? { selector } : {}, { timeoutMs: FOLLOWED_MS });
    return { after: seen.after, navigating: seen.navigating };
  } catch {
    return {};
  }
}

// The result of an action made with `input`, and why it is synthetic when that is news.
export function said(result, input, why) {
  const note = input === 'trusted' ? 'input: trusted' : `input: synthetic${why ? `, as ${why}` : ''}`;
  const content = [...(result?.content ?? [])];
  const first = content.findIndex((c) => c.type === 'text');
  if (first >= 0) content[first] = { ...content[first], text: `${content[first].text} (${note})` };
  else content.unshift({ type: 'text', text: `(${note})` });
  const structuredContent = { ...(result?.structuredContent ?? {}), input, ...(why ? { inputNote: why } : {}) };
  return { ...result, content, structuredContent };
}

const text = (s) => ({ content: [{ type: 'text', text: s }] });
const at = (p) => `(${Math.round(p.x)}, ${Math.round(p.y)})`;

// --- actions -------------------------------------------------------------------------------------
// Each takes the device and returns the result, or {lost} when the session went before the page
// saw anything, or {instead: why} when the browser's input cannot do what was asked (the caller
// falls back).

// `force` on an element something else covers: the browser's pointer would land on the cover, so
// the element gets synthetic events, as force asks.
const COVERED = { instead: 'force acts on an element that something else covers, where the browser\'s pointer would land on the cover' };
// A tab not shown (in the background): Chromium holds the browser's pointer moves there until it
// is shown (a hover took 5 s, a drag never ended), so a move that no press follows at once is
// made by synthetic events instead. (A click's press takes its move along.)
const HIDDEN = { instead: 'the tab is in the background, where the browser holds pointer moves until it is shown' };

export async function click(dev, tabId, args, point) {
  const opts = clickOptions(args);
  const p = point ?? (await pointOn(tabId, args, { hit: true, enabled: true, verb: 'click' }));
  if (p.covered) return COVERED;
  const done = await play(dev, steps.click(p, opts));
  if (done !== true) return done;
  const verb = opts.clickCount === 2 ? 'Double-clicked' : opts.clickCount === 3 ? 'Triple-clicked' : 'Clicked';
  const how = opts.button === 'left' ? '' : ` with the ${opts.button} button`;
  if (point) return text(`${verb} at ${at(p)}${how}, on ${p.element ?? 'nothing'}`);
  return { ...text(`${verb} ${p.element}${how}`), ...(await followed(tabId, args.ref, args.selector)) };
}

export async function hover(dev, tabId, args, point) {
  const p = point ?? (await pointOn(tabId, args, { hit: true, enabled: false, verb: 'pointer' }));
  if (p.covered) return COVERED;
  if (p.hidden) return HIDDEN;
  const done = await play(dev, [{ move: p }]);
  if (done !== true) return done;
  if (point) return text(`Moved the pointer to ${at(p)}, over ${p.element ?? 'nothing'}`);
  return { ...text(`Hovered over ${p.element}`), ...(await followed(tabId, args.ref, args.selector)) };
}

// Typing: the element focused and its text selected (or the caret at its end, key by key), then
// the text as the keyboard's input method commits it (Chromium: Input.insertText, which an
// editor sees as a trusted beforeinput and input) or key by key.
export async function type(dev, tabId, args) {
  if (typeof args.text !== 'string') throw new ToolError(Code.INVALID_ARGUMENTS, '"text" must be a string');
  const slowly = args.slowly === true;
  const at = { ref: args.ref, selector: args.selector, force: args.force, text: true };
  let target = await frames.domCall(tabId, 'input_target', { ...at, caret: slowly ? 'end' : 'all', click: true });
  if (target.click) {
    // An editor without the focus: a person clicks into it first (block editors such as
    // Editor.js learn the current block from that click), then types at its end or over it.
    const p = await pointOn(tabId, args, { hit: false, enabled: true, verb: 'typing' });
    if (!p.covered) {
      const done = await play(dev, steps.click(p, { button: 'left', clickCount: 1 }));
      if (done !== true) return done;
    }
    target = await frames.domCall(tabId, 'input_target', { ...at, caret: slowly ? 'last' : 'all' });
  }
  let list;
  if (slowly) {
    list = [...args.text].flatMap((ch) => steps.press({ key: keyDef(ch === '\n' ? 'Enter' : ch === '\t' ? 'Tab' : ch), modifiers: [] }));
  } else list = args.text ? [{ text: args.text }] : steps.press({ key: keyDef('Delete'), modifiers: [] });
  if (args.submit === true) list.push(...steps.press({ key: keyDef('Enter'), modifiers: [] }));
  const done = await play(dev, list);
  if (done !== true) return done;
  const after = args.submit === true ? ', then pressed Enter' : '';
  return { ...text(`Typed into ${target.element}${slowly ? ' key by key' : ''}${after}`), ...(await followed(tabId, args.ref, args.selector)) };
}

export async function pressKey(dev, tabId, args) {
  const key = parseKey(args.key);
  const named = Boolean(args.ref || args.selector);
  const target = named ? await frames.domCall(tabId, 'input_target', { ref: args.ref, selector: args.selector, force: args.force }) : await frames.frameTool(tabId, 0, 'input_target', {});
  const done = await play(dev, steps.press(key));
  if (done !== true) return done;
  return { ...text(`Pressed ${args.key} on ${target.element}`), ...(await followed(tabId, args.ref, args.selector)) };
}

// A press at the start, moves in steps, the release at the end. In Chromium an element the page
// lets the browser drag (HTML5 drag and drop) is handed over as the browser's own drag would be:
// the drag the press started is caught (Input.setInterceptDrags) and dropped at the end
// (Input.dispatchDragEvent), as a person's would be.
export async function drag(dev, tabId, args, { start, end, what }) {
  if (start.covered) return COVERED;
  if (start.hidden) return HIDDEN;
  const path = (i) => ({ x: start.x + ((end.x - start.x) * i) / DRAG_STEPS, y: start.y + ((end.y - start.y) * i) / DRAG_STEPS });
  const press = [{ move: start }, { down: { ...start, button: 'left', count: 1 } }];
  let pressed = await play(dev, press);
  if (pressed !== true) return pressed;
  const first = () => play(dev, [{ pause: STEP_MS }, { move: path(1) }]);
  // Firefox makes its own drag session of BiDi's moves; only Chromium's is caught and handed over.
  const caught = dev.via === 'cdp' ? await catchDrag(tabId, first) : await first().then((moved) => (moved === true ? { data: null } : lostMidway(moved)));
  if (!caught.data) {
    for (let i = 2; i <= DRAG_STEPS; i++) await play(dev, [{ pause: STEP_MS }, { move: path(i) }]);
    pressed = await play(dev, [{ pause: DWELL_MS }, { up: { ...end, button: 'left', count: 1 } }]);
    return pressed === true ? text(`Dragged ${what}`) : lostMidway(pressed);
  }
  const dragEvent = (type, p) => dbg.send(tabId, 'Input.dispatchDragEvent', { type, x: p.x, y: p.y, data: caught.data, modifiers: 0 });
  await dragEvent('dragEnter', path(1));
  for (let i = 2; i <= DRAG_STEPS; i++) {
    await sleep(STEP_MS);
    await dragEvent('dragOver', path(i));
  }
  await sleep(DWELL_MS);
  await dragEvent('dragOver', end);
  await dragEvent('drop', end);
  // The browser's own drag ended with the drop; the button goes up without a second release.
  states.get(tabId).buttons = 0;
  return text(`Dragged ${what} with the browser's drag and drop`);
}

const lostMidway = (lost) => {
  throw new ToolError('INPUT_CANCELLED', `${lost.lost} in the middle of the drag: the button was pressed; take a new browser_snapshot before acting again`);
};

// Runs `move` with Chromium told to hand over a drag it starts; {data} is the drag's data when
// one started.
async function catchDrag(tabId, move) {
  let got = null;
  let heard;
  const heardDrag = new Promise((r) => (heard = r));
  const stop = dbg.listen(tabId, (e) => {
    if (e?.method === 'Input.dragIntercepted') {
      got = e.params.data;
      heard();
    }
  });
  try {
    await dbg.send(tabId, 'Input.setInterceptDrags', { enabled: true });
    const moved = await move();
    if (moved !== true) lostMidway(moved);
    await Promise.race([heardDrag, sleep(DRAG_START_MS)]);
  } finally {
    stop();
    await dbg.send(tabId, 'Input.setInterceptDrags', { enabled: false }).catch(() => {});
  }
  return { data: got };
}

// The start and end of a drag, and its words: each by ref, selector or point (startX…), the end
// also by offset from the start.
export async function dragPoints(tabId, args) {
  const start = (await pointArgs(tabId, args, ['startX', 'startY'])) ?? (args.startRef || args.startSelector ? await pointOn(tabId, { ref: args.startRef, selector: args.startSelector, force: args.force }, { hit: true, enabled: true, verb: 'drag' }) : null);
  if (!start) throw new ToolError(Code.INVALID_ARGUMENTS, 'give "startRef" (from browser_snapshot), "startSelector", or "startX" and "startY"');
  let end = await pointArgs(tabId, args, ['endX', 'endY']);
  if (!end && (args.endRef || args.endSelector)) {
    const p = args.endPosition;
    const box = p ? await frames.bounds(tabId, args.endRef ? { ref: args.endRef } : { selector: args.endSelector }) : null;
    end = box
      ? { x: box.x + box.width * (p.x ?? 0.5), y: box.y + box.height * (p.y ?? 0.5), element: box.element }
      : await pointOn(tabId, { ref: args.endRef, selector: args.endSelector, force: true }, { hit: false, enabled: false, verb: 'drop' });
  } else if (!end && args.offset && typeof args.offset === 'object') {
    end = { x: start.x + (args.offset.x ?? 0), y: start.y + (args.offset.y ?? 0) };
  }
  if (!end) throw new ToolError(Code.INVALID_ARGUMENTS, 'give "endRef" (from browser_snapshot), "endSelector", "endX" and "endY", or an "offset" {x, y} in pixels');
  const name = (p, ref, sel) => p.element ?? ref ?? sel ?? at(p);
  const what = `${name(start, args.startRef, args.startSelector)} onto ${name(end, args.endRef, args.endSelector)}`;
  return { start, end, what };
}
