// Shared by the popup and the options page: asking the service worker, and rendering the parts
// both show. Everything that comes from pages or daemons (tool names, descriptions, titles,
// reasons) is inserted as text, never as HTML.

export async function ask(msg) {
  const reply = await chrome.runtime.sendMessage(msg);
  if (reply?.error) throw new Error(reply.error);
  return reply;
}

// Re-renders on every change the worker announces, on storage changes and once a second (for
// the "5 s ago" texts). `replace` keeps keyboard focus across the re-render.
export function live(render) {
  let busy = false;
  let again = false;
  const run = async () => {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      await render();
    } catch (e) {
      console.warn('browser-mcp: render', e);
    } finally {
      busy = false;
      if (again) {
        again = false;
        run();
      }
    }
  };
  chrome.runtime.onMessage.addListener((msg) => {
    if (msg?.type === 'face:changed') run();
  });
  chrome.storage.onChanged.addListener(run);
  setInterval(run, 1000);
  return run();
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) if (c != null && c !== false) node.append(c);
  return node;
}

// Swaps a container's content, unless it would look the same (a screen reader would otherwise
// hear it again, and a pressed button would vanish under the pointer). Keyboard focus inside
// moves to the new element with the same data-key. It is read at the swap itself, not before
// the render's await: a Tab pressed while the state was on its way would otherwise land on an
// element about to be removed, and the next Tab would start over from where it was.
const rendered = new WeakMap();
export function replace(container, ...children) {
  const nodes = children.flat().filter((c) => c != null && c !== false);
  const html = nodes.map((n) => (typeof n === 'string' ? n : n.outerHTML)).join('');
  if (rendered.get(container) === html) return;
  const focused = document.activeElement;
  const key = container.contains(focused) ? focused.dataset?.key : undefined;
  container.replaceChildren(...nodes);
  rendered.set(container, html);
  if (key) container.querySelector(`[data-key="${CSS.escape(key)}"]`)?.focus();
}

export function ago(ms, now = Date.now()) {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  return h < 48 ? `${h} h ago` : `${Math.round(h / 24)} days ago`;
}

export const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });

export function duration(ms) {
  if (ms < 1000) return `${ms} ms`;
  return ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60_000)} min`;
}

const STATE_WORDS = {
  connecting: 'connecting',
  connected: 'connected',
  reconnecting: 'reconnecting',
  lost: 'lost',
  stopped: 'stopped',
  failed: 'failed',
  unpaired: 'found, not paired',
  refused: 'refused',
};

// Whether a daemon is trusted, in words (issue 21).
const TRUST_WORDS = {
  'native host': 'via native host',
  paired: 'paired',
};

// One list item per daemon: address, version, state, since when, why.
export function daemonList(list, daemons) {
  const now = Date.now();
  const items = daemons.map((d) => {
    let detail;
    if (d.state === 'connected') detail = `since ${clock(d.since)} (${ago(d.since, now).replace(' ago', '')})`;
    else if (d.state === 'reconnecting') detail = `${d.reason || 'not connected'}; next try ${d.retryAt > now ? `in ${Math.ceil((d.retryAt - now) / 1000)} s` : 'now'}`;
    else if (d.state === 'connecting') detail = 'opening the connection';
    else if (d.state === 'unpaired') detail = `${d.reason}: run browserctl pair in a terminal and enter its code here`;
    else detail = `${d.reason || ''} — ${ago(d.since, now)}`;
    const trust = d.state === 'connected' && TRUST_WORDS[d.trust] ? ` · ${TRUST_WORDS[d.trust]}` : '';
    return el('li', { class: `daemon state-${d.state}` },
      el('span', { class: 'dot', 'aria-hidden': 'true' }),
      el('span', { class: 'daemon-main' },
        el('strong', { text: `127.0.0.1:${d.port}` }),
        d.version ? el('span', { class: 'muted', text: ` v${d.version}` }) : null,
        el('span', { class: `state state-${d.state}`, text: ` ${STATE_WORDS[d.state] || d.state}${trust}` })),
      el('span', { class: 'daemon-detail muted', text: `${detail} · ${d.source}` }));
  });
  replace(list, items.length ? items : [el('li', { class: 'muted empty', text: 'No daemon connected.' })]);
}

// The pairing form (#pair-form, #pair-code, #pair, #pair-status in the page's HTML): the code
// `browserctl pair` printed goes to the service worker, which tries it on the daemons found.
export function wirePairForm(onDone) {
  const form = document.getElementById('pair-form');
  const input = document.getElementById('pair-code');
  const status = document.getElementById('pair-status');
  const button = document.getElementById('pair');
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    button.disabled = true;
    status.className = 'muted';
    status.textContent = 'Pairing…';
    try {
      const r = await ask({ type: 'face:pair', code: input.value });
      if (r.paired) {
        status.className = 'ok';
        status.textContent = `Paired with the daemon on port ${r.port}.`;
        input.value = '';
      } else {
        status.className = 'bad';
        status.textContent = r.message;
      }
    } catch (err) {
      status.className = 'bad';
      status.textContent = String(err?.message ?? err);
    } finally {
      button.disabled = false;
      onDone?.();
    }
  });
}

const HINTS = [
  ['readOnlyHint', true, 'read-only', 'ok'],
  ['destructiveHint', true, 'destructive', 'warn'],
  ['idempotentHint', true, 'idempotent', ''],
  ['openWorldHint', true, 'open world', ''],
];

// The annotation chips of a tool: MCP's hints in words, plus the kind (page or built-in).
export function toolChips(tool) {
  const a = tool.annotations && typeof tool.annotations === 'object' ? tool.annotations : {};
  const chips = [el('span', { class: `chip kind-${tool.kind}`, text: tool.kind === 'page' ? 'page tool' : 'built-in' })];
  for (const [key, value, word, tone] of HINTS) {
    if (a[key] === value) chips.push(el('span', { class: `chip ${tone}`, text: word }));
  }
  return chips;
}

// Words a person reads for the failures the extension itself decides; the code stays in the
// tooltip and in data-code.
const ERROR_WORDS = {
  USER_DENIED: 'denied',
  USER_CONSENT_TIMEOUT: 'no answer',
  SITE_DISABLED: 'site off',
  EVALUATE_DISABLED: 'evaluate off',
};

export function outcome(call) {
  if (call.state === 'waiting') return el('span', { class: 'result waiting', text: 'waiting for you' });
  if (call.state === 'running') return el('span', { class: 'result running', text: 'running' });
  if (call.ok) return el('span', { class: 'result ok', text: 'ok' });
  const code = call.code || 'TOOL_ERROR';
  return el('span', { class: 'result error', 'data-code': code, title: `${code}: ${call.message || ''}`, text: ERROR_WORDS[code] || code });
}
