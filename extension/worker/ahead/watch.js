// Whether an agent is at work, as the daemons say (`watch`, issue 30). A page pays for no
// isolated world at load: its top frame gets the isolated scripts (dialogs, console relay,
// bridge) at document_start only while a connected daemon's last word was `watching: true`.
// Turning on also puts them into the top frames already open and sends their page tools, so
// that the agent's first listing of the tabs shows them. Turning off only spares the documents
// that start from then on: those that have the scripts keep them.
import { Votes } from './votes.js';
import { registration } from '../frames/registrations.js';
import { ISOLATED_SCRIPTS } from '../frames/frame-channel.js';
import { isWebUrl } from '../frames/page.js';
import { refreshPageTools } from '../connection/tabs.js';
import { within } from '../../shared/within.js';

// A tab that does not answer (busy, still loading) holds the daemon's answer no longer.
const PREPARE_MS = 1500;

const votes = new Votes(); // one vote per daemon connection
const topFrames = registration('browser-mcp-top', { js: ISOLATED_SCRIPTS, allFrames: false });
let preparing = null;

export const isWatching = () => votes.any;

// Every open http(s) tab's page tools, asked for: that puts the isolated scripts into a top
// frame without a bridge (tabs.js → frame-channel.js inject), and a changed list goes to the
// daemons as toolsChanged before the refresh resolves.
async function prepareTabs() {
  const tabs = await chrome.tabs.query({}).catch(() => []);
  const open = tabs.filter((t) => isWebUrl(t.url) && !t.discarded);
  await Promise.all(open.map((t) => refreshPageTools(t.id, PREPARE_MS).catch(() => {})));
}

// A daemon's `watch` (`voter`: its connection). Resolves when the daemon may be answered: for
// false once new documents no longer get the scripts (if no other daemon wants them); for true
// once they do and the open tabs are prepared (the daemon lists the tabs to its agent right
// after the answer, and messages on one socket keep their order). At most PREPARE_MS either way.
export async function watch(voter, on) {
  const switching = topFrames.set(votes.set(voter, on === true));
  if (on !== true) return within(switching, PREPARE_MS);
  const prepared = switching.then(() => (preparing ??= prepareTabs().finally(() => (preparing = null))));
  await within(prepared, PREPARE_MS);
}

// The daemon's connection closed: its vote goes with it (it says `watch` again after a reconnect).
export function forget(voter) {
  topFrames.set(votes.drop(voter));
}
