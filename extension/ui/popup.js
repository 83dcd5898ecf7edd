// The toolbar popup: what this browser is connected to, what the current tab exposes, the
// site switches, an agent's hand-off and prompts waiting for an answer, and the tab's recent calls.
// `popup.html?tab=ID` shows another tab (the popup opened in a tab of its own, e.g. in tests).
import { ask, clock, daemonList, duration, el, live, outcome, replace, toolChips, ago, wirePairForm } from './ui.js';

const $ = (id) => document.getElementById(id);
const param = Number.parseInt(new URLSearchParams(location.search).get('tab') ?? '', 10);
let tabId = Number.isInteger(param) ? param : null;
let site = null;

async function currentTab() {
  if (tabId != null) return tabId;
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  tabId = tab?.id ?? null;
  return tabId;
}

function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

async function render() {
  const state = await ask({ type: 'face:state', tabId: await currentTab() });
  const pill = $('conn-pill');
  pill.className = `pill ${state.badge.state}`;
  setText(pill, { connected: 'Connected', error: 'Connection problem', none: 'Not connected' }[state.badge.state] || state.badge.state);
  pill.title = state.badge.summary;
  daemonList($('daemons'), state.daemons);
  if (!state.daemons.length) {
    // While the native host answers, it alone names the daemons: no port is scanned then.
    const { first, last } = state.scanPorts;
    const where = state.native.state === 'connected' ? 'the native host lists none running' : `none answers on ports ${first}–${last}`;
    replace($('daemons'), el('li', { class: 'muted empty', text: `No daemon found: ${where}. Start browser-mcpd.` }));
  }
  // Pairing is offered while no daemon is trusted, or a daemon found is not paired.
  const trusted = state.daemons.some((d) => d.state === 'connected');
  const unpaired = state.daemons.some((d) => ['unpaired', 'refused'].includes(d.state));
  $('pair-section').hidden = trusted && !unpaired && !$('pair-status').textContent;
  renderSite(state.tab);
  renderHandoffs(state.handoffs);
  renderPending(state.pending);
  renderTools(state.tab);
  renderCalls(state.calls);
}

function renderSite(tab) {
  site = tab?.site ?? null;
  const controls = [$('expose'), $('ask'), $('builtins')];
  if (!site) {
    setText($('site'), tab ? `${tab.url || 'This tab'} is not a web page: nothing to expose.` : 'No tab.');
    setText($('site-title'), '');
    for (const c of controls) c.disabled = true;
    $('site-controls').hidden = true;
    return;
  }
  $('site-controls').hidden = false;
  setText($('site'), site);
  setText($('site-title'), tab.title ? `“${tab.title}”` : '');
  const p = tab.policy;
  const on = p.mode !== 'off';
  $('expose').disabled = false;
  $('expose').checked = on;
  $('ask').checked = p.mode === 'ask';
  $('ask').disabled = !on;
  $('builtins').checked = p.builtins;
  $('builtins').disabled = !on;
  $('ask-row').setAttribute('aria-disabled', String(!on));
  $('builtins-row').setAttribute('aria-disabled', String(!on));
}

// A prompt's answers (the worker's consent.CHOICES, those that fit it): the button's words, its
// data-key prefix, and what a screen reader hears of it.
const CHOICES = [
  ['once', 'Allow once', 'allow', () => null],
  ['agent', 'Always for this agent', 'agent', (p) => `Always allow ${p.agent} on ${p.site}, to read and act`],
  ['always', 'Always for this site', 'always', (p) => `Always allow agents on ${p.site}`],
  ['agent-read', 'Reading only, this agent', 'agent-read', (p) => `Let ${p.agent} read ${p.site} from now on, not act`],
  ['site-read', 'Reading only, every agent', 'site-read', (p) => `Let every agent read ${p.site} from now on, not act`],
  ['deny', 'Deny', 'deny', () => null],
];

function choiceButton(p, choice) {
  const [, text, key, label] = CHOICES.find((c) => c[0] === choice) ?? [];
  if (!text) return null;
  const cls = choice === 'once' ? 'primary' : choice === 'deny' ? 'danger' : undefined;
  return el('button', { ...(cls ? { class: cls } : {}), dataset: { key: `${key}-${p.id}` }, text, ...(label(p) ? { 'aria-label': label(p) } : {}), onclick: () => answer(p.id, choice) });
}

function renderPending(prompts) {
  $('pending-section').hidden = !prompts.length;
  const now = Date.now();
  replace($('pending'), prompts.map((p) =>
    el('div', { class: 'prompt', role: 'group', 'aria-label': `Allow ${p.agent || 'a program'} to run ${p.tool} on ${p.site}?` },
      el('div', { class: 'agent' }, el('span', { class: 'agent-name', text: p.agent || 'A program' }), ` (through the daemon on port ${p.port}) wants to run`),
      el('div', {}, el('strong', { text: p.tool }), ` on ${p.site}`),
      p.args ? el('div', { class: 'mono muted', text: p.args }) : null,
      el('div', { class: 'actions' },
        CHOICES.filter(([c]) => !p.choices || p.choices.includes(c)).map(([c]) => choiceButton(p, c)),
        el('span', { class: 'muted countdown', 'aria-hidden': 'true', 'data-deadline': p.deadline })))));
  // The countdown ticks in place: rebuilding the prompt every second would pull its buttons
  // out from under a click.
  for (const c of $('pending').querySelectorAll('.countdown')) {
    setText(c, `lapses in ${Math.max(0, Math.ceil((Number(c.dataset.deadline) - now) / 1000))} s`);
  }
}

