// The channel to a tab's page: content.js in the isolated world, which relays to the WebMCP
// adapter in the page's own world.
import * as proto from './protocol.js';
import { seen } from './navigations.js';

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

const CONTENT_FILES = ['dom-tools.js', 'content.js'];

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new proto.ToolError(proto.Code.TOOL_ERROR, `${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Content scripts only arrive in pages loaded after the extension; tabs that were already open
// (install, reload, update) get them injected on first use.
async function inject(tabId) {
  await chrome.scripting.executeScript({ target: { tabId }, files: CONTENT_FILES });
  await chrome.scripting.executeScript({ target: { tabId }, files: ['webmcp-shim.js'], world: 'MAIN' });
}

export async function sendToPage(tabId, msg, timeoutMs = 300_000) {
  const tab = await committedTab(tabId);
  if (!isWebUrl(tab.url)) {
    throw new proto.ToolError(proto.Code.TOOL_ERROR, `tab ${tabId} shows ${tab.url || 'nothing'}, not an http(s) page`);
  }
  const send = () => chrome.tabs.sendMessage(tabId, msg, { frameId: 0 });
  let reply;
  try {
    reply = await withTimeout(send(), timeoutMs, msg.op);
  } catch (e) {
    if (!/Receiving end does not exist/i.test(e.message)) throw pageGone(tabId, e);
    try {
      await inject(tabId);
    } catch (injectErr) {
      throw new proto.ToolError(proto.Code.TOOL_ERROR, `cannot reach page in tab ${tabId}: ${injectErr.message}`);
    }
    reply = await withTimeout(send(), timeoutMs, msg.op).catch((e2) => {
      throw pageGone(tabId, e2);
    });
  }
  if (!reply) throw new proto.ToolError(proto.Code.TOOL_ERROR, `no reply from page in tab ${tabId}`);
  if (reply.error) throw new proto.ToolError(reply.error.code || proto.Code.TOOL_ERROR, reply.error.message);
  return reply.result;
}

function pageGone(tabId, e) {
  if (e instanceof proto.ToolError) return e;
  // The usual cause: the page navigated or closed while the call was running.
  return new proto.ToolError(proto.Code.TOOL_ERROR, `page in tab ${tabId} went away: ${e.message}`);
}
