// The options page: connection and native-host status, the scan range, the site list, the
// defaults, and the activity log. Settings are written to chrome.storage.local, where the
// service worker picks them up at once (settings.js).
import { DEFAULTS, normalize } from '../shared/settings.js';
import { MODES, siteOf } from '../shared/policy.js';
import { isFirefox } from '../shared/platform.js';
import { ago, ask, clock, daemonList, duration, el, live, outcome, replace, wirePairForm } from './ui.js';

const $ = (id) => document.getElementById(id);
const MODE_WORDS = { allow: 'Allow', ask: 'Ask each time', off: 'Off' };

async function stored(key) {
  return normalize(key, (await chrome.storage.local.get(key))[key]);
}

async function render() {
  const state = await ask({ type: 'face:state' });
  const pill = $('conn-pill');
  pill.className = `pill ${state.badge.state}`;
  const word = { connected: 'Connected', error: 'Connection problem', none: 'Not connected' }[state.badge.state];
  if (pill.textContent !== word) pill.textContent = word;
  pill.title = state.badge.summary;
  daemonList($('daemons'), state.daemons);
  const native = `${state.native.state}: ${state.native.detail}`;
  if ($('native').textContent !== native) $('native').textContent = native;
  $('native-hint').hidden = state.native.state === 'connected';
  renderPairings(state.pairings);
  await renderSites();
  await renderGrants();
  await renderDefaults();
  renderActivity(state.calls);
}

// This profile's pairings; forgetting one here stops this browser using it (`browserctl pair
// --revoke ID` removes it on the daemons' side).
function renderPairings(list) {
  const now = Date.now();
  replace($('pairings'), list.length
    ? list.map((p) => el('li', { class: 'pairing', dataset: { pairing: p.id } },
        el('span', { class: 'mono', text: p.id }),
        el('span', { class: 'muted', text: ` paired ${ago(p.pairedAt, now)}, last used ${ago(p.lastUsedAt, now)} ` }),
        el('button', { type: 'button', dataset: { key: `forget-${p.id}` }, 'aria-label': `Forget pairing ${p.id}`, text: 'Forget',
          onclick: () => ask({ type: 'face:forgetPairing', id: p.id }) })))
    : [el('li', { class: 'muted empty', text: 'This browser is not paired with any daemon.' })]);
}

async function renderSites() {
  const sites = await stored('sites');
  const names = Object.keys(sites).sort();
  $('sites-empty').hidden = names.length > 0;
  $('sites').closest('table').hidden = names.length === 0;
  replace($('sites'), names.map((site) => {
    const p = sites[site];
    const mode = MODES.includes(p.mode) ? p.mode : '';
    const select = el('select', { 'aria-label': `Access for ${site}`, dataset: { key: `mode-${site}` }, onchange: (e) => setSite(site, { mode: e.target.value || undefined }) },
      el('option', { value: '', text: 'Default' }),
      MODES.map((m) => el('option', { value: m, text: MODE_WORDS[m] })));
    select.value = mode;
    // select.value is not in outerHTML: mark the chosen option so a change re-renders.
    select.querySelector(`option[value="${mode}"]`)?.setAttribute('selected', '');
    const builtins = el('input', { type: 'checkbox', 'aria-label': `Built-in tools on ${site}`, dataset: { key: `builtins-${site}` },
      checked: p.builtins !== false, onchange: (e) => setSite(site, { builtins: e.target.checked }) });
    return el('tr', { dataset: { site } },
      el('td', { class: 'mono', text: site }),
      el('td', {}, select),
      el('td', {}, builtins),
      el('td', {}, el('button', { type: 'button', dataset: { key: `remove-${site}` }, 'aria-label': `Remove ${site}`, text: 'Remove', onclick: () => removeSite(site) })));
  }));
}

// Remembered answers (issue 60), each with whom and what it lets through, and since when.
async function renderGrants() {
  const grants = await stored('grants');
  $('grants-empty').hidden = grants.length > 0;
  $('grants').closest('table').hidden = grants.length === 0;
  replace($('grants'), grants.map((g) => {
    const who = g.agent === '*' ? 'every agent' : g.agent;
    return el('tr', { dataset: { grant: `${g.site} ${g.agent} ${g.access}` } },
      el('td', { class: 'mono', text: g.site }),
      el('td', { class: g.agent === '*' ? '' : 'mono', text: who }),
      el('td', { text: g.access === 'read' ? 'read only (snapshot, screenshot, console, network)' : 'read and act' }),
      el('td', { text: `${new Date(g.at).toLocaleDateString()} ${clock(g.at)}` }),
      el('td', {}, el('button', { type: 'button', dataset: { key: `revoke-${g.site}-${g.agent}-${g.access}` }, 'aria-label': `Take back: ${who} on ${g.site}, ${g.access === 'read' ? 'read only' : 'read and act'}`,
        text: 'Take back', onclick: () => revokeGrant(g) })));
  }));
}

async function revokeGrant(g) {
  const grants = await stored('grants');
  await chrome.storage.local.set({ grants: grants.filter((x) => !(x.site === g.site && x.agent === g.agent && x.access === g.access)) });
  $('grants-h').focus(); // the focused button is gone
}

