// Whether the daemon launched this browser for a pipeline (`browserctl browser launch`): such a
// browser is the agent's own, so nothing in it waits for a person's consent. The native host
// says so when it starts; until then, and in the person's own browser, it is false.
let managed = false;

export const isManagedBrowser = () => managed;

export function setManagedBrowser(value) {
  managed = value === true;
}

// The input the launch asked for (`browserctl browser launch --input`), as the native host
// says: 'synthetic' means the person launching chose the extension's DOM events, so their use
// is no news to an agent, and a Firefox has no daemon to ask for trusted input.
let launchInput = 'trusted';

export const launchedSynthetic = () => managed && launchInput === 'synthetic';

export function setLaunchInput(value) {
  launchInput = value === 'synthetic' ? 'synthetic' : 'trusted';
}

// How that daemon performs trusted input in this browser, where it can (a Firefox it launched,
// through WebDriver BiDi, issue 57): a function (tabId, actions, probe) → Promise, set by
// background.js while the connection to it is up; null otherwise.
let input = null;

export const daemonInput = () => input;

export function setDaemonInput(ask) {
  input = ask;
}
