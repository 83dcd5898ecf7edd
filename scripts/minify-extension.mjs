#!/usr/bin/env node
// Writes the extension's minified files from their sources: what a page parses, written small.
// Comments and spaces go and local names are shortened, by terser at the version check-js.sh
// installs; the sources stay the files to read and edit. Each frame parses the page world's
// file before the page's own scripts run, and that parse was the larger part of what the file
// costs a page load; the first tool call on a page parses the whole DOM kit (issue 30,
// docs/performance.md: "The page world and the DOM kit, minified").
//
//   node scripts/minify-extension.mjs          # writes the files
//   node scripts/minify-extension.mjs --check  # exits 1 if a file is not what its sources make
//
// A written file's first line names the sha256 of each source it was made from: the house tests
// (tests/it/house/layout.rs) fail when a source has changed since, without needing terser.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { minify } from 'terser';

const extension = fileURLToPath(new URL('../extension/', import.meta.url));
// The DOM kit's sources, in the order its files use each other: what reading a page needs,
// what acting on it needs besides, and input at a point (worker/frames/frame-channel.js puts
// each part in only for a tool that needs it: a snapshot needs the first alone, a click by ref
// the first two).
const READING = [
  'vendor/dom-accessibility-api/dom-accessibility-api.js',
  'content/dom-tools.js',
  'content/dom-snapshot.js',
];
const HANDS = ['content/dom-point.js', 'content/dom-actions.js', 'content/dom-hover-css.js'];
const POINTS = ['content/dom-drag.js', 'content/dom-input.js'];
// Each file the browser runs (paths from extension/), from its sources, in order.
const MADE = {
  'page/document-start.min.js': ['page/document-start.js'],
  // The page world's part of the DOM kit (worker/frames/frame-channel.js): put in with the
  // reading part, never at load.
  'page/handlers.min.js': ['page/handlers.js'],
  // The DOM kit (worker/frames/frame-channel.js), put into a frame when a tool first needs it: the
  // reading part, the acting part, input at a point.
  'content/dom-kit.min.js': READING,
  'content/dom-kit-hands.min.js': HANDS,
  'content/dom-kit-points.min.js': POINTS,
  // The last two again in one file, compiled whole (EAGER below): put in off a call's path, into
  // a page of a tab an agent drives once the page has loaded (worker/ahead/kit-ahead.js, with the
  // reading part) and after a snapshot's answer (worker/frames/frame-channel.js).
  'content/dom-kit-hands-ahead.min.js': [...HANDS, ...POINTS],
};
// Files V8 compiles whole as it reads them (its `allFunctionsCalledOnLoad` hint), not function
// by function as each is first called, which pre-parses all of a file and then parses again
// each function a call runs.
// - The reading part, whose functions a first snapshot runs nearly all of: the page's time in
//   that call fell by 0.3-3.9 ms (six pairs, docs/performance.md).
// - The acting part put in ahead of a call: there, the page's time in the first call fell from
//   9.2-14.1 ms to 4.7-9.1 (the whole kit ahead), and a click after a snapshot's by 0.3-0.9.
// - Not the acting part a call puts in itself: the tools a call does not use would be compiled
//   on its path (the whole kit compiled so cost a first click 0.6-3 ms more than it saved,
//   "The DOM tools ahead of an agent's call").
const EAGER = new Set(['content/dom-kit.min.js', 'content/dom-kit-hands-ahead.min.js']);
// What a file must say of a source whose comments go (its license).
const NOTICE = {
  'vendor/dom-accessibility-api/dom-accessibility-api.js': 'dom-accessibility-api 0.7.1 is MIT-licensed: vendor/dom-accessibility-api/LICENSE.md',
};
// Names and spaces only: no rewriting of the code (terser's compress), so the file runs as its
// source does.
const OPTIONS = {
  compress: false,
  // The page can read a function's name (window.alert.name): ours keep theirs.
  keep_fnames: true,
  keep_classnames: true,
  // ASCII only (other characters escaped): V8 reads a source with any other character as
  // two bytes a character.
  format: { comments: false, ascii_only: true },
};
// Where the source wraps a function argument in parentheses (the vendored library's modules,
// which run at once), V8 compiles it as it reads it instead of pre-parsing it and parsing it
// again; the printer keeps them only when told.
const KEEP_PARENS = new Set(['vendor/dom-accessibility-api/dom-accessibility-api.js']);

async function make(target, sources) {
  const parts = [];
  const sums = [];
  const notices = sources.filter((file) => NOTICE[file]).map((file) => `// ${NOTICE[file]}\n`);
  for (const file of sources) {
    const text = readFileSync(extension + file, 'utf8');
    sums.push(`${file} (sha256 ${createHash('sha256').update(text).digest('hex')})`);
    const format = { ...OPTIONS.format, wrap_func_args: KEEP_PARENS.has(file) };
    parts.push((await minify(text, { ...OPTIONS, format })).code);
  }
  const hint = EAGER.has(target) ? '//# allFunctionsCalledOnLoad\n' : '';
  return `// Made by scripts/minify-extension.mjs, to be run again after an edit of its sources: ${sums.join(', ')}\n${hint}${notices.join('')}${parts.join('\n')}\n`;
}

const check = process.argv.includes('--check');
let stale = 0;
for (const [target, sources] of Object.entries(MADE)) {
  const made = await make(target, sources);
  if (!check) {
    writeFileSync(extension + target, made);
    console.log(`extension/${target}: ${made.length} bytes`);
    continue;
  }
  let current = '';
  try {
    current = readFileSync(extension + target, 'utf8');
  } catch {
    // missing: not what its sources make
  }
  if (current !== made) {
    console.error(`extension/${target} is not what ${sources.map((s) => `extension/${s}`).join(', ')} make: run node scripts/minify-extension.mjs`);
    stale += 1;
  }
}
process.exit(stale ? 1 : 0);
