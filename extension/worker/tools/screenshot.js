// browser_screenshot: the visible viewport, one element (cut out of a viewport capture after
// scrolling it into view), or the whole page (viewport captures stitched top to bottom).
// chrome.tabs.captureVisibleTab only sees the active tab of a window, so the tab is brought to
// the front first; Chromium allows it about twice a second, so captures are spaced.
// A whole page is one capture where the browser allows it without the person's say being
// needed again: Firefox's tabs.captureTab takes any rectangle of the document; in Chromium only
// the DevTools protocol can, so that path is taken once the person has granted the optional
// "debugger" permission in the options page (Chromium shows its "started debugging this
// browser" bar while it runs). Otherwise the page is stitched from viewport captures.
// scrollPage and the scroll-back below run in the page (chrome.scripting.executeScript), where
// these exist; the worker never calls them itself.
/* global window, document, requestAnimationFrame */
import { Code, ToolError } from '../../shared/protocol.js';
import { getTab } from '../frames/page.js';
import { isFirefox } from '../../shared/platform.js';
import * as frames from '../frames/frames.js';
import * as dbg from '../frames/debugger.js';

const FORMATS = { png: 'image/png', jpeg: 'image/jpeg' };
const CAPTURE_GAP_MS = 520; // MAX_CAPTURE_VISIBLE_TAB_CALLS_PER_SECOND is 2
// A full page is cut at this many CSS pixels, or at what a canvas can hold.
export const FULL_PAGE_MAX_CSS = 16_384;
const CANVAS_MAX_PX = 32_000;
// A tool result travels in one WebSocket message (the daemon takes up to 16 MiB by default).
const MAX_BASE64 = 12 * 1024 * 1024;

let lastCapture = 0;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function capture(windowId, format, quality) {
  for (let attempt = 0; ; attempt++) {
    const wait = lastCapture + CAPTURE_GAP_MS - Date.now();
    if (wait > 0) await sleep(wait);
    lastCapture = Date.now();
    try {
      return await chrome.tabs.captureVisibleTab(windowId, format === 'jpeg' ? { format, quality } : { format });
    } catch (e) {
      // Over the rate, or a tab brought to the front whose first frame is not drawn yet
      // ("image readback failed"): both pass by themselves.
      if (attempt < 3 && /MAX_CAPTURE_VISIBLE_TAB_CALLS_PER_SECOND|image readback failed/.test(e.message)) continue;
      throw new ToolError(Code.TOOL_ERROR, `could not capture the tab: ${e.message}`);
    }
  }
}

const bitmapOf = async (dataUrl) => createImageBitmap(await (await fetch(dataUrl)).blob());

// Frames of a site the policy hides are painted over (frames.js hiddenBoxes), in the canvas's
// pixels: `dy` is where the viewport's top is in the canvas, in CSS pixels.
const MASK = '#5f6368';
function paintOver(canvas, boxes, dpr, dx = 0, dy = 0) {
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = MASK;
  for (const b of boxes) {
    const left = Math.floor((b.x + dx) * dpr);
    const top = Math.floor((b.y + dy) * dpr);
    ctx.fillRect(left, top, Math.ceil((b.x + dx + b.width) * dpr) - left, Math.ceil((b.y + dy + b.height) * dpr) - top);
  }
}

const covered = (boxes) => (boxes.length ? ` ${boxes.length} frame${boxes.length === 1 ? '' : 's'} of a site hidden by browser-mcp's settings painted over.` : '');

