// A call's tab, watched while the call runs (issue 20). A call whose tab is closed fails at once
// with TAB_NOT_FOUND, whatever it was waiting for; a call that failed because its page navigated
// away says so with PAGE_NAVIGATED. Either way the tool never finished, which TOOL_ERROR ("the
// tool ran and reported an error") would misstate, and a script can branch on the code.
import { Code, ToolError } from '../../shared/protocol.js';

// Tools that navigate on purpose: a navigation is what they do, not what cut them off.
// A hand-off's person may navigate as they please.
const NAVIGATING = new Set(['browser_navigate', 'browser_navigate_back', 'browser_navigate_forward', 'browser_reload', 'browser_handoff']);
// browser_tabs may close the very tab it was called on, and answers for itself.
const CLOSING = new Set(['browser_tabs']);
// A tool's own verdicts stand; only "the page stopped answering" failures are re-read.
const GENERIC = new Set([Code.TOOL_ERROR, 'FRAME_GONE', undefined, null, '']);

const topDocument = (tabId) =>
  chrome.webNavigation.getFrame({ tabId, frameId: 0 }).then((f) => f?.documentId ?? null, () => null);
// Up to 20 × 50 ms for a page that went away to show where it went.
const GONE_WAIT_STEPS = 20;
const GONE_WAIT_MS = 50;
const tabExists = (tabId) => chrome.tabs.get(tabId).then(() => true, () => false);

// Runs `call` (the tool on tab `tabId`) and returns its result, or throws its error, reworded
// when the tab closed or the page navigated away during the call.
export async function watched(tabId, toolName, call) {
  if (!Number.isInteger(tabId)) return call();
  let closed;
  let navigated = false;
  const gone = new Promise((resolve) => {
    closed = resolve;
  });
  const onRemoved = (id) => id === tabId && closed();
  // From its start: the old page may stop answering before the new one commits.
  const onNavigation = (d) => {
    if (d.tabId === tabId && d.frameId === 0) navigated = true;
  };
  chrome.tabs.onRemoved.addListener(onRemoved);
  chrome.webNavigation.onBeforeNavigate.addListener(onNavigation);
  chrome.webNavigation.onCommitted.addListener(onNavigation);
  // Read now, compared on failure: the failure may arrive before the commit event does.
  const before = topDocument(tabId);
  const closedError = () => new ToolError(Code.TAB_NOT_FOUND, `tab ${tabId} was closed while ${toolName} ran; the call did not finish`);
  try {
    const running = Promise.resolve().then(call);
    if (CLOSING.has(toolName)) return await running;
    const cut = gone.then(() => {
      throw closedError();
    });
    running.catch(() => {}); // its late failure, once the tab is gone, is nobody's business
    return await Promise.race([running, cut]);
  } catch (e) {
    if (!GENERIC.has(e?.code) || e?.code === Code.TAB_NOT_FOUND) throw e;
    if (!(await tabExists(tabId))) throw closedError();
    if (NAVIGATING.has(toolName)) throw e;
    const was = await before;
    let now = await topDocument(tabId);
    // The page said it went away, but the navigation's event (or its commit) can reach us a
    // moment after the failure does: wait for it a little before calling this a tool error.
    for (let i = 0; (e?.pageGone || e?.code === 'FRAME_GONE') && i < GONE_WAIT_STEPS && !navigated && !(was && now && was !== now); i++) {
      await new Promise((resolve) => setTimeout(resolve, GONE_WAIT_MS));
      if (!(await tabExists(tabId))) throw closedError();
      now = await topDocument(tabId);
    }
    if (navigated || (was && now && was !== now)) {
      throw new ToolError(Code.PAGE_NAVIGATED, `the page in tab ${tabId} navigated away while ${toolName} ran; the call did not finish (${e?.message ?? e})`);
    }
    throw e;
  } finally {
    chrome.tabs.onRemoved.removeListener(onRemoved);
    chrome.webNavigation.onBeforeNavigate.removeListener(onNavigation);
    chrome.webNavigation.onCommitted.removeListener(onNavigation);
  }
}
