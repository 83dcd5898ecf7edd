//! The person at the browser and the agent at the daemon, for the attacks of issue 58 that need
//! both (consent per frame and per document, dialog answers, the upload prompt): tabs opened as
//! a person opens them, script in them as the oracle, the extension's popup where prompts are
//! answered and settings written, in Chromium (DevTools) and Firefox (WebDriver BiDi) alike;
//! and the agent's calls over the control socket, each with its code and no retry.

use crate::support::bidi::Context;
use crate::support::cdp::{Browser, Page};
use crate::support::chromium::*;
use crate::support::common::*;
use crate::support::firefox::*;
use crate::support::site::SiteServer;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// How long a step may take: the longer of the two browsers' patience.
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

enum Engine {
    Chromium {
        b: Browser,
        _profile: tempfile::TempDir,
    },
    Firefox(Firefox),
}

enum Handle {
    Chromium(Page),
    Firefox(Context),
}

/// One browser with the extension, paired with a daemon, as a fresh install (nothing allowed
/// yet), and the pages a test opened in it, by index.
pub(crate) struct Person {
    engine: Engine,
    pages: Vec<Handle>,
}

impl Person {
    /// A tab the person opens at `url`; its index for the other calls.
    pub(crate) fn open(&mut self, url: &str) -> usize {
        let handle = match &mut self.engine {
            Engine::Chromium { b, .. } => Handle::Chromium(b.open(url)),
            Engine::Firefox(ff) => Handle::Firefox(ff.open(url)),
        };
        self.pages.push(handle);
        self.pages.len() - 1
    }

    /// The extension's popup for the browser's tab `tab_id`, in a tab of its own.
    pub(crate) fn popup(&mut self, tab_id: i64) -> usize {
        let handle = match &mut self.engine {
            Engine::Chromium { b, .. } => Handle::Chromium(b.open(&format!(
                "chrome-extension://{EXTENSION_ID}/ui/popup.html?tab={tab_id}"
            ))),
            Engine::Firefox(ff) => {
                Handle::Firefox(ff.open_extension_page(&format!("ui/popup.html?tab={tab_id}")))
            }
        };
        self.pages.push(handle);
        let at = self.pages.len() - 1;
        self.wait_for(
            at,
            "the popup",
            "document.getElementById('site').textContent !== ''",
        );
        at
    }

    pub(crate) fn eval(&mut self, at: usize, expr: &str) -> Value {
        match (&mut self.engine, &self.pages[at]) {
            (Engine::Chromium { b, .. }, Handle::Chromium(p)) => b.eval(p, expr),
            (Engine::Firefox(ff), Handle::Firefox(c)) => ff.eval(c, expr),
            _ => unreachable!("a page of another browser"),
        }
    }

    pub(crate) fn wait_for(&mut self, at: usize, what: &str, expr: &str) -> Value {
        match (&mut self.engine, &self.pages[at]) {
            (Engine::Chromium { b, .. }, Handle::Chromium(p)) => b.wait_for(p, what, expr),
            (Engine::Firefox(ff), Handle::Firefox(c)) => ff.wait_for(c, what, expr),
            _ => unreachable!("a page of another browser"),
        }
    }

    pub(crate) fn log_tail(&self) -> String {
        match &self.engine {
            Engine::Chromium { b, .. } => b.log_tail(),
            Engine::Firefox(ff) => ff.log_tail(),
        }
    }

    /// Chromium's DevTools, for what only it can show (the service worker).
    pub(crate) fn chromium(&mut self) -> Option<&mut Browser> {
        match &mut self.engine {
            Engine::Chromium { b, .. } => Some(b),
            Engine::Firefox(_) => None,
        }
    }

    /// The person's settings (per-site modes, the prompt's timeout…), written from the
    /// extension page `at` as the popup and the options page write them.
    pub(crate) fn set(&mut self, at: usize, settings: Value) {
        let done = self.eval(
            at,
            &format!("chrome.storage.local.set({settings}).then(() => true)"),
        );
        assert_eq!(done, json!(true), "settings {settings}");
    }

    /// What the prompt for `tool` says, once the popup `at` shows it.
    pub(crate) fn prompt(&mut self, at: usize, tool: &str) -> String {
        let says = self.wait_for(
            at,
            &format!("the prompt for {tool}"),
            &format!(
                "(() => {{ const p = document.querySelector('#pending .prompt'); return p?.querySelector('strong')?.textContent === {} && p.textContent; }})()",
                json!(tool)
            ),
        );
        says.as_str().unwrap_or_default().to_owned()
    }

    /// The person presses the prompt's button `label` (Allow once, Always for this site, Deny),
    /// and the prompt leaves the popup.
    pub(crate) fn answer(&mut self, at: usize, label: &str) {
        let pressed = self.eval(
            at,
            &format!(
                "(() => {{ const b = [...document.querySelectorAll('#pending .prompt button')].find((x) => x.textContent === {}); b?.click(); return !!b; }})()",
                json!(label)
            ),
        );
        assert_eq!(pressed, json!(true), "a {label:?} button in the prompt");
        self.wait_for(
            at,
            "the answered prompt to leave",
            "document.getElementById('pending-section').hidden",
        );
    }
}

