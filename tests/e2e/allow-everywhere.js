// What a person does in the extension's settings page to let every agent act on every site
// without asking (issue 31): "Access for other sites" -> "Allow everywhere". A fresh install asks
// first; a test, bench or script that is not about consent starts with this choice, as a person
// who made it would. Evaluated in the options page (Chromium's and Firefox's); true once the
// choice is stored. The one copy: tests/it/support, benches/bridge and scripts read this file.
(async () => {
  // Once the page is up (its module script, which listens for the choice, runs after parsing).
  for (let i = 0; i < 200 && document.readyState !== 'complete'; i++) await new Promise((r) => setTimeout(r, 50));
  const select = document.getElementById('default-mode');
  select.value = 'allow';
  select.dispatchEvent(new Event('change'));
  for (let i = 0; i < 200; i++) {
    if ((await chrome.storage.local.get('defaultMode')).defaultMode === 'allow') return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
})()
