#!/usr/bin/env bash
# The extension's own checks, in seconds: ESLint (eslint.config.mjs, no warnings), the unit tests
# of its pure modules under Node's built-in runner (tests/extension/*.test.mjs), and that each
# minified file the browser runs is what its sources make (scripts/minify-extension.mjs). ESLint
# and terser are installed by name into node_modules/ (git-ignored) the first time, in one npm
# call: a second `npm install --no-save` would take the first one's packages away.
set -euo pipefail
cd "$(dirname "$0")/.."
eslint_version=9
terser_version=5.51.4 # pinned: its output is committed (extension/**/*.min.js)
if [ ! -x node_modules/.bin/eslint ] || [ "$(node_modules/.bin/eslint --version | cut -c2)" != "$eslint_version" ] ||
  [ "$(node_modules/.bin/terser --version 2>/dev/null)" != "terser $terser_version" ]; then
  npm install --no-save --no-audit --no-fund --loglevel=error "eslint@$eslint_version" "@eslint/js@$eslint_version" globals@16 \
    "terser@$terser_version"
fi
node_modules/.bin/eslint --max-warnings 0 .
node scripts/minify-extension.mjs --check
# Files listed, not a directory: Node 18's runner takes no directory of .mjs files.
node --test tests/extension/*.test.mjs
