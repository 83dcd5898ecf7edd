// The requests of each tab, from chrome.webRequest: the last REQUESTS_KEPT per tab (URLs cut to
// URL_MAX characters). Request bodies are recorded only for tabs that asked for them
// (`captureBodies`), each cut to BODY_MAX characters; response bodies are never seen (the
// webRequest API does not give them). A tab's log goes when the tab closes.
import { Code, ToolError } from '../../shared/protocol.js';
import { Ring, bounds, clip, clock, fit } from './ring.js';

export const REQUESTS_KEPT = 1000;
const URL_MAX = 2000;
export const BODY_MAX = 2000;
export const TYPES = ['main_frame', 'sub_frame', 'stylesheet', 'script', 'image', 'font', 'object', 'xmlhttprequest', 'ping', 'csp_report', 'media', 'websocket', 'webbundle', 'other'];
const ALIASES = { document: 'main_frame', fetch: 'xmlhttprequest', xhr: 'xmlhttprequest', iframe: 'sub_frame', css: 'stylesheet' };

class TabNetwork {
  constructor() {
    this.open = new Map(); // webRequest requestId -> entry still in flight
    this.ring = new Ring(REQUESTS_KEPT, (old) => this.open.get(old.requestId) === old && this.open.delete(old.requestId));
    this.nextId = 1;
    this.pageStart = 1; // id of the request that loaded the current page
    this.bodies = null; // the listener recording request bodies, while asked for
    this.earlyBodies = new Map(); // requestId -> body that came before its request's entry
  }
}

const tabs = new Map(); // tabId -> TabNetwork
// Recent request URLs -> tab, so that a download (which names no tab) can be traced to its tab.
const recentUrls = new Map();
const RECENT_URLS = 500;
// (tabId, details) => the sites of the frames behind the request, if it may be recorded (site
// policy), else null: a read shows it only to a call whose consent covers them (observe.js).
let recording = () => [];
let hidden = () => false; // (url) => is this URL's site kept from the agent (site policy)

const ofTab = (tabId) => {
  let t = tabs.get(tabId);
  if (!t) tabs.set(tabId, (t = new TabNetwork()));
  return t;
};

function remember(url, tabId) {
  recentUrls.delete(url);
  recentUrls.set(url, { tabId, at: Date.now() });
  if (recentUrls.size > RECENT_URLS) recentUrls.delete(recentUrls.keys().next().value);
}

// The tab that requested `url` in the last `withinMs`, if any.
export function tabThatRequested(url, withinMs = 60_000) {
  const r = recentUrls.get(url);
  return r && Date.now() - r.at < withinMs && tabs.has(r.tabId) ? r.tabId : null;
}

// The size the last recorded response to `url` declared (Content-Length), or null: a download
// the browser reports without a byte count (Firefox, now and then) is sized by it.
export function responseSize(url) {
  const r = recentUrls.get(url);
  const entries = (r && tabs.get(r.tabId)?.ring.toArray()) || [];
  const e = entries.findLast((x) => x.url === url && x.size !== undefined);
  return e ? e.size : null;
}

function onBeforeRequest(d) {
  const sites = d.tabId < 0 ? null : recording(d.tabId, d);
  if (!sites) return;
  const t = ofTab(d.tabId);
  const e = {
    id: t.nextId++,
    requestId: d.requestId,
    method: d.method,
    url: clip(d.url, URL_MAX),
    type: d.type,
    state: 'pending',
    start: d.timeStamp,
    frameId: d.frameId,
    sites,
  };
  if (d.initiator) e.initiator = clip(d.initiator, 200);
  if (d.documentLifecycle === 'prerender') e.prerender = true;
  const early = t.earlyBodies.get(d.requestId);
  if (early !== undefined) {
    e.requestBody = early;
    t.earlyBodies.delete(d.requestId);
  }
  t.open.set(d.requestId, e);
  t.ring.push(e);
  remember(d.url, d.tabId);
}

const entryOf = (d) => tabs.get(d.tabId)?.open.get(d.requestId);

function contentLength(headers) {
  const h = headers?.find((x) => x.name.toLowerCase() === 'content-length');
  const n = h ? Number(h.value) : NaN;
  return Number.isFinite(n) && n >= 0 ? n : null;
}

function onResponseStarted(d) {
  const e = entryOf(d);
  if (!e) return;
  e.status = d.statusCode;
  e.statusText = clip((d.statusLine || '').replace(/^HTTP\/\S+\s+\d+\s*/, ''), 100);
  e.responseStart = Math.round(d.timeStamp - e.start);
  if (d.fromCache) e.fromCache = true;
  if (d.ip) e.ip = d.ip;
  const size = contentLength(d.responseHeaders);
  if (size !== null) e.size = size;
}

function finish(d, state) {
  const t = tabs.get(d.tabId);
  const e = t?.open.get(d.requestId);
  if (!e) return null;
  t.open.delete(d.requestId);
  e.state = state;
  e.duration = Math.round(d.timeStamp - e.start);
  if (d.statusCode) e.status = d.statusCode;
  return e;
}

