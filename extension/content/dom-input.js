// One frame's part of the input the service worker makes itself (issue 57, worker/tools/input.js):
// what trusted input needs of the page (the viewport, what is at a point and which frame it falls
// into, the element keys and text go to, focused and its text selected), and the synthetic
// events at a point where the browser gives no trusted input. Loaded after dom-actions.js, whose
// event helpers it uses.
(() => {
  const dom = globalThis.browserMcpDom;
  if (!dom || dom.tools.point_at) return;
  // hitAt: the innermost element at a point, through open shadow roots (dom-point.js).
  const { fail, resolve, describeShort, mouse, moveTo, press, focusOn, hitAt } = dom;

  const viewport = () => ({ width: innerWidth, height: innerHeight, devicePixelRatio, hidden: document.visibilityState === 'hidden' });

  // What is at (x, y): an element ({element}), or a child frame ({frame: its index in
  // window.frames, x, y: the point in its viewport}).
  function pointAt({ x, y }) {
    const hit = hitAt(x, y);
    if (!hit) return { element: null };
    const child = hit.contentWindow;
    if (child && (hit instanceof HTMLIFrameElement || hit instanceof HTMLFrameElement)) {
      for (let i = 0; i < window.frames.length; i++) {
        if (window.frames[i] !== child) continue;
        const r = hit.getBoundingClientRect();
        const s = getComputedStyle(hit);
        const left = r.x + hit.clientLeft + parseFloat(s.paddingLeft || 0);
        const top = r.y + hit.clientTop + parseFloat(s.paddingTop || 0);
        return { frame: i, x: x - left, y: y - top, element: describeShort(hit) };
      }
    }
    return { element: describeShort(hit) };
  }

  // The element keys or text go to, focused: `ref`/`selector`, else what has the focus. With
  // `text`, it must take text; `caret`: 'all' selects its text (typing replaces it), 'end'
  // puts the caret after it unless it was in it already (typing goes on after an Enter), 'last'
  // after it whatever. With `click`, an editor (not a text field) that has not the focus is
  // left as it is, {click: true}: a person clicks into it first (dom-actions.js type).
  async function inputTarget(args) {
    const named = Boolean(args.ref || args.selector);
    let el = named ? resolve(args) : document.activeElement || document.body;
    while (el?.shadowRoot?.activeElement) el = el.shadowRoot.activeElement;
    if (named) {
      if (dom.actionPoint) await dom.actionPoint(el, { force: args.force === true, enabled: true, hit: false, verb: 'typing' });
      else el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    }
    const textual = dom.textField(el);
    if (args.text) {
      if (el instanceof HTMLInputElement && el.type === 'file') fail('ELEMENT_NOT_INTERACTABLE', `${describeShort(el)} is a file chooser: use browser_file_upload`);
      if (!textual && !el.isContentEditable) fail('ELEMENT_NOT_INTERACTABLE', `${describeShort(el)} does not take text`);
      if (el.readOnly) fail('ELEMENT_NOT_INTERACTABLE', `${describeShort(el)} is read-only`);
    }
    if (named && args.click === true && !textual && !el.contains(document.activeElement)) return { click: true };
    const caretInside = el.contains(document.getSelection()?.anchorNode);
    if (named) focusOn(el);
    if (args.caret === 'all') {
      if (textual) el.select();
      else if (el.isContentEditable) document.getSelection()?.selectAllChildren(el);
    } else if (args.caret === 'end' || args.caret === 'last') {
      if (textual) el.setSelectionRange?.(el.value.length, el.value.length);
      else if (el.isContentEditable && (args.caret === 'last' || !caretInside)) {
        const range = document.createRange();
        range.selectNodeContents(el);
        range.collapse(false);
        document.getSelection()?.removeAllRanges();
        document.getSelection()?.addRange(range);
      }
    }
    dom.watchNext(el);
    const page = el === document.body || el === document.documentElement;
    return { element: page ? 'the page' : describeShort(el), form: textual && !!el.form };
  }

  // --- synthetic input at a point ---------------------------------------------------------------

  // What a press of `button` `clickCount` times at (x, y) sends, on the element there.
  function clickAt({ x, y, button = 'left', clickCount = 1 }) {
    const target = hitAt(x, y);
    if (!target) fail('ELEMENT_NOT_FOUND', `nothing at (${x}, ${y}) in this frame`);
    const at = { x, y };
    const focus = target.closest?.('a[href], button, input, select, textarea, [tabindex], [contenteditable]');
    moveTo(target, at);
    for (let detail = 1; detail <= clickCount; detail++) press(target, at, { focus, button, detail });
    if (button === 'left' && clickCount >= 2) mouse('dblclick', target, at, { detail: 2 });
    return { element: describeShort(target) };
  }

  function hoverAt({ x, y }) {
    const over = hitAt(x, y);
    if (!over) fail('ELEMENT_NOT_FOUND', `nothing at (${x}, ${y}) in this frame`);
    moveTo(over, { x, y });
    return { element: describeShort(over) };
  }

  Object.assign(dom.tools, { viewport, point_at: pointAt, input_target: inputTarget, click_at: clickAt, hover_at: hoverAt });
})();
