#!/usr/bin/env -S node --experimental-websocket
// Where the first tool call on a page spends its time: the bench's row 12 (issue 30) with the
// page taken apart. A daemon, and a headless Chromium whose extension reaches it through the
// native host (README's way), with agents allowed everywhere and an agent at work; for each
// tool, PAGES fresh tabs (default 5), a first call and a later one on each, over the control
// socket. It prints the medians of both and their difference, as row 12 does, and:
//
//   TRACE=1    the page renderer's main-thread CPU time of each call (a trace around the call,
//              each top-level task's `tdur`): what the page itself spends, apart from the IPC
//              and the worker, and much steadier than the round trip; TRACE_AFTER=MS keeps
//              the trace MS ms past the answer, for what the call leaves the page to do;
//              TRACE=events also sums the page's trace events by name (V8's compiles and runs,
//              style, layout, injections; nested ones count in their parents too), medians
//              of the pages, first call against later: where a first call's extra time goes;
//   PROFILE=1  DevTools' sampling profile of the page around each call: the largest self times
//              of the first and the later calls, a mean a page (STACKS=1: with three callers).
//              "(program)" is the renderer's own work: compiling, injecting, style and layout.
//   AFTER_NAVIGATE=MS  each page reached by browser_navigate, the first call MS ms later
//              (below);
//   BEFORE='[tool, args]'  an untimed call on each page before the timed ones, as an agent
//              looks before it acts (a snapshot, then a click by ref), and BEFORE_PAUSE=MS
//              between the two (an agent's thought; default 0, a script's next command);
//
//   node --experimental-websocket scripts/first-call-cost.mjs [EXTENSION_DIR]
//
// Binaries from target/release (BROWSER_MCP_BIN=DIR for others), Chromium from
// BROWSER_MCP_CHROMIUM or /usr/lib/chromium/chromium. TOOLS='[[tool, page, args], ...]' picks
// the calls (pages under tests/e2e/third_party/playwright).
import { execFileSync, spawn } from 'node:child_process';
import { request } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connect, devToolsPort, median, openBehind, owned, playwrightPages, rendererMainThreads, sleep, traced } from './devtools.mjs';

const root = resolve(import.meta.dirname, '..');
const extension = resolve(process.argv[2] || join(root, 'extension'));
const bin = process.env.BROWSER_MCP_BIN || join(root, 'target/release');
const chromium = process.env.BROWSER_MCP_CHROMIUM || '/usr/lib/chromium/chromium';
const pages = Number(process.env.PAGES || 5);
const tracing = process.env.TRACE === '1' || process.env.TRACE === 'events';
const byEvent = process.env.TRACE === 'events';
const traceAfter = Number(process.env.TRACE_AFTER) || 0;
const profiled = process.env.PROFILE === '1';
const stacks = process.env.STACKS === '1';
// AFTER_NAVIGATE=MS: the page is reached the way an agent reaches one, by browser_navigate from
// another page in the tab, and the first call follows MS ms after the navigation's answer (an
// agent's pause, 0 for a script's next command): the DOM tools may be on their way already
// (worker/ahead/kit-ahead.js).
const afterNavigate = process.env.AFTER_NAVIGATE === undefined ? null : { pause: Number(process.env.AFTER_NAVIGATE) || 0 };
const before = process.env.BEFORE ? JSON.parse(process.env.BEFORE) : null;
const beforePause = Number(process.env.BEFORE_PAUSE) || 0;
const TOOLS = process.env.TOOLS ? JSON.parse(process.env.TOOLS) : [
  ['browser_snapshot', '/input/button.html', {}],
  ['browser_click', '/input/button.html', { selector: 'button' }],
  ['browser_type', '/evals/fill-form.html', { selector: '#name', text: 'Ada' }],
  ['browser_hover', '/input/button.html', { selector: 'button' }],
];
// The extension's id, from the manifest's key (the options page sets "Allow everywhere").
const OPTIONS = 'chrome-extension://jldadifenendlhihnlmegbljijfhnffa/ui/options.html';

for (const [what, path] of [['Chromium', chromium], ['browser-mcpd', join(bin, 'browser-mcpd')], ['browserctl', join(bin, 'browserctl')]]) {
  if (!existsSync(path)) {
    console.error(`no ${what} at ${path} (cargo build --release; apt-get install chromium; or BROWSER_MCP_BIN / BROWSER_MCP_CHROMIUM)`);
    process.exit(2);
  }
}
if (typeof WebSocket !== 'function') {
  console.error('needs a WebSocket: run with node --experimental-websocket (Node 20), or Node 22');
  process.exit(2);
}