/// A browser of each family, the daemon it is paired with and the test pages on two sites
/// (`site.origin()` and the same server as localhost). Drops the browser first, the lock last.
pub(crate) struct Scene {
    pub(crate) person: Person,
    pub(crate) d: TestDaemon,
    pub(crate) site: SiteServer,
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl Scene {
    /// The browser `family` ("chromium" or "firefox") as a fresh install has it, paired; None
    /// (after a loud SKIPPED) when it is not installed.
    pub(crate) fn fresh(test: &str, family: &str) -> Option<Scene> {
        let engine_exe = if family == "firefox" {
            firefox_or_skip(test)?
        } else {
            chromium_or_skip(test)?
        };
        let lock = machine_wide_lock();
        let site = SiteServer::start();
        let d = daemon_in_scan_range(&[]);
        let engine = if family == "firefox" {
            let mut ff = Firefox::launch(&engine_exe, &Options::default());
            ff.pair(&d);
            Engine::Firefox(ff)
        } else {
            let profile = tempfile::tempdir().unwrap();
            let b = Browser::launch(&engine_exe, profile.path(), "about:blank");
            pair_browser(profile.path(), &d);
            Engine::Chromium {
                b,
                _profile: profile,
            }
        };
        Some(Scene {
            person: Person {
                engine,
                pages: Vec::new(),
            },
            d,
            site,
            _lock: lock,
        })
    }

    /// The other site: the same server, named localhost.
    pub(crate) fn other_origin(&self) -> String {
        self.site.origin().replace("127.0.0.1", "localhost")
    }

    /// The daemon's tab showing `url`, once it offers the built-ins: (ref, the browser's id).
    pub(crate) fn tab_at(&self, url: &str) -> (String, i64) {
        let tab = listed_tab(&self.d, PATIENCE, url, "browser_snapshot");
        let tab_ref = tab["ref"].as_str().unwrap().to_owned();
        (tab_ref, tab["id"].as_i64().unwrap())
    }

    /// A tab the agent opens itself (`browserctl open`): its ref, once it offers the built-ins.
    pub(crate) fn agent_opens(&self, url: &str) -> String {
        let opened = self.d.ctl_json(&["open", url]);
        let tab_ref = opened["ref"]
            .as_str()
            .or(opened["tab"].as_str())
            .unwrap_or_else(|| panic!("the opened tab: {opened}"))
            .to_owned();
        wait_until(PATIENCE, "the agent's tab with its built-ins", || {
            let tabs = self.d.ctl_json(&["tabs"]);
            tabs["tabs"].as_array()?.iter().find(|t| {
                t["ref"] == tab_ref.as_str() && tool_names(t).contains(&"browser_snapshot")
            })?;
            Some(())
        });
        tab_ref
    }

    /// The daemon's log and the browser's, for an assertion's message.
    pub(crate) fn logs(&self) -> String {
        format!(
            "--- daemon ---\n{}\n--- browser ---\n{}",
            crate::support::driver::last_lines(&self.d.log(), 40),
            self.person.log_tail()
        )
    }
}

/// A call that did not answer: the code a script branches on (the extension's own when the
/// daemon wraps it) and the message.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: String,
    pub(crate) message: String,
}

/// `tool` with `args` on `tab`, over the control socket, not retried (a retry would hide the
/// code the first attempt ended with); waits as long as a prompt may.
pub(crate) fn call(d: &TestDaemon, tab: &str, tool: &str, args: Value) -> Result<Value, Failure> {
    call_on(&d.socket, tab, tool, args)
}

/// [`call`] that must answer: its result.
pub(crate) fn ok(s: &Scene, tab: &str, tool: &str, args: Value) -> Value {
    call(&s.d, tab, tool, args.clone())
        .unwrap_or_else(|f| panic!("{tool} {args}: {f:?}\n{}", s.logs()))
}

/// [`call`] in a thread of its own, for a call that waits for the person.
pub(crate) fn spawn_call(
    d: &TestDaemon,
    tab: &str,
    tool: &str,
    args: Value,
) -> std::thread::JoinHandle<Result<Value, Failure>> {
    let (socket, tab, tool) = (d.socket.clone(), tab.to_owned(), tool.to_owned());
    std::thread::spawn(move || call_on(&socket, &tab, &tool, args))
}

fn call_on(socket: &std::path::Path, tab: &str, tool: &str, args: Value) -> Result<Value, Failure> {
    let body = json!({"tool": tool, "tab": tab, "args": args, "retries": 0}).to_string();
    let request = format!(
        "POST /v1/call HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let v: Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("{tool}: not JSON ({e}): {head}\n{body}"));
    if head.split(' ').nth(1) == Some("200") {
        return Ok(v["result"].clone());
    }
    let e = &v["error"];
    Err(Failure {
        code: e["details"]["toolCode"]
            .as_str()
            .or(e["code"].as_str())
            .unwrap_or_default()
            .to_owned(),
        message: e["message"].as_str().unwrap_or_default().to_owned(),
    })
}

/// Every text block of a result, joined.
pub(crate) use crate::browser::hands::all_text as text_of;

/// "[textbox f12e3] Field bank" → "f12e3", for the first line containing `needle`.
pub(crate) fn ref_on_line(snapshot: &str, needle: &str) -> Option<String> {
    let line = snapshot.lines().find(|l| l.contains(needle))?;
    let inner = line.trim_start().strip_prefix('[')?.split(']').next()?;
    Some(inner.split(' ').nth(1)?.to_owned())
}
