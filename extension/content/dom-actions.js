// The action tools of one frame: click, type, select, keys, hover, drag, file upload, wait, and
// the geometry the service worker needs (element bounds, where a child frame sits). Events are
// synthetic (isTrusted false); the browser's default actions that matter are done by hand.
(() => {
  const dom = globalThis.browserMcpDom;
  if (!dom || dom.tools.click) return; // no kit: a document the worker did not mean (frame-channel.js)
  const { fail, resolve, describeShort, visible } = dom;
  const text = (s) => ({ content: [{ type: 'text', text: s }] });

  // The actionability checks of dom-point.js: a pointer's (`hit`) or a keyboard's.
  const reach = (el, args, how) => dom.actionPoint(el, { position: args.position, force: args.force === true, enabled: true, hit: false, ...how });
  // What followed, for the worker to say in one line (worker/tools/aftermath.js).
  const withAfter = (result, seen) => Object.assign(result, { after: seen.facts, navigating: seen.navigating });

  // A page in a background tab (or window) does not have focus: el.focus() then moves
  // activeElement silently, so the focus events a page listens for are sent by hand.
  function focusOn(el) {
    const before = document.activeElement;
    el.focus?.({ preventScroll: true });
    focusMoved(before);
  }

  // The same for a focus the page moved itself in a handler of ours (react-select focuses its
  // input on mousedown and opens its menu on that focus): blur and focusout where it was, focus
  // and focusin where it is.
  function focusMoved(before) {
    const now = document.activeElement;
    if (document.hasFocus() || now === before || !now) return;
    if (before && before !== document.body) {
      before.dispatchEvent(new FocusEvent('blur', { relatedTarget: now }));
      before.dispatchEvent(new FocusEvent('focusout', { bubbles: true, composed: true, relatedTarget: now }));
    }
    if (now === document.body) return;
    now.dispatchEvent(new FocusEvent('focus', { relatedTarget: before }));
    now.dispatchEvent(new FocusEvent('focusin', { bubbles: true, composed: true, relatedTarget: before }));
  }

  const center = (el) => {
    const r = el.getBoundingClientRect();
    return { x: r.x + r.width / 2, y: r.y + r.height / 2 };
  };

  const mouseInit = (at, extra = {}) => ({
    bubbles: true, cancelable: true, composed: true, view: window, clientX: at.x, clientY: at.y, screenX: at.x, screenY: at.y, button: 0, ...extra,
  });
  const pointer = (type, target, at, extra) =>
    target.dispatchEvent(new PointerEvent(type, { ...mouseInit(at, extra), pointerId: 1, pointerType: 'mouse', isPrimary: true }));
  const mouse = (type, target, at, extra) => target.dispatchEvent(new MouseEvent(type, mouseInit(at, extra)));
  const dragEvent = (type, target, at, dt) =>
    target.dispatchEvent(new DragEvent(type, { ...mouseInit(at, { buttons: 1 }), dataTransfer: dt }));

  // Where a drop lands: `position` ({x, y}, fractions of the target's box) or its centre, and
  // the innermost element there that belongs to the target.
  function dropPoint(dst, position) {
    dst.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    const r = dst.getBoundingClientRect();
    const at = position ? { x: r.x + r.width * position.x, y: r.y + r.height * position.y } : center(dst);
    const hit = document.elementFromPoint(at.x, at.y);
    return { at, over: hit && dst.contains(hit) ? hit : dst };
  }

  // --- the pointer -------------------------------------------------------------------------------
  // A person's mouse moves onto what it then presses, and pages act on that move: Radix's Select
  // tells the release that chooses an option from the one that ends the press that opened it by
  // the pointer's travel in between. So every synthetic action moves the pointer first, with
  // the events a browser sends for it.

  let hovered = null; // WeakRef to the element the pointer is over

  // The element and its ancestors, innermost first, through shadow roots.
  function chain(el) {
    const out = [];
    // (parentNode.host only of a shadow root: a link's `host` is its URL's.)
    for (let e = el; e; e = e.parentElement ?? (e.parentNode?.nodeType === Node.DOCUMENT_FRAGMENT_NODE ? e.parentNode.host : null)) out.push(e);
    return out;
  }

  // The pointer moves to `at` over `over` (with `buttons` held, in a drag): out of what it was
  // over and over this, leave and enter (which do not bubble) on each element it left or
  // entered, then the move itself.
  function moveTo(over, at, held = {}) {
    const before = hovered?.deref();
    const was = before?.isConnected ? before : null;
    if (was !== over) {
      const now = chain(over);
      const old = was ? chain(was) : [];
      const stays = new Set(old);
      const kept = new Set(now);
      const left = old.filter((e) => !kept.has(e));
      if (was) {
        pointer('pointerout', was, at, held);
        for (const e of left) pointer('pointerleave', e, at, { ...held, bubbles: false });
        mouse('mouseout', was, at, { ...held, relatedTarget: over });
        for (const e of left) mouse('mouseleave', e, at, { ...held, bubbles: false, relatedTarget: over });
      }
      const entered = now.filter((e) => !stays.has(e)).reverse();
      pointer('pointerover', over, at, held);
      for (const e of entered) pointer('pointerenter', e, at, { ...held, bubbles: false });
      mouse('mouseover', over, at, { ...held, relatedTarget: was });
      for (const e of entered) mouse('mouseenter', e, at, { ...held, bubbles: false, relatedTarget: was });
    }
    pointer('pointermove', over, at, held);
    mouse('mousemove', over, at, held);
    hovered = new WeakRef(over);
  }
  Object.assign(dom, { reach, withAfter, focusOn, focusMoved, center, mouseInit, pointer, mouse, moveTo, press, text, dragEvent, dropPoint });

  // Each button's `button` and `buttons` values.
  const BUTTONS = { left: [0, 1], middle: [1, 4], right: [2, 2] };

  // One press and release of `button` on `target` at `at`, the `detail`th of a run: `focus`
  // takes the focus on the first, as the press's default action; a left press ends in a click,
  // by `activated.click()` where given (its own activation: a link, a checkbox; without one, or
  // after the first press, the event, which bubbles to whatever listens: an SVG icon's path).
  function press(target, at, { focus = null, activated = null, button = 'left', detail = 1 } = {}) {
    const [b, mask] = BUTTONS[button];
    // Pages often listen for pointer/mouse down rather than click.
    const focused = document.activeElement;
    pointer('pointerdown', target, at, { button: b, buttons: mask, detail });
    mouse('mousedown', target, at, { button: b, buttons: mask, detail });
    focusMoved(focused);
    if (detail === 1 && focus) focusOn(focus);
    if (detail === 1 && b === 2) mouse('contextmenu', target, at, { button: b, buttons: mask, detail });
    pointer('pointerup', target, at, { button: b, detail });
    mouse('mouseup', target, at, { button: b, detail });
    if (b === 1) mouse('auxclick', target, at, { button: b, detail });
    else if (b === 0 && detail === 1 && typeof activated?.click === 'function') activated.click();
    else if (b === 0) mouse('click', activated ?? target, at, { detail });
  }

  async function click(args) {
    const el = resolve(args);
    dom.hoverCss?.clickAt(el);
    const what = describeShort(el); // as it was before the click changed it
    // The innermost element at the point, as a real click would hit (a header's label, a
    // cell's text, an icon's path).
    const { at, target, via } = await reach(el, args, { hit: true, verb: 'click' });
    // Through a label, the control's own activation: Firefox does not pass an untrusted click
    // on a label on to its control.
    const activated = via === el ? target : el;
    const seen = dom.watchAfter(el);
    const presses = args.doubleClick === true ? 2 : 1;
    moveTo(target, at);
    for (let detail = 1; detail <= presses; detail++) press(target, at, { focus: el, activated, detail });
    if (presses === 2) mouse('dblclick', target, at, { detail: 2 });
    return withAfter(text(`${presses === 2 ? 'Double-clicked' : 'Clicked'} ${what}`), await seen());
  }

  // --- hover -------------------------------------------------------------------------------------

  async function hover(args) {
    const el = resolve(args);
    const what = describeShort(el);
    const { at, hit: over } = await reach(el, args, { hit: true, enabled: false, verb: 'pointer' });
    const seen = dom.watchAfter(el);
    moveTo(over, at);
    // Events do not move the browser's :hover; menus that CSS alone opens need dom-hover-css.js.
    const styled = dom.hoverCss?.apply(over) > 0;
    return withAfter(text(`Hovered over ${what}${styled ? "; the page's :hover styles apply to it" : ''}`), await seen());
  }

  // --- typing and keys ---------------------------------------------------------------------------

  // Setting .value through the prototype's setter is what frameworks that track the value
  // (React's input tracker) notice; a plain assignment can be swallowed.
  function setValue(el, value) {
    const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : el instanceof HTMLSelectElement ? HTMLSelectElement.prototype : HTMLInputElement.prototype;
    Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, value);
  }

  function fireInput(el, data) {
    el.dispatchEvent(new InputEvent('input', { bubbles: true, composed: true, inputType: 'insertText', data }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }

  function submit(el) {
    const form = el.form || el.closest?.('form');
    if (form) {
      form.requestSubmit();
      return 'submitted its form';
    }
    key(el, 'Enter');
    return 'pressed Enter';
  }

  // An edit of an editable element as the browser makes one (issue 57): a cancelable
  // `beforeinput` first, saying what would change (getTargetRanges()). A page that cancels it
  // makes the change itself (Lexical, Slate and the other editors that keep their own document)
  // and nothing else happens; otherwise the browser's editing command makes it, which fires
  // `input` (Chromium fires no beforeinput of its own for it; Firefox does, and that second one
  // is kept from the page: ours was it). null when the page took the edit, else whether the
  // command made it.
  function edit(host, inputType, data, command, ranges = selectionRanges()) {
    const before = new InputEvent('beforeinput', { bubbles: true, cancelable: true, composed: true, inputType, data, targetRanges: ranges });
    if (!host.dispatchEvent(before)) return null;
    const mute = (e) => e.isTrusted && e.stopImmediatePropagation();
    window.addEventListener('beforeinput', mute, true);
    try {
      return document.execCommand(command, false, data ?? undefined);
    } finally {
      window.removeEventListener('beforeinput', mute, true);
    }
  }
  const frozen = (r) => new StaticRange({ startContainer: r.startContainer, startOffset: r.startOffset, endContainer: r.endContainer, endOffset: r.endOffset });
  // The selection, or (`extend`: a deletion at a caret) the character it would take.
  function selectionRanges(extend) {
    const sel = document.getSelection();
    if (!sel?.rangeCount) return [];
    const range = sel.getRangeAt(0).cloneRange();
    if (!extend || !range.collapsed) return [frozen(range)];
    sel.modify('extend', extend, 'character');
    const wider = sel.rangeCount ? sel.getRangeAt(0).cloneRange() : range;
    sel.removeAllRanges();
    sel.addRange(range);
    return [frozen(wider)];
  }

  async function type(args) {
    if (typeof args.text !== 'string') fail('INVALID_ARGUMENTS', '"text" must be a string');
    const el = resolve(args);
    const { at } = await reach(el, args);
    if (el instanceof HTMLInputElement && el.type === 'file') fail('ELEMENT_NOT_INTERACTABLE', `${describeShort(el)} is a file chooser: use browser_file_upload`);
    const textual = dom.textField(el);
    if (!textual && !el.isContentEditable) fail('ELEMENT_NOT_INTERACTABLE', `${describeShort(el)} does not take text`);
    if (el.readOnly) fail('ELEMENT_NOT_INTERACTABLE', `${describeShort(el)} is read-only`);
    // Where the caret was, if in the element: typing goes on from there (after an Enter).
    const caretInside = el.contains(document.getSelection()?.anchorNode);
    if (!textual && !el.contains(document.activeElement)) {
      // A person clicks into an editor before typing in it, and block editors (Editor.js) learn
      // from that click which block is current.
      const hit = dom.hitAt(at.x, at.y);
      const pressed = hit && el.contains(hit) ? hit : el;
      moveTo(pressed, at);
      press(pressed, at, { focus: el, activated: el });
    } else focusOn(el);
    const seen = dom.watchAfter(el);
    if (args.slowly === true) {
      // Key by key, for editors that listen to keys and ignore a value set at once.
      if (textual) el.setSelectionRange?.(el.value.length, el.value.length);
      else if (!caretInside) caretAtEnd(el);
      for (const ch of args.text) {
        key(el, ch === '\n' ? 'Enter' : ch === '\t' ? 'Tab' : ch);
        // A person's keys come a task apart: an editor that renders its own document after
        // each (Lexical, in a microtask, moving the caret) has done so before the next.
        await dom.nextTask();
      }
    } else if (el.isContentEditable && !textual) {
      // The whole text replaced, as selecting all and typing does.
      document.getSelection()?.selectAllChildren(el);
      const done = args.text ? edit(el, 'insertText', args.text, 'insertText') : edit(el, 'deleteContentBackward', null, 'delete');
      if (done === false) el.textContent = args.text; // no editing command here
    } else {
      setValue(el, args.text);
      fireInput(el, args.text);
    }
    const after = args.submit ? `, then ${submit(el)}` : '';
    return withAfter(text(`Typed into ${describeShort(el)}${args.slowly === true ? ' key by key' : ''}${after}`), await seen());
  }

  // The caret after the last text of an editable element, inside its last block (Firefox
  // would otherwise start a new paragraph after it).
  function caretAtEnd(el) {
    const sel = document.getSelection();
    if (!sel) return;
    let node = el;
    while (node.lastChild && node.lastChild.nodeName !== 'BR') node = node.lastChild;
    sel.setPosition(node, node.nodeType === Node.TEXT_NODE ? node.length : node.childNodes.length - (node.lastChild?.nodeName === 'BR' ? 1 : 0));
  }

  async function select(args) {
    const el = resolve(args);
    if (!(el instanceof HTMLSelectElement)) fail('ELEMENT_NOT_INTERACTABLE', `${describeShort(el)} is not a <select>`);
    await reach(el, args);
    const wanted = Array.isArray(args.value) ? args.value : [args.value];
    if (!wanted.length || wanted.some((v) => typeof v !== 'string')) fail('INVALID_ARGUMENTS', '"value" must be a string or an array of strings');
    const options = [...el.options];
    const chosen = wanted.map((v) => options.find((o) => o.value === v) || options.find((o) => o.label.trim() === v.trim()));
    if (chosen.includes(undefined)) {
      fail('INVALID_ARGUMENTS', `no option ${JSON.stringify(wanted[chosen.indexOf(undefined)])}; options are ${options.map((o) => JSON.stringify(o.label.trim() || o.value)).join(', ')}`);
    }
    if (chosen.length > 1 && !el.multiple) fail('INVALID_ARGUMENTS', 'this <select> takes a single value');
    const seen = dom.watchAfter(el);
    for (const o of options) o.selected = chosen.includes(o);
    fireInput(el, null);
    return withAfter(text(`Selected ${chosen.map((o) => JSON.stringify(o.label.trim() || o.value)).join(', ')} in ${describeShort(el)}`), await seen());
  }

  const CODES = { Enter: 'Enter', Tab: 'Tab', Escape: 'Escape', Backspace: 'Backspace', Delete: 'Delete', ' ': 'Space', ArrowUp: 'ArrowUp', ArrowDown: 'ArrowDown', ArrowLeft: 'ArrowLeft', ArrowRight: 'ArrowRight', Home: 'Home', End: 'End', PageUp: 'PageUp', PageDown: 'PageDown' };
  const MODIFIERS = { control: 'ctrlKey', ctrl: 'ctrlKey', shift: 'shiftKey', alt: 'altKey', option: 'altKey', meta: 'metaKey', cmd: 'metaKey', command: 'metaKey', controlormeta: 'ctrlKey' };
  const KEY_NAMES = { space: ' ', esc: 'Escape', return: 'Enter', del: 'Delete', up: 'ArrowUp', down: 'ArrowDown', left: 'ArrowLeft', right: 'ArrowRight' };

  function parseKey(spec) {
    if (typeof spec !== 'string' || !spec) fail('INVALID_ARGUMENTS', '"key" must be a non-empty string such as "Enter", "a" or "Control+a"');
    const parts = spec === '+' ? ['+'] : spec.endsWith('++') ? [...spec.slice(0, -2).split('+'), '+'] : spec.split('+');
    let k = parts.pop();
    const mods = { ctrlKey: false, shiftKey: false, altKey: false, metaKey: false };
    for (const p of parts) {
      const m = MODIFIERS[p.toLowerCase()];
      if (!m) fail('INVALID_ARGUMENTS', `unknown modifier "${p}" in "${spec}" (use Control, Shift, Alt, Meta)`);
      mods[m] = true;
    }
    k = KEY_NAMES[k.toLowerCase()] || k;
    if (k.length === 1 && mods.shiftKey && /[a-z]/.test(k)) k = k.toUpperCase();
    return { k, mods };
  }

  const LEGACY = { Enter: 13, Tab: 9, Escape: 27, Backspace: 8, Delete: 46, ' ': 32, ArrowLeft: 37, ArrowUp: 38, ArrowRight: 39, ArrowDown: 40, Home: 36, End: 35, PageUp: 33, PageDown: 34, Shift: 16, Control: 17, Alt: 18, Meta: 91 };
  const PUNCT = { ';': 186, ':': 186, '=': 187, '+': 187, ',': 188, '<': 188, '-': 189, _: 189, '.': 190, '>': 190, '/': 191, '?': 191, '`': 192, '~': 192, '[': 219, '{': 219, '\\': 220, '|': 220, ']': 221, '}': 221, "'": 222, '"': 222, ')': 48, '!': 49, '@': 50, '#': 51, $: 52, '%': 53, '^': 54, '&': 55, '*': 56, '(': 57 };
  // The key's legacy keyCode (a US keyboard's), which older editors still read.
  function keyCodeOf(k) {
    if (LEGACY[k]) return LEGACY[k];
    if (/^[a-z0-9]$/i.test(k)) return k.toUpperCase().charCodeAt(0);
    if (PUNCT[k]) return PUNCT[k];
    const f = /^F(\d{1,2})$/.exec(k);
    return f ? 111 + Number(f[1]) : 0;
  }

  // A key event, dispatched by the page world (page/document-start.js) so that it carries keyCode,
  // which and charCode; by this world, without them, where the page world is missing. Whether
  // the page let it proceed (not cancelled).
  function keyEvent(el, type, init, keyCode, charCode) {
    let sent = null;
    const seen = (e) => {
      if (e.type === type && e.composedPath()[0] === el) sent = e;
    };
    window.addEventListener(type, seen, true);
    try {
      el.dispatchEvent(new CustomEvent('browser-mcp:key', { detail: JSON.stringify({ type, init: { ...init, view: undefined }, keyCode, charCode }), composed: true }));
    } finally {
      window.removeEventListener(type, seen, true);
    }
    if (sent) return !sent.defaultPrevented;
    return el.dispatchEvent(new KeyboardEvent(type, init));
  }

  // Synthetic key events do not trigger the browser's default actions, so the common ones are
  // done by hand afterwards, unless the page cancelled the keydown.
  function key(el, spec) {
    const { k, mods } = parseKey(spec);
    const code = CODES[k] || (k.length === 1 && /[a-z]/i.test(k) ? `Key${k.toUpperCase()}` : k.length === 1 && /\d/.test(k) ? `Digit${k}` : k);
    const init = { key: k, code, bubbles: true, cancelable: true, composed: true, view: window, ...mods };
    const printable = [...k].length === 1 && !mods.ctrlKey && !mods.altKey && !mods.metaKey;
    const legacy = keyCodeOf(k);
    const proceed = keyEvent(el, 'keydown', init, legacy, 0);
    if (proceed && (printable || k === 'Enter')) keyEvent(el, 'keypress', init, k === 'Enter' ? 13 : k.codePointAt(0), k === 'Enter' ? 13 : k.codePointAt(0));
    if (proceed) defaultAction(el, k, printable, mods);
    keyEvent(el, 'keyup', init, legacy, 0);
  }

  const TEXT_TYPES = ['text', 'search', 'email', 'url', 'tel', 'password', 'number', ''];

  // Moves of the caret and the selection a keyboard makes (Shift extends, Control moves by word).
  const MOVES = { ArrowLeft: ['backward', 'character'], ArrowRight: ['forward', 'character'], Home: ['backward', 'lineboundary'], End: ['forward', 'lineboundary'], ArrowUp: ['backward', 'line'], ArrowDown: ['forward', 'line'] };

  // What the browser would have done with the key, unless the page cancelled it. Text goes in
  // after a `beforeinput` the page may cancel, in a text field and in an editable element
  // (`edit`) alike.
  function defaultAction(el, k, printable, mods) {
    const textField = el instanceof HTMLTextAreaElement || (el instanceof HTMLInputElement && TEXT_TYPES.includes(el.type));
    const editable = !textField && el.isContentEditable;
    const shortcut = mods.ctrlKey || mods.metaKey;
    const insert = (data, inputType) => {
      if (!el.dispatchEvent(new InputEvent('beforeinput', { bubbles: true, cancelable: true, composed: true, inputType, data }))) return;
      const start = el.selectionStart ?? el.value.length;
      const end = el.selectionEnd ?? el.value.length;
      setValue(el, el.value.slice(0, start) + data + el.value.slice(end));
      el.setSelectionRange?.(start + data.length, start + data.length);
      el.dispatchEvent(new InputEvent('input', { bubbles: true, composed: true, inputType, data }));
    };
    if (printable && textField) {
      insert(k, 'insertText');
    } else if (printable && editable) {
      edit(el, 'insertText', k, 'insertText');
    } else if (shortcut && k.toLowerCase() === 'a') {
      if (textField) el.select();
      else document.getSelection()?.selectAllChildren(editable ? el : document.body);
    } else if ((k === 'Backspace' || k === 'Delete') && editable) {
      const back = k === 'Backspace';
      edit(el, back ? 'deleteContentBackward' : 'deleteContentForward', null, back ? 'delete' : 'forwardDelete', selectionRanges(back ? 'backward' : 'forward'));
    } else if ((k === 'Backspace' || k === 'Delete') && textField && el.value) {
      const start = el.selectionStart ?? el.value.length;
      const end = el.selectionEnd ?? el.value.length;
      const [from, to] = start !== end ? [start, end] : k === 'Backspace' ? [Math.max(0, start - 1), start] : [start, start + 1];
      const inputType = k === 'Backspace' ? 'deleteContentBackward' : 'deleteContentForward';
      if (!el.dispatchEvent(new InputEvent('beforeinput', { bubbles: true, cancelable: true, composed: true, inputType }))) return;
      setValue(el, el.value.slice(0, from) + el.value.slice(to));
      el.setSelectionRange?.(from, from);
      el.dispatchEvent(new InputEvent('input', { bubbles: true, composed: true, inputType }));
    } else if (k === 'Enter' && el instanceof HTMLTextAreaElement) {
      insert('\n', 'insertLineBreak');
    } else if (k === 'Enter' && editable) {
      const command = mods.shiftKey ? 'insertLineBreak' : 'insertParagraph';
      edit(el, command, null, command);
    } else if (k === 'Enter') {
      if (el instanceof HTMLInputElement && el.form) el.form.requestSubmit();
      else if (el instanceof HTMLButtonElement || el instanceof HTMLAnchorElement) el.click();
    } else if (k === ' ' && (el instanceof HTMLButtonElement || (el instanceof HTMLInputElement && ['checkbox', 'radio', 'button', 'submit'].includes(el.type)))) {
      el.click();
    } else if (MOVES[k] && (editable || textField)) {
      move(el, textField, MOVES[k], mods);
    } else if (k === 'Tab') {
      const focusable = [...document.querySelectorAll(dom.INTERACTIVE)].filter((e) => !e.disabled && e.tabIndex >= 0 && visible(e));
      const i = focusable.indexOf(el);
      const next = focusable[(i + (mods.shiftKey ? -1 : 1) + focusable.length) % focusable.length];
      if (next) focusOn(next);
    }
  }

  function move(el, textField, [direction, unit], mods) {
    const by = mods.ctrlKey && unit === 'character' ? 'word' : unit;
    if (!textField) {
      document.getSelection()?.modify(mods.shiftKey ? 'extend' : 'move', direction, by);
      return;
    }
    const { value } = el;
    let pos = direction === 'backward' ? el.selectionStart : el.selectionEnd;
    if (by === 'character') pos += direction === 'backward' ? -1 : 1;
    else if (by === 'word') pos = direction === 'backward' ? value.slice(0, pos).search(/\S+\s*$/) : pos + (value.slice(pos).match(/^\s*\S+/)?.[0].length ?? value.length - pos);
    else pos = direction === 'backward' ? value.lastIndexOf('\n', pos - 1) + 1 : (value.indexOf('\n', pos) + 1 || value.length + 1) - 1;
    pos = Math.max(0, Math.min(value.length, pos < 0 ? 0 : pos));
    if (mods.shiftKey) {
      const anchor = el.selectionDirection === 'backward' ? el.selectionEnd : el.selectionStart;
      el.setSelectionRange?.(Math.min(anchor, pos), Math.max(anchor, pos), pos < anchor ? 'backward' : 'forward');
    } else {
      el.setSelectionRange?.(pos, pos);
    }
  }

  async function pressKey(args) {
    parseKey(args.key); // refuse a bad key before anything happens
    if (args.ref || args.selector) {
      const target = resolve(args);
      await reach(target, args);
      focusOn(target);
    }
    const el = document.activeElement || document.body;
    const seen = dom.watchAfter(el);
    key(el, args.key);
    return withAfter(text(`Pressed ${args.key} on ${el === document.body ? 'the page' : describeShort(el)}`), await seen());
  }

  // --- file upload -------------------------------------------------------------------------------

  function decode(b64) {
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return bytes;
  }

  // Whether a file passes an accept="…" list (extensions, exact types, type/*).
  function accepts(accept, file) {
    const tokens = accept.split(',').map((t) => t.trim().toLowerCase()).filter(Boolean);
    if (!tokens.length) return true;
    const name = file.name.toLowerCase();
    const type = (file.type || '').toLowerCase();
    return tokens.some((t) => (t.startsWith('.') ? name.endsWith(t) : t.endsWith('/*') ? type.startsWith(t.slice(0, -1)) : type === t));
  }

  // args.files: [{name, mimeType, data (base64)}] — the daemon has already read any paths.
  function fileUpload(args) {
    if (!Array.isArray(args.files)) fail('INVALID_ARGUMENTS', '"files" must be an array');
    const target = resolve(args);
    const input = target instanceof HTMLInputElement ? target : target.querySelector('input[type=file]');
    const files = args.files.map((f, i) => {
      if (!f || typeof f.name !== 'string' || !f.name || typeof f.data !== 'string') fail('INVALID_ARGUMENTS', `files[${i}] needs a "name" and base64 "data"`);
      let bytes;
      try {
        bytes = decode(f.data);
      } catch {
        fail('INVALID_ARGUMENTS', `files[${i}] (${f.name}): "data" is not valid base64`);
      }
      return new File([bytes], f.name, { type: typeof f.mimeType === 'string' ? f.mimeType : '' });
    });
    if (!input || input.type !== 'file') {
      if (target instanceof HTMLInputElement) fail('ELEMENT_NOT_INTERACTABLE', `${describeShort(target)} is not a file chooser (<input type=file>)`);
      return dropFiles(target, files);
    }
    if (input.disabled) fail('ELEMENT_NOT_INTERACTABLE', `${describeShort(input)} is disabled`);
    if (files.length > 1 && !input.multiple) fail('INVALID_ARGUMENTS', `${describeShort(input)} takes one file, not ${files.length}`);
    if (input.accept) {
      const refused = files.filter((f) => !accepts(input.accept, f));
      if (refused.length) {
        fail('INVALID_ARGUMENTS', `${describeShort(input)} accepts ${input.accept}; ${refused.map((f) => `${f.name}${f.type ? ` (${f.type})` : ''}`).join(', ')} ${refused.length > 1 ? 'do' : 'does'} not match`);
      }
    }
    const dt = new DataTransfer();
    for (const f of files) dt.items.add(f);
    input.files = dt.files;
    input.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    input.dispatchEvent(new Event('change', { bubbles: true }));
    const names = files.map((f) => `${f.name} (${f.size} bytes)`).join(', ');
    return text(files.length ? `Set ${names} on ${describeShort(input)}` : `Cleared the files of ${describeShort(input)}`);
  }

  // A DataTransfer holding `files` that the page can read. In Firefox a content script's own
  // DataTransfer shows the page its items but an empty `files` list, so there it is made from
  // the page's constructors (wrappedJSObject, cloneInto: Firefox's way across the worlds).
  function pageDataTransfer(files) {
    const page = globalThis.wrappedJSObject;
    const clone = globalThis.cloneInto;
    const dt = page && clone ? new page.DataTransfer() : new DataTransfer();
    for (const f of files) dt.items.add(page && clone ? new page.File(clone([f], page), f.name, clone({ type: f.type }, page)) : f);
    return dt;
  }

  // A drop zone without a file input (the usual "drop files here" widget).
  function dropFiles(target, files) {
    if (!files.length) fail('INVALID_ARGUMENTS', 'no files to drop');
    const dt = pageDataTransfer(files);
    const { at, over } = dropPoint(target);
    dragEvent('dragenter', over, at, dt);
    if (dragEvent('dragover', over, at, dt)) {
      dragEvent('dragleave', over, at, dt);
      fail('ELEMENT_NOT_INTERACTABLE', `${describeShort(target)} is neither a file chooser nor a drop zone that accepts files`);
    }
    dragEvent('drop', over, at, dt);
    return text(`Dropped ${files.map((f) => f.name).join(', ')} onto ${describeShort(target)}`);
  }

  // --- waiting -----------------------------------------------------------------------------------

  function waitFor(args) {
    const { selector } = args;
    const wanted = args.text;
    if (!selector && !wanted) fail('INVALID_ARGUMENTS', 'give "selector" or "text"');
    const timeout = Math.min(Math.max(Number(args.timeout ?? 5000) || 0, 0), 60_000);
    const check = () => {
      if (selector) {
        const el = dom.query(selector);
        if (!el || !visible(el)) return null;
        if (wanted && !el.innerText.includes(wanted)) return null;
        return `${describeShort(el)} is visible`;
      }
      return document.body?.innerText.includes(wanted) ? `text ${JSON.stringify(wanted)} is on the page` : null;
    };
    return new Promise((resolveWait, rejectWait) => {
      const settle = () => {
        try {
          const hit = check();
          if (!hit) return false;
          stop();
          resolveWait(text(hit));
        } catch (e) {
          stop();
          rejectWait(e);
        }
        return true;
      };
      const observer = new MutationObserver(settle);
      const poll = setInterval(settle, 100); // visibility changes through CSS are not mutations here
      const timer = setTimeout(() => {
        stop();
        rejectWait(Object.assign(new Error(`waited ${timeout} ms for ${selector ? `selector ${selector}` : `text ${JSON.stringify(wanted)}`}`), { code: 'WAIT_TIMEOUT' }));
      }, timeout);
      function stop() {
        observer.disconnect();
        clearInterval(poll);
        clearTimeout(timer);
      }
      if (!settle()) observer.observe(document, { childList: true, subtree: true, characterData: true, attributes: true });
    });
  }

  // --- geometry ----------------------------------------------------------------------------------

  // An element's box in this frame's viewport (CSS pixels), after scrolling it into view. The
  // service worker adds the offsets of the frames above (frameBox) for an element in a subframe.
  function bounds(args) {
    const el = resolve(args);
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    const r = el.getBoundingClientRect();
    return { x: r.x, y: r.y, width: r.width, height: r.height, devicePixelRatio: window.devicePixelRatio };
  }

  // Where the content of child frame number `index` (window.frames order) starts in this frame's
  // viewport, after scrolling its <iframe> into view.
  function frameBox(args) {
    const child = window.frames[args.index];
    const el = child && [...document.querySelectorAll('iframe, frame, object, embed')].find((f) => f.contentWindow === child);
    if (!el) fail('ELEMENT_NOT_FOUND', 'the frame is no longer on the page; take a new browser_snapshot');
    // A screenshot that paints a frame over must not move the page (scroll: false).
    if (args.scroll !== false) el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    const r = el.getBoundingClientRect();
    const s = getComputedStyle(el);
    return { x: r.x + el.clientLeft + parseFloat(s.paddingLeft || 0), y: r.y + el.clientTop + parseFloat(s.paddingTop || 0), box: { x: r.x, y: r.y, width: r.width, height: r.height } };
  }

  const frameIndex = () => ({ index: dom.indexInParent() });

  // The navigation itself is awaited by the service worker (webNavigation events).
  function historyGo(args) {
    setTimeout(() => history.go(args.step), 0);
    return { ok: true };
  }

  Object.assign(dom.tools, {
    click,
    hover,
    type,
    select,
    press_key: pressKey,
    file_upload: fileUpload,
    wait_for: waitFor,
    bounds,
    frame_box: frameBox,
    frame_index: frameIndex,
    history_go: historyGo,
  });
})();
