// The toolbar icon's badge and tooltip: the connection state at a glance, and how many calls
// are running. Also tells open extension pages (popup, options) that something changed.
//
//   connected, idle  "on"  green        connected, N calls  "N"  green
//   no daemon        "off" grey         a daemon failed     "!"  red
const COLORS = { connected: '#1a7f37', none: '#6e7781', error: '#cf222e' };

let connection = { state: 'none', summary: 'looking for browser-mcpd' };
let inFlight = 0;
let shown = null;

const connectionListeners = [];
export const onConnection = (fn) => connectionListeners.push(fn);

export function setConnection(state, summary) {
  connection = { state, summary };
  render();
  for (const fn of connectionListeners) fn(state);
}

export function setInFlight(n) {
  inFlight = n;
  render();
}

export const badgeState = () => ({ ...connection, inFlight });

function render() {
  const { state, summary } = connection;
  const text = state === 'connected' ? (inFlight ? String(inFlight) : 'on') : state === 'error' ? '!' : 'off';
  const calls = inFlight ? `; ${inFlight} call${inFlight === 1 ? '' : 's'} running` : '';
  const title = `browser-mcp: ${summary}${calls}`;
  const key = `${text}|${state}|${title}`;
  if (key !== shown) {
    shown = key;
    // The action API can be missing in a worker that is shutting down; the badge is cosmetic.
    Promise.all([
      chrome.action.setBadgeText({ text }),
      chrome.action.setBadgeBackgroundColor({ color: COLORS[state] || COLORS.none }),
      chrome.action.setBadgeTextColor?.({ color: '#ffffff' }),
      chrome.action.setTitle({ title }),
    ]).catch(() => {});
  }
  uiChanged();
}

// Open pages re-read the state when told; debounced so a burst of events is one refresh.
let uiTimer = null;
export function uiChanged() {
  if (uiTimer) return;
  uiTimer = setTimeout(() => {
    uiTimer = null;
    chrome.runtime.sendMessage({ type: 'face:changed' }).catch(() => {}); // no page open
  }, 50);
}
