//! The extension's face as a person sees it: the popup and the options page opened as extension
//! pages, the badge, the site switch, "ask" mode and the native host's status, checked against
//! `browserctl`. In Chromium (chromium_*.rs) the pages are driven over the DevTools protocol
//! with keys and clicks, like a person, and screenshots are kept under
//! target/test-artifacts/extension_face/; in Firefox (firefox.rs) over WebDriver BiDi.
//!
//! Without the browser a test says SKIPPED loudly and passes, except under CI=true, where a
//! missing browser is a failure. `BROWSER_MCP_CHROMIUM` / `BROWSER_MCP_FIREFOX` name others.

mod chromium_ask;
mod chromium_consent;
mod chromium_handoff;
mod chromium_popup;
mod firefox;
mod firefox_consent;
mod firefox_handoff;
mod handoff_elicit;
mod scopes;
mod terminal_consent;

use crate::support::cdp::*;
use crate::support::chromium::*;
use crate::support::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

/// The page under test: one WebMCP tool (read-only), a form for the built-ins.
pub(crate) const PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Recipe box</title></head>
<body>
  <h1>Recipe box</h1>
  <label>Ingredient <input id="q"></label> <button id="go">Search</button>
  <script>
    navigator.modelContext.registerTool({
      name: 'search_recipes',
      title: 'Search recipes',
      description: 'Find recipes by ingredient',
      inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
      annotations: { readOnlyHint: true },
      execute: async ({ query }) => {
        console.error(`searched for ${query}`);
        return { content: [{ type: 'text', text: `3 recipes with ${query}` }] };
      },
    });
  </script>
</body></html>"#;

