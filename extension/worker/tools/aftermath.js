// What followed an action (issue 57), said in one short line after its result, and only when
// something did: the page it went to, a tab it opened, where the focus went. The frame's DOM
// tools say what they saw in the page (content/dom-point.js `watchAfter`: the focus, a
// navigation the page began); the worker adds what only it sees: a navigation of the tab, a tab
// this one opened. Dialogs have lines of their own (frames/dialogs.js describe).

// The tools whose results say what followed.
export const ACTIONS = new Set(['browser_click', 'browser_hover', 'browser_type', 'browser_select', 'browser_press_key', 'browser_drag']);

const place = (url) => (url && url !== 'about:blank' ? ` ${url}` : '');

// Starts watching tab `tabId` for what an action on it is about to cause. `say(result)` ends the
// watch and returns the result with its line (the facts the frame reported taken out of it);
// `stop()` ends it with nothing to say (the action failed).
export function watch(tabId) {
  let went = null;
  let moved = null;
  const opened = [];
  const onBefore = (d) => {
    if (d.tabId === tabId && d.frameId === 0) went = d.url;
  };
  const onHistory = (d) => {
    if (d.tabId === tabId && d.frameId === 0) moved = d.url;
  };
  const onCreated = (tab) => {
    if (tab.openerTabId === tabId) opened.push(tab);
  };
  const events = [
    [chrome.webNavigation.onBeforeNavigate, onBefore],
    [chrome.webNavigation.onHistoryStateUpdated, onHistory],
    [chrome.tabs.onCreated, onCreated],
  ];
  for (const [event, listener] of events) event.addListener(listener);
  const stop = () => {
    for (const [event, listener] of events) event.removeListener(listener);
  };
  return {
    stop,
    async say(result) {
      // The browser's events of what the action did are on their way with its answer.
      await new Promise((resolve) => setTimeout(resolve, 0));
      stop();
      if (!result || typeof result !== 'object') return result;
      const { after, navigating, ...rest } = result;
      const facts = line({ after, navigating, went, moved, opened });
      if (!facts) return rest;
      const content = [...(rest.content || [])];
      const first = content.findIndex((c) => c?.type === 'text');
      if (first < 0) content.push({ type: 'text', text: facts });
      else content[first] = { ...content[first], text: `${content[first].text}\n${facts}` };
      return { ...rest, content };
    },
  };
}

// The line itself, or '' when nothing followed. `after`: what the frame saw (a list of short
// phrases), `navigating`: the URL the page said it was leaving for, `went`: the URL the tab began
// to load, `moved`: the address the page gave itself (history API), `opened`: tabs this one
// opened. What the frame said is not said again.
export function line({ after, navigating, went, moved, opened = [] }) {
  const facts = Array.isArray(after) ? after.filter((f) => typeof f === 'string' && f) : [];
  const said = (url) => facts.some((f) => f.endsWith(` ${url}`));
  if (went && !navigating && !said(went)) facts.unshift(`the page is loading ${went}`);
  else if (moved && !went && !said(moved)) facts.unshift(`the address changed to ${moved}`);
  for (const t of opened) facts.push(`a new tab opened: tab ${t.id}${place(t.pendingUrl || t.url)}`);
  return facts.length ? `Then: ${facts.join('; ')}.` : '';
}