const ANSWER_WORDS = { once: 'allowed once', always: 'always, this site', agent: 'always, this agent', 'agent-read': 'reading, this agent', 'site-read': 'reading, every agent', remembered: 'remembered answer', deny: 'denied', 'no answer': 'no answer' };

async function renderDefaults() {
  // Leave a control alone while it has focus: the user may be in the middle of typing.
  const focused = document.activeElement;
  const set = (node, apply) => node !== focused && apply(node);
  const all = await chrome.storage.local.get(Object.keys(DEFAULTS));
  const v = (k) => normalize(k, all[k]);
  set($('default-mode'), (n) => (n.value = v('defaultMode')));
  set($('builtins-default'), (n) => (n.checked = v('builtinsByDefault')));
  set($('evaluate'), (n) => (n.checked = v('evaluateEnabled')));
  set($('consent-timeout'), (n) => (n.value = String(Math.round(v('consentTimeoutMs') / 100) / 10)));
  set($('trusted-input'), async (n) => (n.checked = await debuggerGranted()));
  if (!$('ports-form').contains(focused)) {
    $('port-first').value = v('scanPorts').first;
    $('port-last').value = v('scanPorts').last;
  }
}

function renderActivity(calls) {
  $('activity-empty').hidden = calls.length > 0;
  $('activity').closest('table').hidden = calls.length === 0;
  replace($('activity'), calls.map((c) =>
    el('tr', {},
      el('td', { text: `${new Date(c.at).toLocaleDateString()} ${clock(c.at)}` }),
      el('td', { class: 'mono', text: c.site || '—', title: c.title || '' }),
      el('td', { class: 'mono', text: c.tool }),
      el('td', {}, outcome(c), c.code ? el('div', { class: 'muted', text: `${c.code}: ${c.message}` }) : null),
      el('td', { text: c.ms != null ? duration(c.ms) : '…' }),
      el('td', { class: 'mono', text: String(c.port) }),
      el('td', { class: 'mono', text: c.agent || '—' }),
      el('td', { text: c.consent ? `${ANSWER_WORDS[c.consent] ?? c.consent}${c.answeredBy === 'terminal' ? ' (from a terminal)' : ''}` : '—' }))));
}

async function setSite(site, patch) {
  const sites = await stored('sites');
  const next = { ...sites[site], ...patch };
  for (const k of Object.keys(next)) if (next[k] === undefined) delete next[k];
  await chrome.storage.local.set({ sites: { ...sites, [site]: next } });
}

async function removeSite(site) {
  const sites = await stored('sites');
  delete sites[site];
  await chrome.storage.local.set({ sites });
  $('sites-h').focus(); // the focused button is gone
}

$('add-site').addEventListener('submit', async (e) => {
  e.preventDefault();
  const raw = $('new-site').value.trim();
  const site = siteOf(/^[a-z]+:\/\//i.test(raw) ? raw : `https://${raw}`);
  if (!site) {
    $('add-site-status').textContent = 'Enter an http or https address.';
    return;
  }
  await setSite(site, { mode: $('new-site-mode').value });
  $('new-site').value = '';
  $('add-site-status').textContent = `Added ${site}.`;
});

$('default-mode').addEventListener('change', (e) => chrome.storage.local.set({ defaultMode: e.target.value }));
$('builtins-default').addEventListener('change', (e) => chrome.storage.local.set({ builtinsByDefault: e.target.checked }));
$('evaluate').addEventListener('change', (e) => chrome.storage.local.set({ evaluateEnabled: e.target.checked }));
$('consent-timeout').addEventListener('change', (e) => {
  const seconds = Number(e.target.value);
  if (seconds > 0) chrome.storage.local.set({ consentTimeoutMs: Math.round(seconds * 1000) });
});
// A permission, not a setting: granting it is the person's say (the browser asks them), and
// removing it takes the power away, not just the habit. Firefox has no such permission: its
// trusted input comes only in a browser the daemon launched (WebDriver BiDi), and it captures a
// whole page without it.
const debuggerGranted = async () => !isFirefox && chrome.permissions.contains({ permissions: ['debugger'] }).catch(() => false);
$('trusted-input-field').hidden = isFirefox;
$('trusted-input').addEventListener('change', async (e) => {
  const want = e.target.checked;
  const done = want ? await chrome.permissions.request({ permissions: ['debugger'] }).catch(() => false)
    : await chrome.permissions.remove({ permissions: ['debugger'] }).catch(() => false);
  e.target.checked = want ? done : !done && (await debuggerGranted());
});
$('ports-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const wanted = { first: Number($('port-first').value), last: Number($('port-last').value) };
  const ok = JSON.stringify(normalize('scanPorts', wanted)) === JSON.stringify(wanted);
  $('save-ports-status').textContent = ok ? 'Saved.' : 'Not saved: give two ports, the first not above the last, at most 201 apart.';
  if (ok) await chrome.storage.local.set({ scanPorts: wanted });
});
$('clear-activity').addEventListener('click', () => ask({ type: 'face:clearActivity' }));

chrome.storage.local.get('sessionId').then(({ sessionId }) => ($('session').textContent = sessionId || ''));
wirePairForm();
// The popup's "Activity log" link lands here: focus on the log once it is drawn, for the
// keyboard and the screen reader as for the eye.
live(render).then(() => {
  if (location.hash === '#activity-h') $('activity-h').focus();
});
