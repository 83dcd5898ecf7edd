// Per-site policy: which tools of a tab the daemons may see, and whether a call may run.
//
// - Page tools (the site's own WebMCP tools) are exposed unless the site is turned off.
// - Built-in tools are exposed unless the site is turned off or its built-ins are switched off
//   (per site, or by default for every site).
// - browser_evaluate is hidden unless enabled in the options (builtins.js also refuses it).
// - A site in "ask" mode exposes the same tools, but every call waits for the user's answer.
//   Sites the person has not set follow the default, "ask" on a fresh install: the first call
//   on a site asks, and "always for this site" sets it to "allow" (issue 31). A tab an agent
//   opened and a browser the daemon launched do not wait on the default, only on a site the
//   person set to "ask" themselves (activity.js).
// - A site framed in another site's page is asked about like a tab of it: a call's consent
//   covers its tab's sites and what it names itself (needsConsent, below; issue 58).
// - The eyes (console, network, downloads, screenshots, tabs) are built-ins like the rest; what
//   they record follows the same rule (observe.js records nothing of a site whose built-ins
//   are hidden).
// - A site that is off shows nothing of itself anywhere: not its frames inside another site's
//   page (nor the about:, data: and blob: frames it writes), not the requests it makes or that
//   go to it, not its tab's title or path.
// Sites are origins (scheme, host, port): http and https of one host are different sites. A
// blob: URL belongs to the origin that made it.
import { Code, ToolError } from './protocol.js';
import { settings } from './settings.js';

export const MODES = ['allow', 'ask', 'off'];
const STRICTNESS = { allow: 0, ask: 1, off: 2 };

export function siteOf(url) {
  try {
    const u = new URL(url);
    if (!/^(https?|blob):$/.test(u.protocol)) return null;
    return /^https?:\/\//.test(u.origin) ? u.origin : null;
  } catch {
    return null;
  }
}

// The effective policy of a site, with the defaults filled in.
export function sitePolicy(site, s = settings()) {
  const own = (site && s.sites[site]) || {};
  return {
    site,
    listed: !!(site && s.sites[site]),
    mode: MODES.includes(own.mode) ? own.mode : s.defaultMode,
    builtins: typeof own.builtins === 'boolean' ? own.builtins : s.builtinsByDefault,
    evaluate: s.evaluateEnabled === true,
  };
}

// Why the built-ins may not look at this site, or null when they may.
function hiddenWhy(site, s) {
  const p = sitePolicy(site, s);
  if (p.mode === 'off') return `browser-mcp is turned off for ${site}`;
  if (!p.builtins) return `built-in tools are turned off for ${site}`;
  return null;
}

// Whether anything of this URL's site is kept from the built-ins (its site is off, or its
// built-ins are). A URL of no site (about:, data:, chrome:) hides nothing by itself.
export function hides(url, s = settings()) {
  const site = siteOf(url);
  return !!site && hiddenWhy(site, s) !== null;
}

// Why a frame is kept back, or null: `chain` is the URLs of the frame and of every frame above
// it up to the page. A frame inside an off frame is that site's, whatever its own URL: an
// about:srcdoc, about:blank, data: or blob: document is written by the frame that holds it.
export function frameBlock(chain, s = settings()) {
  for (const url of chain) {
    const site = siteOf(url);
    const why = site && hiddenWhy(site, s);
    if (why) return why;
  }
  return null;
}

// Consent beyond the tab's own site (issue 58): a call's consent covers the sites of the tab it
// runs on (`cleared`: checkCall's, asked about when their mode says so), and the sites it named
// itself and had asked about (a frame its ref points into, the page browser_navigate goes to).
// Any other site a frame of the page belongs to is out of the call's reach unless the person
// allowed it, or it follows the default in a tab that is the agent's own (`free`: a tab an agent
// opened, a browser the daemon launched), where only a site the person set to ask asks.
// `reach` is {cleared: Set of sites, free}. A site turned off is frameBlock's to refuse.
export function needsConsent(site, reach, s = settings()) {
  if (!site || reach.cleared.has(site)) return false;
  const p = sitePolicy(site, s);
  if (p.mode !== 'ask') return false;
  return !(reach.free && s.sites[site]?.mode !== 'ask');
}

