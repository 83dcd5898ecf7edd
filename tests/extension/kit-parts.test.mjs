// Which parts of the DOM tools a call puts into a frame (extension/worker/frames/frame-channel.js):
// only what its tool uses, so that the first call on a page parses no more than it needs (issue
// 30's row 12), and what a later tool lacks follows once. chrome.scripting is played by a frame
// whose DOM tools are what was put in.
import { test } from 'node:test';
import assert from 'node:assert/strict';

const listeners = {};
const event = (name) => ({ addListener: (f) => (listeners[name] = f) });
let injected = []; // what each injection put in, in turn
let tools = null; // the frame's DOM tools (content/dom-tools.js `answer` and what each part adds)
const ADDS = {
  '/content/dom-kit.min.js': ['snapshot'],
  '/content/dom-kit-hands.min.js': ['click', 'type'],
  '/content/dom-kit-points.min.js': ['drag', 'point_at'],
  '/content/dom-kit-hands-ahead.min.js': ['click', 'type', 'drag', 'point_at'],
};
globalThis.chrome = {
  runtime: { id: 'ours', getManifest: () => ({ content_scripts: [] }) },
  webNavigation: { onCommitted: event('committed'), getFrame: async () => ({}) },
  scripting: {
    executeScript: async ({ files, func, args, world }) => {
      if (files) {
        injected.push(world === 'MAIN' ? files.map((f) => `MAIN ${f}`) : files);
        for (const f of files) {
          if (!ADDS[f]) continue;
          tools ??= {};
          for (const name of ADDS[f]) tools[name] = true;
        }
        return [{ result: true, documentId: 'd1' }];
      }
      globalThis.browserMcpDom = tools && {
        tools,
        answer: async (req) => (tools[req.name] ? { result: `${req.name} done`, document: 'd1' } : { error: { code: 'TOOL_NOT_FOUND', message: req.name } }),
      };
      return [{ result: await func(...args) }];
    },
  },
};
const { domToFrame } = await import('../../extension/worker/frames/frame-channel.js');

const TAB = 3;
const newDocument = () => {
  listeners.committed({ tabId: TAB, frameId: 0 });
  injected = [];
  tools = null;
};
const call = (name, args = {}) => domToFrame(TAB, 0, { name, args });
const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

test('a first click by selector gets the reading and acting parts, not the page world or input at points', async () => {
  newDocument();
  assert.equal((await call('click', { selector: 'button' })).value, 'click done');
  assert.deepEqual(injected, [['/content/dom-kit.min.js', '/content/dom-kit-hands.min.js', '/content/has-bridge.js']]);
  injected = [];
  await call('click', { selector: 'button' });
  assert.deepEqual(injected, [], 'a later call puts nothing in');
});

test('a snapshot after it gets the page world alone', async () => {
  newDocument();
  await call('type', { selector: 'input' });
  injected = [];
  await call('snapshot');
  assert.deepEqual(injected, [['MAIN /page/handlers.min.js']]);
});

test('a first snapshot gets the reading part and the page world; the acting parts follow its answer, compiled ahead', async () => {
  newDocument();
  assert.equal((await call('snapshot')).value, 'snapshot done');
  assert.deepEqual(injected.slice(0, 2), [['MAIN /page/handlers.min.js'], ['/content/dom-kit.min.js', '/content/has-bridge.js']]);
  await settle();
  assert.deepEqual(injected.slice(2), [['/content/dom-kit-hands-ahead.min.js', '/content/has-bridge.js']]);
  injected = [];
  await call('drag', { startRef: 'e1', endRef: 'e2' });
  assert.deepEqual(injected, [], 'the file ahead holds input at points too');
});

test('a drag after a click gets input at points alone', async () => {
  newDocument();
  await call('click', { selector: 'button' });
  injected = [];
  assert.equal((await call('drag', { startRef: 'e1', endRef: 'e2' })).value, 'drag done');
  assert.deepEqual(injected, [['/content/dom-kit-points.min.js', '/content/has-bridge.js']]);
});
