// Whether the daemon launched this browser for a pipeline (`browserctl browser launch`): such a
// browser is the agent's own, so nothing in it waits for a person's consent. The native host
// says so when it starts; until then, and in the person's own browser, it is false.
let managed = false;

export const isManagedBrowser = () => managed;

export function setManagedBrowser(value) {
  managed = value === true;
}
