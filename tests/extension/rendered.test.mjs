// Which `clip` and `clip-path` values leave nothing of a box (extension/content/dom-tools.js
// clipsAll, issue 57): the screen-reader-only patterns, as getComputedStyle writes them. The DOM
// tools' file runs here with only what it reaches for as it loads; what a browser lays out is the
// hands tests' business (tests/it/browser/hands/actionability.rs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import vm from 'node:vm';

const source = readFileSync(new URL('../../extension/content/dom-tools.js', import.meta.url), 'utf8');
const context = { crypto, Uint32Array, Array };
context.globalThis = context;
vm.runInNewContext(source, context);
const { clipsAll } = context.browserMcpDom;

test('clip rectangles with no area clip all', () => {
  assert.equal(clipsAll('rect(0px, 0px, 0px, 0px)', 'none'), true);
  assert.equal(clipsAll('rect(1px, 1px, 1px, 1px)', 'none'), true);
  assert.equal(clipsAll('rect(0px 0px 0px 0px)', 'none'), true);
  assert.equal(clipsAll('rect(0px, 10px, 10px, 0px)', 'none'), false);
  assert.equal(clipsAll('auto', 'none'), false);
  assert.equal(clipsAll('rect(auto, auto, auto, auto)', 'none'), false);
});

test('clip-path insets of half or more, and circles of no radius, clip all', () => {
  assert.equal(clipsAll('auto', 'inset(50%)'), true);
  assert.equal(clipsAll('auto', 'inset(100%)'), true);
  assert.equal(clipsAll('auto', 'inset(49%)'), false);
  assert.equal(clipsAll('auto', 'circle(0px at 50% 50%)'), true);
  assert.equal(clipsAll('auto', 'circle(10px at 50% 50%)'), false);
  assert.equal(clipsAll('', ''), false);
});
