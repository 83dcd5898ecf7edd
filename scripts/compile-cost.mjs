#!/usr/bin/env -S node --expose-gc
// What V8 spends compiling each given file as a classic script (Node's V8, `vm.Script`: the
// parse, the pre-parse of the functions not run yet, the top level's bytecode), in ms a compile:
// the median and range of ROUNDS rounds (default 15) of COMPILES compiles (default 40), the files
// taking turns. Each compile gets a source of its own (a comment appended), so that V8's
// compilation cache never answers. A steadier instrument than a browser's trace for one question,
// what a file's text costs to read, as nothing else runs; it says nothing of running it. A+B+C
// compiles the files joined, as one script.
//
//   node --expose-gc scripts/compile-cost.mjs extension/page/document-start.js extension/page/document-start.min.js
import { readFileSync } from 'node:fs';
import vm from 'node:vm';

const files = process.argv.slice(2);
if (!files.length) {
  console.error('usage: node --expose-gc scripts/compile-cost.mjs FILE...');
  process.exit(2);
}
const rounds = Number(process.env.ROUNDS || 15);
const compiles = Number(process.env.COMPILES || 40);
const sources = files.map((f) => f.split('+').map((part) => readFileSync(part, 'utf8')).join('\n'));
const times = files.map(() => []);
for (let r = 0; r < rounds; r++) {
  sources.forEach((source, i) => {
    globalThis.gc?.(); // the garbage of the round before is not this one's
    const start = process.hrtime.bigint();
    for (let k = 0; k < compiles; k++) new vm.Script(`${source}\n// ${r} ${k} ${i}`);
    times[i].push(Number(process.hrtime.bigint() - start) / 1e6 / compiles);
  });
}
files.forEach((file, i) => {
  const t = times[i].sort((a, b) => a - b);
  console.log(`${file}: ${t[t.length >> 1].toFixed(3)} ms a compile (${t[0].toFixed(3)}-${t.at(-1).toFixed(3)})`);
});
