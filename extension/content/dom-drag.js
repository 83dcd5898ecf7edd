// browser_drag, one frame's part: a press, a move in steps and a release, as a person's drag
// reaches a page. Where the pressed element is draggable by then (draggable=true, a link, an
// image, or an element a sortable list made draggable in its own pointerdown handler), the
// browser's HTML5 drag and drop follows (dragstart … drop with one DataTransfer); otherwise the
// pointer and mouse moves go on to the release, for hand-made dragging (sliders, lists that read
// pointer coordinates). Steps are a few milliseconds apart: libraries start the drag on the next
// tick, and ignore moves before it.
(() => {
  const dom = globalThis.browserMcpDom;
  if (!dom || dom.tools.drag) return;
  const { fail, resolve, describeShort, visible, pointer, mouse, moveTo, dragEvent, dropPoint, center, text } = dom;
  const STEPS = 6;
  const DWELL_MS = 40;
  const tick = () => dom.pause(4);

  // The element a browser would start an HTML5 drag from, pressed at `el`.
  function draggableOf(el) {
    for (let e = el; e; e = e.parentElement || e.getRootNode().host) {
      const attr = e.getAttribute?.('draggable');
      if (attr === 'true') return e;
      if (attr === 'false') return null;
      if ((e instanceof HTMLAnchorElement && e.href) || e instanceof HTMLImageElement) return e;
    }
    return null;
  }

  const fraction = (p, what) => {
    if (p === undefined) return null;
    const ok = (v) => typeof v === 'number' && v >= 0 && v <= 1;
    if (!p || typeof p !== 'object' || !ok(p.x ?? 0.5) || !ok(p.y ?? 0.5)) fail('INVALID_ARGUMENTS', `"${what}" is {x, y}, fractions of the drop target's box from 0 to 1`);
    return { x: p.x ?? 0.5, y: p.y ?? 0.5 };
  };

  async function drag(args) {
    const src = resolve(args, { refKey: 'startRef', selectorKey: 'startSelector', what: 'drag source' });
    const toElement = Boolean(args.endRef || args.endSelector);
    if (!toElement && args.offset === undefined) fail('INVALID_ARGUMENTS', 'give "endRef" (from browser_snapshot), "endSelector", or an "offset" {x, y} in pixels');
    const dst = toElement ? resolve(args, { refKey: 'endRef', selectorKey: 'endSelector', what: 'drop target' }) : null;
    const position = fraction(args.endPosition, 'endPosition');
    if (src === dst && !position) fail('INVALID_ARGUMENTS', 'the drag source and the drop target are the same element');
    const offset = args.offset;
    if (!toElement && (!offset || typeof offset !== 'object' || !Number.isFinite(offset.x ?? 0) || !Number.isFinite(offset.y ?? 0))) fail('INVALID_ARGUMENTS', '"offset" is {x, y} in CSS pixels from the centre of the drag source');
    await dom.reach(src, args, { hit: true, enabled: false, verb: 'drag' });
    if (dst && !visible(dst)) fail('ELEMENT_NOT_INTERACTABLE', `the drop target ${describeShort(dst)} is not visible`);
    const what = dst ? `${describeShort(src)} onto ${describeShort(dst)}` : `${describeShort(src)} by (${offset.x ?? 0}, ${offset.y ?? 0})`;

    // Where the drop lands: known only after scrolling the target into view, which may move
    // the source; so the target first, then the source's centre as it is then.
    const end = () => (dst ? dropPoint(dst, position).at : { x: start.x + (offset.x ?? 0), y: start.y + (offset.y ?? 0) });
    let start = center(src);
    if (dst) {
      end();
      start = center(src);
    }
    const pressedAt = document.elementFromPoint(start.x, start.y);
    return run(pressedAt && src.contains(pressedAt) ? pressedAt : src, start, end, what);
  }

  // At points of this frame's viewport (the worker's, for a drag at x, y with synthetic events):
  // the element pressed is whatever is at the start, the release wherever the end falls.
  async function dragAt({ start, end }) {
    const pressed = dom.hitAt(start.x, start.y);
    if (!pressed) fail('ELEMENT_NOT_FOUND', `nothing at (${Math.round(start.x)}, ${Math.round(start.y)}) in this frame`);
    return run(pressed, start, () => end, `from (${Math.round(start.x)}, ${Math.round(start.y)}) to (${Math.round(end.x)}, ${Math.round(end.y)})`);
  }

  // The drag itself: `pressed` pressed at `start`, then towards `end()` (asked once the press is
  // made: the page may scroll or lay out on it).
  async function run(pressed, start, end, what) {
    moveTo(pressed, start);
    if (pointer('pointerdown', pressed, start, { buttons: 1 })) mouse('mousedown', pressed, start, { buttons: 1 });
    await tick();
    const to = end();
    const at = (i) => ({ x: start.x + ((to.x - start.x) * i) / STEPS, y: start.y + ((to.y - start.y) * i) / STEPS });
    const under = (p) => document.elementFromPoint(p.x, p.y) || document.body;

    // A browser starts an HTML5 drag after the first few pixels of movement.
    const source = draggableOf(pressed);
    if (source) {
      const dt = new DataTransfer();
      if (dragEvent('dragstart', source, start, dt)) return html5(source, dt, at, under, what);
      // A cancelled dragstart: the press goes on as plain moves.
    }
    for (let i = 1; i <= STEPS; i++) {
      const p = at(i);
      moveTo(under(p), p, { buttons: 1 }); // over, out, enter and leave as it crosses elements
      await tick();
    }
    const p = at(STEPS);
    const u = under(p);
    pointer('pointerup', u, p);
    mouse('mouseup', u, p);
    return text(`Dragged ${what} with mouse events (pointer and mouse: down, ${STEPS} moves, up)`);
  }

  async function html5(source, dt, at, under, what) {
    pointer('pointercancel', source, at(0)); // as a browser does when a drag starts
    let over = null;
    let accepted = false;
    for (let i = 1; i <= STEPS; i++) {
      await tick();
      const p = at(i);
      const u = under(p);
      if (source.isConnected) dragEvent('drag', source, p, dt);
      if (u !== over) {
        dragEvent('dragenter', u, p, dt);
        if (over?.isConnected) dragEvent('dragleave', over, p, dt);
        over = u;
      }
      accepted = !dragEvent('dragover', over, p, dt); // a drop zone cancels dragover
    }
    // A person rests a moment over the target, and the browser repeats dragover there (every
    // 50 ms): sortable lists ignore the moves that come right after one they acted on.
    await dom.pause(DWELL_MS);
    const p = at(STEPS);
    const u = under(p);
    if (u !== over) {
      dragEvent('dragenter', u, p, dt);
      if (over?.isConnected) dragEvent('dragleave', over, p, dt);
      over = u;
    }
    accepted = !dragEvent('dragover', over, p, dt);
    let outcome;
    if (accepted) {
      dragEvent('drop', over, p, dt);
      outcome = 'dropped';
    } else {
      dragEvent('dragleave', over, p, dt);
      outcome = 'the target did not accept the drop (its dragover was not cancelled), so nothing was dropped';
    }
    dragEvent('dragend', source.isConnected ? source : over, p, dt);
    return text(`Dragged ${what} with HTML5 drag and drop: ${outcome}`);
  }

  Object.assign(dom.tools, { drag, drag_at: dragAt });
})();
