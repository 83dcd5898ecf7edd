// A hover the page's stylesheets can see. Only the browser's own pointer sets `:hover`, and a
// synthetic mouseover does not move it, so menus that CSS alone opens (`.menu:hover > ul`) stay
// shut for events. This copies every `:hover` rule the frame can read (same-origin sheets; a
// cross-origin one without CORS hides its rules) into one style element with `:hover` turned
// into a class, and gives that class to the hovered element and its ancestors, as `:hover`
// would be. The next hover or click moves it, as the pointer would.
(() => {
  const dom = globalThis.browserMcpDom;
  if (!dom || dom.hoverCss) return;
  const CLASS = 'browser-mcp-hover';
  const STYLE_ID = 'browser-mcp-hover-style';
  let held = []; // elements that carry CLASS now

  // The rules of `list` that mention :hover, rewritten; grouping rules (@media, @supports,
  // @layer) keep their condition around what they hold.
  function rewrite(list, out) {
    for (const rule of list) {
      if (rule instanceof CSSStyleRule) {
        if (rule.selectorText.includes(':hover')) {
          out.push(`${rule.selectorText.replaceAll(':hover', `.${CLASS}`)} { ${rule.style.cssText} }`);
        }
      } else if (rule.cssRules && rule.cssText.includes(':hover')) {
        const inner = [];
        rewrite(rule.cssRules, inner);
        if (!inner.length) continue;
        const head = rule.cssText.slice(0, rule.cssText.indexOf('{')).trim();
        out.push(`${head} { ${inner.join('\n')} }`);
      }
    }
  }

  function styles() {
    const out = [];
    for (const sheet of document.styleSheets) {
      if (sheet.ownerNode?.id === STYLE_ID) continue;
      try {
        rewrite(sheet.cssRules, out);
      } catch {
        // another origin's sheet without CORS: its rules are not readable
      }
    }
    return out;
  }

  function clear() {
    for (const el of held) el.classList?.remove(CLASS);
    held = [];
  }

  // Returns how many :hover rules now apply the way they would under a pointer.
  function apply(el) {
    clear();
    const rules = styles();
    let style = document.getElementById(STYLE_ID);
    if (!rules.length) {
      style?.remove();
      return 0;
    }
    if (!style) {
      style = document.createElement('style');
      style.id = STYLE_ID;
    }
    style.textContent = rules.join('\n');
    (document.head || document.documentElement).append(style); // last, so it wins ties
    for (let n = el; n && n.nodeType === Node.ELEMENT_NODE; n = n.parentElement || n.getRootNode()?.host) {
      n.classList.add(CLASS);
      held.push(n);
    }
    return rules.length;
  }

  // A click moves the pointer to what it clicks: once a hover has put :hover rules to work,
  // they follow it there (still over the menu it opened, or away from it).
  const clickAt = (el) => {
    if (held.length) apply(el);
  };

  dom.hoverCss = { apply, clear, clickAt };
})();
