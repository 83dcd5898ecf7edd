// The page's own (MAIN) world, every frame, at document_start, before any page script: what has
// to be there before the page's code runs, and nothing more (issue 30); the rest comes while an
// agent is at work (worker/ahead/watch.js). One file, as each content script costs a page a compile
// and a run; the browser runs document-start.min.js, made from it by scripts/minify-extension.mjs.
// At load each part keeps originals (before the page can replace them) and installs its hooks;
// what a first touch makes costly (0.17-0.19 ms for Event or CustomEvent alone, more for
// navigator) it reaches when used.
(() => {
  const GUARD = Symbol.for('browser-mcp.page');
  if (window[GUARD]) return; // injected twice (manifest + on-demand injection)
  Object.defineProperty(window, GUARD, { value: true });
  // The originals the parts use, kept before any page script can replace them (and before the
  // listener record below wraps addEventListener).
  const { addEventListener: listen, removeEventListener: unlisten, dispatchEvent: dispatch } = EventTarget.prototype;
  const { parse, stringify } = JSON;
  const custom = (type, init) => new CustomEvent(type, init);
  const define = Object.defineProperty;
  // A part hooks navigator or console when the page first reads it: that read costs a frame a
  // few tenths of a millisecond (navigator's interface is built then; console has ten methods to
  // wrap), and many pages never make it. Until then the window's property is a getter of ours,
  // named as the browser's, that puts the browser's own back before anything else.
  const onFirstRead = (name, hook) => {
    const own = Object.getOwnPropertyDescriptor(window, name);
    if (!own?.configurable) return void hook(window[name]);
    const read = () => (define(window, name, own), hook(own.get ? own.get.call(window) : own.value));
    const set = own.get ? own.set : (value) => define(window, name, { ...own, value }); // `console = x`
    const { get } = Object.getOwnPropertyDescriptor({ get [name]() { return read(); } }, name);
    define(window, name, { get, set, enumerable: own.enumerable, configurable: true });
  };

  // --- Dialogs --------------------------------------------------------------------------------
  // alert/confirm/prompt ask the extension first (content/dom-dialogs.js, isolated world) through
  // synchronous DOM events: while an agent drives the tab it answers at once by its dialog
  // policy, so a native dialog never blocks a call; otherwise the native dialog opens as usual.
  // While driven, the page's beforeunload handlers do not run either, so the agent's navigation
  // never stops at "Leave site?" (shown only after a person's real input). No listener of ours
  // at load (it cost every page 0.4-0.5 ms in a new renderer), and one added later runs after
  // the page's own (seen in CI): the listener record below wraps the page's listeners as it adds
  // them (`leaving`), and once the tab is driven a guard stops those added after it and the
  // window's handler (`onbeforeunload`, `<body onbeforeunload>`) is wrapped, as is any set later.
  const leaving = (() => {
    const ASK = 'browser-mcp:dialog';
    const ANSWER = 'browser-mcp:dialog-answer';
    const UNTIL = 'browser-mcp:dialog-until';
    const native = { alert: window.alert, confirm: window.confirm, prompt: window.prompt };
    const descriptor = Object.getOwnPropertyDescriptor;
    const now = Date.now;
    const toNumber = Number;

    let drivenUntil = 0;
    const driven = () => now() < drivenUntil;
    const wrappers = new WeakMap(); // the page's listener -> ours, so that removing it removes ours
    const pageOf = new WeakMap(); // ours -> the page's (what the page reads back as its handler)
    function wrap(listener) {
      if (!listener || (typeof listener !== 'function' && typeof listener !== 'object')) return listener;
      let ours = wrappers.get(listener);
      if (!ours) {
        ours = function (event) {
          if (driven()) return undefined;
          return typeof listener === 'function' ? listener.call(this, event) : listener.handleEvent(event);
        };
        wrappers.set(listener, ours);
        pageOf.set(ours, listener);
      }
      return ours;
    }

    let guarding = false;
    function guard() {
      if (guarding) return;
      guarding = true;
      listen.call(window, 'beforeunload', (event) => driven() && event.stopImmediatePropagation(), true);
      const handler = descriptor(window, 'onbeforeunload');
      if (!handler?.set || !handler.configurable) return;
      // Setting a handler that is there keeps its place among the listeners (HTML's event
      // handler attributes), so the wrapped one still runs where the page's did.
      const current = handler.get.call(window);
      if (typeof current === 'function' && !pageOf.has(current)) handler.set.call(window, wrap(current));
      define(window, 'onbeforeunload', {
        get() { const h = handler.get.call(window); return pageOf.get(h) ?? h; },
        set(h) { handler.set.call(window, typeof h === 'function' ? wrap(h) : h); },
        configurable: true, enumerable: handler.enumerable,
      });
    }
    // dom-dialogs.js says until when the tab is driven (a string: only strings cross between the
    // worlds), and is told it was heard by the cancelled event. Listened for on the window in the
    // capture phase, so that no listener of the page's hears it first. The page can forge it: then
    // it only skips its own beforeunload handlers, which is its own business.
    listen.call(window, UNTIL, (event) => {
      event.preventDefault();
      drivenUntil = toNumber(event.detail) || 0;
      if (driven()) guard();
    }, true);

    function ask(kind, message, defaultText) {
      let answer = null;
      const take = (e) => void (answer = e.detail);
      listen.call(document, ANSWER, take);
      try {
        dispatch.call(document, custom(ASK, { detail: stringify({ kind, message: message === undefined ? '' : String(message), defaultText }) }));
      } finally {
        unlisten.call(document, ANSWER, take);
      }
      try {
        return typeof answer === 'string' ? parse(answer) : null;
      } catch {
        return null;
      }
    }

    window.alert = function alert(message) {
      const a = ask('alert', message);
      if (!a || a.native) return native.alert.apply(this, arguments);
    };
    window.confirm = function confirm(message) {
      const a = ask('confirm', message);
      if (!a || a.native) return native.confirm.apply(this, arguments);
      return a.accept === true;
    };
    window.prompt = function prompt(message, defaultText) {
      const def = defaultText === undefined ? '' : String(defaultText);
      const a = ask('prompt', message, def);
      if (!a || a.native) return native.prompt.apply(this, arguments);
      return a.accept === true ? (typeof a.text === 'string' ? a.text : def) : null;
    };
    // For the listener record: a page's beforeunload listener on the window, and its removal.
    return {
      add: (target, type, listener) => (type === 'beforeunload' && target === window ? wrap(listener) : listener),
      remove: (target, type, listener) => (type === 'beforeunload' && target === window ? wrappers.get(listener) ?? listener : listener),
    };
  })();

  // --- Listeners and keys ---------------------------------------------------------------------
  // The page-world half of the agent's input: which elements the page listens on for a press or
  // a drop (a `<div>` made a button by addEventListener leaves no trace in the DOM, yet deserves
  // a ref, issue 34), and key events as old editors read them. At load this only wraps
  // addEventListener (a Map lookup a call; a WeakMap add for the few types that matter) and
  // removeEventListener (for the dialogs' wrappers); the DOM kit asks for the elements.
  (() => {
    const ASK = 'browser-mcp:listeners';
    const MARK = 'browser-mcp:listens';
    const KEY = 'browser-mcp:key';
    // Bits: 1 a press or click, 2 a drop target.
    const KINDS = new Map([
      ['click', 1], ['dblclick', 1], ['mousedown', 1], ['mouseup', 1], ['pointerdown', 1], ['pointerup', 1], ['touchstart', 1],
      ['dragstart', 1], ['dragenter', 2], ['dragover', 2], ['drop', 2],
    ]);
    const proto = EventTarget.prototype;
    const kinds = new WeakMap(); // element -> bits
    let held = []; // WeakRefs of the elements in `kinds`, for the answer
    // A page that nobody snapshots may make and drop listened-on elements all day (a long list
    // re-rendered): the dead refs are swept whenever the list has doubled since the last sweep.
    let sweepAt = 1024;
    function sweep() {
      const alive = [];
      for (let i = 0; i < held.length; i++) if (held[i].deref()) alive[alive.length] = held[i];
      held = alive;
      sweepAt = Math.max(1024, alive.length * 2);
    }

    function addEventListener(type, listener, options) {
      const bit = KINDS.get(type);
      if (bit && this?.nodeType === 1) { // an Element (not reaching for Element at load)
        const had = kinds.get(this);
        if (had === undefined) {
          held[held.length] = new WeakRef(this);
          if (held.length > sweepAt) sweep();
        }
        if ((had | bit) !== had) kinds.set(this, had | bit);
      }
      return listen.call(this, type, leaving.add(this, type, listener), options);
    }
    // The page removes what it added: for a beforeunload listener, that is our wrapper (above).
    function removeEventListener(type, listener, options) {
      return unlisten.call(this, type, leaving.remove(this, type, listener), options);
    }
    Object.defineProperty(proto, 'addEventListener', { value: addEventListener, writable: true, configurable: true, enumerable: true });
    Object.defineProperty(proto, 'removeEventListener', { value: removeEventListener, writable: true, configurable: true, enumerable: true });

    // Key events with the legacy keyCode/which/charCode that older editors (CodeMirror 5) read:
    // only the world that reads an event can give it those, so dom-actions.js asks for each key
    // event here ({type, init, keyCode, charCode} as JSON, the element as the event's target).
    listen.call(window, KEY, (e) => {
      let req;
      try {
        req = parse(e.detail);
      } catch {
        return;
      }
      const target = e.composedPath()[0];
      const ev = new KeyboardEvent(req.type, { ...req.init, view: window });
      for (const [k, v] of [['keyCode', req.keyCode], ['which', req.keyCode], ['charCode', req.charCode]]) define(ev, k, { get: () => v });
      dispatch.call(target, ev);
    }, true);

    listen.call(document, ASK, () => {
      sweep();
      for (let i = 0; i < held.length; i++) {
        const el = held[i].deref();
        if (el?.isConnected) dispatch.call(el, custom(MARK, { detail: kinds.get(el), composed: true }));
      }
    });
  })();

  // --- Console --------------------------------------------------------------------------------
  // The page's console, seen from inside: wraps its methods (once the page reads console) and
  // listens for uncaught errors, unhandled rejections and CSP violations. Entries go in batches,
  // through DOM events, to console-relay.js (isolated world; in a subframe once its log is first
  // read). The page can see the wrapping and forge entries: that only costs it its own log. All
  // is bounded: texts cut to TEXT_MAX, at most KEEP_ERRORS errors/warnings and KEEP_OTHERS others
  // waiting for a flush (the newest win).
  (() => {
    const TO_RELAY = 'browser-mcp:console';
    const FLUSH = 'browser-mcp:console-flush';
    const TEXT_MAX = 1000;
    const KEEP_ERRORS = 500;
    const KEEP_OTHERS = 1000;
    const FLUSH_MS = 50;
    const later = setTimeout;
    const now = Date.now;
    const ErrorCtor = Error;
    const doc = document;
    let errors = [];
    let others = [];
    let dropped = 0;
    let seq = 0;
    let timer = null;
    let leaving = false;

    // The relay takes a batch by cancelling its event. Until one does (none in this frame yet,
    // or it went with a reloaded extension) the entries wait here, bounded as ever, and nothing
    // is tried again until the relay asks (FLUSH): no handshake costs a page at load (issue 30).
    let relayMissing = false;
    function flush() {
      timer = null;
      if (!errors.length && !others.length && !dropped) return;
      const entries = errors.length && others.length ? [...errors, ...others].sort((a, b) => a.seq - b.seq) : errors.length ? errors : others;
      let taken = false;
      try {
        taken = !dispatch.call(doc, custom(TO_RELAY, { detail: stringify({ entries, dropped }), cancelable: true }));
      } catch {
        // a document torn down: the page unharmed
      }
      relayMissing = !taken;
      if (!taken) return;
      errors = [];
      others = [];
      dropped = 0;
    }

    function push(entry) {
      entry.seq = ++seq;
      entry.time = now();
      entry.text = clip(entry.text);
      const bucket = entry.level === 'error' || entry.level === 'warn' ? errors : others;
      bucket.push(entry);
      if (bucket.length > (bucket === errors ? KEEP_ERRORS : KEEP_OTHERS)) {
        bucket.shift();
        dropped += 1;
      }
      if (!timer && !relayMissing) timer = later(flush, FLUSH_MS);
      if (!leaving) {
        // Entries logged just before a navigation still go out.
        leaving = true;
        listen.call(globalThis, 'pagehide', flush, true);
      }
    }

    const clip = (s) => (s.length > TEXT_MAX ? `${s.slice(0, TEXT_MAX - 1)}…` : s);

    // A short, bounded rendering of any value, the way the console would show it.
    function preview(v, depth = 0) {
      try {
        switch (typeof v) {
          case 'string':
            return depth ? stringify(v.length > 200 ? `${v.slice(0, 199)}…` : v) : v;
          case 'function':
            return `ƒ ${v.name || 'anonymous'}()`;
          case 'symbol':
            return v.toString();
          case 'object':
            break;
          default:
            return String(v);
        }
        if (v === null) return 'null';
        if (v instanceof ErrorCtor) return depth ? `${v.name}: ${v.message}` : errorWithStack(v);
        if (typeof Node === 'function' && v instanceof Node) {
          if (v.nodeType !== 1) return `#${v.nodeName.toLowerCase()}`;
          return `<${v.localName}${v.id ? `#${v.id}` : ''}${typeof v.className === 'string' && v.className ? `.${v.className.trim().split(/\s+/).join('.')}` : ''}>`;
        }
        if (depth >= 2) return Array.isArray(v) ? `Array(${v.length})` : '{…}';
        if (Array.isArray(v)) {
          const items = v.slice(0, 10).map((x) => preview(x, depth + 1));
          return `[${items.join(', ')}${v.length > 10 ? `, … ${v.length - 10} more` : ''}]`;
        }
        const keys = Object.keys(v);
        const parts = keys.slice(0, 10).map((k) => `${k}: ${preview(v[k], depth + 1)}`);
        return `{${parts.join(', ')}${keys.length > 10 ? ', …' : ''}}`;
      } catch {
        return '[unprintable]';
      }
    }

    // V8's stack starts with "Name: message"; Firefox's is only the frames ("@url:line:col").
    function errorWithStack(e) {
      const head = `${e.name}: ${e.message}`;
      const stack = String(e.stack || '');
      return !stack ? head : stack.startsWith(head) ? stack : `${head}\n${stack}`;
    }

    // An uncaught exception as Chromium words it ("Uncaught TypeError: …"); Firefox says
    // "TypeError: …", or "uncaught exception: …" for a thrown non-Error.
    const uncaught = (message) =>
      /^Uncaught\b/.test(message) ? message : `Uncaught ${message.replace(/^uncaught exception: /, '')}`;

    // console.log('%s has %d items', a, n): the substitutions the console itself makes.
    function format(args) {
      if (!args.length) return '';
      let rest = args;
      let head = '';
      if (typeof args[0] === 'string' && args[0].includes('%')) {
        let i = 1;
        head = args[0].replace(/%([sdifoOc%])/g, (m, c) => {
          if (c === '%') return '%';
          if (i >= args.length) return m;
          const a = args[i++];
          if (c === 'c') return '';
          if (c === 'd' || c === 'i') return String(parseInt(a, 10));
          if (c === 'f') return String(parseFloat(a));
          return preview(a, c === 's' ? 0 : 1);
        });
        rest = args.slice(i);
      } else {
        head = preview(args[0]);
        rest = args.slice(1);
      }
      let out = head;
      for (const a of rest) {
        if (out.length > TEXT_MAX) break;
        out += ` ${preview(a)}`;
      }
      return out;
    }

    // Our own frames (the minified file or this one), not a page's file of the same name.
    const OURS = /^(?:chrome|moz)-extension:\/\/[^/]+\/page\/document-start(?:\.min)?\.js$/;
    const FRAME = /\(?((?:https?|file|blob|chrome-extension|about|data):.*?):(\d+):(\d+)\)?\s*$/;

    // The first stack frame outside this file: where the page called console.*.
    function caller(stack) {
      const lines = String(stack || '').split('\n');
      for (const l of lines) {
        const m = FRAME.exec(l);
        if (m && !OURS.test(m[1])) return { url: m[1], line: +m[2], column: +m[3] };
      }
      return null;
    }

    function callSite() {
      const limit = ErrorCtor.stackTraceLimit;
      ErrorCtor.stackTraceLimit = 4;
      const stack = new ErrorCtor().stack;
      ErrorCtor.stackTraceLimit = limit;
      return caller(stack);
    }

    const LEVELS = { debug: 'debug', log: 'log', info: 'info', warn: 'warn', error: 'error', trace: 'debug', dir: 'log', dirxml: 'log', table: 'log', assert: 'error' };

    onFirstRead('console', (console) => {
      for (const [method, level] of Object.entries(LEVELS)) wrap(console, method, level);
      return console;
    });
    function wrap(console, method, level) {
      const original = console[method];
      if (typeof original !== 'function') return;
      const wrapped = {
        [method](...args) {
          try {
            let text;
            if (method === 'assert') {
              if (args[0]) return original.apply(this, args);
              text = `Assertion failed${args.length > 1 ? `: ${format(args.slice(1))}` : ''}`;
            } else {
              text = format(args);
              if (method === 'trace') text = `console.trace${text ? `: ${text}` : ''}`;
            }
            push({ level, source: 'console', text, ...(callSite() || {}) });
          } catch {
            // never break the page's own console call
          }
          return original.apply(this, args);
        },
      }[method];
      try {
        define(console, method, { value: wrapped, writable: true, configurable: true, enumerable: true });
      } catch {
        // a frozen console: nothing to capture here
      }
    }

    listen.call(globalThis, 'error', (e) => {
      if (!(e instanceof ErrorEvent)) return; // a resource that failed to load (network log)
      const stack = e.error instanceof ErrorCtor ? e.error.stack : '';
      const site = e.filename ? { url: e.filename, line: e.lineno, column: e.colno } : caller(stack);
      push({ level: 'error', source: 'exception', text: e.message ? uncaught(e.message) : `Uncaught ${preview(e.error)}`, ...(site || {}) });
    }, true);

    listen.call(globalThis, 'unhandledrejection', (e) => {
      const r = e.reason;
      const site = r instanceof ErrorCtor ? caller(r.stack) : null;
      push({ level: 'error', source: 'rejection', text: `Uncaught (in promise) ${preview(r, r instanceof ErrorCtor ? 1 : 0)}`, ...(site || {}) });
    }, true);

    listen.call(doc, 'securitypolicyviolation', (e) => {
      const what = e.blockedURI ? `'${e.blockedURI}'` : 'a resource';
      push({
        level: 'error',
        source: 'csp',
        text: `Refused to load ${what}: it violates the Content Security Policy directive "${e.violatedDirective}"`,
        ...(e.sourceFile ? { url: e.sourceFile, line: e.lineNumber, column: e.columnNumber } : {}),
      });
    }, true);

    // The relay asks before a tool call reads the log (and once injected): what waits goes now.
    listen.call(doc, FLUSH, () => {
      relayMissing = false;
      flush();
    });
  })();

  // --- WebMCP ---------------------------------------------------------------------------------
  // The page's navigator.modelContext and document.modelContext, top frame only: our shim where
  // the browser has no WebMCP, else an adapter over Chromium's or Firefox's own object (what each
  // lacks and what we add: extension/README.md, "Page tools"). It reports the tool list to
  // content.js and runs calls for it; a page with no tools sends nothing.
  (() => {
    if (window !== window.top) return;

    const TO_PAGE = 'browser-mcp:to-page';
    const FROM_PAGE = 'browser-mcp:from-page';
    const send = (msg) => document.dispatchEvent(new CustomEvent(FROM_PAGE, { detail: JSON.stringify(msg) }));
    const json = (value) => (value === undefined ? null : JSON.parse(JSON.stringify(value)));
    const errorMessage = (e) => String(e && e.message !== undefined ? e.message : e);
    const nativeInDocument = 'modelContext' in document; // before our placeholder

    // Everything else is built the first time the page (or the worker) needs it: a page that
    // never uses WebMCP pays for document's placeholder, navigator's getter and a listener.
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
          get ontoolchange() { return ontoolchange; },
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
      for (const [name, fn] of Object.entries(extra)) if (typeof api[name] !== 'function') define(api, name, { value: fn, configurable: true, writable: true });
      if (!('modelContext' in navigator)) define(navigator, 'modelContext', { get: () => document.modelContext, configurable: true, enumerable: true });
      return { list, call, changed };
    }

    let shim = null;
    const built = () => (shim ??= build());
    // The placeholders: the first read of modelContext builds the shim and answers with it.
    const placeholder = (target, real) => define(target, 'modelContext', { get: () => (built(), real()), configurable: true, enumerable: true });
    placeholder(document, () => document.modelContext);
    let nativeInNavigator; // set as navigator's placeholder goes on: when navigator is first read
    onFirstRead('navigator', (nav) => {
      nativeInNavigator = 'modelContext' in nav;
      placeholder(nav, () => navigator.modelContext);
      return nav;
    });
    const nativeApi = () => nativeInDocument || ('modelContext' in navigator && nativeInNavigator);

    // --- requests from content.js ------------------------------------------------------------------

    listen.call(document, TO_PAGE, async (event) => {
      let msg;
      try {
        msg = JSON.parse(event.detail);
      } catch {
        return;
      }
      // Before the shim is built the page has registered nothing through it; a browser with its
      // own WebMCP may hold tools the page declared without script, so it is asked.
      if (msg?.kind === 'sync') return (shim || nativeApi()) && built().changed();
      if (msg?.kind === 'list') return send({ kind: 'reply', id: msg.id, tools: await built().list().catch(() => []) });
      if (msg?.kind !== 'call') return;
      try {
        const result = json(await built().call(msg.name, msg.args));
        send({ kind: 'reply', id: msg.id, result });
      } catch (e) {
        send({ kind: 'reply', id: msg.id, error: { code: e?.code || 'TOOL_ERROR', message: errorMessage(e) } });
      }
    });

    if (nativeInDocument) built().changed(); // tools the page declared without script
  })();
})();
