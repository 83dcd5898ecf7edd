// Runs in the page's own (MAIN) world at document_start, before any page script.
//
// Without native WebMCP it provides the API (navigator.modelContext === document.modelContext:
// registerTool, unregisterTool, provideContext, clearContext, getTools, executeTool, toolchange).
// With Chromium's native API (document.modelContext; --enable-features=WebMCP) it keeps the
// native object and native executeTool, and only adds what the native one lacks: the
// unregisterTool/provideContext/clearContext methods, navigator.modelContext, the page's original
// annotations (native getTools drops idempotentHint/destructiveHint) and the page's real error
// messages (native executeTool reports every failure as "UnknownError").
// With Firefox's native API (navigator.modelContext; pref dom.modelcontext.enabled) it keeps the
// native object, so Firefox itself sees the page's tools too. That object has only
// registerTool/unregisterTool (getTools/invokeTool only with dom.modelcontext.testing.enabled),
// no toolchange event and ignores an AbortSignal, so the shim wraps both methods to keep its own
// list, honours the signal, adds provideContext/clearContext and document.modelContext, and runs
// a call through native invokeTool when Firefox offers it, else through the tool's execute.
//
// Either way it reports the tool list to content.js and runs calls for it (see content.js).
//
// Only the top frame's tools are offered (the manifest puts this file in every frame, with the
// other page-world scripts, so that each page pays for one injection). A page with no tools
// sends nothing: the worker forgets a page's tools when a new page commits (tabs.js).
(() => {
  if (window !== window.top) return;
  const MARK = Symbol.for('browser-mcp.webmcp');
  if (window[MARK]) return;
  window[MARK] = true;

  const TO_PAGE = 'browser-mcp:to-page';
  const FROM_PAGE = 'browser-mcp:from-page';
  const send = (msg) => document.dispatchEvent(new CustomEvent(FROM_PAGE, { detail: JSON.stringify(msg) }));
  const json = (value) => (value === undefined ? null : JSON.parse(JSON.stringify(value)));
  const errorMessage = (e) => String(e && e.message !== undefined ? e.message : e);
  const nativeApi = 'modelContext' in Document.prototype || 'modelContext' in Navigator.prototype;

  // Everything else is built the first time the page (or the worker) needs it: a page that
  // never uses WebMCP pays for two property definitions and a listener (issue 30).
  function build() {
    // Our placeholders go first, so the browser's own API (if any) shows through.
    delete document.modelContext;
    delete navigator.modelContext;
    const native = document.modelContext && typeof document.modelContext.getTools === 'function' ? document.modelContext : null;
    const gecko = !native && navigator.modelContext && typeof navigator.modelContext.registerTool === 'function' ? navigator.modelContext : null;
    // Firefox's testing-only methods: tools registered before the shim ran are reachable only here.
    const geckoTools = () => (gecko && typeof gecko.getTools === 'function' ? gecko.getTools() : []);
    const geckoInvoke = gecko && typeof gecko.invokeTool === 'function' ? gecko.invokeTool.bind(gecko) : null;
    const registered = new Map(); // name -> { tool, controller }: every tool registered through us
    const lastError = new Map(); // name -> message thrown by the page's execute (native path)

    function describe(tool) {
      const d = {
        name: tool.name,
        description: tool.description || '',
        inputSchema: tool.inputSchema && typeof tool.inputSchema === 'object' ? tool.inputSchema : { type: 'object', properties: {} },
      };
      if (tool.title) d.title = tool.title;
      if (tool.annotations && typeof tool.annotations === 'object') d.annotations = tool.annotations;
      return json(d);
    }

    function validate(tool) {
      if (!tool || typeof tool.name !== 'string' || !tool.name) throw new TypeError('registerTool: tool.name must be a non-empty string');
      if (typeof tool.execute !== 'function') throw new TypeError('registerTool: tool.execute must be a function');
    }

    // Several changes in one task (provideContext) become one report.
    let scheduled = false;
    let reported = false; // whether a list was sent: an empty one is news only after that
    function changed() {
      if (scheduled) return;
      scheduled = true;
      setTimeout(async () => {
        scheduled = false;
        const tools = await list();
        if (!tools.length && !reported) return;
        reported = true;
        send({ kind: 'tools', tools });
      }, 0);
    }

    async function list() {
      if (gecko) {
        const ours = [...registered.values()].map(({ tool }) => describe(tool));
        const before = geckoTools().filter((t) => !registered.has(t.name)).map(describe);
        return [...ours, ...before];
      }
      if (!native) return [...registered.values()].map(({ tool }) => describe(tool));
      const tools = await native.getTools();
      return tools.map((t) => {
        const ours = registered.get(t.name);
        return describe(ours ? { ...t, annotations: ours.tool.annotations } : t);
      });
    }

    const client = () => ({ requestUserInteraction: async (callback) => callback() });

    async function call(name, args) {
      if (gecko) {
        const entry = registered.get(name);
        const known = entry || geckoTools().some((t) => t.name === name);
        if (!known) throw Object.assign(new Error(`no tool named ${name}`), { code: 'TOOL_NOT_FOUND' });
        return geckoInvoke ? geckoInvoke(name, args ?? {}) : entry.tool.execute(args, client());
      }
      if (!native) {
        const entry = registered.get(name);
        if (!entry) throw Object.assign(new Error(`no tool named ${name}`), { code: 'TOOL_NOT_FOUND' });
        return entry.tool.execute(args, client());
      }
      const tool = (await native.getTools()).find((t) => t.name === name);
      if (!tool) throw Object.assign(new Error(`no tool named ${name}`), { code: 'TOOL_NOT_FOUND' });
      lastError.delete(name);
      let out;
      try {
        out = await native.executeTool(tool, args);
      } catch (e) {
        throw lastError.has(name) ? new Error(lastError.get(name)) : e;
      }
      // Native executeTool returns the result JSON-encoded (or a string result as is).
      try {
        return typeof out === 'string' ? JSON.parse(out) : out;
      } catch {
        return out;
      }
    }


    // --- the API the page sees -------------------------------------------------------------------

    let api;
    let notify = () => {}; // the native object fires its own toolchange
    if (native) {
      const nativeRegister = native.registerTool.bind(native);
      const registerTool = (tool, options = {}) => {
        validate(tool);
        const controller = new AbortController();
        const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
        const execute = async (args, c) => {
          try {
            return await tool.execute(args, c);
          } catch (e) {
            lastError.set(tool.name, errorMessage(e));
            throw e;
          }
        };
        // Remembered before the native call: its toolchange may be reported before it resolves.
        const previous = registered.get(tool.name);
        registered.set(tool.name, { tool, controller });
        const forget = () => {
          if (registered.get(tool.name)?.controller === controller) {
            if (previous) registered.set(tool.name, previous);
            else registered.delete(tool.name);
          }
        };
        signal.addEventListener('abort', forget);
        try {
          return Promise.resolve(nativeRegister({ ...tool, execute }, { ...options, signal })).catch((e) => {
            forget();
            throw e;
          });
        } catch (e) {
          forget();
          throw e;
        }
      };
      api = native;
      Object.defineProperty(native, 'registerTool', { value: registerTool, configurable: true, writable: true });
      native.addEventListener('toolchange', changed);
    } else if (gecko) {
      const nativeRegister = gecko.registerTool.bind(gecko);
      const nativeUnregister = gecko.unregisterTool.bind(gecko);
      notify = changed;
      api = gecko;
      const registerTool = (tool, options = {}) => {
        validate(tool);
        if (options?.signal?.aborted) return undefined;
        const result = nativeRegister(tool); // Firefox's own checks first; it replaces a duplicate
        registered.get(tool.name)?.controller.abort();
        const controller = new AbortController();
        registered.set(tool.name, { tool, controller });
        options?.signal?.addEventListener('abort', () => registered.get(tool.name)?.controller === controller && api.unregisterTool(tool.name), { once: true });
        notify();
        return result;
      };
      const unregisterTool = (name) => {
        nativeUnregister(name);
        const entry = registered.get(name);
        if (!entry) return;
        registered.delete(name);
        entry.controller.abort();
        notify();
      };
      Object.defineProperty(gecko, 'registerTool', { value: registerTool, configurable: true, writable: true });
      Object.defineProperty(gecko, 'unregisterTool', { value: unregisterTool, configurable: true, writable: true });
      if (!('modelContext' in document)) Object.defineProperty(document, 'modelContext', { value: gecko, configurable: true, enumerable: true });
    } else {
      const target = new EventTarget();
      let ontoolchange = null;
      notify = () => {
        target.dispatchEvent(new Event('toolchange'));
        changed();
      };
      api = {
        registerTool(tool, options = {}) {
          validate(tool);
          if (registered.has(tool.name)) throw new DOMException(`Duplicate tool name: ${tool.name}`, 'InvalidStateError');
          const controller = new AbortController();
          registered.set(tool.name, { tool, controller });
          options.signal?.addEventListener('abort', () => api.unregisterTool(tool.name));
          notify();
          // Older WebMCP drafts return a registration handle; newer ones return nothing. Both work.
          return { unregister: () => api.unregisterTool(tool.name) };
        },
        getTools: async () => list(),
        async executeTool(toolOrName, args = {}) {
          const result = await call(typeof toolOrName === 'string' ? toolOrName : toolOrName?.name, args);
          return typeof result === 'string' ? result : JSON.stringify(result);
        },
        addEventListener: target.addEventListener.bind(target),
        removeEventListener: target.removeEventListener.bind(target),
        dispatchEvent: target.dispatchEvent.bind(target),
        get ontoolchange() {
          return ontoolchange;
        },
        set ontoolchange(fn) {
          if (ontoolchange) target.removeEventListener('toolchange', ontoolchange);
          ontoolchange = typeof fn === 'function' ? fn : null;
          if (ontoolchange) target.addEventListener('toolchange', ontoolchange);
        },
      };
      Object.defineProperty(document, 'modelContext', { value: api, configurable: true, enumerable: true });
    }

    // Methods from the WebMCP explainer that Chromium's native object does not have (yet).
    const extra = {
      unregisterTool(name) {
        const entry = registered.get(name);
        if (!entry) return;
        registered.delete(name);
        entry.controller.abort();
        notify();
      },
      provideContext({ tools = [] } = {}) {
        api.clearContext();
        return Promise.all(tools.map((t) => api.registerTool(t)));
      },
      clearContext() {
        for (const name of [...registered.keys()]) api.unregisterTool(name);
      },
    };
    for (const [name, fn] of Object.entries(extra)) {
      if (typeof api[name] !== 'function') Object.defineProperty(api, name, { value: fn, configurable: true, writable: true });
    }
    if (!('modelContext' in navigator)) {
      Object.defineProperty(navigator, 'modelContext', { get: () => document.modelContext, configurable: true, enumerable: true });
    }
    return { list, call, changed };
  }

  let shim = null;
  const built = () => (shim ??= build());
  // The placeholders: the first read of modelContext builds the shim and answers with it.
  for (const [target, real] of [[document, () => document.modelContext], [navigator, () => navigator.modelContext]]) {
    Object.defineProperty(target, 'modelContext', { get: () => (built(), real()), configurable: true, enumerable: true });
  }

  // --- requests from content.js ------------------------------------------------------------------

  document.addEventListener(TO_PAGE, async (event) => {
    let msg;
    try {
      msg = JSON.parse(event.detail);
    } catch {
      return;
    }
    // Before the shim is built the page has registered nothing through it; a browser with its
    // own WebMCP may hold tools the page declared without script, so it is asked.
    if (msg?.kind === 'sync') return (shim || nativeApi) && built().changed();
    if (msg?.kind === 'list') return send({ kind: 'reply', id: msg.id, tools: await built().list().catch(() => []) });
    if (msg?.kind !== 'call') return;
    try {
      const result = json(await built().call(msg.name, msg.args));
      send({ kind: 'reply', id: msg.id, result });
    } catch (e) {
      send({ kind: 'reply', id: msg.id, error: { code: e?.code || 'TOOL_ERROR', message: errorMessage(e) } });
    }
  });

  if (nativeApi) built().changed();
})();
