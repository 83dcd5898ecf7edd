// Tool names as MCP clients see them: the daemon keeps [a-zA-Z0-9_-] and turns every other
// character into "_" (src/mcp/expose.rs, sanitize). A page's tool is judged by that name, not
// by what the page wrote: `browser.type` is `browser_type` to an agent.
export const mcpName = (name) => String(name).replace(/[^a-zA-Z0-9_-]/g, '_');

// The prefix of the extension's own tools. A page tool whose MCP name has it could pass for
// one of ours (or, with a tab suffix, for another tab's), so it is never offered. Nor is one
// named like the MCP front's own tools (`browserctl_call_tool`), and case does not make a name
// new: a model reads `Browser_Click` as `browser_click` (issue 31).
export const BUILTIN_PREFIX = 'browser_';
const META_PREFIX = 'browserctl_';

export const looksBuiltin = (name) => {
  const seen = mcpName(name).toLowerCase();
  return seen.startsWith(BUILTIN_PREFIX) || seen.startsWith(META_PREFIX);
};
