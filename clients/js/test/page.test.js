// A real web page in headless Chromium offers tools through clients/js/ with the browser's
// own WebSocket, and browserctl calls them. Skipped (loudly) where Chromium is missing,
// except under CI, where .ci/run installs it.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Daemon, waitFor } from './helpers.js';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/lib/chromium/chromium';
const CLIENT_DIR = path.resolve(fileURLToPath(new URL('..', import.meta.url)));
const TYPES = { '.js': 'text/javascript', '.html': 'text/html' };

/** Serves clients/js/ (and nothing else) on loopback. */
async function serveClientDir() {
  const server = http.createServer((req, res) => {
    const file = path.join(CLIENT_DIR, path.normalize(new URL(req.url, 'http://x').pathname));
    if (!file.startsWith(CLIENT_DIR + path.sep) || !existsSync(file) || !TYPES[path.extname(file)]) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] }).end(readFileSync(file));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

const skip = !existsSync(CHROMIUM) && !process.env.CI;
if (skip) console.error(`\n*** SKIPPED page.test.js: no Chromium at ${CHROMIUM} (set CHROMIUM) ***\n`);

test('a web page using only clients/js/ offers tools that browserctl calls', { skip, timeout: 60000 }, async (t) => {
  assert.ok(existsSync(CHROMIUM), `CI must have Chromium at ${CHROMIUM}`);
  const web = await serveClientDir();
  t.after(() => web.close());
  const origin = `http://127.0.0.1:${web.address().port}`;
  // Web pages are refused unless their origin is allowed.
  const d = await Daemon.start({ args: ['--allow-origin', origin] });
  t.after(() => d.stop());

  const profile = mkdtempSync(path.join(tmpdir(), 'jsclient-chromium-'));
  const page = `${origin}/test/page.html?server=${encodeURIComponent(d.url)}&session=js-page`;
  const chromium = spawn(
    CHROMIUM,
    [
      '--headless=new',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--no-default-browser-check',
      '--disable-extensions',
      `--user-data-dir=${profile}`,
      page,
    ],
    // Chromium leaves its singleton socket dir in TMPDIR when killed: keep it in the profile.
    // Its own process group, so the renderers and the zygote die with it (and stop writing
    // into the profile before it is removed).
    { stdio: 'ignore', env: { ...process.env, TMPDIR: profile }, detached: true },
  );
  const exited = once(chromium, 'exit');
  t.after(async () => {
    try {
      process.kill(-chromium.pid, 'SIGKILL');
    } catch {
      chromium.kill('SIGKILL');
    }
    await exited;
    rmSync(profile, { recursive: true, force: true });
  });

  const browser = await waitFor(
    'the page to register its tools',
    async () => (await d.browsersOf('js-page')).find((b) => b.tools === 2),
    30000,
  );
  assert.equal(browser.dialect, 'jsonrpc');
  const title = await d.ctl(['call', 'page_title', '--browser', browser.id]);
  assert.equal(title.code, 0, title.stderr);
  assert.equal(title.stdout.trim(), 'Socket Native page');
  const set = (await d.ctlJson(['call', 'page_set_status', '--browser', browser.id, '--text', 'driven'])).result;
  assert.deepEqual(set, { content: [{ type: 'text', text: '{"status":"driven"}' }], isError: false });
});
