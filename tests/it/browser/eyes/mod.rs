//! The agent's eyes (issue 16) in a real browser, Chromium and Firefox ESR: our extension, the
//! real daemon on a port the extension scans, the pages of tests/e2e/pages (eyes-*.html) served
//! from loopback, and browserctl (and `browserctl mcp`) as subprocesses. One browser launch for
//! every case: console, network, downloads, screenshots, a console flood, browser_tabs, and the
//! page events on `browserctl events`. Every scenario is written once against
//! [`DrivesTab`](crate::browser::drives::DrivesTab) and runs in both browsers; what a browser
//! reports its own way is said where it is checked.
//!
//! Without the browser a test says SKIPPED loudly and passes, except under CI=true, where a
//! missing browser is a failure. `BROWSER_MCP_CHROMIUM` names another Chromium.

mod before_extension;
mod chromium;
mod console;
mod fast_shots;
mod files;
mod firefox;
mod network;
mod tabs;

use crate::browser::drives::DrivesTab;
use crate::support::chromium::PageServer;
use crate::support::common::TestDaemon;
use crate::support::driver::Tail;
use std::path::Path;
use std::time::{Duration, Instant};

/// The tab offers the eyes' built-ins like the others.
fn offers_the_eyes(tab: &serde_json::Value) {
    let names = crate::support::chromium::tool_names(tab);
    for t in [
        "browser_console_messages",
        "browser_network_requests",
        "browser_downloads",
        "browser_screenshot",
        "browser_tabs",
    ] {
        assert!(names.contains(&t), "{t} in {names:?}");
    }
}

/// The agent's side in either browser: the daemon, the tab under test, the browser and the
/// directory it downloads into.
struct Eyes<B> {
    d: TestDaemon,
    browser: B,
    name: &'static str,
    patience: Duration,
    downloads: tempfile::TempDir,
    tab: String,
    started: Instant,
}

impl<B: Tail> DrivesTab for Eyes<B> {
    fn daemon(&self) -> &TestDaemon {
        &self.d
    }

    fn tab(&self) -> &str {
        &self.tab
    }

    fn patience(&self) -> Duration {
        self.patience
    }

    fn firefox(&self) -> bool {
        self.name == "firefox"
    }

    fn downloads(&self) -> &Path {
        self.downloads.path()
    }

    fn step(&self, name: &str) {
        eprintln!("{} eyes {:>6.1?} {name}", self.name, self.started.elapsed());
    }

    fn context(&self) -> String {
        let log = self.d.log();
        let lines: Vec<&str> = log.lines().collect();
        format!(
            "--- daemon log (tail) ---\n{}\n--- {} log (tail) ---\n{}",
            lines[lines.len().saturating_sub(30)..].join("\n"),
            self.name,
            self.browser.tail()
        )
    }
}

fn every_scenario<E: DrivesTab>(eyes: &E, pages: &PageServer) {
    console::console(eyes, pages);
    network::network(eyes, pages);
    files::downloads(eyes, pages);
    files::screenshots(eyes, pages);
    console::moving_frame(eyes, pages);
    console::flood(eyes, pages);
    tabs::tabs_and_memory(eyes, pages);
    eyes.step("done");
}
