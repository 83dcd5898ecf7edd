// Per-site policy (extension/shared/policy.js): what a tab offers and whether a call may run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { siteOf, sitePolicy, toolOffer, strictest, checkCall, tabSites } from '../../extension/shared/policy.js';
import { DEFAULTS } from '../../extension/shared/settings.js';

const with_ = (over) => ({ ...DEFAULTS, ...over });
const page = [{ name: 'search' }];
const builtins = [{ name: 'browser_click' }, { name: 'browser_evaluate' }];

test('a site is an http(s) origin; anything else is none', () => {
  assert.equal(siteOf('https://bank.example:8443/a?b#c'), 'https://bank.example:8443');
  assert.equal(siteOf('http://x.test/'), 'http://x.test');
  assert.equal(siteOf('chrome://settings'), null);
  assert.equal(siteOf('about:blank'), null);
  assert.equal(siteOf('not a url'), null);
});

test('defaults fill what a site does not set', () => {
  const s = with_({ sites: { 'https://a.test': { mode: 'ask' } }, builtinsByDefault: false });
  assert.deepEqual(sitePolicy('https://a.test', s), { site: 'https://a.test', listed: true, mode: 'ask', builtins: false, evaluate: false });
  assert.equal(sitePolicy('https://b.test', s).mode, 'allow');
  assert.equal(sitePolicy('https://b.test', s).listed, false);
});

test('an off site offers nothing, and says why', () => {
  const s = with_({ sites: { 'https://bank.test': { mode: 'off' } } });
  const o = toolOffer('https://bank.test/login', page, builtins, s);
  assert.deepEqual(o.tools, []);
  assert.deepEqual(o.hidden.tools, ['search', 'browser_click', 'browser_evaluate']);
  assert.match(o.hidden.reason, /turned off/);
});

test('built-ins off keeps only the page tools; evaluate is hidden unless enabled', () => {
  const off = toolOffer('https://a.test/', page, builtins, with_({ builtinsByDefault: false }));
  assert.deepEqual(off.tools.map((t) => t.name), ['search']);
  const dflt = toolOffer('https://a.test/', page, builtins, with_({}));
  assert.deepEqual(dflt.tools.map((t) => t.name), ['search', 'browser_click']);
  assert.deepEqual(dflt.hidden.tools, ['browser_evaluate']);
  const all = toolOffer('https://a.test/', page, builtins, with_({ evaluateEnabled: true }));
  assert.equal(all.hidden, null);
  assert.equal(all.tools.length, 3);
});

test('a page that is not a web page is not covered by a site policy', () => {
  const o = toolOffer('chrome://newtab/', page, builtins, with_({ defaultMode: 'off' }));
  assert.equal(o.tools.length, 3);
  assert.equal(o.hidden, null);
});

test('the strictest policy of the committed and the pending site applies', () => {
  const s = with_({ sites: { 'https://off.test': { mode: 'off' }, 'https://ask.test': { mode: 'ask' } } });
  assert.deepEqual(tabSites({ url: 'https://a.test/', pendingUrl: 'https://off.test/' }), ['https://a.test', 'https://off.test']);
  assert.equal(strictest(['https://a.test', 'https://ask.test'], s).mode, 'ask');
  assert.throws(
    () => checkCall({ url: 'https://a.test/', pendingUrl: 'https://off.test/x' }, 'search', false, s),
    (e) => e.code === 'SITE_DISABLED' && /https:\/\/a\.test → https:\/\/off\.test/.test(e.message),
  );
  assert.equal(checkCall({ url: 'https://ask.test/' }, 'search', false, s).mode, 'ask');
});

test('a built-in call on a site whose built-ins are off is refused; its page tools are not', () => {
  const s = with_({ sites: { 'https://a.test': { builtins: false } } });
  assert.throws(() => checkCall({ url: 'https://a.test/' }, 'browser_click', true, s), (e) => e.code === 'SITE_DISABLED');
  assert.equal(checkCall({ url: 'https://a.test/' }, 'search', false, s).mode, 'allow');
  assert.deepEqual(checkCall({ url: 'about:blank' }, 'browser_click', true, s), { mode: 'allow', sites: [] });
});
