//! The agent's hands (issue 15) and the bounded snapshot (issue 16), end to end, in headless
//! Chromium and in headless Firefox ESR: our extension, the real daemon, calls over its control
//! socket. The pages are Playwright's and Selenium's own test pages (tests/e2e/third_party,
//! unmodified, with their NOTICE) plus ours for the edge cases (tests/e2e/pages/hands-*.html).
//!
//! Every scenario is written once against [`Hands`] and runs in both browsers; the browser
//! itself is the oracle ([`Driver`]: DevTools for Chromium, WebDriver BiDi for Firefox): it
//! reads what the page recorded, and gives the one trusted click a person would have made (the
//! activation a beforeunload prompt needs). Where the two browsers really behave differently,
//! the scenario says so where it checks it ([`Hands::firefox`]).
//!
//! One browser for all cases (browser tests hold a machine-wide lock). The round trip of each
//! action is timed and the p50 table printed (and kept in target/test-artifacts/).
//!
//! Without the browser a test says SKIPPED loudly and passes, except under CI=true.

mod actionability;
mod frames;
mod frameworks;
mod input;
mod managed_firefox;
mod off_site;
mod pages;
mod trusted;
mod widgets;

use crate::daemon::control::raw_request;
use crate::support::cdp::Browser;
use crate::support::chromium::*;
use crate::support::common::*;
use crate::support::driver::*;
use crate::support::firefox::*;
use crate::support::site::SiteServer;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A temp dir the daemon may upload from: its own name is not hidden (tempfile's `.tmpXXXX` is,
/// and nothing below a root that is hidden is ever read), and it becomes the calls' root.
fn upload_dir(h: &mut Hands) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("uploads")
        .tempdir()
        .unwrap();
    h.upload_roots = vec![dir.path().display().to_string()];
    dir
}

/// A failed call: the code a script branches on (the extension's own code when the daemon
/// wraps it as TOOL_ERROR) and the message.
#[derive(Debug)]
pub(crate) struct Failure {
    code: String,
    message: String,
}

/// The agent's side: calls over the control socket, on one tab; and the oracle.
pub(crate) struct Hands {
    d: TestDaemon,
    o: Box<dyn Driver>,
    tab: String,
    origin: String,
    /// Round trips per tool, for the p50 table.
    times: BTreeMap<String, Vec<Duration>>,
    /// Where `browser_file_upload` may read `paths` from, as an MCP client's roots would say
    /// (sent with every call; the daemon has no `--upload-root` here).
    upload_roots: Vec<String>,
    /// When set, calls go over MCP (`browserctl mcp`, stdio) instead of the control socket.
    mcp: Option<widgets::Mcp>,
}

impl Hands {
    fn firefox(&self) -> bool {
        self.o.firefox()
    }

    /// The browser's own id of the tab under test (the daemon's ref is `browser:id`), for the
    /// extension's APIs.
    fn browser_tab_id(&self) -> i64 {
        self.tab.split(':').nth(1).unwrap().parse().unwrap()
    }

    /// One call over the control socket, timed.
    fn try_call(&mut self, tool: &str, args: Value) -> Result<Value, Failure> {
        if let Some(mcp) = &self.mcp {
            mcp.set_roots(&self.upload_roots);
            let start = Instant::now();
            let r = mcp.call(tool, &self.tab, args);
            if r.is_ok() {
                let key = format!("{tool} (MCP)");
                self.times.entry(key).or_default().push(start.elapsed());
            }
            return r;
        }
        let body = json!({"tool": tool, "tab": self.tab, "args": args, "retries": 0,
            "uploadRoots": self.upload_roots})
        .to_string();
        let request = format!(
            "POST /v1/call HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let start = Instant::now();
        let (status, text) = raw_request(&self.d, &request);
        let took = start.elapsed();
        let v: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{tool}: not JSON ({e}), status {status}: {text}"));
        if status == 200 {
            self.times.entry(tool.to_owned()).or_default().push(took);
            return Ok(v["result"].clone());
        }
        let e = &v["error"];
        let code = e["details"]["toolCode"]
            .as_str()
            .or(e["code"].as_str())
            .unwrap_or_default()
            .to_owned();
        Err(Failure {
            code,
            message: e["message"].as_str().unwrap_or_default().to_owned(),
        })
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        match self.try_call(tool, args.clone()) {
            Ok(v) => v,
            Err(f) => panic!(
                "{tool} {args} failed: {f:?}\n--- daemon ---\n{}\n--- browser ---\n{}",
                tail(&self.d.log(), 30),
                self.o.log_tail()
            ),
        }
    }

    /// A call that must fail with `code`; returns the message.
    fn refused(&mut self, tool: &str, args: Value, code: &str) -> String {
        match self.try_call(tool, args.clone()) {
            Ok(v) => panic!("{tool} {args} should fail with {code}, gave {v}"),
            Err(f) => {
                assert_eq!(f.code, code, "{tool} {args}: {}", f.message);
                f.message
            }
        }
    }

    fn text(&mut self, tool: &str, args: Value) -> String {
        let r = self.call(tool, args);
        all_text(&r)
    }

    fn snapshot(&mut self) -> String {
        self.text("browser_snapshot", json!({}))
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.origin)
    }

