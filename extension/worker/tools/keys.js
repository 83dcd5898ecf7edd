// Keys as a US keyboard makes them, for the input the browser makes itself (input.js): what
// Chromium's Input.dispatchKeyEvent needs (key, code, legacy key code, the text it types) and
// what WebDriver BiDi's key actions name (the character, or the WebDriver code point of a key
// that types none). The synthetic keys of content/dom-actions.js have their own table, in the
// page's world.
import { Code, ToolError } from '../../shared/protocol.js';

// [code, keyCode, WebDriver code point, text typed]
const NAMED = {
  Enter: ['Enter', 13, '\uE007', '\r'],
  Tab: ['Tab', 9, '\uE004'],
  Backspace: ['Backspace', 8, '\uE003'],
  Delete: ['Delete', 46, '\uE017'],
  Escape: ['Escape', 27, '\uE00C'],
  Insert: ['Insert', 45, '\uE016'],
  ArrowLeft: ['ArrowLeft', 37, '\uE012'],
  ArrowUp: ['ArrowUp', 38, '\uE013'],
  ArrowRight: ['ArrowRight', 39, '\uE014'],
  ArrowDown: ['ArrowDown', 40, '\uE015'],
  Home: ['Home', 36, '\uE011'],
  End: ['End', 35, '\uE010'],
  PageUp: ['PageUp', 33, '\uE00E'],
  PageDown: ['PageDown', 34, '\uE00F'],
  Shift: ['ShiftLeft', 16, '\uE008'],
  Control: ['ControlLeft', 17, '\uE009'],
  Alt: ['AltLeft', 18, '\uE00A'],
  Meta: ['MetaLeft', 91, '\uE03D'],
};
for (let i = 1; i <= 12; i++) NAMED[`F${i}`] = [`F${i}`, 111 + i, String.fromCharCode(0xe030 + i)];

// The unshifted key of each shifted character, and the code of each punctuation key.
const SHIFTED = { '!': '1', '@': '2', '#': '3', $: '4', '%': '5', '^': '6', '&': '7', '*': '8', '(': '9', ')': '0', _: '-', '+': '=', '{': '[', '}': ']', '|': '\\', ':': ';', '"': "'", '<': ',', '>': '.', '?': '/', '~': '`' };
const PUNCTUATION = { '-': ['Minus', 189], '=': ['Equal', 187], '[': ['BracketLeft', 219], ']': ['BracketRight', 221], '\\': ['Backslash', 220], ';': ['Semicolon', 186], "'": ['Quote', 222], ',': ['Comma', 188], '.': ['Period', 190], '/': ['Slash', 191], '`': ['Backquote', 192] };

const MODIFIERS = { control: 'Control', ctrl: 'Control', controlormeta: 'Control', shift: 'Shift', alt: 'Alt', option: 'Alt', meta: 'Meta', cmd: 'Meta', command: 'Meta' };
const ALIASES = { space: ' ', esc: 'Escape', return: 'Enter', del: 'Delete', up: 'ArrowUp', down: 'ArrowDown', left: 'ArrowLeft', right: 'ArrowRight' };
// Chromium's modifier bits.
export const BITS = { Alt: 1, Control: 2, Meta: 4, Shift: 8 };

// One key: {key, code, keyCode, text?, value (BiDi), shift: whether a US keyboard needs Shift
// for it, location}.
export function keyDef(k) {
  const named = NAMED[k];
  if (named) {
    const [code, keyCode, value, text] = named;
    return { key: k, code, keyCode, value, text, location: ['Shift', 'Control', 'Alt', 'Meta'].includes(k) ? 1 : 0 };
  }
  if ([...k].length !== 1) throw new ToolError(Code.INVALID_ARGUMENTS, `unknown key "${k}" (use a character, or Enter, Tab, Escape, Backspace, Delete, ArrowLeft…, Home, End, PageUp, PageDown, F1…F12)`);
  const base = SHIFTED[k] ?? (/[A-Z]/.test(k) ? k.toLowerCase() : k);
  const shift = base !== k;
  let code = '';
  let keyCode = 0;
  if (/[a-z]/.test(base)) [code, keyCode] = [`Key${base.toUpperCase()}`, base.toUpperCase().charCodeAt(0)];
  else if (/[0-9]/.test(base)) [code, keyCode] = [`Digit${base}`, base.charCodeAt(0)];
  else if (base === ' ') [code, keyCode] = ['Space', 32];
  else if (PUNCTUATION[base]) [code, keyCode] = PUNCTUATION[base];
  return { key: k, code, keyCode, value: k, text: k, shift, location: 0 };
}

// "Control+Shift+a" → {key: keyDef, modifiers: ['Control', 'Shift']}.
export function parseKey(spec) {
  if (typeof spec !== 'string' || !spec) throw new ToolError(Code.INVALID_ARGUMENTS, '"key" must be a non-empty string such as "Enter", "a" or "Control+a"');
  const parts = spec === '+' ? ['+'] : spec.endsWith('++') ? [...spec.slice(0, -2).split('+'), '+'] : spec.split('+');
  let k = parts.pop();
  const modifiers = [];
  for (const p of parts) {
    const m = MODIFIERS[p.toLowerCase()];
    if (!m) throw new ToolError(Code.INVALID_ARGUMENTS, `unknown modifier "${p}" in "${spec}" (use Control, Shift, Alt, Meta)`);
    if (!modifiers.includes(m)) modifiers.push(m);
  }
  k = ALIASES[k.toLowerCase()] || k;
  if (k.length === 1 && modifiers.includes('Shift') && /[a-z]/.test(k)) k = k.toUpperCase();
  return { key: keyDef(k), modifiers };
}