const { server, origin } = await playwrightPages();

const dir = owned(mkdtempSync(join(tmpdir(), 'first-call-cost-')));
const socket = join(dir, 'ctl.sock');
const discovery = join(dir, 'discovery');
const profile = join(dir, 'profile');
const daemon = owned(spawn(join(bin, 'browser-mcpd'), ['--port', '0', '--log-level', 'error', '--socket', socket, '--discovery-dir', discovery], { stdio: ['ignore', 'ignore', 'inherit'] }));
let browser = null;
try {
  for (let i = 0; i < 200 && !existsSync(socket); i++) await sleep(50);
  execFileSync(join(bin, 'browserctl'), ['--json', 'install-native-host', '--user-data-dir', profile, '--discovery-dir', discovery], { stdio: 'ignore' });
  browser = owned(spawn(chromium, ['--headless=new', '--no-sandbox', '--no-first-run', '--remote-debugging-port=0', `--user-data-dir=${profile}`,
    `--load-extension=${extension}`, `--disable-extensions-except=${extension}`, 'about:blank'], { stdio: 'ignore', env: { ...process.env, TMPDIR: dir } }));
  await run();
} finally {
  browser?.kill();
  daemon.kill();
  server.close();
  await sleep(500);
  rmSync(dir, { recursive: true, force: true });
}

// One request on the control socket: [status, JSON].
function control(method, path, body) {
  return new Promise((done, fail) => {
    const req = request({ socketPath: socket, method, path, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => done([res.statusCode, JSON.parse(text || 'null')]));
    });
    req.on('error', fail);
    if (body) req.write(JSON.stringify(body));
    req.end();
  });
}

async function devtools() {
  const cdp = await connect(await devToolsPort(profile));
  // Behind the focused tab, as the bench's row 12: nothing prepares the page for a call there
  // (worker/ahead/kit-ahead.js may warm the focused tab's).
  cdp.open = (url) => openBehind(cdp, url);
  return cdp;
}

// The page renderers' main-thread CPU time (ms) while `fn` runs, and its result.
async function rendererCpu(cdp, fn, into) {
  const categories = byEvent ? 'toplevel,v8,devtools.timeline,blink,extensions' : 'toplevel';
  const [events, result] = await traced(cdp, categories, async () => {
    const result = await fn();
    await sleep(traceAfter);
    return result;
  });
  const main = rendererMainThreads(events);
  let ms = 0;
  for (const e of events) {
    if (e.ph !== 'X' || !main.has(`${e.pid}:${e.tid}`)) continue;
    const took = (e.tdur ?? e.dur ?? 0) / 1000;
    if (e.name === 'ThreadControllerImpl::RunTask') ms += took;
    else if (into) into.set(e.name, (into.get(e.name) || 0) + took);
  }
  return [ms, result];
}

// Each name's median over the pages (a page without it counts 0).
function eventMedians(perPage) {
  const names = new Set(perPage.flatMap((m) => [...m.keys()]));
  return new Map([...names].map((n) => [n, median(perPage.map((m) => m.get(n) || 0))]));
}

// Self time (ms) by function (and, with STACKS, its callers) from a sampling profile of the page.
async function sampled(cdp, session, fn, into) {
  await cdp.send('Profiler.enable', {}, session);
  await cdp.send('Profiler.setSamplingInterval', { interval: 50 }, session);
  await cdp.send('Profiler.start', {}, session);
  const result = await fn();
  const { profile: p } = await cdp.send('Profiler.stop', {}, session);
  const self = new Map();
  p.samples.forEach((node, i) => self.set(node, (self.get(node) || 0) + (p.timeDeltas[i + 1] ?? 0) / 1000));
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children || []) parent.set(c, n);
  const name = (n) => `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\//, '')}${n.callFrame.lineNumber >= 0 ? `:${n.callFrame.lineNumber + 1}` : ''}`.trim();
  for (const n of p.nodes) {
    let key = name(n);
    for (let up = parent.get(n.id), k = 0; stacks && up && k < 3; up = parent.get(up.id), k++) key += ` <- ${name(up)}`;
    into.set(key, (into.get(key) || 0) + (self.get(n.id) || 0));
  }
  return result;
}

async function call(tab, tool, args) {
  const t = performance.now();
  const [status, body] = await control('POST', '/v1/call', { tool, tab, args, retries: 0 });
  if (status !== 200) throw new Error(`${tool}: ${status} ${JSON.stringify(body)}`);
  return performance.now() - t;
}