    /// browser_navigate, then waits (oracle) until the document is complete.
    fn goto(&mut self, path: &str) {
        let url = self.url(path);
        let out = self.text("browser_navigate", json!({"url": url}));
        assert!(out.starts_with("Loaded "), "{out}");
        self.settle();
    }

    fn settle(&mut self) {
        self.wait(
            "the page to finish loading",
            "document.readyState === 'complete'",
        );
    }

    fn eval(&mut self, expr: &str) -> Value {
        self.o.eval(expr)
    }

    fn wait(&mut self, what: &str, expr: &str) -> Value {
        self.o.wait_for(what, expr)
    }

    /// The ref of the snapshot line that contains `needle`.
    fn ref_of(&mut self, needle: &str) -> String {
        let snap = self.snapshot();
        find_ref(&snap, needle).unwrap_or_else(|| panic!("no line with {needle:?} in\n{snap}"))
    }

    /// Snapshots until `ready` holds (frames load on their own time).
    fn wait_snapshot(&mut self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let snap = self.snapshot();
            if ready(&snap) {
                return snap;
            }
            if start.elapsed() > Duration::from_secs(30) {
                panic!("timed out waiting for {what}:\n{snap}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Calls `tool` with `args` until `pick` finds what it waits for in the result.
    fn until_value<T>(
        &mut self,
        what: &str,
        (tool, args): (&str, Value),
        pick: impl Fn(&Value) -> Option<T>,
    ) -> T {
        let start = Instant::now();
        loop {
            let r = self.call(tool, args.clone());
            if let Some(v) = pick(&r) {
                return v;
            }
            if start.elapsed() > Duration::from_secs(30) {
                panic!("timed out waiting for {what}: {r}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Calls `tool` with `args` until its whole result, as JSON text, satisfies `ready`.
    fn until_text(
        &mut self,
        what: &str,
        call: (&str, Value),
        ready: impl Fn(&str) -> bool,
    ) -> String {
        self.until_value(what, call, |r| {
            let t = r.to_string();
            ready(&t).then_some(t)
        })
    }

    /// The person's per-site settings, written as the options page writes them.
    fn set_sites(&mut self, sites: Value) {
        self.o.eval_in_extension(&format!(
            "chrome.storage.local.set({{sites: {sites}}}).then(() => true)"
        ));
    }

    /// Waits until the tab offers `tool` (the extension re-offers after a settings change).
    fn wait_for_tool(&mut self, tool: &str) {
        let (d, tab) = (&self.d, self.tab.clone());
        wait_until(
            Duration::from_secs(60),
            &format!("{tool} to be offered"),
            || {
                let tabs = d.ctl_json(&["tabs"]);
                tabs["tabs"]
                    .as_array()?
                    .iter()
                    .find(|t| t["ref"] == tab.as_str())
                    .and_then(|t| tool_names(t).contains(&tool).then_some(()))
            },
        );
    }
}

pub fn all_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// "[button f12e3] Name" → "f12e3", for the first line containing `needle`.
pub fn find_ref(snapshot: &str, needle: &str) -> Option<String> {
    let line = snapshot.lines().find(|l| l.contains(needle))?;
    let inner = line.trim_start().strip_prefix('[')?.split(']').next()?;
    Some(inner.split(' ').nth(1)?.to_owned())
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The tab showing `start_url` once it offers the built-ins.
fn built_ins_tab(d: &TestDaemon, start_url: &str) -> String {
    wait_until(
        Duration::from_secs(60),
        "the tab with the built-ins",
        || {
            let tabs = d.ctl_json(&["tabs"]);
            tabs["tabs"].as_array()?.iter().find_map(|t| {
                (t["url"] == start_url && tool_names(t).contains(&"browser_file_upload"))
                    .then(|| t["ref"].as_str().unwrap().to_owned())
            })
        },
    )
}

type Scenario = fn(&mut Hands);

/// Every scenario, in order, in one browser.
fn every_scenario(mut h: Hands, browser: &str) {
    let started = Instant::now();
    let step = |name: &str| eprintln!("{browser} hands {:>6.1?} {name}", started.elapsed());
    let scenarios: [(&str, Scenario); 13] = [
        ("names", pages::names),
        ("actionability", actionability::actionability),
        ("frames", frames::frames),
        ("a site turned off", off_site::off_site),
        ("dialogs", input::dialogs),
        ("uploads", input::uploads),
        ("drag and drop", input::drags),
        ("hover, keys, select", input::hover_keys_select),
        ("history", pages::history),
        (
            "wait_for, screenshot, evaluate",
            pages::waits_screenshot_evaluate,
        ),
        ("bounded snapshot", pages::bounded),
        ("--help", pages::help),
        ("timings", pages::timings),
    ];
    for (name, scenario) in scenarios {
        scenario(&mut h);
        step(name);
    }
}

#[test]
fn hands_and_bounded_snapshots_in_chromium() {
    in_chromium(
        "browser::hands::hands_and_bounded_snapshots_in_chromium",
        "hands-names.html",
        every_scenario,
    );
}

#[test]
fn hands_and_bounded_snapshots_in_firefox() {
    in_firefox(
        "browser::hands::hands_and_bounded_snapshots_in_firefox",
        "hands-names.html",
        every_scenario,
    );
}

/// `scenarios` in headless Chromium, from the site's `start_page`: found by the scan, trusted
/// once paired (issue 21), and agents allowed everywhere, as a person may choose — these are
/// not tests of consent (issue 31).
fn in_chromium(test: &str, start_page: &str, scenarios: impl FnOnce(Hands, &str)) {
    in_chromium_with(test, start_page, false, scenarios);
}

/// In Chromium; `granted`: with the debugger permission granted, so the hands' input is the
/// browser's own (issue 57).
fn in_chromium_with(
    test: &str,
    start_page: &str,
    granted: bool,
    scenarios: impl FnOnce(Hands, &str),
) {
    let Some(exe) = chromium_or_skip(test) else {
        return;
    };
    let _lock = machine_wide_lock();
    let server = SiteServer::start();
    let d = daemon_in_scan_range(&[]);
    let profile = tempfile::tempdir().unwrap();
    let start_url = format!("{}/{start_page}", server.origin());
    let ext = tempfile::tempdir().unwrap();
    let mut b = if granted {
        let copy = granted_extension(ext.path());
        Browser::launch_extension(&exe, profile.path(), "about:blank", &[], &copy)
    } else {
        Browser::launch(&exe, profile.path(), "about:blank")
    };
    pair_browser(profile.path(), &d);
    b.allow_everywhere();
    let page = b.open(&start_url);
    let o = ChromiumTab::new(b, page);
    run_with(d, &server, &start_url, Box::new(o), "chromium", scenarios);
}

/// The same in headless Firefox ESR.
fn in_firefox(test: &str, start_page: &str, scenarios: impl FnOnce(Hands, &str)) {
    let Some(exe) = firefox_or_skip(test) else {
        return;
    };
    let _lock = machine_wide_lock();
    let server = SiteServer::start();
    let d = daemon_in_scan_range(&[]);
    let mut ff = Firefox::launch(&exe, &Options::default());
    ff.pair(&d);
    ff.allow_everywhere();
    let start_url = format!("{}/{start_page}", server.origin());
    let page = ff.show(&start_url);
    let o = FirefoxTab::new(ff, page);
    run_with(d, &server, &start_url, Box::new(o), "firefox", scenarios);
}

/// `scenarios` on the tab at `start_url`, once the daemon has it with its built-ins.
fn run_with(
    d: TestDaemon,
    server: &SiteServer,
    start_url: &str,
    o: Box<dyn Driver>,
    name: &str,
    scenarios: impl FnOnce(Hands, &str),
) {
    let tab = built_ins_tab(&d, start_url);
    let origin = server.origin();
    let times = BTreeMap::new();
    scenarios(
        Hands {
            d,
            o,
            tab,
            origin,
            times,
            upload_roots: Vec::new(),
            mcp: None,
        },
        name,
    );
}