// An agent that handed this tab to the person: who, why, and the three answers.
function renderHandoffs(handoffs) {
  $('handoff-section').hidden = !handoffs.length;
  const now = Date.now();
  const keys = handoffs.map((h) => `${h.id}|${h.deadline}`).join(' ');
  // Rebuilt only when one comes, goes or gets more time: not under a click.
  if ($('handoffs').dataset.keys !== keys) {
    $('handoffs').dataset.keys = keys;
    replace($('handoffs'), handoffs.map((h) =>
      el('div', { class: 'prompt handoff', role: 'group', 'aria-label': `${h.agent || 'A program'} asks you to take over this tab` },
        el('div', { class: 'agent' }, el('span', { class: 'agent-name', text: h.agent || 'A program' }), ` (through the daemon on port ${h.port}) asks you to take over this tab:`),
        el('div', {}, el('strong', { class: 'reason', text: h.reason })),
        el('div', { class: 'muted', text: 'The page was not told. When you are done, say so here.' }),
        el('div', { class: 'actions' },
          el('button', { class: 'primary', dataset: { key: `done-${h.id}` }, text: 'Done', onclick: () => handoff(h.id, 'done') }),
          el('button', { class: 'danger', dataset: { key: `cant-${h.id}` }, text: 'I can\'t', onclick: () => handoff(h.id, 'cant') }),
          h.deadline < h.longest ? el('button', { dataset: { key: `extend-${h.id}` }, text: 'More time', 'aria-label': 'Ten more minutes', onclick: () => handoff(h.id, 'extend') }) : null,
          el('span', { class: 'muted countdown', 'aria-hidden': 'true', 'data-deadline': h.deadline })))));
  }
  for (const c of $('handoffs').querySelectorAll('.countdown')) {
    const left = Math.max(0, Math.ceil((Number(c.dataset.deadline) - now) / 1000));
    setText(c, left >= 120 ? `${Math.ceil(left / 60)} min left` : `${left} s left`);
  }
}

function renderTools(tab) {
  const tools = tab?.tools ?? [];
  const exposed = tools.filter((t) => t.exposed);
  const hidden = tools.filter((t) => !t.exposed);
  setText($('tools-count'), tools.length ? `· ${exposed.length} exposed${hidden.length ? `, ${hidden.length} hidden` : ''}` : '');
  const why = (t) => {
    if (tab.policy?.mode === 'off') return 'this site is not exposed';
    if (t.kind === 'builtin' && !tab.policy?.builtins) return 'built-in tools are off here';
    if (t.name === 'browser_evaluate') return 'enable it in the settings';
    return 'hidden';
  };
  const row = (t, note) => el('li', { class: `tool${t.exposed ? '' : ' hidden'}`, dataset: { tool: t.name } },
    el('div', { class: 'tool-head' },
      el('span', { class: 'tool-name', text: t.name }),
      t.title && t.title !== t.name ? el('span', { class: 'muted', text: t.title }) : null,
      el('span', { class: 'chips' }, toolChips(t), note ? el('span', { class: 'chip off', text: note }) : null)),
    t.description ? el('div', { class: 'tool-desc', title: t.description, text: t.description }) : null);
  const empty = !tools.length ? (tab?.site ? 'This page offers no tools.' : 'No tools on this tab.') : !exposed.length ? 'Nothing is exposed.' : null;
  replace($('tools'), empty ? [el('li', { class: 'muted empty', text: empty })] : exposed.map((t) => row(t)));

  // Hidden tools fold away; one reason for all of them is said once.
  const reasons = [...new Set(hidden.map(why))];
  const wasOpen = $('hidden-tools').querySelector('details')?.open;
  replace($('hidden-tools'), hidden.length
    ? el('details', { open: wasOpen },
        el('summary', { dataset: { key: 'hidden-tools' }, text: `${hidden.length} hidden${reasons.length === 1 ? `: ${reasons[0]}` : ''}` }),
        el('ul', {}, hidden.map((t) => row(t, reasons.length > 1 ? why(t) : null))))
    : null);
}

function renderCalls(calls) {
  $('calls-empty').hidden = calls.length > 0;
  $('calls-table').hidden = calls.length === 0;
  const now = Date.now();
  replace($('calls'), calls.map((c) =>
    el('tr', { class: 'call' },
      el('td', { class: 'mono', text: c.tool }),
      el('td', { class: 'when', title: clock(c.at), text: ago(c.at, now) }),
      el('td', {}, outcome(c)),
      el('td', { class: 'took', text: c.ms != null ? duration(c.ms) : '…' }),
      el('td', { class: 'agent', text: c.agent || '—' }))));
}

async function answer(id, choice) {
  await ask({ type: 'face:answer', id, choice });
}

async function handoff(id, choice) {
  await ask({ type: 'face:handoff', id, choice });
}

// Read-modify-write of the one site's entry; the worker applies it when storage changes.
async function setSite(patch) {
  if (!site) return;
  const { sites = {} } = await chrome.storage.local.get('sites');
  await chrome.storage.local.set({ sites: { ...sites, [site]: { ...sites[site], ...patch } } });
}

$('expose').addEventListener('change', (e) => setSite({ mode: e.target.checked ? ($('ask').checked ? 'ask' : 'allow') : 'off' }));
$('ask').addEventListener('change', (e) => setSite({ mode: e.target.checked ? 'ask' : 'allow' }));
$('builtins').addEventListener('change', (e) => setSite({ builtins: e.target.checked }));

wirePairForm();
live(render);
