// An action of the hands (click, hover, type, press_key, drag, select): trusted input where the
// browser gives it (input.js), else the synthetic events of the frame's content scripts; the
// result says which (issue 57). An agent may also act at a point of the viewport (x, y: what a
// screenshot shows, in CSS pixels) instead of on an element.
import { Code, ToolError } from '../../shared/protocol.js';
import * as frames from '../frames/frames.js';
import * as input from './input.js';

// The actions that take input, by tool name; each one's trusted way.
export const ACTIONS = new Set(['browser_click', 'browser_hover', 'browser_type', 'browser_press_key', 'browser_drag', 'browser_select']);

export async function act(tabId, name, args) {
  const point = ['browser_click', 'browser_hover'].includes(name) ? await input.pointArgs(tabId, args) : null;
  if (point && (args.ref || args.selector)) throw new ToolError(Code.INVALID_ARGUMENTS, 'give an element (ref or selector) or a point (x, y), not both');
  const { device, why } = name === 'browser_select' ? { why: null } : await input.device(tabId);
  let instead = why;
  if (device) {
    const target = point ? { ...point, element: (await frames.atPoint(tabId, point.x, point.y)).element } : null;
    const r = await trusted(device, tabId, name, args, target);
    if (!r.lost && !r.instead) return input.said(r, 'trusted');
    instead = r.instead ?? `${r.lost} before the page saw anything`;
  }
  return input.said(await synthetic(tabId, name, args, point), 'synthetic', instead);
}

function trusted(device, tabId, name, args, point) {
  switch (name) {
    case 'browser_click':
      return input.click(device, tabId, args, point);
    case 'browser_hover':
      return input.hover(device, tabId, args, point);
    case 'browser_type':
      return input.type(device, tabId, args);
    case 'browser_press_key':
      return input.pressKey(device, tabId, args);
    case 'browser_drag':
      return input.dragPoints(tabId, args).then((points) => input.drag(device, tabId, args, points));
    default:
      throw new ToolError(Code.TOOL_NOT_FOUND, `no trusted input for ${name}`);
  }
}

// A drag with a point at either end (a stroke on a canvas): both ends in the viewport, played
// in the frame the start falls in, the end in that frame's coordinates.
async function dragAt(tabId, args) {
  const { start, end } = await input.dragPoints(tabId, args);
  const at = await frames.atPoint(tabId, start.x, start.y);
  const [dx, dy] = [start.x - at.x, start.y - at.y];
  return frames.frameTool(tabId, at.frameId, 'drag_at', { start: { x: at.x, y: at.y }, end: { x: end.x - dx, y: end.y - dy } });
}

// The content scripts' events: at the element by ref or selector, or at the point (the element
// there, in whichever frame it falls).
async function synthetic(tabId, name, args, point) {
  if (point) {
    const at = await frames.atPoint(tabId, point.x, point.y);
    const local = { x: at.x, y: at.y };
    if (name === 'browser_hover') {
      const r = await frames.frameTool(tabId, at.frameId, 'hover_at', local);
      return { content: [{ type: 'text', text: `Moved the pointer to (${Math.round(point.x)}, ${Math.round(point.y)}), over ${r.element}` }] };
    }
    const { button = 'left', clickCount = args.doubleClick === true ? 2 : 1 } = args;
    const r = await frames.frameTool(tabId, at.frameId, 'click_at', { ...local, button, clickCount });
    const verb = clickCount === 2 ? 'Double-clicked' : clickCount === 3 ? 'Triple-clicked' : 'Clicked';
    return { content: [{ type: 'text', text: `${verb} at (${Math.round(point.x)}, ${Math.round(point.y)})${button === 'left' ? '' : ` with the ${button} button`}, on ${r.element}` }] };
  }
  if (name === 'browser_drag' && (args.startX !== undefined || args.endX !== undefined)) return dragAt(tabId, args);
  if (name === 'browser_drag') return frames.domCall(tabId, 'drag', args, { refKeys: ['startRef', 'endRef'] });
  return frames.domCall(tabId, name.slice('browser_'.length), args);
}
