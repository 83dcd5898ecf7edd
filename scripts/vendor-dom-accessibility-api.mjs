#!/usr/bin/env node
// Writes extension/vendor/dom-accessibility-api/dom-accessibility-api.js from the package's npm
// tarball: the CommonJS files the DOM kit uses, each verbatim inside a function that gives it
// `exports` and `require`, in one classic script. One file, not six and a loader, because each
// file of an injection costs the frame a compile and a run of its own (issue 30: the first tool
// call on a page pays for them).
//
//   npm pack dom-accessibility-api@0.7.1
//   node scripts/vendor-dom-accessibility-api.mjs dom-accessibility-api-0.7.1.tgz
//
// It refuses a tarball whose sha256 is not the one extension/vendor/README.md records.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const VERSION = '0.7.1';
const SHA256 = 'fd2555decfa04412a33cf4af0edc341a10ac84419827cfa4cef0f5c84fa48c60';
// getRole before util: they require each other, and util copies getRole's exports when it runs.
const MODULES = ['getRole', 'util', 'polyfills/array.from', 'polyfills/SetLike', 'accessible-name-and-description', 'accessible-name'];
// The polyfills stand in for what old browsers lack; every browser the extension runs in has
// both, and native ones need no compiling (the sampling profile put the polyfilled Array.from
// at about a millisecond of a `browser_type` on a form page; end to end, the first call's
// change was within the spread). SetLike's own test is inverted (`typeof Set === "undefined" ?
// Set : SetLike`), so the library used it everywhere. In their place, the browser's own.
const NATIVE = {
  'polyfills/array.from': 'Array.from',
  'polyfills/SetLike': 'Set',
};

const tarball = process.argv[2];
if (!tarball) {
  console.error('usage: vendor-dom-accessibility-api.mjs dom-accessibility-api-0.7.1.tgz (from npm pack)');
  process.exit(2);
}
const bytes = readFileSync(tarball);
const sum = createHash('sha256').update(bytes).digest('hex');
if (sum !== SHA256) {
  console.error(`${tarball}: sha256 ${sum}, not ${SHA256} (dom-accessibility-api ${VERSION})`);
  process.exit(1);
}
const dir = mkdtempSync(join(tmpdir(), 'dom-accessibility-api-'));
try {
  execFileSync('tar', ['-xzf', resolve(tarball), '-C', dir]);
  const parts = MODULES.map((id) => {
    if (NATIVE[id]) return `// dist/${id}.js: not vendored, the browser's own ${NATIVE[id]} in its place\nmodule(${JSON.stringify(id)}, (function (exports) {\n"use strict";\nexports.__esModule = true;\nexports.default = ${NATIVE[id]};\n}));\n`;
    const text = readFileSync(join(dir, 'package/dist', `${id}.js`), 'utf8');
    // In parentheses, so that V8 compiles each module function as it reads it (it runs at once)
    // instead of pre-parsing it and parsing it again when called: about a millisecond off the
    // first tool call on a page (issue 30).
    return `// dist/${id}.js\nmodule(${JSON.stringify(id)}, (function (exports, require) {\n${text}\n}));\n`;
  });
  const out = `// dom-accessibility-api ${VERSION} (MIT, LICENSE.md beside this file): its CommonJS files
// dist/{${MODULES.join(',')}}.js,
// each verbatim in a function that gives it \`exports\` and \`require\`, but for the polyfills, whose
// place the browser's own Array.from and Set take. Written by
// scripts/vendor-dom-accessibility-api.mjs from the npm tarball (sha256 ${SHA256}); do not edit.
// The DOM kit reads a module's exports with globalThis.browserMcpModules.get(id).
(() => {
  if (globalThis.browserMcpModules) return; // injected twice
  const modules = new Map();
  const exportsOf = (id) => {
    let m = modules.get(id);
    if (!m) modules.set(id, (m = {}));
    return m;
  };
  const require = (path) => exportsOf(path.replace(/^\\.\\//, '').replace(/\\.js$/, ''));
  const module = (id, body) => body(exportsOf(id), require);

${parts.join('\n')}
  globalThis.browserMcpModules = { get: (id) => modules.get(id) };
})();
`;
  const target = join(import.meta.dirname, '../extension/vendor/dom-accessibility-api/dom-accessibility-api.js');
  writeFileSync(target, out);
  console.log(`wrote ${target}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
