// The DOM half of the built-in tools: what they share (the ref table, roles and accessible names,
// visibility) and the entry point the service worker calls. Runs in the extension's isolated
// world of each frame it is put into, so the page can neither see the ref table nor tamper with
// these functions. dom-snapshot.js and dom-actions.js add their tools to `tools`. Put into a frame
// the first time a tool needs it (worker/frames/frame-channel.js), not with every page.
globalThis.browserMcpDom ??= (() => {
  const fail = (code, message) => {
    const e = new Error(message);
    e.code = code;
    throw e;
  };

  // "" in the top frame, "f<frameId>" in a subframe: refs are unique across the frames of a tab.
  // The service worker says which with every request (a document never changes frames).
  let prefix = '';

  // Refs are handed out once per element and kept for the life of the document, so a ref from an
  // earlier snapshot still means the same element. The table holds local refs ("e7").
  const refOf = new WeakMap();
  const byRef = new Map();
  let nextRef = 1;
  function ref(el) {
    let r = refOf.get(el);
    if (!r) {
      r = `e${nextRef++}`;
      refOf.set(el, r);
      byRef.set(r, new WeakRef(el));
    }
    return prefix + r;
  }
  const hasRef = (el) => refOf.has(el);

  function query(selector, root = document) {
    try {
      return root.querySelector(selector);
    } catch {
      return fail('INVALID_ARGUMENTS', `invalid CSS selector: ${selector}`);
    }
  }

  // An element by local ref (the service worker strips the frame prefix) or by CSS selector.
  function resolve(args, { refKey = 'ref', selectorKey = 'selector', what = 'element' } = {}) {
    const r = args[refKey];
    if (typeof r === 'string' && r) {
      const el = byRef.get(r)?.deref();
      if (!el || !el.isConnected) fail('ELEMENT_NOT_FOUND', `ref ${prefix}${r} is unknown or gone from the page; take a new browser_snapshot`);
      return el;
    }
    const s = args[selectorKey];
    if (typeof s === 'string' && s) {
      const el = query(s);
      if (!el) fail('ELEMENT_NOT_FOUND', `no ${what} matches ${s}`);
      return el;
    }
    return fail('INVALID_ARGUMENTS', `give "${refKey}" (from browser_snapshot) or "${selectorKey}"`);
  }

  function visible(el) {
    if (el.checkVisibility ? el.checkVisibility({ checkVisibilityCSS: true }) : el.getClientRects().length > 0) return true;
    // display: contents has no box of its own, but its children do.
    return getComputedStyle(el).display === 'contents';
  }

  // --- rendered: what a person could see and reach (issue 57) ---------------------------------
  // Not `visibility: hidden`, not in an `inert` subtree, a box of some area (its own, or a
  // child's when its own has none: a link around a floated image), and not clipped to nothing
  // (a box of no area that clips what it holds, as listboxes keep their accessibility copies;
  // `clip: rect(0 0 0 0)`, `clip-path: inset(50%)`: the screen-reader-only patterns). Off
  // screen or scrolled out of a scroller still counts: scrolling brings it in.
  const up = (n) => n.parentElement || n.parentNode?.host || null;
  const isRect = (r) => r.width > 0 && r.height > 0;
  // A `clip` or `clip-path` that leaves nothing (pure: the unit tests read it).
  function clipsAll(clip, clipPath) {
    const rect = /^rect\((.*)\)$/.exec(clip || '');
    if (rect) {
      const [top, right, bottom, left] = rect[1].split(/[\s,]+/).map((v) => (v === 'auto' ? NaN : parseFloat(v)));
      if (right - left <= 0 || bottom - top <= 0) return true;
    }
    const inset = /^inset\(\s*([\d.]+)%/.exec(clipPath || '');
    return Boolean(inset && Number(inset[1]) >= 50) || /^circle\(\s*0(px)?[\s)]/.test(clipPath || '');
  }
  // What an ancestor does to what it holds, computed once per element (a snapshot passes one
  // memo for all its elements: a page's deep trees share ancestors).
  function facts(el, memo) {
    let f = memo?.get(el);
    if (f) return f;
    const s = getComputedStyle(el);
    const paint = /paint|strict|content/.test(s.contain || '');
    const inline = s.display === 'inline' || s.display === 'contents';
    // Inline boxes and SVG's inner elements have no box of their own to clip with.
    const box = !inline && !(el instanceof SVGElement && el.ownerSVGElement);
    const xClip = box && (paint || s.overflowX !== 'visible');
    const yClip = box && (paint || s.overflowY !== 'visible');
    f = {
      inert: el.hasAttribute('inert'),
      position: s.position,
      // Holds position: fixed descendants too (a transform, a filter, paint containment).
      holdsFixed: s.transform !== 'none' || s.filter !== 'none' || paint,
      nothing: clipsAll(s.clip, s.clipPath) || (xClip && el.clientWidth === 0) || (yClip && el.clientHeight === 0),
    };
    memo?.set(el, f);
    return f;
  }
  // Whether `el`'s box is clipped to nothing by itself or by an ancestor it is laid out in: an
  // absolutely placed box escapes the ancestors below its containing block, a fixed one all
  // but those that hold fixed boxes. Also says whether an ancestor is inert.
  function clippedAway(el, style, memo, keyboard) {
    if (!keyboard && clipsAll(style.clip, style.clipPath)) return true;
    let mode = style.position;
    for (let a = up(el); a; a = up(a)) {
      const f = facts(a, memo);
      if (f.inert) return true;
      const contains = mode === 'fixed' ? f.holdsFixed : mode === 'absolute' ? f.position !== 'static' || f.holdsFixed : true;
      if (!contains) continue;
      if (f.nothing && !keyboard) return true;
      mode = f.position;
    }
    return false;
  }
  // The box an action on `el` aims at: its own, or (a box of no area) its first child's that
  // has one; null when neither has any.
  function actionBox(el) {
    const own = el.getBoundingClientRect();
    if (isRect(own)) return own;
    let n = 0;
    for (const c of el.querySelectorAll('*')) {
      const r = c.getBoundingClientRect();
      if (isRect(r)) return r;
      if (++n >= 20) break;
    }
    return null;
  }
  // A field that takes text is reached by the keyboard, not by sight: code editors (CodeMirror,
  // Ace) keep theirs clipped to nothing under the text they draw, and typing there works.
  function rendered(el, memo, style = getComputedStyle(el)) {
    if (style.visibility !== 'visible' || el.hasAttribute('inert')) return false;
    if (style.display === 'contents') return [...el.children].some((c) => rendered(c, memo));
    return actionBox(el) !== null && !clippedAway(el, style, memo, textField(el));
  }
  const NOT_TEXT = ['checkbox', 'radio', 'button', 'submit', 'reset', 'file', 'image', 'range', 'color'];
  // A textarea or an input one types in.
  const textField = (el) => el instanceof HTMLTextAreaElement || (el instanceof HTMLInputElement && !NOT_TEXT.includes(el.type));
  // What a person reaches `el` through: itself when it is rendered, else a rendered <label> of
  // it (a form control hidden for screen readers behind the label one clicks), else null.
  function reachable(el, memo) {
    if (rendered(el, memo)) return el;
    for (const l of el.labels || []) if (rendered(l, memo)) return l;
    return null;
  }

  const INTERACTIVE = 'a[href], button, input:not([type=hidden]), textarea, select, summary, [contenteditable=""], [contenteditable=true], ' +
    '[onclick], [onmousedown], [ondblclick], [draggable=true], [ondragstart], [ondrop], [ondragover], ' +
    '[role=button], [role=link], [role=checkbox], [role=radio], [role=tab], [role=menuitem], [role=menuitemcheckbox], [role=menuitemradio], ' +
    '[role=option], [role=switch], [role=textbox], [role=searchbox], [role=combobox], [role=slider], [role=spinbutton], [role=treeitem], ' +
    '[role=gridcell], [role=columnheader], [role=rowheader], [tabindex]:not([tabindex="-1"])';
  const POINTER = new Set(['pointer', 'grab', 'grabbing', 'move']);
  // Boxes that hold a page's own text: an element listened on that holds one is a container
  // with a delegated listener, not a control, unless it takes drops.
  const BOXES = 'p, div, section, article, ul, ol, li, table, form, main, nav, header, footer, aside, h1, h2, h3, h4, h5, h6, dl, pre, blockquote';

  // The elements the page listens on for presses (bit 1) and drops (bit 2), as the page world
  // (page/document-start.js) tells on request: asked once per snapshot, by one synchronous
  // event, each element answering with one of its own.
  const ASK_LISTENERS = 'browser-mcp:listeners';
  const LISTENS = 'browser-mcp:listens';
  let listened = new WeakMap();
  let holding = new WeakSet(); // the ancestors of the elements in `listened`
  function probeListeners() {
    const found = new WeakMap();
    const above = new WeakSet();
    const take = (e) => {
      const el = e.composedPath()[0];
      if (!(el instanceof Element)) return;
      found.set(el, (found.get(el) | 0) | (e.detail | 0));
      for (let p = el.parentNode; p && !above.has(p); p = p.parentNode || p.host) above.add(p);
    };
    window.addEventListener(LISTENS, take, true);
    try {
      document.dispatchEvent(new CustomEvent(ASK_LISTENERS));
    } finally {
      window.removeEventListener(LISTENS, take, true);
    }
    listened = found;
    holding = above;
  }
  const holdsListened = (el) => holding.has(el);
  const listenedOn = (el) => (el === document.body || el === document.documentElement ? 0 : listened.get(el) | 0);

  // What a person could act on: the usual controls, elements with handlers in attributes or
  // added by script (a plain <div> drop zone, a <span> button), drag sources and drop zones, and
  // elements whose own cursor says "click or drag me".
  function interactive(el, style) {
    if (el.matches(INTERACTIVE)) return true;
    const bits = listenedOn(el);
    // A press listener on a box of text is a delegated one (a list's, a page's), but on a box
    // without text it is a control drawn by CSS (a slider's track).
    if (bits & 2 || (bits & 1 && (!el.querySelector(BOXES) || !el.innerText.trim()))) return true;
    const cursor = (style || getComputedStyle(el)).cursor;
    if (!POINTER.has(cursor)) return false;
    const parent = el.parentElement;
    return !parent || getComputedStyle(parent).cursor !== cursor;
  }

  // Text CSS puts before and after an element (`::before { content: "Heading 1" }`, a common
  // way pickers and icon buttons name themselves), with attr() resolved.
  function generated(el, which) {
    const c = getComputedStyle(el, which).content;
    if (!c || c === 'none' || c === 'normal') return '';
    let out = '';
    const re = /"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|attr\(\s*([\w-]+)\s*\)/g;
    for (let m; (m = re.exec(c));) out += m[3] ? el.getAttribute(m[3]) || '' : (m[1] ?? m[2]).replace(/\\(.)/g, '$1');
    return out;
  }
  const withGenerated = (el, inner) => `${generated(el, '::before')}${inner}${generated(el, '::after')}`;

  const squash = (s, max = 80) => {
    const t = (s || '').replace(/\s+/g, ' ').trim();
    return t.length > max ? `${t.slice(0, max - 1)}…` : t;
  };

  // The accessible-name computation and ARIA roles of dom-accessibility-api (vendored; injected
  // before this file).
  const lib = (id) => {
    const m = globalThis.browserMcpModules?.get(id);
    if (!m) fail('TOOL_ERROR', `the vendored module ${id} did not load`);
    return m;
  };
  const NAMELESS = new Set(['generic', 'none', 'presentation', 'paragraph']);

  function role(el) {
    if (el instanceof HTMLInputElement && el.type === 'file') return 'file-chooser';
    if (el instanceof HTMLIFrameElement || el instanceof HTMLFrameElement) return 'iframe';
    const r = lib('getRole').default(el);
    if (r && !NAMELESS.has(r)) return r;
    if (el.isContentEditable) return 'textbox';
    if (el.getAttribute('draggable') === 'true' || el.hasAttribute('ondragstart')) return 'draggable';
    if (el.hasAttribute('ondrop') || el.hasAttribute('ondragover') || listenedOn(el) & 2) return 'dropzone';
    return 'clickable';
  }

  // innerText leaves generated content out; a nameless control often has nothing else. The
  // element's own and its children's (one level: icon spans), but for children not rendered,
  // whose innerText is all their text, shown or not (a hidden toolbar's labels, a <style>).
  function innerTextWithGenerated(el) {
    let t = withGenerated(el, el.innerText || '');
    if (!t.trim()) for (const c of el.children) if (laidOut(c)) t += withGenerated(c, c.innerText || '');
    return t;
  }
  const laidOut = (el) => (el.checkVisibility ? el.checkVisibility() || getComputedStyle(el).display === 'contents' : el.getClientRects().length > 0);

  function accessibleName(el) {
    let name = '';
    try {
      name = lib('accessible-name').computeAccessibleName(el, { computedStyleSupportsPseudoElements: true });
    } catch {
      // a page whose DOM the library trips over still gets the text below
    }
    if (!name && el instanceof HTMLInputElement && el.type === 'file') name = el.multiple ? 'Choose Files' : 'Choose File';
    if (!name && (el instanceof HTMLIFrameElement || el instanceof HTMLFrameElement)) name = el.title || el.name || '';
    if (!name && !(el instanceof HTMLInputElement || el instanceof HTMLSelectElement || el instanceof HTMLTextAreaElement)) name = innerTextWithGenerated(el);
    if (!name) name = el.getAttribute('title') || el.getAttribute('placeholder') || '';
    return squash(name);
  }

  // What a control shows, without what only decorates it (an aria-hidden chevron) or is not
  // rendered: a button combobox's chosen option.
  function shownText(el) {
    let t = '';
    for (const n of el.childNodes) {
      if (n.nodeType === Node.TEXT_NODE) t += n.data;
      else if (n.nodeType !== Node.ELEMENT_NODE || n.getAttribute('aria-hidden') === 'true' || !laidOut(n)) continue;
      else t += n.querySelector('[aria-hidden="true"]') ? ` ${shownText(n)} ` : n.innerText || '';
    }
    return t;
  }

  // Named by its author rather than by its content.
  const labelled = (el) => el.hasAttribute('aria-label') || el.hasAttribute('aria-labelledby') || el.hasAttribute('title');

  function describe(el) {
    const d = { ref: ref(el), role: role(el), name: accessibleName(el) };
    if (el instanceof HTMLSelectElement) {
      d.value = [...el.selectedOptions].map((o) => o.value).join(', ');
      d.options = [...el.options].slice(0, 50).map((o) => squash(o.label || o.text, 40));
    } else if (el instanceof HTMLInputElement && el.type === 'file') {
      d.files = [...(el.files || [])].map((f) => f.name);
      if (el.accept) d.accept = el.accept;
      if (el.multiple) d.multiple = true;
    } else if (el instanceof HTMLInputElement && ['checkbox', 'radio'].includes(el.type)) {
      d.checked = el.checked;
    } else if ((el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) && !['button', 'submit', 'reset', 'image'].includes(el.type)) {
      d.value = squash(el.type === 'password' ? '•'.repeat(el.value.length) : el.value, 200);
    } else if (d.role === 'combobox' && labelled(el)) {
      // A combobox that is no text field (Radix's, Ark's, MUI's trigger) shows its value as
      // its content, which a label's name hides.
      const shown = squash(shownText(el), 60);
      if (shown && shown !== d.name) d.value = shown;
    } else if (el.getAttribute('aria-checked')) {
      d.checked = el.getAttribute('aria-checked') === 'true';
    } else if (el.hasAttribute('aria-valuenow') || el.hasAttribute('aria-valuetext')) {
      // sliders, spin buttons: where the handle is
      d.value = squash(el.getAttribute('aria-valuetext') || el.getAttribute('aria-valuenow'), 40);
    }
    if (el instanceof HTMLAnchorElement && el.href) d.href = el.href;
    if (el.disabled || el.getAttribute('aria-disabled') === 'true') d.disabled = true;
    return d;
  }

  function line(d) {
    let s = `[${d.role} ${d.ref}] ${d.name}`.trimEnd();
    if (d.value !== undefined && d.value !== '') s += ` = ${JSON.stringify(d.value)}`;
    if (d.checked !== undefined) s += d.checked ? ' (checked)' : ' (unchecked)';
    if (d.options) s += ` options: ${d.options.join(' | ')}`;
    if (d.files) {
      const facts = [d.files.length ? `files: ${d.files.join(', ')}` : 'no file chosen'];
      if (d.accept) facts.push(`accepts ${d.accept}`);
      if (d.multiple) facts.push('multiple');
      s += ` (${facts.join('; ')})`;
    }
    if (d.disabled) s += ' (disabled)';
    return s;
  }

  const describeShort = (el) => `${role(el)} "${accessibleName(el)}" (${ref(el)})`;

  // This window's position among its parent's frames (window.frames order, which the parent's
  // snapshot sees too): how the service worker matches a frame to its <iframe> in the parent.
  function indexInParent() {
    if (window.parent === window) return -1;
    try {
      for (let i = 0; i < window.parent.frames.length; i++) if (window.parent.frames[i] === window) return i;
    } catch {
      // a parent that forbids even this
    }
    return -1;
  }

  const tools = {};

  // This document's name for the worker. A call with a ref says which document gave the ref,
  // and a frame that shows another one refuses it rather than find a stranger with the same
  // number: chrome.scripting may run a call meant for a document in the back/forward cache in
  // the frame's next one, and Firefox names no documents.
  const documentToken = Array.from(crypto.getRandomValues(new Uint32Array(2)), (n) => n.toString(36)).join('.');

  // `frame` is this frame's ref prefix.
  async function run({ name, args, frame, document: expected }) {
    try {
      if (expected !== undefined && expected !== documentToken) fail('FRAME_GONE', 'the frame shows another document');
      const fn = Object.hasOwn(tools, name) ? tools[name] : null;
      if (!fn) fail('TOOL_NOT_FOUND', `no built-in tool browser_${name}`);
      const dialogs = globalThis.browserMcpDialogs;
      if (typeof frame === 'string') {
        prefix = frame;
        if (dialogs) dialogs.prefix = frame;
      }
      const result = await (dialogs ? dialogs.around(() => fn(args || {})) : fn(args || {}));
      return { result: result ?? null };
    } catch (e) {
      return { error: { code: e?.code || 'TOOL_ERROR', message: String(e?.message ?? e) } };
    }
  }

  return {
    fail,
    ref,
    resolve,
    query,
    visible,
    rendered,
    reachable,
    textField,
    actionBox,
    clipsAll,
    up,
    hasRef,
    interactive,
    listenedOn,
    probeListeners,
    holdsListened,
    labelled,
    BOXES,
    role,
    accessibleName,
    describe,
    describeShort,
    line,
    squash,
    indexInParent,
    INTERACTIVE,
    tools,
    get prefix() {
      return prefix;
    },
    // The service worker's entry point, called by a function it injects
    // (worker/frames/frame-channel.js): the answer is a value, as an injection's result is, and
    // names this document.
    answer(req) {
      // An injection whose promise is pending as its document goes (a navigation, the
      // back/forward cache, a removed frame) would never settle: it answers that it went.
      return new Promise((resolve) => {
        const gone = () => resolve({ gone: true });
        addEventListener('pagehide', gone, { once: true });
        run(req || {}).then((reply) => {
          removeEventListener('pagehide', gone);
          resolve({ ...reply, document: documentToken });
        });
      });
    },
  };
})();
