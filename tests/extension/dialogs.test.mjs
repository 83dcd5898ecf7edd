// The dialogs a call's result reports (extension/worker/frames/dialogs.js): a frame tells the
// worker of each dialog it answers, and the next result in that frame carries it too; whichever
// comes first, the dialog is reported once.
import { test } from 'node:test';
import assert from 'node:assert/strict';

const listeners = {};
const event = (name) => ({ addListener: (f) => (listeners[name] = f) });
globalThis.chrome = {
  runtime: { id: 'ours', onMessage: event('message') },
  webNavigation: { onCommitted: event('committed') },
  tabs: { onRemoved: event('removed') },
};
const { initDialogs, takeDialogs } = await import('../../extension/worker/frames/dialogs.js');
initDialogs();

const TAB = 7;
const alert = (id) => ({ id, kind: 'alert', message: 'onload', accepted: true, answeredBy: 'the default dialog policy (dismiss)' });
const told = (id) => listeners.message({ type: 'dialog', dialog: alert(id) }, { id: 'ours', tab: { id: TAB }, frameId: 0 });
const ids = (found) => found.map((d) => d.id);

test('the frame told the worker first: the result that carries it reports it once', () => {
  told('a');
  assert.deepEqual(ids(takeDialogs(TAB, [alert('a')])), ['a']);
  assert.deepEqual(ids(takeDialogs(TAB, [])), []);
});

test('the result came first: the frame\'s message after it is not a second report', () => {
  assert.deepEqual(ids(takeDialogs(TAB, [alert('b')])), ['b']);
  told('b');
  assert.deepEqual(ids(takeDialogs(TAB, [])), []);
});

test('a dialog no result carried (another frame) is reported with the next result', () => {
  told('c');
  assert.deepEqual(ids(takeDialogs(TAB, [alert('d')])), ['d', 'c']);
  assert.deepEqual(ids(takeDialogs(TAB, [alert('d')])), [], 'a frame that says it again');
});

test('a result from a tab with no dialog state yet is remembered too', () => {
  const other = 8;
  assert.deepEqual(ids(takeDialogs(other, [alert('e')])), ['e']);
  listeners.message({ type: 'dialog', dialog: alert('e') }, { id: 'ours', tab: { id: other }, frameId: 0 });
  assert.deepEqual(ids(takeDialogs(other, [])), []);
});

test('another extension\'s message is not a dialog', () => {
  listeners.message({ type: 'dialog', dialog: alert('e') }, { id: 'theirs', tab: { id: TAB }, frameId: 0 });
  assert.deepEqual(ids(takeDialogs(TAB, [])), []);
});