function onCompleted(d) {
  const e = finish(d, 'done');
  if (!e) return;
  if (d.fromCache) e.fromCache = true;
  if (d.ip) e.ip = d.ip;
  const size = contentLength(d.responseHeaders);
  if (size !== null) e.size = size;
}

// A redirect ends this entry; webRequest then starts the next hop with the same requestId.
function onBeforeRedirect(d) {
  const e = finish(d, 'redirect');
  if (e) e.redirectTo = hidden(d.redirectUrl) ? '(a site hidden by browser-mcp\'s settings)' : clip(d.redirectUrl, URL_MAX);
}

function onErrorOccurred(d) {
  const e = finish(d, 'failed');
  if (e) e.error = d.error;
}

// Request bodies, for tabs that asked: form fields as `a=1&b=2`, raw bytes as UTF-8 text.
function bodyOf(requestBody) {
  if (!requestBody) return null;
  if (requestBody.error) return `(body not available: ${requestBody.error})`;
  if (requestBody.formData) {
    const parts = [];
    for (const [k, vs] of Object.entries(requestBody.formData)) for (const v of vs) parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
    return parts.join('&');
  }
  if (requestBody.raw) {
    const decoder = new TextDecoder('utf-8', { fatal: false });
    let text = '';
    for (const part of requestBody.raw) {
      if (part.bytes) text += decoder.decode(new Uint8Array(part.bytes.slice(0, BODY_MAX * 4)), { stream: true });
      else if (part.file) text += `[file ${part.file}]`;
      if (text.length > BODY_MAX) break;
    }
    return text;
  }
  return null;
}

// Turns recording request bodies on or off for a tab.
export function captureBodies(tabId, on) {
  const t = ofTab(tabId);
  if (on && !t.bodies) {
    // Usually runs after onBeforeRequest made the entry; if not, the body waits for it.
    t.bodies = (d) => {
      const body = bodyOf(d.requestBody);
      if (body === null || body === undefined) return;
      const e = t.open.get(d.requestId);
      if (e) e.requestBody = clip(body, BODY_MAX);
      else {
        t.earlyBodies.set(d.requestId, clip(body, BODY_MAX));
        if (t.earlyBodies.size > 50) t.earlyBodies.delete(t.earlyBodies.keys().next().value);
      }
    };
    chrome.webRequest.onBeforeRequest.addListener(t.bodies, { urls: ['<all_urls>'], tabId }, ['requestBody']);
  } else if (!on && t.bodies) {
    chrome.webRequest.onBeforeRequest.removeListener(t.bodies);
    t.bodies = null;
  }
}

// The top frame committed a new document: "since the page loaded" starts at the request that
// loaded it (the newest main-frame request for that URL), or here if none was seen.
export function newPage(tabId, url) {
  const t = tabs.get(tabId);
  if (!t) return;
  const bare = (u) => String(u).split('#')[0];
  const entries = t.ring.toArray();
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i];
    if (e.type === 'main_frame' && e.state !== 'redirect' && bare(e.url) === bare(url)) {
      t.pageStart = e.id;
      return;
    }
  }
  t.pageStart = t.nextId;
}

export function forget(tabId) {
  const t = tabs.get(tabId);
  if (t?.bodies) chrome.webRequest.onBeforeRequest.removeListener(t.bodies);
  tabs.delete(tabId);
  for (const [url, r] of recentUrls) if (r.tabId === tabId) recentUrls.delete(url);
}

export const held = () => ({
  tabs: [...tabs].filter(([, t]) => t.ring.size).map(([id]) => id),
  requests: [...tabs.values()].reduce((n, t) => n + t.ring.size, 0),
});

// Listeners are added at service-worker start (background.js), so no request is missed.
export function initNetwork(mayRecord, hides) {
  recording = mayRecord;
  hidden = hides;
  const all = { urls: ['<all_urls>'] };
  chrome.webRequest.onBeforeRequest.addListener(onBeforeRequest, all);
  chrome.webRequest.onResponseStarted.addListener(onResponseStarted, all, ['responseHeaders']);
  chrome.webRequest.onBeforeRedirect.addListener(onBeforeRedirect, all);
  chrome.webRequest.onCompleted.addListener(onCompleted, all, ['responseHeaders']);
  chrome.webRequest.onErrorOccurred.addListener(onErrorOccurred, all);
}

// --- the tool ------------------------------------------------------------------------------------

