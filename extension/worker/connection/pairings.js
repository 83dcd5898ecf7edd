// The pairings of this browser profile with the user's daemons (issue 21): each a long-term key
// made by `browserctl pair` and the popup, kept in chrome.storage.local (per profile, survives
// restarts). The daemon side keeps the same key in the user's pairing file; a pairing works
// with every daemon of that user, on any port.

const KEY = 'pairings';
let pairings = []; // [{id, key, pairedAt, port, lastUsedAt}]
const listeners = [];

const valid = (p) => p && /^[0-9a-f]{16}$/.test(p.id) && typeof p.key === 'string';

export async function loadPairings() {
  const { [KEY]: stored } = await chrome.storage.local.get(KEY);
  pairings = Array.isArray(stored) ? stored.filter(valid) : [];
  return pairings;
}

export const list = () => pairings.map((p) => ({ ...p }));

export function onPairingsChanged(fn) {
  listeners.push(fn);
}

async function save(next) {
  pairings = next;
  await chrome.storage.local.set({ [KEY]: next });
}

export async function addPairing({ id, key, port }) {
  const now = Date.now();
  await save([...pairings.filter((p) => p.id !== id), { id, key, port, pairedAt: now, lastUsedAt: now }]);
}

export async function forgetPairing(id) {
  await save(pairings.filter((p) => p.id !== id));
}

// Noted in memory only: writing storage on every connect would wake every open page.
export function used(id) {
  const p = pairings.find((q) => q.id === id);
  if (p) p.lastUsedAt = Date.now();
}

// The keys to try with a daemon, best first: the pairing that last worked on this port, then
// the others.
export function candidates(port) {
  return [...pairings]
    .sort((a, b) => (b.port === port) - (a.port === port) || b.lastUsedAt - a.lastUsedAt)
    .map((p) => ({ kind: 'pairing', keyId: `pairing:${p.id}`, key: p.key, id: p.id }));
}

// Another page (options: "forget") changed the list.
chrome.storage.onChanged.addListener((changes, area) => {
  if (area !== 'local' || !(KEY in changes)) return;
  const next = Array.isArray(changes[KEY].newValue) ? changes[KEY].newValue.filter(valid) : [];
  const memory = new Map(pairings.map((p) => [p.id, p.lastUsedAt]));
  pairings = next.map((p) => ({ ...p, lastUsedAt: Math.max(p.lastUsedAt || 0, memory.get(p.id) || 0) }));
  for (const fn of listeners) fn(list());
});
