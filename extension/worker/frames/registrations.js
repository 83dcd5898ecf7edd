// Content scripts registered for the documents that start while something needs them
// (chrome.scripting.registerContentScripts), rather than in the manifest, where every page would
// pay for them (issue 30): the subframes' dialogs while an agent drives a tab (dialogs.js), the
// top frames' isolated scripts while a daemon says an agent is at work (watch.js).

// An on/off state whose switching steps must not overlap (registering an id that is registered
// throws): each step waits for the one before it, and only a change of the wanted state makes
// one. `first` runs before any. A step's failure is `failed`'s, and the next step still runs.
export function switched({ first = () => {}, on, off, failed = () => {} }) {
  let wanted = false;
  let steps = Promise.resolve().then(first).catch(failed);
  return {
    get on() {
      return wanted;
    },
    // Resolves once this switch, and every one before it, is done.
    set(next) {
      next = next === true;
      if (next !== wanted) {
        wanted = next;
        steps = steps.then(next ? on : off).catch(failed);
      }
      return steps;
    },
  };
}

// `js` into every http(s) document that starts while on, at document_start, in its top frame
// (and its subframes with `allFrames`). A restarted worker needs nothing yet, so it first
// removes what its predecessor left (a browser restart forgets it: persistAcrossSessions).
export function registration(id, { js, allFrames }) {
  const ids = [id];
  return switched({
    first: () => chrome.scripting.unregisterContentScripts({ ids }).catch(() => {}),
    on: () => chrome.scripting.registerContentScripts([{
      id,
      matches: ['http://*/*', 'https://*/*'],
      js,
      runAt: 'document_start',
      allFrames,
      matchOriginAsFallback: true,
      persistAcrossSessions: false,
    }]),
    // Not registered (its registration failed, and said so): nothing to remove.
    off: () => chrome.scripting.unregisterContentScripts({ ids }).catch(() => {}),
    failed: (e) => console.warn(`browser-mcp: registering ${id}`, e?.message ?? e),
  });
}
