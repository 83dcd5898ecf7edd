// Options page: shows what the service worker is connected to, and the one user setting.
const box = document.getElementById('evaluate');

chrome.storage.local.get('evaluateEnabled').then(({ evaluateEnabled }) => {
  box.checked = evaluateEnabled === true;
});
box.addEventListener('change', () => chrome.storage.local.set({ evaluateEnabled: box.checked }));

chrome.runtime.sendMessage({ type: 'status' }).then((status) => {
  document.getElementById('discovery').textContent = status.discovery;
  document.getElementById('session').textContent = status.sessionId || '';
  const list = document.getElementById('daemons');
  if (!status.daemons.length) list.innerHTML = '<li>no daemon connected</li>';
  for (const d of status.daemons) {
    const li = document.createElement('li');
    li.textContent = `127.0.0.1:${d.port}${d.token ? ' (token)' : ''}`;
    list.append(li);
  }
});
