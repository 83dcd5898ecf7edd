#!/usr/bin/env -S node --experimental-websocket
// Row 12's question (issue 30) asked of Playwright MCP, the yardstick of tests/it/mcp/view.rs:
// what the page's main thread spends in the first browser_snapshot on a page it has not read,
// against a later one 300 ms after, as first-call-cost.mjs TRACE=1 measures ours. A headless
// Chromium without extensions; Playwright MCP connects to it over DevTools (--cdp-endpoint) and
// is made to list and select each page before the timed calls (that connects it to the tab,
// untimed). Each page opens in a tab behind, as in row 12.
//
//   node --experimental-websocket scripts/playwright-first-call.mjs
//
// PLAYWRIGHT_MCP names its binary (default: target/playwright-mcp, where .ci/run installs it),
// BROWSER_MCP_CHROMIUM the browser, PAGES (5) and PAGE (/input/button.html, under
// tests/e2e/third_party/playwright) what is read.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { connect, devToolsPort, median, openBehind, owned, playwrightPages, rendererMainThreads, sleep, traced } from './devtools.mjs';

const root = resolve(import.meta.dirname, '..');
const playwright = process.env.PLAYWRIGHT_MCP || join(root, 'target/playwright-mcp/node_modules/.bin/playwright-mcp');
const chromium = process.env.BROWSER_MCP_CHROMIUM || '/usr/lib/chromium/chromium';
const pages = Number(process.env.PAGES || 5);
const path = process.env.PAGE || '/input/button.html';
for (const [what, file] of [['Playwright MCP', playwright], ['Chromium', chromium]]) {
  if (!existsSync(file)) {
    console.error(`no ${what} at ${file} (.ci/run installs Playwright MCP; or PLAYWRIGHT_MCP / BROWSER_MCP_CHROMIUM)`);
    process.exit(2);
  }
}

const { server, origin } = await playwrightPages();

const profile = owned(mkdtempSync(join(tmpdir(), 'playwright-first-call-')));
owned(spawn(chromium, ['--headless=new', '--no-sandbox', '--no-first-run', '--remote-debugging-port=0', `--user-data-dir=${profile}`, 'about:blank'], { stdio: 'ignore' }));
const port = await devToolsPort(profile);
const cdp = await connect(port);

// Playwright MCP over stdio: one JSON-RPC request at a time.
// In a directory of its own, which goes at exit: it writes its console logs where it runs.
const work = owned(mkdtempSync(join(tmpdir(), 'playwright-first-call-mcp-')));
const mcp = owned(spawn(playwright, ['--cdp-endpoint', `http://127.0.0.1:${port}`], { cwd: work, stdio: ['pipe', 'pipe', 'inherit'] }));
let buffered = '';
let answer = null;
mcp.stdout.on('data', (chunk) => {
  buffered += chunk;
  for (let i; (i = buffered.indexOf('\n')) >= 0; buffered = buffered.slice(i + 1)) {
    const m = JSON.parse(buffered.slice(0, i));
    if (m.id !== undefined) answer?.(m);
  }
});
let id = 0;
const rpc = (method, params) => new Promise((r) => {
  answer = r;
  mcp.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params })}\n`);
});
const tool = async (name, args = {}) => {
  const m = await rpc('tools/call', { name, arguments: args });
  const text = m.result?.content?.map((c) => c.text).join('\n') ?? '';
  if (m.error || m.result?.isError) throw new Error(`${name}: ${JSON.stringify(m.error) || text}`);
  return text;
};
await rpc('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'playwright-first-call', version: '0' } });
mcp.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);

// The page renderers' main-thread CPU (ms) while `fn` runs.
async function rendererCpu(fn) {
  const [events] = await traced(cdp, 'toplevel', fn);
  const main = rendererMainThreads(events);
  let ms = 0;
  for (const e of events) if (e.ph === 'X' && e.name === 'ThreadControllerImpl::RunTask' && main.has(`${e.pid}:${e.tid}`)) ms += (e.tdur ?? e.dur) / 1000;
  return ms;
}

const cpu = { first: [], later: [] };
const times = { first: [], later: [] };
// One untimed page first: Playwright MCP's own first call of the tool.
for (let i = -1; i < pages; i++) {
  const url = `${origin}${path}?playwright-${i}`;
  const { targetId } = await openBehind(cdp, url);
  const listed = await tool('browser_tabs', { action: 'list' });
  const index = Number(new RegExp(`- (\\d+):[^\\n]*\\(${url.replace(/[.?]/g, '\\$&')}\\)`).exec(listed)?.[1]);
  if (!Number.isInteger(index)) throw new Error(`Playwright MCP does not list ${url}:\n${listed}`);
  await tool('browser_tabs', { action: 'select', index });
  for (const which of ['first', 'later']) {
    if (which === 'later') await sleep(300);
    let took = 0;
    const ms = await rendererCpu(async () => {
      const t = performance.now();
      await tool('browser_snapshot');
      took = performance.now() - t;
    });
    if (i < 0) continue;
    cpu[which].push(ms);
    times[which].push(took);
  }
  await cdp.send('Target.closeTarget', { targetId });
}
const [f, l] = [median(times.first), median(times.later)];
console.log(`Playwright MCP browser_snapshot: first ${f.toFixed(1)} ms, later ${l.toFixed(1)} ms, +${(f - l).toFixed(1)}`);
console.log(`  page main-thread CPU: first ${median(cpu.first).toFixed(2)} ms, later ${median(cpu.later).toFixed(2)} ms (medians)`);
server.close();
process.exit(0);