// "*" matches anything; without one, the pattern is a substring of the URL.
function urlMatcher(pattern) {
  if (!pattern.includes('*')) return (url) => url.includes(pattern);
  const re = new RegExp(`^${pattern.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  return (url) => re.test(url);
}

function typeMatcher(type) {
  const wanted = (Array.isArray(type) ? type : [type]).map((t) => ALIASES[t] || t);
  const bad = wanted.find((t) => typeof t !== 'string' || !TYPES.includes(t));
  if (bad !== undefined) throw new ToolError(Code.INVALID_ARGUMENTS, `unknown "type" ${JSON.stringify(bad)}; types are ${TYPES.join(', ')} (aliases: ${Object.keys(ALIASES).join(', ')})`);
  return (e) => wanted.includes(e.type);
}

// 404, "4xx", "failed" (no response: network error, blocked, cancelled), "error" (failed or ≥ 400).
function statusMatcher(status) {
  if (Number.isInteger(status)) return (e) => e.status === status;
  const s = typeof status === 'string' ? status.trim().toLowerCase() : '';
  if (/^\d{3}$/.test(s)) return (e) => e.status === +s;
  if (/^[1-5]xx$/.test(s)) return (e) => Math.floor((e.status ?? 0) / 100) === +s[0];
  if (s === 'failed') return (e) => e.state === 'failed';
  if (s === 'error') return (e) => e.state === 'failed' || e.status >= 400;
  if (s === 'pending') return (e) => e.state === 'pending';
  throw new ToolError(Code.INVALID_ARGUMENTS, '"status" is a code (404), a class ("4xx"), "failed", "error" or "pending"');
}

function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function lineOf(e) {
  const outcome = e.state === 'failed' ? `failed ${e.error}` : e.state === 'pending' ? 'pending' : `${e.status ?? '-'}${e.statusText ? ` ${e.statusText}` : ''}`;
  const facts = [e.size !== undefined ? bytes(e.size) : null, e.duration !== undefined ? `${e.duration} ms` : null, e.fromCache ? 'cache' : null].filter(Boolean);
  let s = `#${e.id} ${e.method} ${outcome} ${e.type} ${e.url}${facts.length ? ` (${facts.join(', ')})` : ''}`;
  if (e.redirectTo) s += ` → ${e.redirectTo}`;
  if (e.requestBody !== undefined) s += `\n    body: ${e.requestBody}`;
  return s;
}

// `visible(sites)`: whether the reading call may see what frames of these sites requested.
export function query(tabId, args, visible = () => true) {
  const { maxChars, limit } = bounds(args);
  if (args.since !== undefined && !(Number.isInteger(args.since) && args.since >= 0)) {
    throw new ToolError(Code.INVALID_ARGUMENTS, '"since" must be a cursor (a request id) from an earlier answer');
  }
  if (args.url !== undefined && typeof args.url !== 'string') throw new ToolError(Code.INVALID_ARGUMENTS, '"url" must be a string');
  if (args.captureBodies !== undefined) {
    if (typeof args.captureBodies !== 'boolean') throw new ToolError(Code.INVALID_ARGUMENTS, '"captureBodies" must be true or false');
    captureBodies(tabId, args.captureBodies);
  }
  const tests = [];
  if (args.url) tests.push(((m) => (e) => m(e.url))(urlMatcher(args.url)));
  if (args.type !== undefined) tests.push(typeMatcher(args.type));
  if (args.status !== undefined) tests.push(statusMatcher(args.status));
  const t = tabs.get(tabId) || new TabNetwork();
  const sincePage = args.since === undefined;
  const all = t.ring.toArray();
  const matching = all.filter((e) => (sincePage ? e.id >= t.pageStart : e.id > args.since) && tests.every((test) => test(e)));
  const entries = matching.filter((e) => visible(e.sites ?? []));
  const left = matching.length - entries.length;
  const filters = [args.url ? `url ~ ${JSON.stringify(args.url)}` : '', args.type !== undefined ? `type ${[].concat(args.type).join('|')}` : '', args.status !== undefined ? `status ${args.status}` : ''].filter(Boolean).join(', ');
  const scope = sincePage ? 'since the page loaded' : `after #${args.since}`;
  const header = `Requests of tab ${tabId}, ${scope}${filters ? ` (${filters})` : ''}: ${entries.length.toLocaleString('en-US')}${t.bodies ? '; request bodies are being recorded' : ''}.` +
    (entries.length && entries[0].start ? ` First at ${clock(entries[0].start)}.` : '') +
    (left ? ` ${left.toLocaleString('en-US')} more made by frames of sites this call may not read (the person has not allowed them) are left out.` : '');
  const footer = t.ring.dropped ? `(${t.ring.dropped.toLocaleString('en-US')} older requests of this tab are gone: it keeps the last ${REQUESTS_KEPT.toLocaleString('en-US')}.)` : '';
  const out = fit({ header, entries, line: lineOf, maxChars, limit, since: args.since ?? t.pageStart - 1, noun: ['request', 'requests'], hint: 'url, type or status', footer });
  const newest = all.length ? all[all.length - 1].id : 0;
  return {
    content: [{ type: 'text', text: out.text }],
    structuredContent: {
      requests: out.shown.map(({ requestId, sites, ...e }) => e),
      cursor: out.more ? out.cursor : Math.max(out.cursor ?? 0, newest),
      more: out.more,
      dropped: t.ring.dropped,
    },
  };
}
