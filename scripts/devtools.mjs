// What the scripts here share to drive a headless Chromium over DevTools (imported, not run).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

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
