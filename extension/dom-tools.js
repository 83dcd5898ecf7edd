// The DOM half of the built-in tools. Runs in the extension's isolated world, so the page can
// neither see the ref table nor tamper with these functions.
globalThis.browserMcpDom ??= (() => {
  const fail = (code, message) => {
    const e = new Error(message);
    e.code = code;
    throw e;
  };

  // Refs are handed out once per element and kept for the life of the document, so a ref from an
  // earlier snapshot still means the same element.
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
    return r;
  }

  function resolve(args) {
    if (typeof args.ref === 'string' && args.ref) {
      const el = byRef.get(args.ref)?.deref();
      if (!el || !el.isConnected) fail('ELEMENT_NOT_FOUND', `ref ${args.ref} is unknown or gone; take a new browser_snapshot`);
      return el;
    }
    if (typeof args.selector === 'string' && args.selector) {
      let el;
      try {
        el = document.querySelector(args.selector);
      } catch {
        fail('INVALID_ARGUMENTS', `invalid CSS selector: ${args.selector}`);
      }
      if (!el) fail('ELEMENT_NOT_FOUND', `no element matches ${args.selector}`);
      return el;
    }
    return fail('INVALID_ARGUMENTS', 'give "ref" (from browser_snapshot) or "selector"');
  }

  const visible = (el) =>
    el.checkVisibility ? el.checkVisibility({ checkVisibilityCSS: true }) : !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);

  const INTERACTIVE = 'a[href], button, input:not([type=hidden]), textarea, select, summary, [contenteditable=""], [contenteditable=true], [onclick], ' +
    '[role=button], [role=link], [role=checkbox], [role=radio], [role=tab], [role=menuitem], [role=option], [role=switch], [role=textbox], [role=combobox], [tabindex]:not([tabindex="-1"])';

  function role(el) {
    const explicit = el.getAttribute('role');
    if (explicit) return explicit;
    const tag = el.tagName.toLowerCase();
    if (tag === 'a') return 'link';
    if (tag === 'select') return el.multiple ? 'listbox' : 'combobox';
    if (tag === 'textarea') return 'textbox';
    if (tag === 'input') {
      const type = (el.type || 'text').toLowerCase();
      if (['button', 'submit', 'reset', 'image'].includes(type)) return 'button';
      if (['checkbox', 'radio', 'range'].includes(type)) return type === 'range' ? 'slider' : type;
      return type === 'search' ? 'searchbox' : 'textbox';
    }
    if (tag === 'button' || tag === 'summary') return 'button';
    if (el.isContentEditable) return 'textbox';
    return 'generic';
  }

  const squash = (s, max = 80) => {
    const t = (s || '').replace(/\s+/g, ' ').trim();
    return t.length > max ? `${t.slice(0, max - 1)}…` : t;
  };

  function accessibleName(el) {
    const labelledBy = el.getAttribute('aria-labelledby');
    if (labelledBy) {
      const t = labelledBy.split(/\s+/).map((id) => document.getElementById(id)?.innerText || '').join(' ');
      if (t.trim()) return squash(t);
    }
    if (el.getAttribute('aria-label')) return squash(el.getAttribute('aria-label'));
    if (el.labels && el.labels.length) return squash([...el.labels].map((l) => l.innerText).join(' '));
    if (el.tagName === 'INPUT' && ['button', 'submit', 'reset'].includes(el.type)) return squash(el.value);
    if (el.tagName === 'IMG' || el.tagName === 'INPUT') return squash(el.getAttribute('alt') || el.placeholder || el.title || '');
    return squash(el.innerText || el.title || el.placeholder || '');
  }

  function describe(el) {
    const d = { ref: ref(el), role: role(el), name: accessibleName(el) };
    if (el.tagName === 'SELECT') {
      d.value = [...el.selectedOptions].map((o) => o.value).join(', ');
      d.options = [...el.options].slice(0, 50).map((o) => squash(o.label || o.text, 40));
    } else if (el.tagName === 'INPUT' && ['checkbox', 'radio'].includes(el.type)) {
      d.checked = el.checked;
    } else if ('value' in el && typeof el.value === 'string' && el.tagName !== 'BUTTON') {
      d.value = squash(el.type === 'password' ? '•'.repeat(el.value.length) : el.value, 200);
    }
    if (el.tagName === 'A') d.href = el.href;
    if (el.disabled) d.disabled = true;
    return d;
  }

  function line(d) {
    let s = `[${d.role} ${d.ref}] ${d.name}`.trimEnd();
    if (d.value !== undefined && d.value !== '') s += ` = ${JSON.stringify(d.value)}`;
    if (d.checked !== undefined) s += d.checked ? ' (checked)' : ' (unchecked)';
    if (d.options) s += ` options: ${d.options.join(' | ')}`;
    if (d.disabled) s += ' (disabled)';
    return s;
  }

  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'svg', 'IFRAME', 'HEAD']);
  const BLOCK = /^(P|DIV|SECTION|ARTICLE|MAIN|HEADER|FOOTER|NAV|ASIDE|LI|UL|OL|TABLE|TR|FORM|FIELDSET|BLOCKQUOTE|PRE|DL|DT|DD|FIGURE|FIGCAPTION|BR|HR)$/;
  const MAX_CHARS = 40_000;

  // One pass in document order: text flows into lines, headings get '#', interactive elements
  // become one "[role ref] name" line each (their inner text is not repeated).
  function snapshot() {
    const out = [];
    const elements = [];
    let current = '';
    const flush = () => {
      const t = current.replace(/\s+/g, ' ').trim();
      if (t) out.push(t);
      current = '';
    };
    const walk = (node) => {
      if (node.nodeType === Node.TEXT_NODE) {
        current += node.data;
        return;
      }
      if (node.nodeType !== Node.ELEMENT_NODE || SKIP.has(node.tagName)) return;
      const el = node;
      if (el.hidden || el.getAttribute('aria-hidden') === 'true' || !visible(el)) return;
      if (el.matches(INTERACTIVE)) {
        flush();
        const d = describe(el);
        elements.push(d);
        out.push(line(d));
        return;
      }
      // A label's text already names its control's line.
      if (el.tagName === 'LABEL' && el.control && !el.contains(el.control) && visible(el.control)) return;
      const heading = /^H([1-6])$/.exec(el.tagName);
      if (heading) {
        flush();
        out.push(`${'#'.repeat(+heading[1])} ${squash(el.innerText, 300)}`);
        return;
      }
      const block = BLOCK.test(el.tagName);
      if (block) flush();
      for (const child of el.childNodes) walk(child);
      if (block) flush();
      if (el.shadowRoot) for (const child of el.shadowRoot.childNodes) walk(child);
    };
    if (document.body) walk(document.body);
    flush();
    let textOut = `# ${document.title}\nURL: ${location.href}\n\n${out.join('\n')}`;
    if (textOut.length > MAX_CHARS) textOut = `${textOut.slice(0, MAX_CHARS)}\n… (truncated)`;
    return {
      content: [{ type: 'text', text: textOut }],
      structuredContent: { url: location.href, title: document.title, elements },
    };
  }

  function interactable(el) {
    if (el.disabled) fail('ELEMENT_NOT_INTERACTABLE', `${describeShort(el)} is disabled`);
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
  }

  const describeShort = (el) => `${role(el)} "${accessibleName(el)}" (${ref(el)})`;

  function click(args) {
    const el = resolve(args);
    interactable(el);
    const r = el.getBoundingClientRect();
    const at = { bubbles: true, cancelable: true, composed: true, view: window, clientX: r.x + r.width / 2, clientY: r.y + r.height / 2, button: 0 };
    // Pages often listen for pointer/mouse down rather than click.
    el.dispatchEvent(new PointerEvent('pointerdown', { ...at, pointerType: 'mouse', isPrimary: true }));
    el.dispatchEvent(new MouseEvent('mousedown', at));
    if (el.focus) el.focus({ preventScroll: true });
    el.dispatchEvent(new PointerEvent('pointerup', { ...at, pointerType: 'mouse', isPrimary: true }));
    el.dispatchEvent(new MouseEvent('mouseup', at));
    el.click();
    return { content: [{ type: 'text', text: `Clicked ${describeShort(el)}` }] };
  }

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

  function type(args) {
    if (typeof args.text !== 'string') fail('INVALID_ARGUMENTS', '"text" must be a string');
    const el = resolve(args);
    interactable(el);
    const textual = el instanceof HTMLTextAreaElement || (el instanceof HTMLInputElement && !['checkbox', 'radio', 'button', 'submit', 'reset', 'file', 'image', 'range', 'color'].includes(el.type));
    if (!textual && !el.isContentEditable) fail('ELEMENT_NOT_INTERACTABLE', `${describeShort(el)} does not take text`);
    if (el.readOnly) fail('ELEMENT_NOT_INTERACTABLE', `${describeShort(el)} is read-only`);
    el.focus();
    if (el.isContentEditable && !textual) el.textContent = args.text;
    else setValue(el, args.text);
    fireInput(el, args.text);
    const after = args.submit ? `, then ${submit(el)}` : '';
    return { content: [{ type: 'text', text: `Typed into ${describeShort(el)}${after}` }] };
  }

  function select(args) {
    const el = resolve(args);
    if (!(el instanceof HTMLSelectElement)) fail('ELEMENT_NOT_INTERACTABLE', `${describeShort(el)} is not a <select>`);
    interactable(el);
    const wanted = Array.isArray(args.value) ? args.value : [args.value];
    if (!wanted.length || wanted.some((v) => typeof v !== 'string')) fail('INVALID_ARGUMENTS', '"value" must be a string or an array of strings');
    const options = [...el.options];
    const chosen = wanted.map((v) => options.find((o) => o.value === v) || options.find((o) => o.label.trim() === v.trim()));
    if (chosen.includes(undefined)) {
      fail('INVALID_ARGUMENTS', `no option ${JSON.stringify(wanted[chosen.indexOf(undefined)])}; options are ${options.map((o) => JSON.stringify(o.value)).join(', ')}`);
    }
    if (chosen.length > 1 && !el.multiple) fail('INVALID_ARGUMENTS', 'this <select> takes a single value');
    for (const o of options) o.selected = chosen.includes(o);
    fireInput(el, null);
    return { content: [{ type: 'text', text: `Selected ${chosen.map((o) => JSON.stringify(o.value)).join(', ')} in ${describeShort(el)}` }] };
  }

  const CODES = { Enter: 'Enter', Tab: 'Tab', Escape: 'Escape', Backspace: 'Backspace', Delete: 'Delete', ' ': 'Space', ArrowUp: 'ArrowUp', ArrowDown: 'ArrowDown', ArrowLeft: 'ArrowLeft', ArrowRight: 'ArrowRight', Home: 'Home', End: 'End', PageUp: 'PageUp', PageDown: 'PageDown' };

  // Synthetic key events do not trigger the browser's default actions, so the common ones are
  // done by hand afterwards, unless the page cancelled the keydown.
  function key(el, spec) {
    const parts = spec.split('+');
    const k = parts.pop() || '+';
    const mods = new Set(parts.map((p) => p.toLowerCase()));
    const init = {
      key: k,
      code: CODES[k] || (k.length === 1 && /[a-z]/i.test(k) ? `Key${k.toUpperCase()}` : k.length === 1 && /\d/.test(k) ? `Digit${k}` : k),
      bubbles: true, cancelable: true, composed: true,
      ctrlKey: mods.has('control') || mods.has('ctrl'), shiftKey: mods.has('shift'), altKey: mods.has('alt'), metaKey: mods.has('meta') || mods.has('cmd'),
    };
    const printable = k.length === 1 && !init.ctrlKey && !init.altKey && !init.metaKey;
    const proceed = el.dispatchEvent(new KeyboardEvent('keydown', init));
    if (proceed && (printable || k === 'Enter')) el.dispatchEvent(new KeyboardEvent('keypress', init));
    if (proceed) defaultAction(el, k, printable, init);
    el.dispatchEvent(new KeyboardEvent('keyup', init));
  }

  function defaultAction(el, k, printable, init) {
    const textField = el instanceof HTMLTextAreaElement || (el instanceof HTMLInputElement && ['text', 'search', 'email', 'url', 'tel', 'password', 'number', ''].includes(el.type));
    if (printable && textField) {
      const start = el.selectionStart ?? el.value.length;
      const end = el.selectionEnd ?? el.value.length;
      setValue(el, el.value.slice(0, start) + k + el.value.slice(end));
      el.setSelectionRange?.(start + 1, start + 1);
      el.dispatchEvent(new InputEvent('input', { bubbles: true, composed: true, inputType: 'insertText', data: k }));
    } else if (k === 'Backspace' && textField && el.value) {
      setValue(el, el.value.slice(0, -1));
      el.dispatchEvent(new InputEvent('input', { bubbles: true, composed: true, inputType: 'deleteContentBackward' }));
    } else if (k === 'Enter') {
      if (el instanceof HTMLInputElement && el.form) el.form.requestSubmit();
      else if (el instanceof HTMLButtonElement || el instanceof HTMLAnchorElement) el.click();
    } else if (k === ' ' && (el instanceof HTMLButtonElement || (el instanceof HTMLInputElement && ['checkbox', 'radio', 'button', 'submit'].includes(el.type)))) {
      el.click();
    } else if (k === 'Tab') {
      const focusable = [...document.querySelectorAll(INTERACTIVE)].filter((e) => !e.disabled && e.tabIndex >= 0 && visible(e));
      const i = focusable.indexOf(el);
      const next = focusable[(i + (init.shiftKey ? -1 : 1) + focusable.length) % focusable.length];
      next?.focus();
    }
  }

  function pressKey(args) {
    if (typeof args.key !== 'string' || !args.key) fail('INVALID_ARGUMENTS', '"key" must be a non-empty string');
    const el = document.activeElement || document.body;
    key(el, args.key);
    return { content: [{ type: 'text', text: `Pressed ${args.key} on ${el === document.body ? 'the page' : describeShort(el)}` }] };
  }

  function waitFor(args) {
    const { selector, text } = args;
    if (!selector && !text) fail('INVALID_ARGUMENTS', 'give "selector" or "text"');
    const timeout = Math.min(Math.max(Number(args.timeout ?? 5000) || 0, 0), 60_000);
    const check = () => {
      if (selector) {
        let el;
        try {
          el = document.querySelector(selector);
        } catch {
          fail('INVALID_ARGUMENTS', `invalid CSS selector: ${selector}`);
        }
        if (!el || !visible(el)) return null;
        if (text && !el.innerText.includes(text)) return null;
        return `${describeShort(el)} is visible`;
      }
      return document.body?.innerText.includes(text) ? `text ${JSON.stringify(text)} is on the page` : null;
    };
    return new Promise((resolveWait, rejectWait) => {
      const settle = () => {
        try {
          const hit = check();
          if (!hit) return false;
          stop();
          resolveWait({ content: [{ type: 'text', text: hit }] });
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
        rejectWait(Object.assign(new Error(`waited ${timeout} ms for ${selector ? `selector ${selector}` : `text ${JSON.stringify(text)}`}`), { code: 'WAIT_TIMEOUT' }));
      }, timeout);
      function stop() {
        observer.disconnect();
        clearInterval(poll);
        clearTimeout(timer);
      }
      if (!settle()) observer.observe(document, { childList: true, subtree: true, characterData: true, attributes: true });
    });
  }

  // Where an element is, for browser_screenshot: scrolled into view, then its box in the
  // top-level viewport's CSS pixels once the page has painted.
  async function bounds(args) {
    const el = resolve(args);
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    const r = el.getBoundingClientRect();
    return { x: r.x, y: r.y, width: r.width, height: r.height, devicePixelRatio: window.devicePixelRatio };
  }

  const tools = { snapshot, click, type, select, press_key: pressKey, wait_for: waitFor, bounds };

  return {
    async run(name, args) {
      const fn = tools[name];
      if (!fn) fail('TOOL_NOT_FOUND', `no built-in tool browser_${name}`);
      return fn(args || {});
    },
  };
})();