// Whether a remembered answer (issue 60) lets `agent` (null: a caller with no name) do what
// needs `access` ('read' or 'act') on `site` without asking: one for this agent or for every
// agent ('*'), of that access or wider. A read-only grant never lets an action through.
export function granted(site, agent, access, s = settings()) {
  return s.grants.some((g) => g.site === site && (g.agent === '*' || (agent != null && g.agent === agent))
    && (g.access === 'act' || access === 'read'));
}

// Why a site that needs consent is not shown, in the person's terms.
export function consentWhy(site, s = settings()) {
  return s.sites[site]?.mode === 'ask'
    ? `${site} is set to ask before each call`
    : `${site} has not been allowed for agents`;
}

// Why a frame is out of a call's reach, or null: frameBlock's reasons first (a site turned off,
// built-ins off), then a site of the chain the call's consent does not cover (`asks` is true).
export function frameReach(chain, reach, s = settings()) {
  const why = frameBlock(chain, s);
  if (why) return { why, asks: false };
  for (const url of chain) {
    const site = siteOf(url);
    if (needsConsent(site, reach, s)) return { why: consentWhy(site, s), asks: true };
  }
  return null;
}

// The site of this URL when the user turned it off, else null.
export function offSite(url, s = settings()) {
  const site = siteOf(url);
  return site && sitePolicy(site, s).mode === 'off' ? site : null;
}

// What the daemons are told of a tab's place: a tab of an off site shows its origin only, never
// its title or path. A loading tab with no page yet shows no title: Firefox titles it with the
// URL it is going to, wherever that is.
export function shownPlace(url, title, { loading = false } = {}, s = settings()) {
  const site = offSite(url, s);
  if (site) return { url: `${site}/`, title: '' };
  return { url, title: loading && !siteOf(url) ? '' : title };
}

// What a tab offers the daemons, and what the policy keeps back with the reason, computed in one
// place so the two never disagree. `hidden` ({tools: [names], reason}) is null when nothing is
// hidden; the daemon uses it to tell a caller why a tool it names is missing.
export function toolOffer(url, pageTools, builtins, s = settings()) {
  const all = [...pageTools, ...builtins];
  const site = siteOf(url);
  if (!site) return { tools: all, hidden: null }; // not a web page: nothing a site policy covers
  const p = sitePolicy(site, s);
  let tools = all;
  let reason = null;
  if (p.mode === 'off') {
    tools = [];
    reason = `this site (${site}) is turned off in the browser-mcp extension`;
  } else if (!p.builtins) {
    tools = pageTools;
    reason = `built-in tools are turned off for this site (${site}) in the browser-mcp extension`;
  } else if (!p.evaluate) {
    tools = all.filter((t) => t.name !== 'browser_evaluate');
    reason = 'browser_evaluate is disabled in the browser-mcp extension\'s options';
  }
  const shown = new Set(tools.map((t) => t.name));
  const hiddenNames = all.map((t) => t.name).filter((name) => !shown.has(name));
  return { tools, hidden: hiddenNames.length ? { tools: hiddenNames, reason } : null };
}

// The sites a call on this tab may touch: the committed page and, while a navigation is
// pending, the page it goes to. The strictest of their policies applies.
export function tabSites(tab) {
  return [...new Set([siteOf(tab.url), siteOf(tab.pendingUrl)].filter(Boolean))];
}

export function strictest(sites, s = settings()) {
  const policies = sites.map((site) => sitePolicy(site, s));
  return {
    mode: policies.reduce((mode, p) => (STRICTNESS[p.mode] > STRICTNESS[mode] ? p.mode : mode), 'allow'),
    builtins: policies.every((p) => p.builtins),
  };
}

// Throws when the policy forbids the call outright; returns the policy otherwise (the caller
// asks the user when its mode is "ask").
export function checkCall(tab, toolName, isBuiltin, s = settings()) {
  const sites = tabSites(tab);
  if (!sites.length) return { mode: 'allow', sites };
  const p = strictest(sites, s);
  const where = sites.join(' → ');
  if (p.mode === 'off') {
    throw new ToolError(Code.SITE_DISABLED, `browser-mcp is turned off for ${where} in this browser (the extension's "Expose this site" switch)`);
  }
  if (isBuiltin && !p.builtins) {
    throw new ToolError(Code.SITE_DISABLED, `built-in tools are turned off for ${where} in this browser (browser-mcp extension settings)`);
  }
  // Whether a site itself is set to "ask" (not only by the default): then even the agent's own
  // tabs and a managed browser ask.
  const explicit = sites.some((site) => s.sites[site]?.mode === 'ask');
  return { mode: p.mode, sites, explicit };
}
