#!/usr/bin/env bash
# Vendors the libraries of issue 57's corpus into tests/e2e/pages/frameworks/vendor/: npm
# installs the versions pinned in scripts/vendor-frameworks/package-lock.json (integrity
# checked, no install scripts), then build.mjs copies the browser builds as published and
# bundles, with esbuild, those that ship none (React 19, Material UI, React Aria, Ant Design's
# select, Radix, Headless UI, Lexical, Tiptap, CodeMirror) and the Svelte page's component. The output is committed, so neither CI nor
# the tests run this; run it again after changing a version (then `npm install
# --package-lock-only --omit-lockfile-registry-resolved` in that directory first) or an entry.
set -euo pipefail
dir="$(cd "$(dirname "$0")/vendor-frameworks" && pwd)"
out="$dir/../../tests/e2e/pages/frameworks/vendor"
trap 'rm -rf "$dir/node_modules"' EXIT
(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
# (esbuild's binary comes in its platform package; its install script only checks for it.)
node "$dir/build.mjs"
du -sh "$out"
