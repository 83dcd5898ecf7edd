//! The agent's eyes in headless Firefox ESR, downloading into a directory of the test's own.

use super::every_scenario;
use crate::browser::drives::*;
use crate::support::chromium::*;
use crate::support::common::*;
use crate::support::firefox::*;
use std::path::Path;
use std::time::{Duration, Instant};

struct Eyes {
    d: TestDaemon,
    ff: Firefox,
    tab: String,
    downloads: tempfile::TempDir,
    started: Instant,
}

impl DrivesTab for Eyes {
    fn daemon(&self) -> &TestDaemon {
        &self.d
    }

    fn tab(&self) -> &str {
        &self.tab
    }

    fn patience(&self) -> Duration {
        FIREFOX_WAIT
    }

    fn firefox(&self) -> bool {
        true
    }

    fn downloads(&self) -> &Path {
        self.downloads.path()
    }

    fn step(&self, name: &str) {
        eprintln!("firefox eyes {:>6.1?} {name}", self.started.elapsed());
    }

    fn context(&self) -> String {
        let log = self.d.log();
        let lines: Vec<&str> = log.lines().collect();
        format!(
            "--- daemon ---\n{}\n--- firefox ---\n{}",
            lines[lines.len().saturating_sub(30)..].join("\n"),
            self.ff.log_tail()
        )
    }
}

#[test]
fn in_firefox() {
    let Some(exe) = firefox_or_skip("browser::eyes::in_firefox") else {
        return;
    };
    let _lock = machine_wide_lock();
    let pages = PageServer::pages();
    let d = daemon_in_scan_range(&[]);
    let downloads = tempfile::tempdir().unwrap();
    let options = Options {
        downloads: Some(downloads.path().to_path_buf()),
        ..Options::default()
    };
    let mut ff = Firefox::launch(&exe, &options);
    ff.pair(&d);
    let start = pages.url("eyes-console.html?early");
    ff.show(&start);
    let tab = wait_until(FIREFOX_WAIT, "the tab with the eyes", || {
        let tabs = d.ctl_json(&["tabs"]);
        tabs["tabs"].as_array()?.iter().find_map(|t| {
            (t["url"] == start.as_str() && tool_names(t).contains(&"browser_console_messages"))
                .then(|| t.clone())
        })
    });
    let names = tool_names(&tab);
    for t in [
        "browser_console_messages",
        "browser_network_requests",
        "browser_downloads",
        "browser_screenshot",
        "browser_tabs",
    ] {
        assert!(names.contains(&t), "{t} in {names:?}");
    }
    let eyes = Eyes {
        tab: tab["ref"].as_str().unwrap().to_owned(),
        d,
        ff,
        downloads,
        started: Instant::now(),
    };
    eyes.step("extension connected");
    every_scenario(&eyes, &pages);
}