/// target/test-artifacts/extension_face (not committed).
pub(crate) fn artifacts_dir() -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let dir = target.join("test-artifacts").join("extension_face");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Polls `browserctl tabs` until the tab showing `url` has tools that satisfy `ready`.
pub(crate) fn wait_for_tab(
    d: &TestDaemon,
    b: &Browser,
    url: &str,
    ready: impl Fn(&[&str]) -> bool,
) -> Value {
    let start = Instant::now();
    loop {
        let tabs = d.ctl_json(&["tabs"]);
        if let Some(t) = tabs["tabs"].as_array().and_then(|ts| {
            ts.iter()
                .find(|t| t["url"] == url && ready(&tool_names(t)))
                .cloned()
        }) {
            return t;
        }
        if start.elapsed() > BROWSER_WAIT {
            panic!(
                "no tab {url} with its tools after {BROWSER_WAIT:?}: {tabs}\n--- daemon ---\n{}\n--- chromium ---\n{}",
                d.log(),
                b.log_tail()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(crate) fn spawn_ctl(d: &TestDaemon, args: &[&str]) -> std::thread::JoinHandle<Output> {
    let child = d.ctl_spawn(args);
    std::thread::spawn(move || child.wait_with_output().expect("run browserctl"))
}

/// `call search_recipes --tab TAB --query QUERY`, the words a person's script would use.
pub(crate) fn search_args<'a>(tab_ref: &'a str, query: &'a str) -> [&'a str; 6] {
    ["call", "search_recipes", "--tab", tab_ref, "--query", query]
}

/// The extension's own pages (popup, options) in either browser: DevTools for Chromium,
/// WebDriver BiDi for Firefox. The steps both browsers share are written once against it.
pub(crate) trait Pages {
    type Page;
    fn eval(&mut self, page: &Self::Page, expr: &str) -> Value;
    fn wait_for(&mut self, page: &Self::Page, what: &str, expr: &str) -> Value;
    /// A person's mouse click in the middle of the element `element` (an expression) finds:
    /// the browser's own input, which the page cannot tell from a person's.
    fn person_clicks(&mut self, page: &Self::Page, element: &str);
    /// One of the extension's pages (`ui/options.html`) in a tab of its own.
    fn extension_page(&mut self, path: &str) -> Self::Page;
}

/// The middle of the element `element` finds, scrolled into view, in viewport pixels.
fn middle_of<B: Pages>(b: &mut B, page: &B::Page, element: &str) -> (f64, f64) {
    let at = b.eval(
        page,
        &format!(
            "(() => {{ const e = {element}; e.scrollIntoView(); const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
        ),
    );
    (at[0].as_f64().unwrap(), at[1].as_f64().unwrap())
}

impl Pages for Browser {
    type Page = Page;
    fn eval(&mut self, page: &Page, expr: &str) -> Value {
        Browser::eval(self, page, expr)
    }
    fn wait_for(&mut self, page: &Page, what: &str, expr: &str) -> Value {
        Browser::wait_for(self, page, what, expr)
    }
    fn person_clicks(&mut self, page: &Page, element: &str) {
        let (x, y) = middle_of(self, page, element);
        for kind in ["mousePressed", "mouseReleased"] {
            self.send(
                Some(&page.session),
                "Input.dispatchMouseEvent",
                serde_json::json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }
    fn extension_page(&mut self, path: &str) -> Page {
        self.open(&format!("chrome-extension://{EXTENSION_ID}/{path}"))
    }
}

impl Pages for crate::support::firefox::Firefox {
    type Page = crate::support::bidi::Context;
    fn eval(&mut self, page: &Self::Page, expr: &str) -> Value {
        crate::support::firefox::Firefox::eval(self, page, expr)
    }
    fn wait_for(&mut self, page: &Self::Page, what: &str, expr: &str) -> Value {
        crate::support::firefox::Firefox::wait_for(self, page, what, expr)
    }
    fn person_clicks(&mut self, page: &Self::Page, element: &str) {
        let (x, y) = middle_of(self, page, element);
        self.bidi.click_at(page, x, y).unwrap();
    }
    fn extension_page(&mut self, path: &str) -> Self::Page {
        self.open_extension_page(path)
    }
}

/// The options page, rendered, scans only `port` (the scan range is a setting a person
/// changes there), so no other test's daemon is found.
pub(crate) fn scan_only<B: Pages>(b: &mut B, options: &B::Page, port: u16) {
    b.wait_for(
        options,
        "the options page to render",
        "document.getElementById('conn-pill').textContent !== '…'",
    );
    let range = b.eval(
        options,
        &format!(
            r#"(async () => {{
        document.getElementById('port-first').value = '{port}';
        document.getElementById('port-last').value = '{port}';
        document.getElementById('save-ports').click();
        await new Promise((r) => setTimeout(r, 100));
        return [document.getElementById('save-ports-status').textContent,
                (await chrome.storage.local.get('scanPorts')).scanPorts];
    }})()"#
        ),
    );
    assert_eq!(
        range,
        serde_json::json!(["Saved.", {"first": port, "last": port}])
    );
}

/// What the popup shows once it lists one daemon at `daemon` in a state that says `state`,
/// the page's tool and at least two calls: the pill, daemons, tools (name, hidden, chips),
/// calls, site, the expose switch and whether it offers to pair.
pub(crate) fn popup_shows<B: Pages>(
    b: &mut B,
    popup: &B::Page,
    daemon: &str,
    state: &str,
) -> Value {
    b.wait_for(popup, "the popup to show the daemon, the tools and the calls", &format!(r#"(() => {{
        const daemons = [...document.querySelectorAll('#daemons li.daemon')].map((li) => li.textContent);
        const tools = [...document.querySelectorAll('#tools li.tool, #hidden-tools li.tool')].map((li) => ({{
            name: li.dataset.tool, hidden: li.classList.contains('hidden'),
            chips: [...li.querySelectorAll('.chip')].map((c) => c.textContent) }}));
        const calls = [...document.querySelectorAll('#calls tr')].map((tr) => [...tr.cells].map((c) => c.textContent));
        const ok = daemons.length === 1 && daemons[0].includes('{daemon}') && daemons[0].includes('{state}')
            && tools.some((t) => t.name === 'search_recipes') && calls.length >= 2;
        return ok && {{ pill: document.getElementById('conn-pill').textContent, daemons, tools, calls,
            site: document.getElementById('site').textContent, expose: document.getElementById('expose').checked,
            pairOffered: !document.getElementById('pair-section').hidden }};
    }})()"#))
}

/// In "ask" mode with prompts giving up after 1.5 s, nobody answers: the call fails after
/// the timeout with its own code, and did not run.
pub(crate) fn nobody_answers(d: &TestDaemon, tab_ref: &str) {
    let started = Instant::now();
    let out = d.ctl(&search_args(tab_ref, "eggs"));
    let waited = started.elapsed();
    fails(&out, 21, "USER_CONSENT_TIMEOUT");
    assert!(
        waited >= Duration::from_millis(1500),
        "answered after {waited:?}, before the prompt's timeout"
    );
}

/// A `browser_snapshot` call that waits for the person: the popup shows its prompt and the
/// badge counts it. The call, running.
pub(crate) fn asking<B: Pages>(
    b: &mut B,
    popup: &B::Page,
    d: &TestDaemon,
    tab_ref: &str,
) -> std::thread::JoinHandle<Output> {
    let call = spawn_ctl(d, &["call", "browser_snapshot", "--tab", tab_ref]);
    b.wait_for(popup, "the prompt in the popup", "!document.getElementById('pending-section').hidden && document.querySelector('#pending .prompt strong')?.textContent === 'browser_snapshot'");
    let badge = b.wait_for(
        popup,
        "the badge to count the call",
        "chrome.action.getBadgeText({}).then((t) => t === '1' && t)",
    );
    assert_eq!(badge, "1");
    call
}

/// The allowed call (`search_recipes` for "leeks") answered, and the popup's three newest
/// answers, as a person reads them: allowed, denied, unanswered.
pub(crate) fn allowed_then_listed<B: Pages>(
    b: &mut B,
    popup: &B::Page,
    call: std::thread::JoinHandle<Output>,
) {
    let out = call.join().unwrap();
    assert!(out.status.success(), "allowed: {}", stderr(&out));
    assert!(
        stdout(&out).contains("3 recipes with leeks"),
        "{}",
        stdout(&out)
    );
    let calls = b.wait_for(popup, "the three answers in the popup", "(() => { const rows = [...document.querySelectorAll('#calls tr')].map((tr) => tr.cells[2].textContent); return rows.length >= 3 && !['waiting for you', 'running'].includes(rows[0]) && rows.slice(0, 3); })()");
    assert_eq!(
        calls,
        serde_json::json!(["ok", "denied", "no answer"]),
        "what a person reads"
    );
}

/// The tab `tab_ref` as the daemon lists it, once its tool names satisfy `ready`.
/// After *Always for this site*: the waiting `call` ran, the site is kept as allowed in the
/// person's policy, and from now on a call there runs without a word (prompts now give up at
/// once, so one would fail it).
pub(crate) fn allowed_for_good<B: Pages>(
    b: &mut B,
    popup: &B::Page,
    d: &TestDaemon,
    site: &str,
    tab_ref: &str,
    call: std::thread::JoinHandle<Output>,
) {
    let out = call.join().unwrap();
    assert!(out.status.success(), "always: {}", stderr(&out));
    let stored = b.eval(
        popup,
        "chrome.storage.local.get('sites').then((s) => s.sites)",
    );
    assert_eq!(stored[site]["mode"], "allow", "{stored}");
    b.eval(
        popup,
        "chrome.storage.local.set({ consentTimeoutMs: 1500 })",
    );
    let out = d.ctl(&["call", "browser_snapshot", "--tab", tab_ref]);
    assert!(out.status.success(), "allowed for good: {}", stderr(&out));
}

/// A tab the agent opens itself at `url` (`browserctl open`) runs its page tool at once: the
/// agent's own tab asks nobody, whatever the site's default.
pub(crate) fn the_agents_own_tab_does_not_ask(d: &TestDaemon, url: &str) {
    let opened = d.ctl_json(&["open", url]);
    let opened_ref = opened["ref"]
        .as_str()
        .or(opened["tab"].as_str())
        .unwrap_or_else(|| panic!("the opened tab: {opened}"))
        .to_owned();
    tab_once(d, &opened_ref, "the agent's tab with its tools", |n| {
        n.contains(&"search_recipes")
    });
    let out = d.ctl(&search_args(&opened_ref, "eggs"));
    assert!(
        out.status.success(),
        "the agent's own tab: {}\n{}",
        stderr(&out),
        d.log()
    );
}

pub(crate) fn tab_once(
    d: &TestDaemon,
    tab_ref: &str,
    what: &str,
    ready: impl Fn(&[&str]) -> bool,
) -> Value {
    wait_until(Duration::from_secs(20), what, || {
        let tabs = d.ctl_json(&["tabs"]);
        let t = tabs["tabs"]
            .as_array()?
            .iter()
            .find(|t| t["ref"] == tab_ref)?
            .clone();
        ready(&tool_names(&t)).then_some(t)
    })
}

/// The first event of `kind` on `tab_ref` after `since`.
pub(crate) fn one_event(d: &TestDaemon, kind: &str, tab_ref: &str, since: &str) -> Value {
    let args = [
        "events", "--type", kind, "--tab", tab_ref, "--since", since, "--count", "1",
    ];
    let out = d.ctl(&args);
    serde_json::from_str(stdout(&out).trim()).expect("one event")
}

/// Chromium with the extension at the recipe page, paired with a daemon on a scanned port;
/// None (after a loud SKIPPED) without Chromium. Fields drop browser first, lock last.
pub(crate) struct ChromiumFace {
    pub(crate) exe: PathBuf,
    pub(crate) b: Browser,
    pub(crate) d: TestDaemon,
    pub(crate) pages: PageServer,
    pub(crate) profile: tempfile::TempDir,
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl ChromiumFace {
    /// The person has let agents act on every site (*Allow everywhere*, in the options).
    pub(crate) fn start(test: &str) -> Option<ChromiumFace> {
        ChromiumFace::showing(test, PAGE)
    }

    /// The extension as a fresh install has it: a call on a site the person has not allowed
    /// asks first (issue 31).
    pub(crate) fn fresh(test: &str) -> Option<ChromiumFace> {
        ChromiumFace::launch(test, PAGE, false, &[])
    }

    /// The same as `start` with another page at every path.
    pub(crate) fn showing(test: &str, page: &'static str) -> Option<ChromiumFace> {
        ChromiumFace::launch(test, page, true, &[])
    }

    /// The same as `showing`, the daemon started with `args`.
    pub(crate) fn showing_with(
        test: &str,
        page: &'static str,
        args: &[&str],
    ) -> Option<ChromiumFace> {
        ChromiumFace::launch(test, page, true, args)
    }

    fn launch(
        test: &str,
        page: &'static str,
        everywhere: bool,
        args: &[&str],
    ) -> Option<ChromiumFace> {
        let exe = chromium_or_skip(test)?;
        let lock = machine_wide_lock();
        let pages = PageServer::page(page);
        let d = daemon_in_scan_range(args);
        let profile = tempfile::tempdir().unwrap();
        // The page opens once the extension is up: a tab that loads while Chromium is still
        // loading an unpacked extension gets no content scripts, and so no page tools.
        let mut b = Browser::launch(&exe, profile.path(), "about:blank");
        // Found by the scan, trusted once paired (issue 21).
        pair_browser(profile.path(), &d);
        if everywhere {
            b.allow_everywhere();
        }
        b.open(&pages.url("recipes"));
        Some(ChromiumFace {
            exe,
            b,
            d,
            pages,
            profile,
            _lock: lock,
        })
    }
}

/// Firefox with the extension paired with a daemon on a scanned port, at the recipe page, as a
/// fresh install has it (a call on a site the person has not allowed asks first); None (after
/// a loud SKIPPED) without Firefox. Fields drop browser first, lock last.
pub(crate) struct FirefoxFace {
    pub(crate) ff: crate::support::firefox::Firefox,
    pub(crate) d: TestDaemon,
    pub(crate) pages: PageServer,
    /// Held until the test ends: a test that takes the face apart binds it (`lock: _lock`).
    pub(crate) lock: nix::fcntl::Flock<std::fs::File>,
}

impl FirefoxFace {
    pub(crate) fn fresh(test: &str) -> Option<FirefoxFace> {
        use crate::support::firefox::*;
        let exe = firefox_or_skip(test)?;
        let lock = machine_wide_lock();
        let pages = PageServer::page(PAGE);
        let d = daemon_in_scan_range(&[]);
        let mut ff = Firefox::launch(&exe, &Options::default());
        ff.pair(&d);
        ff.show(&pages.url("recipes"));
        Some(FirefoxFace { ff, d, pages, lock })
    }
}
