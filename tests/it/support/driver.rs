//! The browser side of the browser tests, one interface for both families: [`Driver`],
//! implemented over the DevTools protocol for Chromium ([`ChromiumTab`]) and over WebDriver
//! BiDi for Firefox ([`FirefoxTab`]). A scenario written against it runs in both; the agent's
//! side (calls through `browserctl` or the control socket) is the scenario's own.

use crate::support::bidi::Context;
use crate::support::cdp::{Browser, Page};
use crate::support::chromium::EXTENSION_ID;
use crate::support::common::{stderr, TestDaemon};
use crate::support::firefox::*;
use serde_json::{json, Value};
use std::process::Output;
use std::time::{Duration, Instant};

/// A real browser with our extension, as a test drives it from outside: script in the tab
/// under test, a person's click, one of the extension's own pages (for settings and
/// worker-side checks), tabs opened and closed as a person does, and a crash.
pub(crate) trait Driver {
    fn firefox(&self) -> bool;
    fn eval(&mut self, expr: &str) -> Value;
    fn wait_for(&mut self, what: &str, expr: &str) -> Value;
    /// A click as a person makes it: input the page cannot tell from a real one.
    fn person_clicks(&mut self, x: f64, y: f64);
    /// Evaluates in the extension's options page, opened the first time.
    fn eval_in_extension(&mut self, expr: &str) -> Value;
    /// Closes that page, and brings the tab under test back to the front.
    fn close_extension_page(&mut self);
    /// The tab under test goes to `url`, as if the person typed it.
    fn go(&mut self, url: &str);
    /// A new tab showing `url`; its handle for [`Driver::close`].
    fn open(&mut self, url: &str) -> String;
    /// Closes a tab [`Driver::open`] made, as a person closes it.
    fn close(&mut self, tab: &str);
    /// SIGKILL to the browser, as in a crash.
    fn kill(&mut self);
    fn log_tail(&self) -> String;
}

pub(crate) struct ChromiumTab {
    b: Browser,
    /// The tab under test; attached when first needed, so that a test's start-up is the
    /// browser's own, with no DevTools session on the page yet.
    page: Option<Page>,
    start: String,
    extension_page: Option<Page>,
    opened: Vec<Page>,
    _profile: Option<tempfile::TempDir>,
}

impl ChromiumTab {
    pub(crate) fn new(b: Browser, page: Page) -> ChromiumTab {
        ChromiumTab {
            b,
            page: Some(page),
            start: String::new(),
            extension_page: None,
            opened: Vec::new(),
            _profile: None,
        }
    }

    /// The browser as launched, its tab under test the one showing `start`.
    pub(crate) fn launched(b: Browser, start: &str) -> ChromiumTab {
        ChromiumTab {
            b,
            page: None,
            start: start.to_owned(),
            extension_page: None,
            opened: Vec::new(),
            _profile: None,
        }
    }

    fn page(&mut self) -> Page {
        if self.page.is_none() {
            self.page = Some(self.b.attach(&self.start));
        }
        self.page.clone().unwrap()
    }

    /// Keeps the browser's profile directory until the browser is dropped.
    pub(crate) fn keeping(mut self, profile: tempfile::TempDir) -> ChromiumTab {
        self._profile = Some(profile);
        self
    }
}

