// Tool names as MCP clients see them: the daemon keeps [a-zA-Z0-9_-] and turns every other
// character into "_" (src/mcp/expose.rs, sanitize). A page's tool is judged by that name, not
// by what the page wrote: `browser.type` is `browser_type` to an agent.
export const mcpName = (name) => String(name).replace(/[^a-zA-Z0-9_-]/g, '_');

// The prefix of the extension's own tools. A page tool whose MCP name has it could pass for
// one of ours (or, with a tab suffix, for another tab's), so it is never offered.
export const BUILTIN_PREFIX = 'browser_';

export const looksBuiltin = (name) => mcpName(name).startsWith(BUILTIN_PREFIX);
