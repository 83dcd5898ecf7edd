// Stored settings are normalized before use (extension/shared/settings.js): a corrupt or hostile
// value in storage falls back to the default instead of reaching the policy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULTS, normalize, settings } from '../../extension/shared/settings.js';

test('the in-memory settings start as the defaults', () => {
  assert.deepEqual(settings(), { ...DEFAULTS });
  // A fresh install asks before an agent acts on a site (issue 31); "allow" is the person's choice.
  assert.equal(DEFAULTS.defaultMode, 'ask');
  assert.ok(Object.isFrozen(DEFAULTS));
});

test('sites must be a plain object', () => {
  assert.deepEqual(normalize('sites', ['https://a.test']), {});
  assert.deepEqual(normalize('sites', null), {});
  assert.deepEqual(normalize('sites', { 'https://a.test': { mode: 'off' } }), { 'https://a.test': { mode: 'off' } });
});

test('a mode is one of allow, ask, off', () => {
  assert.equal(normalize('defaultMode', 'ask'), 'ask');
  assert.equal(normalize('defaultMode', 'everything'), DEFAULTS.defaultMode);
});

test('a consent timeout is a positive finite number', () => {
  assert.equal(normalize('consentTimeoutMs', 5000), 5000);
  for (const bad of [0, -1, Infinity, '5000', null]) assert.equal(normalize('consentTimeoutMs', bad), DEFAULTS.consentTimeoutMs, String(bad));
});

test('a port range is two ports, in order, at most 200 apart', () => {
  assert.deepEqual(normalize('scanPorts', { first: 9000, last: 9010 }), { first: 9000, last: 9010 });
  for (const bad of [{ first: 9010, last: 9000 }, { first: 1, last: 70000 }, { first: 8000, last: 8300 }, 'x', null]) {
    assert.deepEqual(normalize('scanPorts', bad), DEFAULTS.scanPorts, JSON.stringify(bad));
  }
});

test('a boolean setting keeps its type', () => {
  assert.equal(normalize('evaluateEnabled', true), true);
  assert.equal(normalize('evaluateEnabled', 'yes'), DEFAULTS.evaluateEnabled);
  assert.equal(normalize('builtinsByDefault', 0), DEFAULTS.builtinsByDefault);
});
