// The page's console, seen from inside: runs in the page's own world in every frame at
// document_start (before any page script), wraps the console methods and listens for uncaught
// errors, unhandled rejections and CSP violations. Entries go in batches, through DOM events, to
// console-relay.js in the extension's isolated world, which forwards them to the service worker
// (a subframe has the relay only once the worker first reads its log: issue 30).
//
// The page can see the wrapping and can forge entries; that only ever costs it its own console
// log. Everything here is bounded: each text is cut to TEXT_MAX characters and at most
// KEEP_ERRORS errors/warnings and KEEP_OTHERS other entries wait for a flush (the newest win).
(() => {
  const GUARD = Symbol.for('browser-mcp.console-capture');
  if (globalThis[GUARD]) return; // injected twice (manifest + on-demand injection)
  Object.defineProperty(globalThis, GUARD, { value: true });

  const TO_RELAY = 'browser-mcp:console';
  const FLUSH = 'browser-mcp:console-flush';
  const TEXT_MAX = 1000;
  const KEEP_ERRORS = 500;
  const KEEP_OTHERS = 1000;
  const FLUSH_MS = 50;

  // The page may replace any of these later; ours are the originals.
  const stringify = JSON.stringify;
  const dispatch = EventTarget.prototype.dispatchEvent;
  const listen = EventTarget.prototype.addEventListener;
  const Custom = CustomEvent;
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
      taken = !dispatch.call(doc, new Custom(TO_RELAY, { detail: stringify({ entries, dropped }), cancelable: true }));
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

  const OURS = /console-capture\.js/;
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

  for (const [method, level] of Object.entries(LEVELS)) {
    const original = console[method];
    if (typeof original !== 'function') continue;
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
      Object.defineProperty(console, method, { value: wrapped, writable: true, configurable: true, enumerable: true });
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

  // The relay asks before a tool call reads the log (and once it is injected later): what is
  // waiting goes out now.
  listen.call(doc, FLUSH, () => {
    relayMissing = false;
    flush();
  });
})();