async function run() {
  const cdp = await devtools();
  // The person's choice in the options page, "Allow everywhere" (issue 31), so that calls are
  // measured, not a consent prompt nobody answers.
  const options = await cdp.open('about:blank');
  for (let i = 0; ; i++) {
    await cdp.send('Page.navigate', { url: OPTIONS }, options.sessionId);
    await sleep(300);
    const up = await cdp.send('Runtime.evaluate', { expression: "!!document.getElementById('default-mode')", returnByValue: true }, options.sessionId);
    if (up.result?.value) break;
    if (i > 100) throw new Error('the extension\'s options page did not come up');
  }
  const allowed = await cdp.send('Runtime.evaluate', {
    expression: readFileSync(join(root, 'tests/e2e/allow-everywhere.js'), 'utf8'),
    awaitPromise: true,
    returnByValue: true,
  }, options.sessionId);
  if (allowed.result?.value !== true) throw new Error('could not choose "Allow everywhere"');
  await cdp.send('Target.closeTarget', { targetId: options.targetId });
  // A page kept open, as in a person's browser; the first listing makes an agent at work.
  await cdp.open(`${origin}/input/button.html?home`);
  for (let i = 0; ; i++) {
    const [status, v] = await control('GET', '/v1/tabs');
    if (status === 200 && v.tabs?.length) break;
    if (i > 300) throw new Error('the extension never reached the daemon');
    await sleep(100);
  }
  for (const [tool, path, args] of TOOLS) {
    const times = { first: [], later: [] };
    const cpu = { first: [], later: [] };
    const profiles = { first: new Map(), later: new Map() };
    const kinds = { first: [], later: [] };
    for (let i = 0; i < pages; i++) {
      const url = `${origin}${path}?${tool}-${i}`;
      const opened = afterNavigate ? `${origin}${path}?from-${tool}-${i}` : url;
      const { targetId, sessionId } = await cdp.open(opened);
      let tab;
      for (let k = 0; !tab; k++) {
        const [, v] = await control('GET', '/v1/tabs');
        tab = v.tabs?.find((t) => t.url === opened && t.tools?.some((x) => x.name === tool))?.ref;
        if (k > 3000) throw new Error(`no tab at ${opened} offering ${tool}`);
        if (!tab) await sleep(10);
      }
      if (afterNavigate) {
        await call(tab, 'browser_navigate', { url });
        await sleep(afterNavigate.pause);
      }
      if (before) {
        await call(tab, before[0], before[1]);
        await sleep(beforePause);
      }
      for (const which of ['first', 'later']) {
        // What the first answer leaves the page to do (the acting part after a snapshot) is
        // let finish before the later call, as in the bench's row 12.
        if (which === 'later') await sleep(300);
        let once = () => call(tab, tool, args);
        if (profiled) {
          const inner = once;
          once = () => sampled(cdp, sessionId, inner, profiles[which]);
        }
        if (tracing) {
          const events = new Map();
          kinds[which].push(events);
          const [ms, took] = await rendererCpu(cdp, once, events);
          cpu[which].push(ms);
          times[which].push(took);
        } else times[which].push(await once());
      }
      await cdp.send('Target.closeTarget', { targetId });
    }
    const [f, l] = [median(times.first), median(times.later)];
    console.log(`${tool}: first ${f.toFixed(1)} ms, later ${l.toFixed(1)} ms, +${(f - l).toFixed(1)} (firsts ${times.first.map((x) => x.toFixed(1)).join(' ')})`);
    if (tracing) console.log(`  page main-thread CPU: first ${median(cpu.first).toFixed(2)} ms, later ${median(cpu.later).toFixed(2)} ms (medians)`);
    if (byEvent) {
      console.log('  trace events, first call against later (medians, ms):');
      const [first, later] = [eventMedians(kinds.first), eventMedians(kinds.later)];
      const rows = [...new Set([...first.keys(), ...later.keys()])].map((n) => [n, first.get(n) || 0, later.get(n) || 0]);
      for (const [n, f, l] of rows.sort((a, b) => b[1] - b[2] - (a[1] - a[2])).slice(0, 16)) {
        console.log(`    ${f.toFixed(2).padStart(6)} ${l.toFixed(2).padStart(6)}  ${n}`);
      }
    }
    for (const which of profiled ? ['first', 'later'] : []) {
      console.log(`  profile, ${which} call (ms a page):`);
      for (const [k, ms] of [...profiles[which]].sort((a, b) => b[1] - a[1]).filter(([k]) => !k.startsWith('(idle)')).slice(0, 14)) {
        console.log(`    ${(ms / pages).toFixed(2).padStart(6)}  ${k}`);
      }
    }
  }
  cdp.close();
}
