// Tool names as MCP clients see them: the daemon keeps [a-zA-Z0-9_-] and turns every other
// character into "_" (src/mcp/expose.rs, sanitize). A page's tool is judged by that name, not
// by what the page wrote: `browser.type` is `browser_type` to an agent.
export const mcpName = (name) => String(name).replace(/[^a-zA-Z0-9_-]/g, '_');

// A name as a model reads it: case, and any run of characters other than ASCII letters and
// digits (`-`, `.`, `_`, spaces), make no new name, so `Browser-Type` reads as `browser_type`
// (issue 58, item 5). The daemon folds names the same way (src/mcp/names.rs, fold).
export const fold = (name) =>
  String(name)
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean)
    .join('_');

// The prefix of the extension's own tools. A page tool whose folded name has it could pass
// for one of ours (or, with a tab suffix, for another tab's), so it is never offered. Nor is
// one named like the MCP front's own tools (`browserctl_call_tool`).
export const BUILTIN_PREFIX = 'browser_';
const META_PREFIX = 'browserctl_';

export const looksBuiltin = (name) => {
  const seen = fold(name);
  return seen.startsWith(BUILTIN_PREFIX) || seen.startsWith(META_PREFIX);
};
