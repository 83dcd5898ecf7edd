#!/usr/bin/env -S node --experimental-websocket
// What the extension's document_start scripts cost a page, from Chromium's own trace: the
// renderer main thread's `ScriptInjection::InjectJs` time per load, and each script's
// `EvaluateScript` time. It is a finer instrument than the bench's row 11 (which compares two
// browsers' main-thread and script totals, with a spread of a millisecond or more): one
// browser, one number per load, about ±0.1 ms over 30 loads.
//
//   node --experimental-websocket scripts/content-script-cost.mjs [EXTENSION_DIR | floor | hooks | none ...]
//
// It also reads the page renderer's whole main-thread time a load (its top-level tasks), and
// with `none` among the directories (a Chromium without any extension, the baseline) it says
// where the difference goes: each trace event's self time a load, against the baseline's.
// `floor` is extension/ with each document_start script list replaced by one statement in the
// same world: what the browser charges for the worlds whatever runs in them. `hooks` is extension/
// with scripts/hooks-only.js as its page-world file: the hooks alone, with empty bodies.
// PAGE=frames loads the bench's page of 20 same-origin iframes instead (CHILD_SCRIPT below).
// NEW_TAB=1 loads each page in a tab of its own, closed after, as the bench's row 11 does: a
// fresh renderer process, where nothing is compiled yet; by default one tab navigates again
// and again in a renderer that stays.
//
// Each directory (default: extension/) is loaded alone into a fresh headless Chromium
// (BROWSER_MCP_CHROMIUM, else /usr/lib/chromium/chromium) that keeps one page open and loads
// the button page LOADS times (default 30); the directories take turns, ROUNDS times
// (default 2). No daemon is needed, nor wanted: without one no agent is at work, and a page
// gets what every page pays for, the manifest's page-world scripts (the isolated-world ones
// come only while a daemon says an agent is at work: extension/worker/ahead/watch.js, issue 30).
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connect, devToolsPort, owned, rendererMainThreads, traced } from './devtools.mjs';

