// A page's tool is judged by the name agents see (extension/shared/names.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { looksBuiltin, mcpName } from '../../extension/shared/names.js';

test('names are seen as the daemon sanitizes them', () => {
  assert.equal(mcpName('browser.type_b2_7'), 'browser_type_b2_7');
  assert.equal(mcpName('search recipes!'), 'search_recipes_');
  assert.equal(mcpName('ok-name_1'), 'ok-name_1');
});

test('a page tool that would pass for a built-in, or another tab\'s, is caught', () => {
  for (const name of ['browser_click', 'browser.type_b2_7', 'browser type', 'browser/snapshot']) {
    assert.ok(looksBuiltin(name), name);
  }
  // Nor for one of the MCP front's own tools, nor in another case (issue 31).
  for (const name of ['Browser_click', 'BROWSER_SNAPSHOT', 'browserctl_call_tool', 'Browserctl.list_tabs']) {
    assert.ok(looksBuiltin(name), name);
  }
  for (const name of ['search', 'browserish', 'my_browser_tool', 'browserctl', 'browser']) {
    assert.ok(!looksBuiltin(name), name);
  }
});

// Issue 58, item 5: `-`, `.`, `_` and spaces, in any run, and case, make no new name to a
// model; neither do separators around the name.
test('a name that reads as ours with other separators is caught', () => {
  for (const name of ['browser-type', 'browser-type-b1-7', 'browserctl-call-tool', 'Browser Type', 'BROWSER__SNAPSHOT', '-browser_type_b1_1-', 'browser - click', 'Browserctl.List-Tabs']) {
    assert.ok(looksBuiltin(name), name);
  }
  for (const name of ['browsers-type', 'my-browser-type', 'browser', 'browser-', 'browserctl', 'web-browser_click']) {
    assert.ok(!looksBuiltin(name), name);
  }
});
