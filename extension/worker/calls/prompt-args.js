// What a consent prompt shows of a call's arguments, in a line a person reads (issue 58): an
// upload's files by name, size, type and, for a file the daemon read on this machine for a
// client here, the path it was read from; never their bytes, which would fill the popup and
// tell the person nothing. Any other argument is shown as JSON, cut. Names and paths come from
// the caller (a page may have chosen them), so what would reorder or hide text is replaced.
const JSON_MAX = 200;
const NAME_MAX = 80;
const PATH_MAX = 160;
const FILES_SHOWN = 5;

// Control characters, and the marks that reorder or hide text (bidi overrides and isolates,
// zero-width ones): a name "invoice‮fdp.exe" must not read as something else.
// eslint-disable-next-line no-control-regex -- finding them is the point
const UNSEEN = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;

function plain(value, max) {
  const s = String(value ?? '').replace(UNSEEN, '�');
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

// The length of what base64 `data` decodes to (whitespace aside).
export function decodedSize(data) {
  if (typeof data !== 'string') return 0;
  const s = data.replace(/\s/g, '');
  const pad = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((s.length * 3) / 4) - pad);
}

export function size(n) {
  if (n < 1024) return `${n} byte${n === 1 ? '' : 's'}`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

// "holiday.zip (2.0 MiB, application/zip)", and where it was read from when the daemon says.
export function describeFile(f) {
  if (!f || typeof f !== 'object') return 'a malformed file';
  const type = typeof f.mimeType === 'string' && f.mimeType ? plain(f.mimeType, 60) : 'no type given';
  const from = typeof f.path === 'string' && f.path ? `, from ${plain(f.path, PATH_MAX)}` : '';
  return `${plain(f.name || 'unnamed', NAME_MAX)} (${size(decodedSize(f.data))}, ${type}${from})`;
}

// The arguments of `tool` as the prompt shows them; '' when there are none.
export function promptArgs(tool, args) {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return '';
  const { files, ...rest } = args;
  const json = Object.keys(rest).length ? JSON.stringify(rest) : '';
  const shown = json.length > JSON_MAX ? `${json.slice(0, JSON_MAX - 1)}…` : json;
  if (files === undefined) return shown;
  const list = Array.isArray(files) ? files : [files];
  const named = list.slice(0, FILES_SHOWN).map(describeFile);
  if (list.length > FILES_SHOWN) named.push(`and ${list.length - FILES_SHOWN} more`);
  const total = list.reduce((n, f) => n + decodedSize(f?.data), 0);
  const what = list.length === 1 ? named[0] : `${list.length} files, ${size(total)} in all: ${named.join('; ')}`;
  return [shown, `uploading ${what}`].filter(Boolean).join(' ');
}

const TITLE_MAX = 60;

// A consent notification's words (issue 59): the site whole, first (the person decides by it,
// and a page cannot choose it), the page's own title cut after it; the heading short enough
// for a desktop's one line.
export function noteText({ tool, site, title, shown, agent, port }) {
  const who = agent ? `“${plain(agent, NAME_MAX)}” (through browser-mcpd, port ${port})` : `A program using browser-mcpd (port ${port})`;
  const args = shown ? ` with ${shown}` : '';
  const page = title ? ` (page “${plain(title, TITLE_MAX)}”)` : '';
  return { heading: `Allow ${plain(tool, 30)}?`, message: `${who} wants to run ${tool}${args} on ${site}${page}.` };
}
