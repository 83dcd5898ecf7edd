// The console messages of each tab (all its frames), as console-relay.js reports them, kept in
// two rings per tab so that a flood of logs cannot push the errors out: the last
// ERRORS_KEPT errors and warnings, and the last OTHERS_KEPT messages of the other levels.
// Each message's text is at most TEXT_MAX characters. A tab's rings go when the tab closes.
import { Code, ToolError } from '../../shared/protocol.js';
import { Ring, bounds, clip, clock, fit, mergeById } from './ring.js';

export const ERRORS_KEPT = 500;
export const OTHERS_KEPT = 1000;
const TEXT_MAX = 1000;
const URL_MAX = 500;
export const LEVELS = ['debug', 'log', 'info', 'warn', 'error'];
const SOURCES = new Set(['console', 'exception', 'rejection', 'csp']);

class TabConsole {
  constructor() {
    this.errors = new Ring(ERRORS_KEPT);
    this.others = new Ring(OTHERS_KEPT);
    this.nextId = 1;
    this.page = 0; // counts the documents the tab's top frame has had
    this.topDocument = null;
    this.pages = new Map(); // documentId of a top frame -> its page number (the last few)
    this.droppedInPage = 0; // dropped before they reached us (page side, relay)
  }

  get held() {
    return this.errors.size + this.others.size;
  }

  // A new top-level document: "since the page loaded" starts here.
  newPage(documentId) {
    if (documentId && this.pages.has(documentId)) {
      // A page restored from the back/forward cache is that page again.
      this.page = this.pages.get(documentId);
      this.topDocument = documentId;
      return;
    }
    this.page += 1;
    this.topDocument = documentId || null;
    if (documentId) {
      this.pages.set(documentId, this.page);
      if (this.pages.size > 8) this.pages.delete(this.pages.keys().next().value);
    }
  }

  // `frame.topDocumentId`: the top document that holds the frame (observe.js looks it up).
  pageOf(frame) {
    const top = frame.frameId === 0 ? frame.documentId : frame.topDocumentId;
    if (top && top !== this.topDocument) {
      // A frame's first words may come before webNavigation says its page committed;
      // a document we knew before is an old page's late words.
      if (this.pages.has(top)) return this.pages.get(top);
      this.newPage(top);
    }
    return this.page;
  }
}

const tabs = new Map(); // tabId -> TabConsole

const ofTab = (tabId) => {
  let t = tabs.get(tabId);
  if (!t) tabs.set(tabId, (t = new TabConsole()));
  return t;
};

const int = (v) => (Number.isInteger(v) && v >= 0 ? v : undefined);

// Page words into a message of ours: only known fields, known values, bounded sizes.
function clean(e, id, page, frame, now) {
  const level = LEVELS.includes(e.level) ? e.level : 'log';
  const m = {
    id,
    level,
    source: SOURCES.has(e.source) ? e.source : 'console',
    text: clip(typeof e.text === 'string' ? e.text : String(e.text ?? ''), TEXT_MAX),
    time: Number.isFinite(e.time) && Math.abs(e.time - now) < 86_400_000 ? e.time : now,
    page,
  };
  if (typeof e.url === 'string' && e.url) m.url = clip(e.url, URL_MAX);
  if (int(e.line) !== undefined) m.line = e.line;
  if (int(e.column) !== undefined) m.column = e.column;
  if (frame.frameId !== 0) {
    m.frameId = frame.frameId;
    if (frame.url) m.frameUrl = clip(frame.url, URL_MAX);
  }
  // The sites of the frame and of those above it: a read shows it only to a call whose consent
  // covers them all (observe.js).
  if (Array.isArray(frame.sites)) m.sites = frame.sites;
  return m;
}

// A batch from a frame of tab `tabId`. Returns the messages stored (the caller turns the errors
// into events).
export function record(tabId, frame, batch) {
  const t = ofTab(tabId);
  const page = t.pageOf(frame);
  const now = Date.now();
  if (Number.isInteger(batch.dropped) && batch.dropped > 0) t.droppedInPage += batch.dropped;
  const stored = [];
  const entries = Array.isArray(batch.entries) ? batch.entries.slice(-(ERRORS_KEPT + OTHERS_KEPT)) : [];
  for (const e of entries) {
    if (!e || typeof e !== 'object') continue;
    const m = clean(e, t.nextId++, page, frame, now);
    (m.level === 'error' || m.level === 'warn' ? t.errors : t.others).push(m);
    stored.push(m);
  }
  return stored;
}

