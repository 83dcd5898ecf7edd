// What a consent prompt shows of a call's arguments (extension/worker/calls/prompt-args.js):
// files by name, size, type and path, never their bytes (issue 58).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodedSize, describeFile, noteText, promptArgs, size } from '../../extension/worker/calls/prompt-args.js';

const b64 = (n) => Buffer.alloc(n, 7).toString('base64');

test('a file is its decoded size, whatever the padding', () => {
  for (const n of [0, 1, 2, 3, 4, 5, 1000, 2 << 20]) assert.equal(decodedSize(b64(n)), n, `${n} bytes`);
  assert.equal(decodedSize('AAEC\nAwQF'), 6, 'line breaks are not bytes');
  assert.equal(decodedSize(undefined), 0);
});

test('sizes as a person reads them', () => {
  assert.equal(size(1), '1 byte');
  assert.equal(size(11), '11 bytes');
  assert.equal(size(1536), '1.5 KiB');
  assert.equal(size(2 << 20), '2.0 MiB');
});

test('an upload names each file, never its bytes', () => {
  const data = b64(2 << 20);
  const shown = promptArgs('browser_file_upload', { selector: 'input[type=file]', files: [{ name: 'holiday.zip', mimeType: 'application/zip', data }] });
  assert.equal(shown, '{"selector":"input[type=file]"} uploading holiday.zip (2.0 MiB, application/zip)');
  assert.ok(!shown.includes(data.slice(0, 16)));
});

test('a file the daemon read here says where from; one without a type says so', () => {
  assert.equal(describeFile({ name: 'id_ed25519', data: b64(411), path: '/home/me/.ssh/id_ed25519' }), 'id_ed25519 (411 bytes, no type given, from /home/me/.ssh/id_ed25519)');
});

test('many files: how many, how much, the first five by name', () => {
  const files = Array.from({ length: 7 }, (_, i) => ({ name: `f${i}.txt`, mimeType: 'text/plain', data: b64(100) }));
  const shown = promptArgs('browser_file_upload', { ref: 'e3', files });
  assert.match(shown, /^\{"ref":"e3"\} uploading 7 files, 700 bytes in all: f0\.txt \(100 bytes, text\/plain\); .*f4\.txt .*; and 2 more$/);
});

test('names cannot hide or reorder what the person reads', () => {
  const shown = describeFile({ name: 'invoice\u202Efdp.exe\nlegit', mimeType: 'text/plain', data: '' });
  assert.equal(shown, 'invoice�fdp.exe�legit (0 bytes, text/plain)');
  assert.equal(describeFile({ name: 'x'.repeat(500), data: '' }).length < 120, true);
});

test('other arguments are JSON, cut; none is nothing', () => {
  assert.equal(promptArgs('browser_click', {}), '');
  assert.equal(promptArgs('browser_click', { ref: 'e1' }), '{"ref":"e1"}');
  const long = promptArgs('browser_type', { ref: 'e1', text: 'y'.repeat(1000) });
  assert.equal(long.length, 200);
  assert.ok(long.endsWith('…'));
});

// Issue 59: the notification cut the site (in its title line) and showed the page's own title
// whole; the person decides by the site, which a page cannot choose.
test('a consent notification names the site whole and cuts the page title', () => {
  const site = 'https://a-rather-long-subdomain.of-a-long-registered-name.example.com:8443';
  const title = 'A page title that goes on and on '.repeat(6);
  const { heading, message } = noteText({ tool: 'browser_click', site, title, shown: '{"ref":"e3"}', agent: 'claude-code', port: 8765 });
  assert.ok(message.includes(site), message);
  assert.ok(!heading.includes(site.slice(8)) && heading.length <= 40, heading);
  assert.ok(!message.includes(title.trim()) && message.includes('…'), message);
  assert.ok(message.indexOf(site) < message.indexOf('A page title'), 'the site first');
});
