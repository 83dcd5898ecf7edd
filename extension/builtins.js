// Built-in tools, offered on every http(s) tab so that a page without WebMCP is still useful.
// Tools that need the DOM run in dom-tools.js (content script); the rest need extension APIs.
import { Code, ToolError } from './protocol.js';
import { committedTab, getTab, isWebUrl, sendToPage } from './page.js';
import { OBSERVE_TOOLS, callObserve, isObserveTool } from './observe.js';

const target = {
  ref: { type: 'string', description: 'Element ref from the latest browser_snapshot, e.g. "e12"' },
  selector: { type: 'string', description: 'CSS selector, used when no ref is given' },
};

const tool = (name, title, description, properties, required, annotations) => ({
  name,
  title,
  description,
  inputSchema: { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false },
  annotations: { title, ...annotations },
});

export const BUILTIN_TOOLS = [
  tool('browser_navigate', 'Navigate', 'Load a URL in this tab and wait until it has loaded.',
    { url: { type: 'string', description: 'Absolute http(s) URL' } }, ['url'],
    { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true }),
  tool('browser_snapshot', 'Page snapshot',
    'Readable text of the page with its interactive elements; each element carries a ref (e.g. "e12") that the other browser_* tools accept.',
    {}, [], { readOnlyHint: true, openWorldHint: false }),
  tool('browser_click', 'Click', 'Click an element (by ref or CSS selector).',
    target, [], { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true }),
  tool('browser_type', 'Type text', 'Replace the text of an input, textarea or editable element; optionally submit its form.',
    { ...target, text: { type: 'string' }, submit: { type: 'boolean', description: 'Submit (Enter) after typing', default: false } },
    ['text'], { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true }),
  tool('browser_select', 'Select option', 'Choose an option of a <select> by value or visible label.',
    { ...target, value: { oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] } },
    ['value'], { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true }),
  tool('browser_press_key', 'Press key',
    'Press a key on the focused element, e.g. "Enter", "Tab", "Escape", "a", "Control+a". Events are synthetic: Enter submits forms and activates buttons, Tab moves focus, characters are typed into text fields.',
    { key: { type: 'string' } }, ['key'],
    { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true }),
  tool('browser_wait_for', 'Wait for', 'Wait until an element matching a selector is visible, or a text appears on the page.',
    {
      selector: { type: 'string' },
      text: { type: 'string' },
      timeout: { type: 'number', description: 'Milliseconds, default 5000, at most 60000', minimum: 0, maximum: 60000 },
    }, [], { readOnlyHint: true, openWorldHint: false }),
  tool('browser_evaluate', 'Evaluate JavaScript',
    'Evaluate a JavaScript expression in the page and return its JSON value. Off unless enabled in the extension options.',
    { expression: { type: 'string' } }, ['expression'],
    { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true }),
  ...OBSERVE_TOOLS,
];

const NAMES = new Set(BUILTIN_TOOLS.map((t) => t.name));
export const isBuiltinName = (name) => NAMES.has(name) || name.startsWith('browser_');

const text = (s) => ({ content: [{ type: 'text', text: s }] });

function requireString(args, key) {
  if (typeof args[key] !== 'string' || !args[key]) throw new ToolError(Code.INVALID_ARGUMENTS, `"${key}" must be a non-empty string`);
  return args[key];
}

// Resolves once the tab has committed and loaded a new document, or after a same-document
// navigation (those never pass through status "loading").
function waitForLoad(tabId, timeoutMs) {
  return new Promise((resolve, reject) => {
    let sawLoading = false;
    const done = (err) => {
      clearTimeout(timer);
      clearInterval(poll);
      chrome.tabs.onUpdated.removeListener(onUpdated);
      chrome.tabs.onRemoved.removeListener(onRemoved);
      err ? reject(err) : resolve();
    };
    const onUpdated = (id, change) => {
      if (id !== tabId) return;
      if (change.status === 'loading') sawLoading = true;
      if (change.status === 'complete' && sawLoading) done();
    };
    const onRemoved = (id) => id === tabId && done(new ToolError(Code.NAVIGATION_FAILED, 'tab was closed'));
    const timer = setTimeout(() => done(new ToolError(Code.NAVIGATION_FAILED, `page did not load within ${timeoutMs} ms`)), timeoutMs);
    const poll = setInterval(async () => {
      const tab = await chrome.tabs.get(tabId).catch(() => null);
      if (tab && !sawLoading && tab.status === 'complete') done();
    }, 500);
    chrome.tabs.onUpdated.addListener(onUpdated);
    chrome.tabs.onRemoved.addListener(onRemoved);
  });
}

async function navigate(tabId, args) {
  const url = requireString(args, 'url');
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw new ToolError(Code.INVALID_ARGUMENTS, `not an absolute URL: ${url}`);
  }
  if (!isWebUrl(parsed.href)) throw new ToolError(Code.INVALID_ARGUMENTS, `only http(s) URLs can be opened, not ${parsed.protocol}`);
  const loaded = waitForLoad(tabId, 30_000);
  await chrome.tabs.update(tabId, { url: parsed.href });
  await loaded;
  // Chromium shows its own error page for DNS/connection failures, and scripting refuses it.
  try {
    await chrome.scripting.executeScript({ target: { tabId }, func: () => true });
  } catch (e) {
    throw new ToolError(Code.NAVIGATION_FAILED, `could not load ${parsed.href}: ${e.message}`);
  }
  const tab = await getTab(tabId);
  return text(`Loaded ${tab.url} — "${tab.title}"`);
}

// Runs in the page's own world, so it sees the page's globals; must be self-contained.
function evaluateInPage(expression) {
  const settle = (value) => {
    if (value === undefined) return { value: null };
    try {
      return { value: JSON.parse(JSON.stringify(value)) };
    } catch {
      return { value: String(value) };
    }
  };
  try {
    return Promise.resolve((0, eval)(expression)).then(settle, (e) => ({ error: String(e && e.message ? e.message : e) }));
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
}

async function evaluate(tabId, args) {
  const expression = requireString(args, 'expression');
  const { evaluateEnabled } = await chrome.storage.local.get('evaluateEnabled');
  if (evaluateEnabled !== true) {
    throw new ToolError(Code.EVALUATE_DISABLED, 'browser_evaluate is off; enable it in the browser-mcp extension options');
  }
  const [frame] = await chrome.scripting.executeScript({ target: { tabId }, world: 'MAIN', func: evaluateInPage, args: [expression] });
  const out = frame?.result;
  if (!out) throw new ToolError(Code.TOOL_ERROR, 'the page returned nothing');
  if (out.error) throw new ToolError(Code.TOOL_ERROR, out.error);
  return { ...text(JSON.stringify(out.value)), structuredContent: { value: out.value } };
}

export async function callBuiltin(tabId, name, args = {}) {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new ToolError(Code.INVALID_ARGUMENTS, 'args must be an object');
  await committedTab(tabId);
  if (isObserveTool(name)) return callObserve(tabId, name, args);
  switch (name) {
    case 'browser_navigate':
      return navigate(tabId, args);
    case 'browser_evaluate':
      return evaluate(tabId, args);
    case 'browser_snapshot':
    case 'browser_click':
    case 'browser_type':
    case 'browser_select':
    case 'browser_press_key':
    case 'browser_wait_for':
      return sendToPage(tabId, { op: 'dom', name: name.slice('browser_'.length), args });
    default:
      throw new ToolError(Code.TOOL_NOT_FOUND, `no built-in tool named ${name}`);
  }
}
