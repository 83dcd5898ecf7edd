// Content scripts registered while something needs them (extension/worker/frames/registrations.js):
// the steps never overlap, so an id is never registered twice, and the last wish wins.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { registration, switched } from '../../extension/worker/frames/registrations.js';

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

test('steps run one at a time, in order, and only on a change', async () => {
  const log = [];
  let running = 0;
  const step = (name) => async () => {
    running += 1;
    assert.equal(running, 1, `${name} overlapped another step`);
    log.push(`${name} start`);
    await tick();
    log.push(`${name} end`);
    running -= 1;
  };
  const s = switched({ first: step('first'), on: step('on'), off: step('off') });
  s.set(true);
  s.set(true);
  s.set(false);
  const done = s.set(true);
  assert.equal(s.on, true);
  await done;
  assert.deepEqual(log, ['first start', 'first end', 'on start', 'on end', 'off start', 'off end', 'on start', 'on end']);
});

test('a failed step is reported and the next one still runs', async () => {
  const failures = [];
  let offs = 0;
  const s = switched({
    on: async () => {
      throw new Error('no');
    },
    off: async () => {
      offs += 1;
    },
    failed: (e) => failures.push(e.message),
  });
  await s.set(true);
  await s.set(false);
  assert.deepEqual(failures, ['no']);
  assert.equal(offs, 1);
});

// chrome.scripting as the browsers behave: registering a registered id, or removing one that is
// not, throws.
function fakeScripting() {
  const ids = new Map();
  const calls = [];
  globalThis.chrome = {
    scripting: {
      async registerContentScripts(scripts) {
        await tick();
        for (const s of scripts) {
          if (ids.has(s.id)) throw new Error(`Duplicate script ID '${s.id}'`);
          ids.set(s.id, s);
        }
        calls.push('register');
      },
      async unregisterContentScripts({ ids: which }) {
        await tick();
        for (const id of which) if (!ids.delete(id)) throw new Error(`Nonexistent script ID '${id}'`);
        calls.push('unregister');
      },
    },
  };
  return { ids, calls };
}

test('a registration switched quickly ends as last asked, without an error', async (t) => {
  const { ids, calls } = fakeScripting();
  const warned = t.mock.method(console, 'warn', () => {});
  const r = registration('browser-mcp-test', { js: ['content/a.js'], allFrames: false });
  r.set(true);
  r.set(false);
  r.set(true);
  r.set(false);
  await r.set(true);
  assert.deepEqual(calls, ['register', 'unregister', 'register', 'unregister', 'register']);
  assert.equal(warned.mock.callCount(), 0);
  const s = ids.get('browser-mcp-test');
  assert.deepEqual(s.js, ['content/a.js']);
  assert.equal(s.runAt, 'document_start');
  assert.equal(s.allFrames, false);
  assert.equal(s.persistAcrossSessions, false);
  assert.deepEqual(s.matches, ['http://*/*', 'https://*/*']);
});

test("a restarted worker's registration first removes what its predecessor left", async (t) => {
  const { ids } = fakeScripting();
  t.mock.method(console, 'warn', () => {});
  ids.set('browser-mcp-test', { id: 'browser-mcp-test', js: ['old.js'] });
  const r = registration('browser-mcp-test', { js: ['new.js'], allFrames: true });
  await r.set(true);
  assert.deepEqual(ids.get('browser-mcp-test').js, ['new.js']);
  await r.set(false);
  assert.equal(ids.size, 0);
});