const root = resolve(import.meta.dirname, '..');
const chromium = process.env.BROWSER_MCP_CHROMIUM || '/usr/lib/chromium/chromium';
const loads = Number(process.env.LOADS || 30);
const rounds = Number(process.env.ROUNDS || 2);
const newTab = process.env.NEW_TAB === '1';
// CLOCK=thread: the main thread's CPU time (each event's `tdur`), not its wall-clock time: a
// thread that waits for a core on a busy machine is not charged for the wait.
const cost = process.env.CLOCK === 'thread' ? (e) => e.tdur ?? 0 : (e) => e.dur;
const NONE = 'none';
// The variants of extension/ named on the command line in place of a directory (below).
const COPIES = { floor: floorCopy, hooks: hooksCopy };
const dirs = process.argv.slice(2).map((d) => (d === NONE || Object.hasOwn(COPIES, d) ? d : resolve(d)));
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
const frames = process.env.PAGE === 'frames';
const PAGE = readFileSync(join(root, 'tests/e2e/third_party/playwright/input/button.html'));
const HELPER = readFileSync(join(root, 'tests/e2e/third_party/playwright/input/mouse-helper.js'));
// PAGE=frames: the bench's 20 same-origin iframes (benches/bridge/pages.rs) in place of the button page.
const FRAMES = `<!doctype html><title>20 iframes</title><body>${Array.from({ length: 20 }, (_, i) => `<iframe src=/child?${i}></iframe>`).join('')}`;
// CHILD_SCRIPT=1: each frame runs one statement of its own, as nearly every real frame does; a
// frame without any script has no script context until a content script makes one.
const CHILD = `<!doctype html><title>child</title><p>A frame</p><button>Press</button>${process.env.CHILD_SCRIPT === '1' ? '<script>document.body.dataset.ran = 1</script>' : ''}`;
const server = createServer((req, res) => {
  const js = req.url.endsWith('mouse-helper.js');
  res.writeHead(200, { 'content-type': js ? 'text/javascript' : 'text/html' });
  res.end(js ? HELPER : req.url.startsWith('/child') ? CHILD : frames ? FRAMES : PAGE);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}/${frames ? 'frames' : 'input/button.html'}`;

// A temporary copy of extension/, named for its variant, removed after its browser.
function extensionCopy(variant) {
  const dir = owned(mkdtempSync(join(tmpdir(), `content-script-${variant}-`)));
  cpSync(join(root, 'extension'), dir, { recursive: true });
  return dir;
}

// extension/ with one statement per world in place of each document_start script list.
function floorCopy() {
  const dir = extensionCopy('floor');
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
  for (const [i, cs] of manifest.content_scripts.entries()) {
    writeFileSync(join(dir, `floor-${i}.js`), `globalThis.browserMcpFloor${i} = true;\n`);
    cs.js = [`floor-${i}.js`];
  }
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest));
  return dir;
}

// extension/ with the page world's hooks alone, empty bodies, in place of its page-world file.
function hooksCopy() {
  const dir = extensionCopy('hooks');
  cpSync(join(root, 'scripts/hooks-only.js'), join(dir, 'page/document-start.min.js'));
  return dir;
}

// One browser with `dir` loaded: InjectJs ms per load, and EvaluateScript ms per script.
async function measure(name) {
  const dir = Object.hasOwn(COPIES, name) ? COPIES[name]() : name;
  const profile = owned(mkdtempSync(join(tmpdir(), 'content-script-cost-')));
  const extension = dir === NONE ? [] : [`--load-extension=${dir}`, `--disable-extensions-except=${dir}`];
  const args = ['--headless=new', '--no-sandbox', '--no-first-run', '--remote-debugging-port=0', `--user-data-dir=${profile}`,
    ...extension, 'about:blank'];
  // TMPDIR in the profile: a Chromium killed before it exits leaves its singleton socket's directory there.
  const browser = owned(spawn(chromium, args, { stdio: 'ignore', env: { ...process.env, TMPDIR: profile } }));
  try {
    const port = await devToolsPort(profile);
    const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
    const cdp = await connect(port);
    const { send } = cdp;
    let loaded = null;
    cdp.on('Page.loadEventFired', () => loaded?.());
    const attach = async (targetId) => {
      const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
      await send('Page.enable', {}, sessionId);
      return sessionId;
    };
    const first = await attach(targets.find((t) => t.type === 'page').id);
    // NEW_TAB=1: each load in a tab of its own, closed after (as the bench's row 11 loads);
    // otherwise one tab navigates again and again.
    const load = async () => {
      const done = new Promise((r) => (loaded = r));
      if (newTab) {
        const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
        const session = await attach(targetId);
        await send('Page.navigate', { url }, session);
        await done;
        await sleep(300);
        await send('Target.closeTarget', { targetId });
        return;
      }
      await send('Page.navigate', { url }, first);
      await done;
      await sleep(300);
    };
    // A second tab that stays, as in a person's browser (where a page carries the worker's
    // lifeline, this one).
    // KEPT=0: none, so that the tab under test holds whatever the extension puts into one tab.
    if (process.env.KEPT !== '0') await send('Target.createTarget', { url: `${url}?kept` });
    await sleep(1500);
    await load();
    const [events] = await traced(cdp, 'toplevel,devtools.timeline,v8.execute,extensions', async () => {
      for (let i = 0; i < loads; i++) await load();
    });
    cdp.close();
    const main = rendererMainThreads(events);
    let inject = 0;
    const scripts = new Map();
    for (const e of events) {
      if (e.ph !== 'X' || !main.has(`${e.pid}:${e.tid}`)) continue;
      if (e.name === 'ScriptInjection::InjectJs') inject += cost(e) / 1000;
      const src = e.args?.data?.url || '';
      if (e.name === 'EvaluateScript' && src.startsWith('chrome-extension://')) {
        const file = src.replace(/^chrome-extension:\/\/[a-z]+\//, '');
        scripts.set(file, (scripts.get(file) || 0) + cost(e) / 1000);
      }
    }
    const { busy, self } = pageMainThread(events, main, url);
    return { inject: inject / loads, scripts: [...scripts].map(([f, ms]) => [f, ms / loads]), busy: busy / loads, self: new Map([...self].map(([n, ms]) => [n, ms / loads])) };
  } finally {
    browser.kill();
    await sleep(300);
    rmSync(profile, { recursive: true, force: true });
    if (dir !== name) rmSync(dir, { recursive: true, force: true });
  }
}

// The page renderer's main thread (the one that parsed the page: the extension's own renderer
// has a main thread too): its top-level tasks' total, and each event's self time (its duration
// less its children's), in ms over the whole trace.
function pageMainThread(events, mainThreads, pageUrl) {
  const thread = (e) => `${e.pid}:${e.tid}`;
  const page = new Set(events.filter((e) => e.name === 'ParseHTML' && mainThreads.has(thread(e)) && String(e.args?.beginData?.url).startsWith(pageUrl)).map(thread));
  const spans = new Map(); // thread -> [{name, ts, dur}]
  const open = new Map(); // thread -> begun, not ended ('B'/'E' pairs)
  for (const e of events) {
    const t = thread(e);
    if (!page.has(t)) continue;
    if (!spans.has(t)) spans.set(t, []);
    if (e.ph === 'X' && e.dur > 0) spans.get(t).push({ name: e.name, ts: e.ts, dur: e.dur, cost: cost(e) });
    else if (e.ph === 'B') (open.get(t) || open.set(t, []).get(t)).push(e);
    else if (e.ph === 'E') {
      const b = open.get(t)?.pop();
      if (b && e.ts > b.ts) spans.get(t).push({ name: b.name, ts: b.ts, dur: e.ts - b.ts, cost: cost({ dur: e.ts - b.ts, tdur: e.tts - b.tts }) });
    }
  }
  let busy = 0;
  const self = new Map();
  for (const list of spans.values()) {
    list.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
    const stack = [];
    const close = (until) => {
      while (stack.length && stack.at(-1).ts + stack.at(-1).dur <= until) {
        const done = stack.pop();
        self.set(done.name, (self.get(done.name) || 0) + (done.cost - done.children) / 1000);
      }
    };
    for (const s of list) {
      close(s.ts);
      if (stack.length) stack.at(-1).children += s.cost;
      else busy += s.cost / 1000;
      stack.push({ ...s, children: 0 });
    }
    close(Infinity);
  }
  return { busy, self };
}

const results = new Map(dirs.map((d) => [d, []]));
for (let r = 0; r < rounds; r++) for (const d of dirs) results.get(d).push(await measure(d));
server.close();
for (const [dir, runs] of results) {
  console.log(`${dir}: content-script injection ${runs.map((r) => r.inject.toFixed(2)).join(', ')} ms a load (${loads} loads a run)`);
  const files = new Map();
  for (const run of runs) for (const [f, ms] of run.scripts) files.set(f, [...(files.get(f) || []), ms]);
  for (const [f, ms] of [...files].sort((a, b) => b[1][0] - a[1][0])) console.log(`  ${ms.map((v) => v.toFixed(2)).join(', ').padStart(12)}  ${f}`);
  console.log(`  page main thread: ${runs.map((r) => r.busy.toFixed(2)).join(', ')} ms a load`);
}
// Where a directory's extra main-thread time goes: the events whose self time a load differs
// most from the baseline's (means of the runs: a run's figure is already a mean of its loads).
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
if (results.has(NONE)) {
  const base = results.get(NONE);
  const selfOf = (runs, name) => mean(runs.map((r) => r.self.get(name) || 0));
  for (const [dir, runs] of results) {
    if (dir === NONE) continue;
    const names = new Set([...runs, ...base].flatMap((r) => [...r.self.keys()]));
    const diffs = [...names].map((n) => [n, selfOf(runs, n) - selfOf(base, n), selfOf(runs, n)]).sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]));
    const busy = mean(runs.map((r) => r.busy)) - mean(base.map((r) => r.busy));
    console.log(`${dir} against no extension: ${busy >= 0 ? '+' : ''}${busy.toFixed(2)} ms of page main thread a load (means of the runs); self time a load by event:`);
    for (const [n, d, v] of diffs.slice(0, 14)) console.log(`  ${(d >= 0 ? '+' : '') + d.toFixed(2)}`.padEnd(10) + ` (${v.toFixed(2)})  ${n}`);
  }
}
