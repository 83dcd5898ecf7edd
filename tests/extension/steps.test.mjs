// An action's steps as WebDriver BiDi input sources (extension/worker/tools/steps.js, issue 57):
// what the daemon hands to a managed Firefox's input.performActions. The two sources tick
// together, so each has one action per tick; text becomes key presses; points are whole pixels.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bidiActions, click, press } from '../../extension/worker/tools/steps.js';
import { keyDef } from '../../extension/worker/tools/keys.js';

test('a right double click: a move, then presses and releases of button 2 there, the keyboard pausing', () => {
  const [mouse, keys] = bidiActions(click({ x: 10.4, y: 20.6 }, { button: 'right', clickCount: 2 }));
  assert.deepEqual(mouse.parameters, { pointerType: 'mouse' });
  const kinds = mouse.actions.map((a) => a.type);
  assert.deepEqual(kinds, ['pointerMove', 'pointerDown', 'pointerUp', 'pointerDown', 'pointerUp']);
  assert.deepEqual(mouse.actions[0], { type: 'pointerMove', x: 10, y: 21, origin: 'viewport', duration: 0 });
  assert.ok(mouse.actions.filter((a) => a.button !== undefined).every((a) => a.button === 2));
  assert.equal(keys.actions.length, mouse.actions.length);
  assert.ok(keys.actions.every((a) => a.type === 'pause'));
  // A press elsewhere than the pointer is moves there first.
  const [drag] = bidiActions([{ move: { x: 1, y: 1 } }, { down: { x: 1, y: 1, button: 'left' } }, { up: { x: 9, y: 9, button: 'left' } }]);
  assert.deepEqual(drag.actions.map((a) => a.type), ['pointerMove', 'pointerDown', 'pointerMove', 'pointerUp']);
});

test('Control+a: the modifier by its code point, around the key; text key by key', () => {
  const [, keys] = bidiActions(press({ key: keyDef('a'), modifiers: ['Control'] }));
  assert.deepEqual(
    keys.actions.map((a) => [a.type, a.value]),
    [['keyDown', '\uE009'], ['keyDown', 'a'], ['keyUp', 'a'], ['keyUp', '\uE009']],
  );
  const [mouse, typed] = bidiActions([{ text: 'h\n' }, { pause: 7 }]);
  assert.deepEqual(typed.actions.map((a) => a.value ?? a.type), ['h', 'h', '\uE007', '\uE007', 'pause']);
  assert.deepEqual(mouse.actions.at(-1), { type: 'pause', duration: 7 });
  const [, enter] = bidiActions(press({ key: keyDef('Enter'), modifiers: [] }));
  assert.deepEqual(enter.actions.map((a) => a.value), ['\uE007', '\uE007']);
});
