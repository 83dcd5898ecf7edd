// The user's settings, kept in chrome.storage.local (so they survive restarts) and mirrored in
// memory: the tool lists are built synchronously on every tab event, so they cannot wait for
// storage. The options page and the popup write storage directly; chrome.storage.onChanged
// brings the change here, and to every open page, at once.

export const DEFAULTS = Object.freeze({
  // origin -> { mode: 'allow' | 'ask' | 'off', builtins?: boolean }
  sites: {},
  // For sites not in `sites`: a call on a site the person has not allowed waits for their
  // answer (issue 31). "allow" (allow everywhere) is the person's explicit choice in the options.
  defaultMode: 'ask',
  builtinsByDefault: true,
  evaluateEnabled: false,
  // How long an "ask" prompt waits for the user. Below the daemon's default per-attempt call
  // timeout (30 s): an answer given after the daemon stopped waiting would run a call nobody
  // receives.
  consentTimeoutMs: 25_000,
  // Remembered answers narrower than a site's "allow" (issue 60): [{ site, agent ('*': every
  // agent), access: 'read' | 'act', at }], newest last; the options page lists and takes them back.
  grants: [],
  scanPorts: { first: 8765, last: 8785 },
});

const KEYS = Object.keys(DEFAULTS);
const current = { ...DEFAULTS };
const listeners = [];

export const settings = () => current;

export function onSettingsChanged(fn) {
  listeners.push(fn);
}

// Keys that changed while the stored settings were on their way: the change is newer than what
// the read returns (a person choosing "Allow everywhere" as the worker starts).
let changedWhileLoading = null;

export async function loadSettings() {
  changedWhileLoading = new Set();
  try {
    const stored = await chrome.storage.local.get(KEYS);
    for (const key of KEYS) if (!changedWhileLoading.has(key)) current[key] = normalize(key, stored[key]);
  } finally {
    changedWhileLoading = null;
  }
  return current;
}

export function normalize(key, value) {
  const fallback = DEFAULTS[key];
  switch (key) {
    case 'sites':
      return value && typeof value === 'object' && !Array.isArray(value) ? value : {};
    case 'grants':
      return Array.isArray(value) ? value.filter(isGrant) : [];
    case 'defaultMode':
      return ['allow', 'ask', 'off'].includes(value) ? value : fallback;
    case 'consentTimeoutMs':
      return Number.isFinite(value) && value > 0 ? value : fallback;
    case 'scanPorts': {
      const first = Number(value?.first);
      const last = Number(value?.last);
      const port = (p) => Number.isInteger(p) && p > 0 && p < 65536;
      // A runaway range would make every scan open thousands of sockets.
      return port(first) && port(last) && first <= last && last - first <= 200 ? { first, last } : fallback;
    }
    default:
      return typeof value === typeof fallback ? value : fallback;
  }
}

function isGrant(g) {
  return !!g && typeof g.site === 'string' && typeof g.agent === 'string' && g.agent !== ''
    && ['read', 'act'].includes(g.access) && Number.isFinite(g.at);
}

// Listeners are registered at module load, i.e. synchronously at service-worker start. Outside
// an extension (the unit tests under Node) there is no storage to follow.
globalThis.chrome?.storage.onChanged.addListener((changes, area) => {
  if (area !== 'local') return;
  const before = { ...current };
  const keys = KEYS.filter((k) => k in changes);
  if (!keys.length) return;
  for (const key of keys) {
    current[key] = normalize(key, changes[key].newValue);
    changedWhileLoading?.add(key);
  }
  for (const fn of listeners) {
    try {
      fn(keys, before, current);
    } catch (e) {
      console.warn('browser-mcp: settings listener', e);
    }
  }
});
