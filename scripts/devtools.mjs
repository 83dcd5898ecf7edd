// What the scripts here share to drive a headless Chromium over DevTools (imported, not run).
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

// What a script must not leave behind, also when it ends early: Ctrl-C, SIGTERM, or a reader
// that went away (`| head`: the next write fails with EPIPE, and Node exits at once). A
// `finally` does not run then, and a daemon and a Chromium outlived their script in a test of
// this. `owned(child)` and `owned(dir)` register; at exit the children are killed, and the
// directories removed once the browser's helpers have had a moment to go.
const children = new Set();
const dirs = new Set();
export function owned(what) {
  (typeof what === 'string' ? dirs : children).add(what);
  return what;
}
process.on('exit', () => {
  let killed = false;
  for (const child of children) killed = (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL')) || killed;
  if (killed) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300); // no timers at exit
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]]) process.on(signal, () => process.exit(code));
process.stdout.on('error', (e) => process.exit(e.code === 'EPIPE' ? 0 : 1));

// The port a Chromium started with --remote-debugging-port=0 chose, from its profile's
// DevToolsActivePort file (written once it listens).
export async function devToolsPort(profile, timeoutMs = 20_000) {
  const file = join(profile, 'DevToolsActivePort');
  for (const start = Date.now(); Date.now() - start < timeoutMs; await new Promise((r) => setTimeout(r, 50))) {
    if (existsSync(file)) {
      const port = readFileSync(file, 'utf8').split('\n')[0];
      if (port) return port;
    }
  }
  throw new Error(`Chromium did not open its DevTools port in ${timeoutMs / 1000} s`);
}

// A DevTools connection to the whole browser (flat sessions): `send` resolves with a command's
// result (or its error), `on` sets the one handler of an event.
export async function connect(port) {
  const { webSocketDebuggerUrl } = await (await fetch(`http://127.0.0.1:${port}/json/version`)).json();
  const ws = new WebSocket(webSocketDebuggerUrl);
  await new Promise((r, j) => {
    ws.onopen = r;
    ws.onerror = j;
  });
  let id = 0;
  const waiting = new Map();
  const handlers = new Map();
  ws.onmessage = ({ data }) => {
    const m = JSON.parse(data);
    if (!m.id) return handlers.get(m.method)?.(m.params);
    waiting.get(m.id)?.(m.result ?? m.error);
    waiting.delete(m.id);
  };
  return {
    send: (method, params = {}, sessionId) => new Promise((r) => {
      waiting.set(++id, r);
      ws.send(JSON.stringify({ id, method, params, sessionId }));
    }),
    on: (method, handler) => handlers.set(method, handler),
    close: () => ws.close(),
  };
}

// The trace events (`categories`) of everything the browser does while `fn` runs, and its result.
export async function traced(cdp, categories, fn) {
  const events = [];
  cdp.on('Tracing.dataCollected', ({ value }) => events.push(...value));
  const complete = new Promise((r) => cdp.on('Tracing.tracingComplete', r));
  await cdp.send('Tracing.start', { categories, transferMode: 'ReportEvents' });
  const result = await fn();
  await cdp.send('Tracing.end');
  await complete;
  return [events, result];
}

// The renderers' main threads in a trace ("pid:tid"): the extension's own renderer has one too.
export const rendererMainThreads = (events) =>
  new Set(events.filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.args.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`));
