#!/usr/bin/env -S node --experimental-websocket
// What the extension's document_start scripts cost a page, from Chromium's own trace: the
// renderer main thread's `ScriptInjection::InjectJs` time per load, and each script's
// `EvaluateScript` time. It is a finer instrument than the bench's row 11 (which compares two
// browsers' main-thread and script totals, with a spread of a millisecond or more): one
// browser, one number per load, about ±0.1 ms over 30 loads.
//
//   node --experimental-websocket scripts/content-script-cost.mjs [EXTENSION_DIR ...]
//
// Each directory (default: extension/) is loaded alone into a fresh headless Chromium
// (BROWSER_MCP_CHROMIUM, else /usr/lib/chromium/chromium) that keeps one page open and loads
// the button page LOADS times (default 30); the directories take turns, ROUNDS times
// (default 2). No daemon is needed: the scripts run whether or not one is connected.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const chromium = process.env.BROWSER_MCP_CHROMIUM || '/usr/lib/chromium/chromium';
const loads = Number(process.env.LOADS || 30);
const rounds = Number(process.env.ROUNDS || 2);
const dirs = process.argv.slice(2).map((d) => resolve(d));
if (!dirs.length) dirs.push(join(root, 'extension'));
if (typeof WebSocket !== 'function') {
  console.error('needs a WebSocket: run with node --experimental-websocket (Node 20), or Node 22');
  process.exit(2);
}
if (!existsSync(chromium)) {
  console.error(`no Chromium at ${chromium} (apt-get install chromium, or set BROWSER_MCP_CHROMIUM)`);
  process.exit(2);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const PAGE = readFileSync(join(root, 'tests/e2e/third_party/playwright/input/button.html'));
const HELPER = readFileSync(join(root, 'tests/e2e/third_party/playwright/input/mouse-helper.js'));
const server = createServer((req, res) => {
  const js = req.url.endsWith('mouse-helper.js');
  res.writeHead(200, { 'content-type': js ? 'text/javascript' : 'text/html' });
  res.end(js ? HELPER : PAGE);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}/input/button.html`;

// One browser with `dir` loaded: InjectJs ms per load, and EvaluateScript ms per script.
async function measure(dir) {
  const profile = mkdtempSync(join(tmpdir(), 'content-script-cost-'));
  const args = ['--headless=new', '--no-sandbox', '--no-first-run', '--remote-debugging-port=0', `--user-data-dir=${profile}`,
    `--load-extension=${dir}`, `--disable-extensions-except=${dir}`, 'about:blank'];
  const browser = spawn(chromium, args, { stdio: 'ignore' });
  try {
    let port;
    for (let i = 0; i < 400 && !port; i++) {
      await sleep(50);
      const f = join(profile, 'DevToolsActivePort');
      if (existsSync(f)) port = readFileSync(f, 'utf8').split('\n')[0];
    }
    if (!port) throw new Error('Chromium did not open its DevTools port in 20 s');
    const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
    const ws = new WebSocket(targets.find((t) => t.type === 'page').webSocketDebuggerUrl);
    await new Promise((r, j) => { ws.onopen = r; ws.onerror = j; });
    let id = 0;
    const waiting = new Map();
    const events = [];
    let loaded = null;
    let complete = null;
    ws.onmessage = ({ data }) => {
      const m = JSON.parse(data);
      if (m.id) waiting.get(m.id)?.(m);
      else if (m.method === 'Tracing.dataCollected') events.push(...m.params.value);
      else if (m.method === 'Tracing.tracingComplete') complete?.();
      else if (m.method === 'Page.loadEventFired') loaded?.();
    };
    const send = (method, params = {}) => new Promise((r) => { waiting.set(++id, r); ws.send(JSON.stringify({ id, method, params })); });
    const load = async () => {
      const done = new Promise((r) => (loaded = r));
      await send('Page.navigate', { url });
      await done;
      await sleep(300);
    };
    // A second tab that stays, as in a person's browser (it also keeps the worker's lifeline).
    await send('Target.createTarget', { url: `${url}?kept` });
    await send('Page.enable');
    await sleep(1500);
    await load();
    await send('Tracing.start', { categories: 'devtools.timeline,v8.execute,extensions', transferMode: 'ReportEvents' });
    for (let i = 0; i < loads; i++) await load();
    const traced = new Promise((r) => (complete = r));
    await send('Tracing.end');
    await traced;
    ws.close();
    const main = new Set(events.filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.args.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`));
    let inject = 0;
    const scripts = new Map();
    for (const e of events) {
      if (e.ph !== 'X' || !main.has(`${e.pid}:${e.tid}`)) continue;
      if (e.name === 'ScriptInjection::InjectJs') inject += e.dur / 1000;
      const src = e.args?.data?.url || '';
      if (e.name === 'EvaluateScript' && src.startsWith('chrome-extension://')) {
        const file = src.replace(/^chrome-extension:\/\/[a-z]+\//, '');
        scripts.set(file, (scripts.get(file) || 0) + e.dur / 1000);
      }
    }
    return { inject: inject / loads, scripts: [...scripts].map(([f, ms]) => [f, ms / loads]) };
  } finally {
    browser.kill();
    await sleep(300);
    rmSync(profile, { recursive: true, force: true });
  }
}

const results = new Map(dirs.map((d) => [d, []]));
for (let r = 0; r < rounds; r++) for (const d of dirs) results.get(d).push(await measure(d));
server.close();
for (const [dir, runs] of results) {
  console.log(`${dir}: content-script injection ${runs.map((r) => r.inject.toFixed(2)).join(', ')} ms a load (${loads} loads a run)`);
  const files = new Map();
  for (const run of runs) for (const [f, ms] of run.scripts) files.set(f, [...(files.get(f) || []), ms]);
  for (const [f, ms] of [...files].sort((a, b) => b[1][0] - a[1][0])) console.log(`  ${ms.map((v) => v.toFixed(2)).join(', ').padStart(12)}  ${f}`);
}
