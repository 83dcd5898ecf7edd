// ESLint for the extension and the JS clients. Each world of the extension gets the globals it
// really has (ARCHITECTURE.md, "The extension's worlds"), so a content script that reaches for a
// worker API, or a page script for chrome.*, is an error. Run by .ci/run: scripts/lint-js.sh.
import js from '@eslint/js';
import globals from 'globals';

const webext = { chrome: 'readonly', browser: 'readonly' };

export default [
  { ignores: ['extension/vendor/**', 'extension/**/*.min.js', 'target/**', 'node_modules/**', 'fuzz/**', 'tests/e2e/**', 'scripts/vendor-frameworks/node_modules/**'] },
  js.configs.recommended,
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // `const { dropped, ...kept } = x` is how a field is left out.
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-var': 'error',
      // A timer read by its own callback before `timer = setTimeout(…)` runs must be a let.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  // The service worker: ES modules, chrome.*, no DOM.
  {
    files: ['extension/worker/**/*.js', 'extension/shared/**/*.js'],
    languageOptions: { sourceType: 'module', globals: { ...globals.serviceworker, ...webext } },
  },
  // The extension's own pages (popup, options): modules with the DOM and chrome.*.
  {
    files: ['extension/ui/**/*.js'],
    languageOptions: { sourceType: 'module', globals: { ...globals.browser, ...webext } },
  },
  // Content scripts (isolated world): classic scripts sharing one global scope per frame.
  {
    files: ['extension/content/**/*.js'],
    languageOptions: { sourceType: 'script', globals: { ...globals.browser, ...webext } },
  },
  // The page's own world: no chrome.* at all, only what the page has (and the bench's copy of its
  // hooks alone).
  {
    files: ['extension/page/**/*.js', 'scripts/hooks-only.js'],
    languageOptions: { sourceType: 'script', globals: { ...globals.browser } },
  },
  {
    files: ['extension/icons/*.mjs', 'tests/extension/**/*.mjs', 'scripts/*.mjs', 'scripts/vendor-frameworks/*.mjs', 'eslint.config.mjs'],
    languageOptions: { sourceType: 'module', globals: { ...globals.node } },
  },
  // The entry points of issue 57's bundles: modules that run in the page.
  {
    files: ['scripts/vendor-frameworks/entries/*.js'],
    languageOptions: { sourceType: 'module', globals: { ...globals.browser } },
  },
  {
    files: ['clients/js/**/*.js', 'clients/js/**/*.mjs'],
    languageOptions: { globals: { ...globals.node } },
  },
];
