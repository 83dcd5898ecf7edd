#!/usr/bin/env bash
# The extension's own checks, in seconds: ESLint (eslint.config.mjs, no warnings) and the unit
# tests of its pure modules under Node's built-in runner (tests/extension/*.test.mjs). ESLint is
# installed by name into node_modules/ (git-ignored) the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
eslint_version=9
if [ ! -x node_modules/.bin/eslint ] || [ "$(node_modules/.bin/eslint --version | cut -c2)" != "$eslint_version" ]; then
  npm install --no-save --no-audit --no-fund --loglevel=error "eslint@$eslint_version" "@eslint/js@$eslint_version" globals@16
fi
node_modules/.bin/eslint --max-warnings 0 .
# Files listed, not a directory: Node 18's runner takes no directory of .mjs files.
node --test tests/extension/*.test.mjs