function base64(buffer) {
  const bytes = new Uint8Array(buffer);
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

async function encode(canvas, format, quality) {
  const blob = await canvas.convertToBlob(format === 'jpeg' ? { type: FORMATS.jpeg, quality: quality / 100 } : { type: FORMATS.png });
  return base64(await blob.arrayBuffer());
}

function result(data, format, description) {
  if (data.length > MAX_BASE64) {
    throw new ToolError(Code.TOOL_ERROR, `the screenshot is ${(data.length / 1048576).toFixed(1)} MiB as base64, more than the ${MAX_BASE64 / 1048576} MiB a result may carry; ask for format "jpeg" with a lower quality, or an element`);
  }
  return { content: [{ type: 'image', data, mimeType: FORMATS[format] }, { type: 'text', text: description }] };
}

function options(args) {
  for (const k of ['ref', 'selector']) {
    if (args[k] !== undefined && typeof args[k] !== 'string') throw new ToolError(Code.INVALID_ARGUMENTS, `"${k}" must be a string`);
  }
  const format = args.format ?? 'png';
  if (!FORMATS[format]) throw new ToolError(Code.INVALID_ARGUMENTS, '"format" is "png" or "jpeg"');
  if (args.quality !== undefined && !(Number.isInteger(args.quality) && args.quality >= 0 && args.quality <= 100)) {
    throw new ToolError(Code.INVALID_ARGUMENTS, '"quality" is an integer from 0 to 100 (jpeg only)');
  }
  if (args.fullPage !== undefined && typeof args.fullPage !== 'boolean') throw new ToolError(Code.INVALID_ARGUMENTS, '"fullPage" must be true or false');
  const element = !!(args.ref || args.selector);
  if (element && args.fullPage) throw new ToolError(Code.INVALID_ARGUMENTS, 'give an element (ref or selector) or fullPage, not both');
  return { format, quality: args.quality ?? 80, element, fullPage: args.fullPage === true };
}

async function toFront(tabId) {
  const tab = await getTab(tabId);
  if (!tab.active) await chrome.tabs.update(tabId, { active: true });
  return tab;
}

async function elementShot(tab, args, format, quality) {
  // In the top-level viewport's CSS pixels, after scrolling the element into view (in a frame
  // too: frames.js adds the offsets of the <iframe>s above it).
  const b = await frames.bounds(tab.id, args.ref ? { ref: args.ref } : { selector: args.selector });
  await inPage(tab.id, scrollPage, [null]); // the scroll has been painted before the capture
  const hidden = await frames.hiddenBoxes(tab.id);
  const bmp = await bitmapOf(await capture(tab.windowId, 'png'));
  const dpr = b.devicePixelRatio || 1;
  const left = Math.max(0, Math.round(b.x * dpr));
  const top = Math.max(0, Math.round(b.y * dpr));
  const right = Math.min(bmp.width, Math.round((b.x + b.width) * dpr));
  const bottom = Math.min(bmp.height, Math.round((b.y + b.height) * dpr));
  if (right <= left || bottom <= top) {
    throw new ToolError(Code.ELEMENT_NOT_INTERACTABLE, `${args.ref || args.selector} has no visible area to capture (${b.width}×${b.height} at ${b.x},${b.y})`);
  }
  const canvas = new OffscreenCanvas(right - left, bottom - top);
  canvas.getContext('2d').drawImage(bmp, left, top, right - left, bottom - top, 0, 0, right - left, bottom - top);
  paintOver(canvas, hidden, dpr, -left / dpr, -top / dpr);
  const cut = right - left < Math.round(b.width * dpr) || bottom - top < Math.round(b.height * dpr);
  const what = `Element ${args.ref || args.selector}: ${canvas.width}×${canvas.height} px (${format})${cut ? ', cut to the viewport' : ''}.${covered(hidden)}`;
  return result(await encode(canvas, format, quality), format, what);
}

// Runs in the page: scrolls, waits for the page to paint, says where it really is.
async function scrollPage(y) {
  if (y !== null) window.scrollTo({ left: 0, top: y, behavior: 'instant' });
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const root = document.scrollingElement || document.documentElement;
  return { y: window.scrollY, x: window.scrollX, width: window.innerWidth, height: window.innerHeight, total: Math.max(root.scrollHeight, document.body?.scrollHeight || 0), dpr: window.devicePixelRatio };
}

async function inPage(tabId, func, args) {
  try {
    const [frame] = await chrome.scripting.executeScript({ target: { tabId }, func, args });
    return frame.result;
  } catch (e) {
    throw new ToolError(Code.TOOL_ERROR, `cannot reach the page in tab ${tabId}: ${e.message}`);
  }
}

async function fullPageShot(tab, format, quality) {
  const start = await inPage(tab.id, scrollPage, [null]);
  const dpr = start.dpr || 1;
  const maxCss = Math.min(FULL_PAGE_MAX_CSS, Math.floor(CANVAS_MAX_PX / dpr));
  const height = Math.min(start.total, maxCss);
  const cut = start.total > height ? `, cut at ${height} of ${start.total} CSS px` : '';
  const whole = await oneCapture(tab, start, height, format, quality);
  if (whole) {
    const what = `Full page: ${whole.width}×${whole.height} px (${format}) in one capture${whole.how}${cut}.${covered(whole.hidden)}`;
    return result(whole.data, format, what);
  }
  let canvas = null;
  let captures = 0;
  let hidden = 0;
  try {
    for (let y = 0; y < height; y += start.height) {
      const at = await inPage(tab.id, scrollPage, [y]);
      const boxes = await frames.hiddenBoxes(tab.id);
      const bmp = await bitmapOf(await capture(tab.windowId, 'png'));
      captures += 1;
      if (!canvas) canvas = new OffscreenCanvas(bmp.width, Math.round(height * dpr));
      canvas.getContext('2d').drawImage(bmp, 0, Math.round(at.y * dpr));
      paintOver(canvas, boxes, dpr, 0, at.y);
      hidden = Math.max(hidden, boxes.length);
      if (at.y + at.height >= height) break;
    }
  } finally {
    await inPage(tab.id, (x, y) => window.scrollTo({ left: x, top: y, behavior: 'instant' }), [start.x, start.y]).catch(() => {});
  }
  const what = `Full page: ${canvas.width}×${canvas.height} px (${format}) from ${captures} capture${captures === 1 ? '' : 's'}${cut}.${covered({ length: hidden })}`;
  return result(await encode(canvas, format, quality), format, what);
}

// The whole page in one capture, or null where only stitching is allowed. The page is not
// scrolled: `start` is where it is, and the hidden frames' boxes are moved from the viewport to
// the document by it.
async function oneCapture(tab, start, height, format, quality) {
  const rect = { x: 0, y: 0, width: start.width, height };
  let dataUrl = null;
  let how = '';
  if (isFirefox) {
    const opts = format === 'jpeg' ? { format, quality } : { format };
    dataUrl = await chrome.tabs.captureTab(tab.id, { ...opts, rect, scale: start.dpr || 1 }).catch(() => null);
  } else if (await dbg.granted()) {
    dataUrl = await debuggerCapture(tab.id, rect, format, quality);
    if (dataUrl) how = ' (the DevTools protocol, allowed in the options)';
  }
  if (!dataUrl) return null;
  const hidden = await frames.hiddenBoxes(tab.id);
  const bmp = await bitmapOf(dataUrl);
  if (!hidden.length) return { data: dataUrl.slice(dataUrl.indexOf(',') + 1), width: bmp.width, height: bmp.height, hidden, how };
  const canvas = new OffscreenCanvas(bmp.width, bmp.height);
  canvas.getContext('2d').drawImage(bmp, 0, 0);
  paintOver(canvas, hidden, bmp.width / start.width, start.x, start.y);
  return { data: await encode(canvas, format, quality), width: bmp.width, height: bmp.height, hidden, how };
}

// On the tab's session if the agent's input keeps one (frames/debugger.js), else on one attached
// for this capture alone and detached at once. Another debugger on the tab (another extension)
// makes the attach fail: then the page is stitched as without the permission.
async function debuggerCapture(tabId, rect, format, quality) {
  const had = dbg.attached(tabId);
  try {
    await dbg.attach(tabId);
  } catch {
    return null;
  }
  try {
    const params = { format, captureBeyondViewport: true, clip: { ...rect, scale: 1 } };
    if (format === 'jpeg') params.quality = quality;
    const { data } = await dbg.send(tabId, 'Page.captureScreenshot', params);
    return `data:${FORMATS[format]};base64,${data}`;
  } catch (e) {
    throw new ToolError(Code.TOOL_ERROR, `could not capture the page through the DevTools protocol: ${e.message}`);
  } finally {
    if (!had) await dbg.detach(tabId);
  }
}

// Image pixels per CSS pixel of the viewport (the screen's density times the page's zoom), so
// that a point read off the image becomes the x, y that browser_click and browser_hover take.
async function scaleOf(tab, bmp) {
  const zoom = await chrome.tabs.getZoom(tab.id).catch(() => 1);
  const scale = Math.round(((bmp.width / tab.width) * zoom || 1) * 100) / 100;
  return scale === 1 ? 'scale 1 px per CSS px' : `scale ${scale} px per CSS px (x, y = these pixels ÷ ${scale})`;
}

export async function screenshot(tabId, args) {
  const { format, quality, element, fullPage } = options(args);
  const tab = await toFront(tabId);
  if (element) return elementShot(tab, args, format, quality);
  if (fullPage) return fullPageShot(tab, format, quality);
  const hidden = await frames.hiddenBoxes(tabId);
  const dataUrl = await capture(tab.windowId, hidden.length ? 'png' : format, quality);
  const bmp = await bitmapOf(dataUrl);
  const what = `Viewport of tab ${tabId}: ${bmp.width}×${bmp.height} px (${format}), ${await scaleOf(tab, bmp)}.${covered(hidden)}`;
  if (!hidden.length) return result(dataUrl.slice(dataUrl.indexOf(',') + 1), format, what);
  const canvas = new OffscreenCanvas(bmp.width, bmp.height);
  canvas.getContext('2d').drawImage(bmp, 0, 0);
  const { dpr } = await inPage(tabId, scrollPage, [null]);
  paintOver(canvas, hidden, dpr || 1);
  return result(await encode(canvas, format, quality), format, what);
}
