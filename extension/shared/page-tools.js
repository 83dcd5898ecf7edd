// Which of a page's WebMCP tools the extension offers to daemons. A page may not shadow a
// built-in nor pose as one, in any case or with other separators (names.js: looksBuiltin
// judges the folded name), and may not make the message that carries its tab's tools too
// big for the daemon: a frame over the daemon's limit (16 MiB by default) closes the
// connection (1009), and every tab of the browser with it, over and over as the extension
// reconnects. So a tool larger than MAX_TOOL_BYTES, and the tools past MAX_PAGE_TOOLS or
// MAX_PAGE_TOOLS_BYTES in a tab, are refused here, by name, and the daemon is told why.
import { looksBuiltin } from './names.js';

export const MAX_TOOL_BYTES = 64 * 1024;
export const MAX_PAGE_TOOLS = 128;
export const MAX_PAGE_TOOLS_BYTES = 512 * 1024;

// The reason a daemon (and so an agent, in a TOOL_NOT_FOUND) is given.
export const REFUSED_REASON = `the page's declaration is larger than browser-mcp accepts (${MAX_TOOL_BYTES / 1024} KiB a tool, ${MAX_PAGE_TOOLS} tools or ${MAX_PAGE_TOOLS_BYTES / 1024} KiB a page)`;

// A declaration's size as it travels (JSON, UTF-16 code units: close enough to bytes for a cap).
const sizeOf = (tool) => {
  try {
    return JSON.stringify(tool).length;
  } catch {
    return Infinity; // not serializable (a cycle): never offered
  }
};

// {tools, refused}: the tools offered, in the page's order, and the names of those refused
// for their size. Tools with no usable name, or a built-in's, are dropped without a word.
export function admitPageTools(tools) {
  if (!Array.isArray(tools)) return { tools: [], refused: [] };
  const named = tools.filter((t) => t && typeof t.name === 'string' && t.name && !looksBuiltin(t.name));
  const offered = [];
  const refused = [];
  let total = 0;
  for (const t of named) {
    const size = sizeOf(t);
    if (size > MAX_TOOL_BYTES || offered.length >= MAX_PAGE_TOOLS || total + size > MAX_PAGE_TOOLS_BYTES) {
      refused.push(String(t.name).slice(0, 200));
      continue;
    }
    total += size;
    offered.push(t);
  }
  return { tools: offered, refused };
}

// A tab's offer ({tools, hidden}) with the refused tools named among the hidden ones.
export function withRefused(offer, refused) {
  if (!refused.length) return offer;
  const hidden = offer.hidden
    ? { tools: [...offer.hidden.tools, ...refused], reason: `${offer.hidden.reason}; ${refused.join(', ')}: ${REFUSED_REASON}` }
    : { tools: refused, reason: REFUSED_REASON };
  return { ...offer, hidden };
}
