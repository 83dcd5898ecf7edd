// A tab's page as the built-ins see it: the tab itself, and requests to its content script
// (content.js in the isolated world, which relays to the WebMCP adapter in the page's own world).
import * as proto from '../../shared/protocol.js';
import { seen } from './navigations.js';
import { bounds, domCall } from './frames.js';
import { goneError, sendToFrame } from './frame-channel.js';

export const isWebUrl = (url) => /^https?:/i.test(url || '');

export async function getTab(tabId) {
  try {
    return seen(await chrome.tabs.get(tabId));
  } catch {
    throw new proto.ToolError(proto.Code.TAB_NOT_FOUND, `no tab with id ${tabId}`);
  }
}

// A tab that was just opened already offers the built-ins for its pending URL (tabs.js), so a
// call may arrive before the navigation commits: wait for the commit rather than fail.
export async function committedTab(tabId, ms = 30_000) {
  const tab = await getTab(tabId);
  if (isWebUrl(tab.url) || !isWebUrl(tab.pendingUrl)) return tab;
  return new Promise((resolve) => {
    let timer;
    const settled = (t) => isWebUrl(t.url) || !isWebUrl(t.pendingUrl);
    const done = (t) => {
      clearTimeout(timer);
      chrome.tabs.onUpdated.removeListener(onUpdated);
      resolve(t);
    };
    const recheck = () => getTab(tabId).then(done, () => done(tab));
    const onUpdated = (id, _change, t) => id === tabId && settled(seen(t)) && done(seen(t));
    chrome.tabs.onUpdated.addListener(onUpdated);
    timer = setTimeout(recheck, ms);
    // It may have committed between the first look and the listener.
    getTab(tabId).then((t) => settled(t) && done(t), recheck);
  });
}

// A request to the page's content script. A DOM tool ({op: 'dom', name, args}) goes to the frame
// that owns args.ref (frames.js), and `bounds` comes back in top-level viewport coordinates.
// `inject: false`: a top frame without a bridge is not given one (frame-channel.js).
export async function sendToPage(tabId, msg, timeoutMs = 300_000, { inject = true } = {}) {
  const tab = await committedTab(tabId);
  if (!isWebUrl(tab.url)) {
    throw new proto.ToolError(proto.Code.TOOL_ERROR, `tab ${tabId} shows ${tab.url || 'nothing'}, not an http(s) page`);
  }
  if (msg.op === 'dom') return msg.name === 'bounds' ? bounds(tabId, msg.args || {}) : domCall(tabId, msg.name, msg.args || {}, { timeoutMs });
  try {
    return await sendToFrame(tabId, 0, msg, { timeoutMs, inject });
  } catch (e) {
    if (e.code === 'FRAME_GONE') throw goneError(`page in tab ${tabId} went away while the call ran`);
    throw e;
  }
}