impl Driver for ChromiumTab {
    fn firefox(&self) -> bool {
        false
    }
    fn eval(&mut self, expr: &str) -> Value {
        let page = self.page();
        self.b.eval(&page, expr)
    }
    fn wait_for(&mut self, what: &str, expr: &str) -> Value {
        let page = self.page();
        self.b.wait_for(&page, what, expr)
    }
    fn person_clicks(&mut self, x: f64, y: f64) {
        // DevTools input is trusted.
        let page = self.page();
        for kind in ["mousePressed", "mouseReleased"] {
            self.b.send(
                Some(&page.session),
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }
    fn eval_in_extension(&mut self, expr: &str) -> Value {
        if self.extension_page.is_none() {
            let url = format!("chrome-extension://{EXTENSION_ID}/ui/options.html");
            self.extension_page = Some(self.b.open(&url));
        }
        self.b.eval(self.extension_page.as_ref().unwrap(), expr)
    }
    fn close_extension_page(&mut self) {
        if let Some(p) = self.extension_page.take() {
            let _ = self.b.try_eval(&p, "window.close()");
        }
        let page = self.page();
        self.b
            .send(Some(&page.session), "Page.bringToFront", json!({}));
    }
    fn go(&mut self, url: &str) {
        let page = self.page();
        self.b
            .send(Some(&page.session), "Page.navigate", json!({ "url": url }));
    }
    fn open(&mut self, url: &str) -> String {
        let page = self.b.open(url);
        let handle = page.target.clone();
        self.opened.push(page);
        handle
    }
    fn close(&mut self, tab: &str) {
        let at = self.opened.iter().position(|p| p.target == tab).unwrap();
        let page = self.opened.remove(at);
        self.b.close_page(&page);
    }
    fn kill(&mut self) {
        self.b.kill_main();
    }
    fn log_tail(&self) -> String {
        self.b.log_tail()
    }
}

pub(crate) struct FirefoxTab {
    pub(crate) ff: Firefox,
    page: Context,
    extension_page: Option<Context>,
}

impl FirefoxTab {
    pub(crate) fn new(ff: Firefox, page: Context) -> FirefoxTab {
        FirefoxTab {
            ff,
            page,
            extension_page: None,
        }
    }
}

impl Driver for FirefoxTab {
    fn firefox(&self) -> bool {
        true
    }
    fn eval(&mut self, expr: &str) -> Value {
        self.ff.eval(&self.page, expr)
    }
    fn wait_for(&mut self, what: &str, expr: &str) -> Value {
        self.ff.wait_for(&self.page, what, expr)
    }
    fn person_clicks(&mut self, x: f64, y: f64) {
        // WebDriver BiDi's input.performActions is trusted.
        self.ff.bidi.click_at(&self.page, x, y).unwrap();
    }
    fn eval_in_extension(&mut self, expr: &str) -> Value {
        if self.extension_page.is_none() {
            self.extension_page = Some(self.ff.open_extension_page("ui/options.html"));
        }
        self.ff.eval(self.extension_page.as_ref().unwrap(), expr)
    }
    fn close_extension_page(&mut self) {
        if let Some(p) = self.extension_page.take() {
            self.ff.bidi.close(&p).unwrap();
        }
        let _ = self.ff.bidi.command(
            "browsingContext.activate",
            json!({"context": self.page.0.clone()}),
        );
    }
    fn go(&mut self, url: &str) {
        let page = self.page.clone();
        self.ff.go(&page, url);
    }
    fn open(&mut self, url: &str) -> String {
        self.ff.open(url).0
    }
    fn close(&mut self, tab: &str) {
        self.ff.bidi.close(&Context(tab.to_owned())).unwrap();
    }
    fn kill(&mut self) {
        self.ff.kill();
    }
    fn log_tail(&self) -> String {
        self.ff.log_tail()
    }
}

/// A browser's log, for an assertion's message.
pub(crate) trait Tail {
    fn tail(&self) -> String;
}

impl Tail for dyn Driver + '_ {
    fn tail(&self) -> String {
        self.log_tail()
    }
}

impl Tail for Browser {
    fn tail(&self) -> String {
        self.log_tail()
    }
}

impl Tail for Firefox {
    fn tail(&self) -> String {
        self.log_tail()
    }
}

/// browserctl against one daemon, failing with both logs.
pub(crate) struct Ctl<'a> {
    pub(crate) d: &'a TestDaemon,
    pub(crate) what: &'a str,
}

impl Ctl<'_> {
    pub(crate) fn context<B: Tail + ?Sized>(&self, b: &B) -> String {
        format!(
            "[{}]\n--- daemon log (tail) ---\n{}\n--- browser log (tail) ---\n{}",
            self.what,
            last_lines(&self.d.log(), 40),
            b.tail()
        )
    }

    pub(crate) fn ok<B: Tail + ?Sized>(&self, b: &B, args: &[&str]) -> Output {
        let out = self.d.ctl(args);
        assert!(
            out.status.success(),
            "browserctl {args:?} failed ({}): {}\n{}",
            out.status,
            stderr(&out),
            self.context(b)
        );
        out
    }

    pub(crate) fn json<B: Tail + ?Sized>(&self, b: &B, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        serde_json::from_slice(&self.ok(b, &all).stdout).expect("JSON from browserctl")
    }

    pub(crate) fn tabs<B: Tail + ?Sized>(&self, b: &B) -> Vec<Value> {
        self.json(b, &["tabs"])["tabs"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    pub(crate) fn wait_tabs<B: Tail + ?Sized>(
        &self,
        b: &B,
        what: &str,
        pred: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let tabs = self.tabs(b);
            if pred(&tabs) {
                return tabs;
            }
            if start.elapsed() > Duration::from_secs(60) {
                panic!(
                    "timed out waiting for {what}; tabs: {tabs:?}\n{}",
                    self.context(b)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `call TOOL --tab TAB ARGS… --json`: the tool's result.
    pub(crate) fn call<B: Tail + ?Sized>(
        &self,
        b: &B,
        tool: &str,
        tab: &str,
        args: &[&str],
    ) -> Value {
        let mut all = vec!["call", tool, "--tab", tab];
        all.extend_from_slice(args);
        self.json(b, &all)["result"].clone()
    }
}

pub(crate) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
