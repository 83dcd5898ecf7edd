// What the scripts here share to drive a headless Chromium over DevTools (imported, not run).
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, resolve } from 'node:path';

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

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// Playwright's test pages (tests/e2e/third_party/playwright) on a loopback port: the server, and
// the origin to put before a page's path.
export async function playwrightPages() {
  const site = resolve(import.meta.dirname, '../tests/e2e/third_party/playwright');
  const server = createServer((req, res) => {
    const file = join(site, decodeURIComponent(req.url.split('?')[0]));
    if (!file.startsWith(site) || !existsSync(file)) {
      res.writeHead(404);
      return res.end();
    }
    res.writeHead(200, { 'content-type': extname(file) === '.js' ? 'text/javascript' : 'text/html' });
    res.end(readFileSync(file));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, origin: `http://127.0.0.1:${server.address().port}` };
}

// A tab behind the focused one, at `url` once it has loaded: {targetId, sessionId}. Nothing of
// an agent's prepares a page there (row 12).
export async function openBehind(cdp, url) {
  const { targetId } = await cdp.send('Target.createTarget', { url: 'about:blank', background: true });
  const { sessionId } = await cdp.send('Target.attachToTarget', { targetId, flatten: true });
  await cdp.send('Page.enable', {}, sessionId);
  const loaded = new Promise((r) => cdp.on('Page.loadEventFired', r));
  await cdp.send('Page.navigate', { url }, sessionId);
  await loaded;
  return { targetId, sessionId };
}
