// An action's input as steps, and the steps in the device's words (input.js plays them): the
// DevTools protocol's Input commands for Chromium, WebDriver BiDi's input sources for a Firefox
// the daemon launched (the daemon plays them, issue 57). Pure, so that tests/extension/ can check the
// translation.
//
// A step is one of
//   {move: {x, y}}                          the pointer, in top-level viewport CSS pixels
//   {down: {x, y, button, count}}, {up: …}  a button ('left', 'middle', 'right'), the press's
//                                           click count (1, then 2 for a double click…)
//   {key: 'down' | 'up', def}               keys.js's keyDef; modifiers are keys pressed before
//   {text: '…'}                             text as the keyboard's input method commits it
//   {pause: ms}
import { BITS } from './keys.js';

const BUTTON_BITS = { left: 1, right: 2, middle: 4 };

export const click = (at, { button = 'left', clickCount = 1 } = {}) => {
  const steps = [{ move: at }];
  for (let count = 1; count <= clickCount; count++) steps.push({ down: { ...at, button, count } }, { up: { ...at, button, count } });
  return steps;
};

// A key with its modifiers: the modifiers pressed first, released last.
export const press = ({ key, modifiers }) => [
  ...modifiers.map((m) => ({ key: 'down', def: { key: m, modifier: true } })),
  { key: 'down', def: key },
  { key: 'up', def: key },
  ...[...modifiers].reverse().map((m) => ({ key: 'up', def: { key: m, modifier: true } })),
];

// The Input commands of `steps` in order, with the pauses kept as {pause} between them; the
// pointer's and the modifiers' state runs across the steps, from `state` ({x, y, buttons,
// modifiers}, updated).
export function cdpCommands(steps, state, keyDef) {
  const out = [];
  for (const s of steps) {
    if (s.pause !== undefined) {
      out.push({ pause: s.pause });
    } else if (s.move) {
      Object.assign(state, { x: s.move.x, y: s.move.y });
      out.push({ method: 'Input.dispatchMouseEvent', params: { type: 'mouseMoved', x: s.move.x, y: s.move.y, button: pressedButton(state.buttons), buttons: state.buttons, modifiers: state.modifiers, pointerType: 'mouse' } });
    } else if (s.down || s.up) {
      const m = s.down || s.up;
      const bit = BUTTON_BITS[m.button];
      state.buttons = s.down ? state.buttons | bit : state.buttons & ~bit;
      Object.assign(state, { x: m.x, y: m.y });
      out.push({ method: 'Input.dispatchMouseEvent', params: { type: s.down ? 'mousePressed' : 'mouseReleased', x: m.x, y: m.y, button: m.button, buttons: state.buttons, clickCount: m.count ?? 1, modifiers: state.modifiers, pointerType: 'mouse' } });
    } else if (s.key) {
      const def = s.def.modifier ? keyDef(s.def.key) : s.def;
      if (s.def.modifier) state.modifiers = s.key === 'down' ? state.modifiers | BITS[s.def.key] : state.modifiers & ~BITS[s.def.key];
      // A key pressed with Control, Alt or Meta types nothing (it is a shortcut).
      const text = s.key === 'down' && def.text && !(state.modifiers & (BITS.Control | BITS.Alt | BITS.Meta)) ? def.text : undefined;
      const type = s.key === 'up' ? 'keyUp' : text ? 'keyDown' : 'rawKeyDown';
      out.push({
        method: 'Input.dispatchKeyEvent',
        params: { type, key: def.key, code: def.code, windowsVirtualKeyCode: def.keyCode, nativeVirtualKeyCode: def.keyCode, modifiers: state.modifiers, location: def.location, ...(text ? { text, unmodifiedText: text } : {}) },
      });
    } else if (s.text !== undefined) {
      out.push({ method: 'Input.insertText', params: { text: s.text } });
    }
  }
  return out;
}

function pressedButton(buttons) {
  if (buttons & 1) return 'left';
  if (buttons & 2) return 'right';
  if (buttons & 4) return 'middle';
  return 'none';
}

// `steps` as WebDriver BiDi input sources for input.performActions: a mouse and a keyboard,
// tick by tick (each tick one action of each source, the other pausing). Text is typed key by
// key, as BiDi has no input-method commit; a key that types a character is named by it, others
// by their WebDriver code point (keys.js). BiDi counts the clicks itself (two presses at one
// point within the double-click time are a double click), as a person's mouse would.
export function bidiActions(steps) {
  const pointer = [];
  const keys = [];
  const tick = (p, k) => {
    pointer.push(p || { type: 'pause' });
    keys.push(k || { type: 'pause' });
  };
  // Firefox takes a tick at a time, a few milliseconds each: a press where the pointer already
  // is needs no move first.
  let last = null;
  const move = (at) => {
    last = { type: 'pointerMove', x: Math.round(at.x), y: Math.round(at.y), origin: 'viewport', duration: 0 };
    return last;
  };
  const there = (at) => last && last.x === Math.round(at.x) && last.y === Math.round(at.y);
  for (const s of steps) {
    if (s.pause !== undefined) tick({ type: 'pause', duration: Math.round(s.pause) });
    else if (s.move) tick(move(s.move));
    else if (s.down || s.up) {
      const m = s.down || s.up;
      if (!there(m)) tick(move(m));
      tick({ type: s.down ? 'pointerDown' : 'pointerUp', button: BIDI_BUTTON[m.button] });
    } else if (s.key) {
      tick(null, { type: s.key === 'down' ? 'keyDown' : 'keyUp', value: s.def.modifier ? MODIFIER_VALUES[s.def.key] : s.def.value });
    } else if (s.text !== undefined) {
      for (const ch of s.text) {
        const value = ch === '\n' ? '\uE007' : ch === '\t' ? '\uE004' : ch;
        tick(null, { type: 'keyDown', value });
        tick(null, { type: 'keyUp', value });
      }
    }
  }
  return [
    { type: 'pointer', id: 'browser-mcp-mouse', parameters: { pointerType: 'mouse' }, actions: pointer },
    { type: 'key', id: 'browser-mcp-keys', actions: keys },
  ];
}

const BIDI_BUTTON = { left: 0, middle: 1, right: 2 };
const MODIFIER_VALUES = { Shift: '\uE008', Control: '\uE009', Alt: '\uE00A', Meta: '\uE03D' };