export function newPage(tabId, documentId) {
  ofTab(tabId).newPage(documentId);
}

export function forget(tabId) {
  tabs.delete(tabId);
}

// What a tab holds goes when its site is hidden (observe.js): shown again, its log starts with
// what came after. Its numbering stays, so a reader's cursor still means what it meant.
export function clear(tabId) {
  const t = tabs.get(tabId);
  if (!t) return;
  t.errors = new Ring(ERRORS_KEPT);
  t.others = new Ring(OTHERS_KEPT);
  t.droppedInPage = 0;
}

export const knows = (tabId) => tabs.has(tabId);

// Tabs holding messages, and how many in all (an empty state per tab is a few bytes).
export const held = () => ({
  tabs: [...tabs].filter(([, t]) => t.held).map(([id]) => id),
  messages: [...tabs.values()].reduce((n, t) => n + t.held, 0),
});

function where(m) {
  if (!m.url) return '';
  const at = m.line ? `:${m.line}${m.column ? `:${m.column}` : ''}` : '';
  return ` (${m.url}${at})`;
}

const lineOf = (m) => `#${m.id} [${m.level}] ${clock(m.time)} ${m.text.replace(/\n/g, '\n    ')}${where(m)}${m.frameId ? ` [frame ${m.frameId}]` : ''}`;

// `visible(sites)`: whether the reading call may see what frames of these sites logged.
export function query(tabId, args, visible = () => true) {
  const { maxChars, limit } = bounds(args);
  if (args.level !== undefined && !LEVELS.includes(args.level)) {
    throw new ToolError(Code.INVALID_ARGUMENTS, `"level" is one of ${LEVELS.join(', ')}`);
  }
  if (args.text !== undefined && typeof args.text !== 'string') throw new ToolError(Code.INVALID_ARGUMENTS, '"text" must be a string');
  if (args.since !== undefined && !(Number.isInteger(args.since) && args.since >= 0)) {
    throw new ToolError(Code.INVALID_ARGUMENTS, '"since" must be a cursor (a message id) from an earlier answer');
  }
  const t = tabs.get(tabId) || new TabConsole();
  const minLevel = LEVELS.indexOf(args.level ?? 'debug');
  const needle = args.text?.toLowerCase();
  const sincePage = args.since === undefined;
  const all = mergeById(t.errors.toArray(), t.others.toArray());
  const matching = all.filter((m) =>
    (sincePage ? m.page === t.page : m.id > args.since) &&
    LEVELS.indexOf(m.level) >= minLevel &&
    (!needle || m.text.toLowerCase().includes(needle)));
  const entries = matching.filter((m) => visible(m.sites ?? []));
  const left = matching.length - entries.length;
  const scope = sincePage ? 'since the page loaded' : `after #${args.since}`;
  const filters = [args.level && args.level !== 'debug' ? `level ≥ ${args.level}` : '', needle ? `text ~ ${JSON.stringify(args.text)}` : ''].filter(Boolean).join(', ');
  const header = `Console of tab ${tabId}, ${scope}${filters ? ` (${filters})` : ''}: ${entries.length.toLocaleString('en-US')} message${entries.length === 1 ? '' : 's'}.` +
    (left ? ` ${left.toLocaleString('en-US')} more from frames of sites this call may not read (the person has not allowed them) are left out.` : '');
  const lost = t.errors.dropped + t.others.dropped + t.droppedInPage;
  const footer = lost
    ? `(${lost.toLocaleString('en-US')} older messages of this tab are gone: it keeps the last ${OTHERS_KEPT.toLocaleString('en-US')} messages and the last ${ERRORS_KEPT} errors/warnings.)`
    : '';
  const out = fit({
    header, entries, line: lineOf, maxChars, limit, since: args.since ?? lastIdBefore(all, t.page), noun: ['message', 'messages'], hint: 'level or text', footer,
  });
  const newest = all.length ? all[all.length - 1].id : 0;
  return {
    content: [{ type: 'text', text: out.text }],
    structuredContent: {
      messages: out.shown.map(({ page, sites, ...m }) => m),
      cursor: out.more ? out.cursor : Math.max(out.cursor ?? 0, newest),
      more: out.more,
      dropped: lost,
    },
  };
}

// The id before the current page's first message: a cursor that means "since the page loaded".
function lastIdBefore(all, page) {
  let last = 0;
  for (const m of all) {
    if (m.page === page) break;
    last = m.id;
  }
  return last;
}
