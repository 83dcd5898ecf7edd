//! The agent's eyes in headless Firefox ESR, downloading into a directory of the test's own.

use super::{every_scenario, offers_the_eyes, Eyes};
use crate::browser::drives::*;
use crate::support::chromium::*;
use crate::support::firefox::*;
use std::time::Instant;

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
    // Not a test of consent: the person lets agents act everywhere (issue 31).
    ff.allow_everywhere();
    let start = pages.url("eyes-console.html?early");
    ff.show(&start);
    let tab = listed_tab(&d, FIREFOX_WAIT, &start, "browser_console_messages");
    offers_the_eyes(&tab);
    let eyes = Eyes {
        tab: tab["ref"].as_str().unwrap().to_owned(),
        d,
        browser: ff,
        name: "firefox",
        patience: FIREFOX_WAIT,
        downloads,
        started: Instant::now(),
    };
    eyes.step("extension connected");
    every_scenario(&eyes, &pages);
}
