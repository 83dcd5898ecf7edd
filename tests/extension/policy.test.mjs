// Per-site policy (extension/shared/policy.js): what a tab offers and whether a call may run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { siteOf, sitePolicy, toolOffer, strictest, checkCall, tabSites, frameBlock, hides, shownPlace, offSite } from '../../extension/shared/policy.js';
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
  assert.equal(siteOf('blob:https://bank.example/4f1c'), 'https://bank.example', 'a blob is its maker\'s');
  assert.equal(siteOf('blob:null/4f1c'), null);
  assert.equal(siteOf('data:text/html,hi'), null);
});

test('defaults fill what a site does not set', () => {
  const s = with_({ sites: { 'https://a.test': { mode: 'ask' } }, builtinsByDefault: false });
  assert.deepEqual(sitePolicy('https://a.test', s), { site: 'https://a.test', listed: true, mode: 'ask', builtins: false, evaluate: false });
  assert.equal(sitePolicy('https://b.test', s).mode, 'ask', 'a fresh install asks');
  assert.equal(sitePolicy('https://b.test', s).listed, false);
  assert.equal(sitePolicy('https://b.test', with_({ defaultMode: 'allow' })).mode, 'allow');
});

test('an "ask" of the default is told from a site the person set to ask', () => {
  const s = with_({ sites: { 'https://ask.test': { mode: 'ask' }, 'https://quiet.test': { builtins: false } } });
  assert.deepEqual(checkCall({ url: 'https://new.test/' }, 'search', false, s), { mode: 'ask', sites: ['https://new.test'], explicit: false });
  assert.deepEqual(checkCall({ url: 'https://quiet.test/' }, 'search', false, s), { mode: 'ask', sites: ['https://quiet.test'], explicit: false });
  assert.equal(checkCall({ url: 'https://new.test/', pendingUrl: 'https://ask.test/' }, 'search', false, s).explicit, true);
  assert.deepEqual(checkCall({ url: 'https://new.test/' }, 'search', false, with_({ defaultMode: 'allow' })), { mode: 'allow', sites: ['https://new.test'], explicit: false });
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
  const s = with_({ sites: { 'https://a.test': { mode: 'allow', builtins: false } } });
  assert.throws(() => checkCall({ url: 'https://a.test/' }, 'browser_click', true, s), (e) => e.code === 'SITE_DISABLED');
  assert.equal(checkCall({ url: 'https://a.test/' }, 'search', false, s).mode, 'allow');
  assert.deepEqual(checkCall({ url: 'about:blank' }, 'browser_click', true, s), { mode: 'allow', sites: [] });
});

test('a frame inside an off frame is the off site\'s, whatever its own URL', () => {
  const s = with_({ sites: { 'https://bank.test': { mode: 'off' }, 'https://quiet.test': { builtins: false } } });
  const page = 'https://news.test/';
  assert.equal(frameBlock([page], s), null);
  assert.equal(frameBlock(['https://ads.test/x', page], s), null);
  for (const child of ['about:srcdoc', 'about:blank', 'data:text/html,x', 'blob:https://bank.test/1', 'https://ads.test/']) {
    assert.match(frameBlock([child, 'https://bank.test/login', page], s), /turned off for https:\/\/bank\.test/, child);
  }
  assert.match(frameBlock(['blob:https://bank.test/1', page], s), /turned off/);
  assert.match(frameBlock(['about:srcdoc', 'https://quiet.test/', page], s), /built-in tools are turned off for https:\/\/quiet\.test/);
});

test('what of a URL is hidden: its site off or its built-ins off', () => {
  const s = with_({ sites: { 'https://bank.test': { mode: 'off' }, 'https://quiet.test': { builtins: false }, 'https://ask.test': { mode: 'ask' } } });
  assert.equal(hides('https://bank.test/pay?password=x', s), true);
  assert.equal(hides('https://quiet.test/', s), true);
  assert.equal(hides('https://ask.test/', s), false);
  assert.equal(hides('about:blank', s), false);
  assert.equal(hides('null', s), false);
  assert.equal(offSite('https://bank.test/a', s), 'https://bank.test');
  assert.equal(offSite('https://quiet.test/a', s), null);
});

