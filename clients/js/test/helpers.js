// Test helpers: a real browser-mcpd on temp paths, browserctl as a subprocess, polling.

import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const BIN = path.resolve(ROOT, process.env.CARGO_TARGET_DIR ?? 'target', 'debug');
export const DAEMON = process.env.BROWSER_MCPD ?? path.join(BIN, 'browser-mcpd');
export const CTL = process.env.BROWSERCTL ?? path.join(BIN, 'browserctl');

for (const bin of [DAEMON, CTL]) {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`cargo build\` first`);
}

/**
 * The WebSocket to hand the client, if the platform has none: Node 18 (Debian's) has no
 * WebSocket, and then the `ws` package stands in (Debian's node-ws, or node_modules).
 */
function injectedWebSocket() {
  if (typeof globalThis.WebSocket === 'function') return undefined;
  const require = createRequire(import.meta.url);
  for (const id of ['ws', '/usr/share/nodejs/ws', '/usr/lib/nodejs/ws']) {
    try {
      return require(id);
    } catch {
      // Try the next place.
    }
  }
  throw new Error(
    'no WebSocket: use Node >= 22, Node 20/21 with --experimental-websocket (test/run.sh adds it), ' +
      'or install the ws package (apt-get install node-ws)',
  );
}
const WS = injectedWebSocket();

/** Client options with the WebSocket this runtime needs; quiet and quick by default. */
export function options(extra) {
  return { reconnectDelay: 50, connectionTimeout: 5000, ...(WS ? { WebSocket: WS } : {}), ...extra };
}

/** The WebSocket constructor the tests use (the platform's or `ws`). */
export function webSocketConstructor() {
  return WS ?? globalThis.WebSocket;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` (sync or async) until it returns a truthy value, which it resolves with. */
export async function waitFor(what, check, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${last.message})` : ''}`);
    }
    await sleep(25);
  }
}

/** Resolves with the arguments of the next `event` the client emits. */
export function nextEvent(client, event, timeoutMs = 10000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off(event, on);
      reject(new Error(`no ${event} event within ${timeoutMs} ms`));
    }, timeoutMs);
    const on = (...args) => {
      clearTimeout(timer);
      client.off(event, on);
      resolve(args);
    };
    client.on(event, on);
  });
}

const running = new Set();
process.on('exit', () => {
  for (const d of running) d.kill();
});

/** A browser-mcpd process on a temp socket and discovery directory. */
export class Daemon {
  static async start({ port = 0, args = [] } = {}) {
    const dir = mkdtempSync(path.join(tmpdir(), 'jsclient-'));
    const d = new Daemon(dir, port, args);
    await d.#ready();
    return d;
  }

  constructor(dir, port, args) {
    this.dir = dir;
    this.socket = path.join(dir, 'ctl.sock');
    this.discoveryDir = path.join(dir, 'discovery');
    this.stderr = '';
    this.child = spawn(
      DAEMON,
      ['--port', String(port), '--socket', this.socket, '--discovery-dir', this.discoveryDir, ...args],
      { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, BROWSER_MCP_LOG_LEVEL: 'debug', RUST_LOG: '' } },
    );
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (s) => {
      this.stderr += s;
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    running.add(this);
  }

  async #ready() {
    const file = path.join(this.discoveryDir, `server-${this.child.pid}.json`);
    let gone = false;
    this.exited.then(() => {
      gone = true;
    });
    const info = await waitFor('the discovery file', () => {
      if (gone) throw new Error(`browser-mcpd exited early:\n${this.stderr}`);
      return existsSync(file) && JSON.parse(readFileSync(file, 'utf8'));
    });
    this.port = info.port;
    this.token = info.token;
    this.url = `ws://127.0.0.1:${this.port}`;
  }

  /** Stops the daemon (SIGTERM: a clean shutdown) and waits for it to exit. */
  async stop(signal = 'SIGTERM') {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    await this.exited;
    running.delete(this);
    rmSync(this.dir, { recursive: true, force: true });
  }

  kill() {
    try {
      this.child.kill('SIGKILL');
    } catch {
      // Already gone.
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Runs browserctl against this daemon: `{code, stdout, stderr}`. */
  ctl(args) {
    return new Promise((resolve) => {
      execFile(CTL, ['--socket', this.socket, ...args], { timeout: 20000 }, (err, stdout, stderr) => {
        resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr });
      });
    });
  }

  /** Runs `browserctl --json ARGS` and parses what it prints; fails on a non-zero exit. */
  async ctlJson(args) {
    const out = await this.ctl(['--json', ...args]);
    if (out.code !== 0) {
      throw new Error(`browserctl ${args.join(' ')} exited ${out.code}: ${out.stderr}\n${this.stderr}`);
    }
    return JSON.parse(out.stdout);
  }

  /** The browsers the daemon has whose session id is `session`. */
  async browsersOf(session) {
    const { browsers } = await this.ctlJson(['browsers']);
    return browsers.filter((b) => b.sessionId === session);
  }
}
