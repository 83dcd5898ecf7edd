// Where an action lands (issue 57): the one check every action makes before it acts, as
// Playwright's actionability checks do, so that a result never says a click worked when the page
// cannot have seen it. The element is attached, rendered (dom-tools.js `reachable`), enabled when
// the action needs it, not moving, and, for a pointer, what is hit at the point; the point is in
// this frame's viewport in CSS pixels (the service worker adds the offsets of the frames above,
// worker/frames/frames.js `actionPoint`). And what followed an action: the page leaving, the
// address changing, the focus moving (`watchAfter`).
(() => {
  const dom = globalThis.browserMcpDom;
  if (!dom || dom.actionPoint) return;
  const { fail, describeShort, up } = dom;
  // How long an action waits for its element to become actionable (a menu still opening, an
  // overlay on its way out), and how often it looks again meanwhile.
  const WAIT_MS = 2000;
  const POLL_MS = 40;
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  // The innermost element at a point, through open shadow roots.
  function hitAt(x, y) {
    let hit = document.elementFromPoint(x, y);
    while (hit?.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    return hit;
  }

  // `node` is `el` or inside it, across shadow roots.
  const within = (el, node) => {
    for (let n = node; n; n = up(n)) if (n === el) return true;
    return false;
  };

  // A pointer on a control's <label> reaches the control.
  const labelOf = (el, node) => [...(el.labels || [])].some((l) => within(l, node));

  function disabled(el) {
    if (el.matches?.(':disabled')) return true;
    for (let n = el; n; n = up(n)) if (n.getAttribute?.('aria-disabled') === 'true') return true;
    return false;
  }

  // Why an element is not rendered, in a few words.
  function unrendered(el) {
    const s = getComputedStyle(el);
    if (s.visibility !== 'visible') return `visibility: ${s.visibility}`;
    for (let n = el; n; n = up(n)) if (n.hasAttribute?.('inert')) return 'inside an inert part of the page';
    if (!dom.actionBox(el)) return 'it has no size';
    return 'clipped to nothing';
  }

  // What covers `el` at a point, for the agent: the control the hit element belongs to (with a
  // ref, given now if it had none); else the outermost box that covers it (a banner, a dialog,
  // an overlay) by role or tag and name, with the first controls it holds.
  function cover(hit, el) {
    for (let n = hit; n && n !== document.body && n !== document.documentElement; n = up(n)) {
      if (n.nodeType === 1 && (dom.hasRef(n) || dom.interactive(n))) return describeShort(n);
    }
    let top = hit;
    for (let p = up(top); p && p !== document.body && p !== document.documentElement && !within(p, el); p = up(p)) top = p;
    const name = dom.accessibleName(top);
    const controls = [...top.querySelectorAll(dom.INTERACTIVE)].filter((c) => dom.rendered(c)).slice(0, 3).map(describeShort);
    return `${top.getAttribute('role') || top.localName}${name ? ` "${name}"` : ''}${controls.length ? `, which holds ${controls.join(', ')}` : ''}`;
  }

  // Whether an animation or transition runs on the element or on a box it is laid out in.
  function animated(el) {
    for (const a of document.getAnimations?.() ?? []) {
      const t = a.effect?.target;
      if (t && a.playState === 'running' && within(t, el)) return true;
    }
    return false;
  }
  const same = (a, b) => a && b && a.x === b.x && a.y === b.y && a.width === b.width && a.height === b.height;

  // The middle of the part of `box` inside the viewport, or a point at `position` (CSS pixels
  // from the box's top left corner).
  function pointIn(box, position) {
    if (position) return { x: box.left + position.x, y: box.top + position.y };
    const left = Math.max(box.left, 0);
    const top = Math.max(box.top, 0);
    const right = Math.min(box.right, innerWidth);
    const bottom = Math.min(box.bottom, innerHeight);
    if (right <= left || bottom <= top) return { x: box.left + box.width / 2, y: box.top + box.height / 2 };
    return { x: (left + right) / 2, y: (top + bottom) / 2 };
  }

  const inView = (r) => r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth;
  // Scrolled into view when it is not in it, or (`align`, a look after one that found it
  // covered) to that place in the viewport: out from under a sticky header or footer, as
  // Playwright's retries do.
  function scrolledTo(el, align) {
    let box = dom.actionBox(el);
    if (box && (align || !inView(box))) {
      el.scrollIntoView({ block: align || 'center', inline: align || 'center', behavior: 'instant' });
      box = dom.actionBox(el);
    }
    return box;
  }
  const ALIGNS = ['center', 'end', 'start', 'nearest'];

  // The element a pointer event goes to: the innermost one at the point inside `el` (a header's
  // label, a cell's text, an icon's path), unless that is a control of its own inside `el`.
  const innermost = (el, hit) => (hit && hit !== el && within(el, hit) && !hit.closest('a, button, input, select, textarea, label') ? hit : el);

  // One look: {at, target} when the action may go ahead, else why not ({code, message, retry});
  // `what()` names the element, for a message.
  function look(el, what, opts, last) {
    if (!el.isConnected) return { code: 'ELEMENT_NOT_FOUND', message: `${what()} is gone from the page; take a new browser_snapshot` };
    if (opts.enabled && disabled(el)) return { code: 'ELEMENT_NOT_INTERACTABLE', message: `${what()} is disabled`, retry: true };
    const via = dom.reachable(el);
    if (!via) return { code: 'ELEMENT_NOT_INTERACTABLE', message: `${what()} is not rendered (${unrendered(el)})`, retry: true };
    const box = scrolledTo(via, opts.align);
    if (!opts.settled && animated(via) && !same(box, last)) return { code: 'MOVING', box, retry: true };
    const at = pointIn(box, opts.position);
    if (!opts.hit) return { at, target: via, hit: via, via };
    const hit = hitAt(at.x, at.y);
    if (!hit) return { code: 'ELEMENT_NOT_INTERACTABLE', message: `${what()} is outside the viewport at (${Math.round(at.x)}, ${Math.round(at.y)})` };
    if (!within(via, hit) && !labelOf(el, hit)) {
      const by = within(hit, via) ? `its container ${hit.getAttribute('role') || hit.localName}, which takes the pointer in its stead (pointer-events)` : cover(hit, via);
      return {
        code: 'ELEMENT_COVERED',
        message: `${what()} is covered by ${by} at (${Math.round(at.x)}, ${Math.round(at.y)}): the ${opts.verb || 'action'} would land there. Act on that first (close it, or wait for it to go), or pass "force": true to act anyway`,
        retry: true,
      };
    }
    return { at, target: innermost(via, hit), hit: within(via, hit) ? hit : via, via };
  }

  function checkPosition(p) {
    if (p === undefined) return null;
    if (!p || typeof p !== 'object' || !Number.isFinite(p.x) || !Number.isFinite(p.y)) fail('INVALID_ARGUMENTS', '"position" is {x, y}, CSS pixels from the top left corner of the element');
    return { x: p.x, y: p.y };
  }

  // Where an action on `el` lands, once it may: {at: {x, y}, target, hit, via}: `target` is what
  // a click goes to, `hit` the innermost element of `el` there (what a pointer is over), `via`
  // what is acted on (`el`, or the label of a control hidden behind it). Waits up to WAIT_MS for
  // the element to become actionable, then fails saying why. opts: position ({x, y} in the
  // element), force (act anyway: only attached is checked, and `covered` says whether a pointer
  // at the point would reach something else), enabled (the action needs an enabled element), hit
  // (a pointer: what is at the point must be the element), verb (for the message).
  async function actionPoint(el, opts = {}) {
    const position = checkPosition(opts.position);
    // Named only for a message: an accessible name is the dearest part of a look.
    let named = null;
    const what = () => (named ??= describeShort(el));
    if (opts.force === true) {
      if (!el.isConnected) fail('ELEMENT_NOT_FOUND', `${what()} is gone from the page; take a new browser_snapshot`);
      const box = scrolledTo(el) || el.getBoundingClientRect();
      const at = pointIn(box, position);
      const hit = hitAt(at.x, at.y);
      // `covered`: a pointer at the point would reach something else (the synthetic events go
      // to the element all the same).
      const covered = !hit || !(within(el, hit) || labelOf(el, hit));
      return { at, target: innermost(el, hit), hit: hit && within(el, hit) ? hit : el, via: el, covered };
    }
    const deadline = performance.now() + WAIT_MS;
    const o = { ...opts, position, settled: false };
    let last = null;
    for (;;) {
      const v = look(el, what, o, last);
      if (v.at) return v;
      const late = performance.now() >= deadline;
      if (v.code === 'MOVING' && late) {
        o.settled = true; // still moving when the time is up: the point as it is now
        continue;
      }
      if (!v.retry || late) fail(v.code, v.message);
      if (v.code === 'ELEMENT_COVERED') o.align = ALIGNS[(ALIGNS.indexOf(o.align) + 1) % ALIGNS.length];
      last = v.box ?? null;
      await sleep(POLL_MS);
    }
  }

  // --- what followed -----------------------------------------------------------------------

  // The element that has the focus, inside open shadow roots.
  function focused() {
    let a = document.activeElement;
    while (a?.shadowRoot?.activeElement) a = a.shadowRoot.activeElement;
    return a;
  }
  // A task of its own after the action's: what the page did in the same turn (a framework's
  // update, a focus moved in an effect) has happened by then. A message, not a timer: a
  // background tab's timers wait up to a second.
  const nextTask = () => new Promise((resolve) => {
    const c = new MessageChannel();
    c.port1.onmessage = () => resolve();
    c.port2.postMessage(0);
  });

  // A wait of `ms`: a timer in a tab in view; in the background, where the browser holds a
  // timer up to a second, message tasks until the time is up (the page's own tasks run between).
  const pause = async (ms) => {
    if (!document.hidden) return new Promise((resolve) => setTimeout(resolve, ms));
    const until = performance.now() + ms;
    do await nextTask();
    while (performance.now() < until);
  };

  // Watches what follows an action on `el`: returns a function that resolves to the facts (a
  // few words each) once the page has had its turn: where the page goes (the Navigation API,
  // where the browser has it; the worker also sees navigations and new tabs), where the focus
  // went when it left `el`.
  function watchAfter(el) {
    const before = focused();
    const from = location.href;
    let going = null;
    const nav = globalThis.navigation;
    const onNavigate = (e) => {
      const to = e.destination?.url;
      if (to && to !== from) going = { url: to, same: e.destination.sameDocument === true };
    };
    nav?.addEventListener?.('navigate', onNavigate);
    return async () => {
      await nextTask();
      nav?.removeEventListener?.('navigate', onNavigate);
      const facts = [];
      if (going) facts.push(going.same ? `the address changed to ${going.url}` : `the page is loading ${going.url}`);
      const now = focused();
      if (now && now !== before && now !== document.body && !within(el, now) && !labelOf(el, now)) facts.push(`focus moved to ${describeShort(now)}`);
      return { facts, navigating: going && !going.same ? going.url : null };
    };
  }

  Object.assign(dom, { actionPoint, watchAfter, hitAt, within, nextTask, pause });

  // The point for input the service worker makes itself (trusted input, issue 57): the same
  // checks, the frame-local point, and the element's box. args: ref or selector, position,
  // force, enabled (default true), hit (default true). What follows is watched from then on,
  // until `after_action` asks (the next point forgets an unasked watch).
  let watching = null;
  // Watches what follows the input the worker is about to make on `el` (also the element keys
  // and text go to: dom-input.js).
  const watchNext = (el) => {
    watching = watchAfter(el);
  };
  async function point(args) {
    const el = dom.resolve(args);
    const { at, target, covered } = await actionPoint(el, { position: args.position, force: args.force === true, enabled: args.enabled !== false, hit: args.hit !== false, verb: args.verb });
    const box = target.getBoundingClientRect();
    watchNext(el);
    // `hidden`: a background tab, where the browser holds its pointer moves until it is shown.
    return { x: at.x, y: at.y, covered: covered === true, hidden: document.visibilityState === 'hidden', element: describeShort(el), box: { x: box.x, y: box.y, width: box.width, height: box.height }, devicePixelRatio: window.devicePixelRatio };
  }
  // What followed the input since the last point: {after: [facts], navigating}, as the
  // synthetic actions put in their results (worker/tools/aftermath.js reads both).
  async function afterAction() {
    const seen = watching ? await watching() : { facts: [], navigating: null };
    watching = null;
    return { after: seen.facts, navigating: seen.navigating };
  }
  Object.assign(dom, { watchNext });
  Object.assign(dom.tools, { action_point: point, after_action: afterAction });
})();