test('a tab of an off site is told by its origin, without title or path', () => {
  const s = with_({ sites: { 'https://bank.test': { mode: 'off' } } });
  assert.deepEqual(shownPlace('https://bank.test/account/42', 'Balance: $9,000', {}, s), { url: 'https://bank.test/', title: '' });
  assert.deepEqual(shownPlace('https://news.test/a', 'News', {}, s), { url: 'https://news.test/a', title: 'News' });
  assert.deepEqual(shownPlace('chrome://newtab/', 'New Tab', {}, with_({ defaultMode: 'off' })), { url: 'chrome://newtab/', title: 'New Tab' });
  // Firefox: a tab on its way somewhere is about:blank, titled with where it goes.
  assert.deepEqual(shownPlace('about:blank', 'bank.test/account/42', { loading: true }, s), { url: 'about:blank', title: '' });
  assert.deepEqual(shownPlace('https://news.test/a', 'News', { loading: true }, s), { url: 'https://news.test/a', title: 'News' });
});

test('a framed site needs the person unless allowed, covered by the call, or the default in an agent\'s tab', async () => {
  const { needsConsent, frameReach } = await import('../../extension/shared/policy.js');
  const s = with_({ defaultMode: 'ask', sites: { 'https://shop.example': { mode: 'allow' }, 'https://bank.example': { mode: 'ask' }, 'https://off.example': { mode: 'off' } } });
  const person = { cleared: new Set(['https://news.example']), free: false };
  const agents = { cleared: new Set(['https://news.example']), free: true };
  assert.equal(needsConsent('https://news.example', person, s), false, 'the tab\'s own site was asked about');
  assert.equal(needsConsent('https://shop.example', person, s), false, 'allowed');
  assert.equal(needsConsent('https://ads.example', person, s), true, 'never answered');
  assert.equal(needsConsent('https://ads.example', agents, s), false, 'the default, in the agent\'s own tab');
  assert.equal(needsConsent('https://bank.example', agents, s), true, 'set to ask: asks in the agent\'s tab too');
  assert.equal(needsConsent('https://off.example', person, s), false, 'off is refused, not asked');
  assert.equal(needsConsent(null, person, s), false);
  assert.deepEqual(frameReach(['about:srcdoc', 'https://bank.example/', 'https://news.example/'], person, s), { why: 'https://bank.example is set to ask before each call', asks: true });
  assert.deepEqual(frameReach(['https://shop.example/', 'https://ads.example/x', 'https://news.example/'], person, s), { why: 'https://ads.example has not been allowed for agents', asks: true }, 'an allowed frame inside one that is not');
  assert.equal(frameReach(['https://shop.example/', 'https://news.example/'], person, s), null);
  assert.equal(frameReach(['https://off.example/', 'https://news.example/'], person, s).asks, false);
});

test('a remembered answer covers its agent (or every agent) and no wider access than it gave', async () => {
  const { granted } = await import('../../extension/shared/policy.js');
  const { normalize } = await import('../../extension/shared/settings.js');
  const grants = normalize('grants', [
    { site: 'https://news.example', agent: 'claude-code', access: 'read', at: 1 },
    { site: 'https://shop.example', agent: 'claude-code', access: 'act', at: 2 },
    { site: 'https://docs.example', agent: '*', access: 'read', at: 3 },
    { site: 'https://bad.example', agent: '', access: 'act', at: 4 }, // no agent: not a grant
    { site: 'https://bad.example', agent: 'x', access: 'all', at: 5 },
    'junk',
  ]);
  assert.equal(grants.length, 3, 'malformed entries are dropped');
  const s = with_({ grants });
  assert.equal(granted('https://news.example', 'claude-code', 'read', s), true, 'a read-only grant lets a snapshot through');
  assert.equal(granted('https://news.example', 'claude-code', 'act', s), false, 'and never a click');
  assert.equal(granted('https://news.example', 'codex', 'read', s), false, 'this agent is not another agent');
  assert.equal(granted('https://news.example', null, 'read', s), false, 'nor a caller with no name');
  assert.equal(granted('https://shop.example', 'claude-code', 'read', s), true, 'read and act covers reading');
  assert.equal(granted('https://docs.example', 'codex', 'read', s), true, 'every agent');
  assert.equal(granted('https://docs.example', null, 'read', s), true);
  assert.equal(granted('https://docs.example', 'codex', 'act', s), false);
  assert.equal(granted('https://bad.example', 'x', 'act', s), false);
  assert.equal(granted('https://news.example', 'claude-code', 'read', with_({})), false, 'none by default');
});
