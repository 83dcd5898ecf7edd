// browser_snapshot, one frame's part: the frame's text and interactive elements in document
// order, with a placeholder where each child frame goes (the service worker, frames.js, splices
// the frames together and applies the budget across them).
(() => {
  const dom = globalThis.browserMcpDom;
  if (dom.tools.snapshot) return;

  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'svg', 'SVG', 'LINK', 'META']);
  const BLOCK = /^(P|DIV|SECTION|ARTICLE|MAIN|HEADER|FOOTER|NAV|ASIDE|LI|UL|OL|TABLE|TR|FORM|FIELDSET|BLOCKQUOTE|PRE|DL|DT|DD|FIGURE|FIGCAPTION|BR|HR|DETAILS|DIALOG)$/;
  // Containers worth offering as a scope when the budget cuts the snapshot short.
  const REGION = /^(MAIN|NAV|ASIDE|SECTION|ARTICLE|FORM|TABLE|UL|OL|DIALOG|FIELDSET|IFRAME|FRAME)$/;
  const MAX_REGIONS = 8;
  const NATIVE = /^(A|BUTTON|INPUT|SELECT|TEXTAREA|SUMMARY)$/;
  const REGION_SELECTOR = 'main, nav, aside, section, article, form, table, ul, ol, dialog, fieldset, iframe, frame';
  const ROW = /^(row)$/;
  const LEAF = /^(DIV|LI|TD|TH|DD|DT)$/;
  const SHORT = 40;

  // args: maxChars (this frame's budget), interactiveOnly, scopeRef (local) or scopeSelector.
  // Returns {url, title, index, items, more, regions}: items are {text}, {el, line} or
  // {frame: index in window.frames, line}; `more` counts the interactive elements past the
  // budget, `regions` names containers past it that a scoped snapshot could show.
  function snapshot(args) {
    const maxChars = Number.isFinite(args.maxChars) ? args.maxChars : 20_000;
    const interactiveOnly = args.interactiveOnly === true;
    let root = document.body || document.documentElement;
    if (args.scopeRef || args.scopeSelector) root = dom.resolve({ ref: args.scopeRef, selector: args.scopeSelector });
    dom.probeListeners();
    // What each ancestor does to the boxes it holds, shared by every element's "rendered" check.
    const memo = new Map();
    let itemsOf = null; // a focusable row or a list that takes drops: its children are what one acts on

    const items = [];
    let chars = 0;
    let full = false; // past the budget: only counting from here on
    let more = 0;
    const regions = [];
    let frameIndex = null; // contentWindow -> index in window.frames, built on the first frame
    const push = (item) => {
      const size = item.line.length + 1;
      if (chars + size > maxChars) {
        full = true;
        return false;
      }
      chars += size;
      items.push(item);
      return true;
    };

    let current = '';
    const flush = () => {
      const t = current.replace(/\s+/g, ' ').trim();
      current = '';
      if (t && !interactiveOnly && !full) push({ text: true, line: t });
    };

    const frameOf = (el) => {
      if (!frameIndex) {
        frameIndex = new Map();
        for (let i = 0; i < window.frames.length; i++) frameIndex.set(window.frames[i], i);
      }
      return frameIndex.get(el.contentWindow) ?? -1;
    };

    // Past the budget: what is left is only counted, by selector (native, fast even for tens of
    // thousands of elements; hidden ones inside a visible subtree count too), and the first few
    // containers are named as scopes to ask for.
    const countRest = (el) => {
      more += (el.matches(dom.INTERACTIVE) ? 1 : 0) + el.querySelectorAll(dom.INTERACTIVE).length;
      if (regions.length >= MAX_REGIONS) return;
      for (const r of [el, ...el.querySelectorAll(REGION_SELECTOR)]) {
        if (regions.length >= MAX_REGIONS) break;
        if (!REGION.test(r.tagName) || !dom.visible(r)) continue;
        const label = dom.accessibleName(r) || dom.squash(r.querySelector('h1,h2,h3,h4,legend,caption,summary')?.innerText || '', 40);
        regions.push(`[${r.tagName.toLowerCase()} ${dom.ref(r)}]${label ? ` "${label}"` : ''}`);
      }
    };

    const walk = (node) => {
      if (node.nodeType === Node.TEXT_NODE) {
        if (!full) current += node.data;
        return;
      }
      if (node.nodeType !== Node.ELEMENT_NODE) return;
      if (SKIP.has(node.tagName)) {
        // A drawing is no text, but an <svg> that is a control itself (role=button) is one.
        if (node instanceof SVGSVGElement && !full && dom.visible(node) && dom.interactive(node) && dom.reachable(node, memo)) {
          flush();
          const d = dom.describe(node);
          if (!push({ el: d, line: dom.line(d) })) more++;
        }
        return;
      }
      const el = node;
      if (el.hidden || el.getAttribute('aria-hidden') === 'true' || !dom.visible(el)) return;
      if (full) {
        countRest(el);
        return;
      }
      if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {
        flush();
        if (full) return;
        const index = frameOf(el);
        push({ frame: index, line: dom.line(dom.describe(el)) + (el.src && !el.src.startsWith('about:') ? ` ${el.src}` : '') });
        return;
      }
      const item = itemsOf !== null && (el.parentElement === itemsOf || el.parentNode?.host === itemsOf);
      // An element a person cannot see or reach gets no ref (issue 57): a listbox's 0×0
      // accessibility copies of its options must not stand for the options one clicks.
      if ((item || dom.interactive(el)) && dom.reachable(el, memo)) {
        flush();
        const d = dom.describe(el);
        // A focusable row (a grid's, often tabindex=0) is not one control: its cells and
        // headers are, each with its own line; nor is a list that takes drops (a sortable
        // list): its items are. Their line keeps only the ref.
        const whole = (ROW.test(d.role) || d.role === 'dropzone' || dom.listenedOn(el) & 2) && el.firstElementChild && !dom.labelled(el);
        if (whole) d.name = '';
        if (!push({ el: d, line: dom.line(d) })) more++;
        // A clickable card or a drop zone may hold controls of its own; a native control's
        // content is its name.
        if (whole || (!NATIVE.test(el.tagName) && (el.querySelector(dom.INTERACTIVE) || dom.holdsListened(el)))) {
          const outer = itemsOf;
          itemsOf = whole ? el : null;
          for (const child of el.children) walk(child);
          if (el.shadowRoot) for (const child of el.shadowRoot.children) walk(child);
          itemsOf = outer;
          current = '';
        }
        return;
      }
      // A label's text already names its control's line.
      if (el.tagName === 'LABEL' && el.control && dom.visible(el.control)) {
        if (el.contains(el.control)) walk(el.control);
        return;
      }
      const heading = /^H([1-6])$/.exec(el.tagName);
      if (heading && !el.querySelector(dom.INTERACTIVE)) {
        flush();
        if (!interactiveOnly && !full) push({ text: true, line: `${'#'.repeat(+heading[1])} ${dom.squash(el.innerText, 300)}` });
        return;
      }
      // A short text in a box of its own gets a ref on its line (`[text e4] Drop here`): a drop
      // zone or a cell that only the page's geometry makes one, or that listens through an
      // ancestor, is something to act on too. Long text (paragraphs) stays plain.
      if (LEAF.test(el.tagName) && !el.firstElementChild && !interactiveOnly) {
        const t = dom.squash(el.innerText, 200);
        if (t && t.length <= SHORT && dom.rendered(el, memo)) {
          flush();
          push({ text: true, line: `[text ${dom.ref(el)}] ${t}` });
          return;
        }
      }
      const block = BLOCK.test(el.tagName);
      if (block) flush();
      for (const child of el.childNodes) walk(child);
      if (el.shadowRoot) for (const child of el.shadowRoot.childNodes) walk(child);
      if (block) flush();
    };
    walk(root);
    flush();
    return {
      url: location.href,
      title: document.title,
      index: dom.indexInParent(),
      items,
      more,
      regions,
    };
  }

  dom.tools.snapshot = snapshot;
})();
