// What keeps the eyes bounded: a ring of the newest entries (memory), and a character budget
// with a marker that says how to get the rest (the answer an agent reads).

// A fixed-capacity buffer of entries with increasing `id`s; pushing into a full ring drops the
// oldest entry (counted in `dropped`, and handed to `onDrop`).
export class Ring {
  constructor(capacity, onDrop = null) {
    this.capacity = capacity;
    this.items = [];
    this.head = 0; // index of the oldest entry once the ring is full
    this.dropped = 0;
    this.onDrop = onDrop;
  }

  get size() {
    return this.items.length;
  }

  push(entry) {
    if (this.items.length < this.capacity) {
      this.items.push(entry);
      return;
    }
    const old = this.items[this.head];
    this.items[this.head] = entry;
    this.head = (this.head + 1) % this.capacity;
    this.dropped += 1;
    this.onDrop?.(old);
  }

  // Oldest first.
  toArray() {
    return this.head === 0 ? this.items.slice() : [...this.items.slice(this.head), ...this.items.slice(0, this.head)];
  }
}

// Merges id-ordered arrays into one, oldest first.
export function mergeById(...lists) {
  const out = lists.flat();
  return lists.filter((l) => l.length).length > 1 ? out.sort((a, b) => a.id - b.id) : out;
}

// As for browser_snapshot (frames.js), so every answer an agent reads has one budget.
export const DEFAULT_BUDGET = 20_000;
export const MIN_BUDGET = 500;
export const MAX_BUDGET = 500_000;
export const DEFAULT_LIMIT = 200;
export const MAX_LIMIT = 1_000;

// `maxChars` and `limit` from a tool's arguments, checked and clamped.
export function bounds(args) {
  const num = (key, dflt, min, max) => {
    const v = args[key];
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw Object.assign(new Error(`"${key}" must be a number`), { code: 'INVALID_ARGUMENTS' });
    return Math.min(Math.max(Math.floor(v), min), max);
  };
  return { maxChars: num('maxChars', DEFAULT_BUDGET, MIN_BUDGET, MAX_BUDGET), limit: num('limit', DEFAULT_LIMIT, 1, MAX_LIMIT) };
}

// Lays out `entries` (oldest first, already filtered) as one line each under a header, until the
// entry limit or the character budget is reached; what does not fit is summed up in a marker
// that names the cursor to ask again with. The text never exceeds `maxChars`.
//   noun: ['message', 'messages'];  hint: what else narrows the answer ("level or text").
// Returns {text, shown, more, cursor}: `cursor` is the id of the last entry shown (or `since`).
export function fit({ header, entries, line, maxChars, limit, since, noun, hint, footer = '' }) {
  const more = (n) => `${n.toLocaleString('en-US')} more ${n === 1 ? noun[0] : noun[1]}`;
  // Room for the marker, whatever its numbers.
  const reserve = 260 + footer.length;
  const lines = [header];
  let used = header.length + 1;
  const shown = [];
  for (const e of entries) {
    if (shown.length >= limit) break;
    let l = line(e);
    if (used + l.length + 1 > maxChars - reserve) {
      // One entry longer than the whole budget still shows, cut, rather than blocking the rest.
      if (shown.length) break;
      l = `${l.slice(0, Math.max(0, maxChars - reserve - used - 2))}…`;
    }
    lines.push(l);
    used += l.length + 1;
    shown.push(e);
  }
  const left = entries.length - shown.length;
  const cursor = shown.length ? shown[shown.length - 1].id : since;
  if (left) {
    const why = shown.length >= limit ? `the limit of ${limit}` : `the budget of ${maxChars.toLocaleString('en-US')} characters`;
    lines.push(`… truncated: ${more(left)} not shown (${why}). Ask again with since=${cursor} to see the next ones${hint ? `, or narrow with ${hint}` : ''}.`);
  }
  if (footer) lines.push(footer);
  let text = lines.join('\n');
  if (text.length > maxChars) text = `${text.slice(0, maxChars - 1)}…`;
  return { text, shown, more: left, cursor };
}

// A string no longer than `max` characters (an ellipsis marks a cut).
export const clip = (s, max) => {
  const t = String(s ?? '');
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
};

// "14:03:07.123" in the browser's local time.
export function clock(ms) {
  const d = new Date(ms);
  const p = (n, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}
