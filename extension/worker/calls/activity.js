// Every tool call passes through here: the site policy decides (and in "ask" mode the user),
// then the call runs; each call is counted while in flight (badge) and logged when done
// (popup: recent calls of the tab; options: the activity log, which the user can clear).
// The log keeps tool, agent, site, tab title, timing and outcome, never the arguments or results.
import { errorBody } from '../../shared/protocol.js';
import { setInFlight, uiChanged } from '../state/badge.js';
import { checkCall, siteOf } from '../../shared/policy.js';
import * as consent from './consent.js';
import { getTab } from '../frames/page.js';
import { isBuiltinName } from '../tools/builtins.js';
import { isAgentTab } from '../state/agent-tabs.js';
import { isManagedBrowser } from '../state/managed.js';

const LIMIT = 200;
const running = new Map(); // id -> entry
let log = []; // finished calls, newest first
let seq = 0;
let saveTimer = null;

export async function loadActivity() {
  const { activity } = await chrome.storage.local.get('activity');
  if (Array.isArray(activity)) log = [...log, ...activity].slice(0, LIMIT);
}

// Who asks, as the daemon names it (an MCP client's name, `browserctl`), cut to a line.
function agentOf(agent) {
  return typeof agent === 'string' && agent.trim() ? agent.trim().slice(0, 60) : null;
}

export async function runCall({ tabId, toolName, args, agent }, port, call) {
  const e = { id: `${Date.now()}-${++seq}`, tabId, tool: String(toolName ?? ''), agent: agentOf(agent), port, at: Date.now(), state: 'running', site: null, title: '', waitMs: 0 };
  running.set(e.id, e);
  changed();
  try {
    // Malformed requests are left to `call`, which names what is wrong.
    if (Number.isInteger(tabId) && typeof toolName === 'string' && toolName) {
      const tab = await getTab(tabId);
      e.site = siteOf(tab.url || tab.pendingUrl);
      e.title = tab.title || '';
      const { mode, sites, explicit } = checkCall(tab, toolName, isBuiltinName(toolName));
      // The agent's own tab, or a browser the daemon launched: the default does not ask there.
      const free = !explicit && (isManagedBrowser() || (await isAgentTab(tabId)));
      if (mode === 'ask' && !free) {
        e.state = 'waiting';
        changed();
        const asked = Date.now();
        try {
          await consent.ask({ tabId, sites, tool: toolName, args, port, title: e.title, agent: e.agent });
        } finally {
          e.waitMs = Date.now() - asked;
        }
        e.state = 'running';
        changed();
      }
    }
    const result = await call();
    finish(e, null);
    return result;
  } catch (err) {
    finish(e, err);
    throw err;
  }
}

function finish(e, err) {
  running.delete(e.id);
  const done = { ...e, ms: Date.now() - e.at, ok: !err };
  delete done.state;
  if (err) Object.assign(done, errorBody(err));
  log.unshift(done);
  if (log.length > LIMIT) log.length = LIMIT;
  save();
  changed();
}

function changed() {
  setInFlight(running.size);
  uiChanged();
}

function save() {
  clearTimeout(saveTimer);
  saveTimer = setTimeout(() => chrome.storage.local.set({ activity: log }).catch(() => {}), 300);
}

export async function clearActivity() {
  clearTimeout(saveTimer);
  log = [];
  await chrome.storage.local.set({ activity: [] });
  uiChanged();
}

// Running calls first, then finished ones; optionally only those of one tab.
export function recent(tabId, limit = LIMIT) {
  const all = [...[...running.values()].reverse(), ...log];
  return (tabId == null ? all : all.filter((e) => e.tabId === tabId)).slice(0, limit);
}
