// The popup of a waiting question's tab, in a window of its own (a notification click may not
// open the toolbar popup itself): consent prompts and hand-offs open one from their
// notification, and close it when answered. `waiting(id)`: whether the question still waits.
export function answerWindows(waiting) {
  const windows = new Map(); // question id -> window
  return {
    async open(id, tabId) {
      if (!waiting(id) || windows.has(id)) return;
      const url = chrome.runtime.getURL(`ui/popup.html?tab=${tabId}`);
      try {
        const win = await chrome.windows.create({ url, type: 'popup', width: 420, height: 640 });
        if (waiting(id)) windows.set(id, win.id);
        else chrome.windows.remove(win.id).catch(() => {});
      } catch {
        chrome.tabs.create({ url }).catch(() => {});
      }
    },
    close(id) {
      const win = windows.get(id);
      windows.delete(id);
      if (win != null) chrome.windows.remove(win).catch(() => {});
    },
  };
}
