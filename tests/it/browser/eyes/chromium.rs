//! The agent's eyes in headless Chromium: the browser starts before the daemon, so its
//! start-up page logs before any daemon is there and the extension keeps those lines.

use super::{every_scenario, offers_the_eyes, Eyes};
use crate::browser::drives::*;
use crate::support::cdp::Browser;
use crate::support::chromium::*;
use crate::support::common::*;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// Browser steps (start-up, port scan, page loads) on a loaded two-core machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// Headless Chromium with the extension, downloading into `downloads` without asking; with
/// its profile.
fn launch(exe: &Path, url: &str, downloads: &Path) -> (Browser, tempfile::TempDir) {
    let profile = tempfile::tempdir().unwrap();
    // Downloads land in our directory without asking, and a page may start more than one
    // (Chromium's "automatic downloads" permission; synthetic clicks carry no gesture).
    std::fs::create_dir_all(profile.path().join("Default")).unwrap();
    let prefs = json!({
        "download": {"default_directory": downloads, "prompt_for_download": false,
            "directory_upgrade": true},
        "savefile": {"default_directory": downloads},
        "profile": {"default_content_setting_values": {"automatic_downloads": 1}},
    });
    std::fs::write(
        profile.path().join("Default/Preferences"),
        prefs.to_string(),
    )
    .unwrap();
    let flags = ["--window-size=1000,700", "--enable-logging=stderr", "--v=0"];
    let b = Browser::launch_with(exe, profile.path(), url, &flags);
    (b, profile)
}

#[test]
fn in_chromium() {
    let Some(exe) = chromium_or_skip("browser::eyes::in_chromium") else {
        return;
    };
    let _lock = machine_wide_lock();
    let pages = PageServer::pages();
    // The browser first: its start-up page usually logs before any daemon is there, and the
    // extension keeps those lines until one is.
    let downloads = tempfile::tempdir().unwrap();
    let start = pages.url("eyes-console.html?early");
    let (mut browser, profile) = launch(&exe, "about:blank", downloads.path());
    // Not the start-up URL itself: `--load-extension` may load the extension after that page
    // ran its first scripts (a person's installed extension loads with the profile, first).
    browser.wait_for_extension();
    browser.show(&start);
    let d = daemon_in_scan_range(&[]);
    // Found by the scan, trusted once paired (issue 21).
    pair_browser(profile.path(), &d);
    // Not a test of consent: the person lets agents act everywhere (issue 31).
    browser.allow_everywhere();
    let mut eyes = Eyes {
        d,
        browser,
        name: "chromium",
        patience: PATIENCE,
        downloads,
        tab: String::new(),
        started: Instant::now(),
    };
    let out = eyes.d.ctl(&[
        "wait",
        "--tool",
        "browser_console_messages",
        "--timeout",
        "60s",
    ]);
    assert!(out.status.success(), "{}\n{}", stderr(&out), eyes.context());
    let tabs = eyes.d.ctl_json(&["tabs"]);
    let tab = tabs["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["url"]
                .as_str()
                .unwrap_or("")
                .ends_with("/eyes-console.html?early")
        })
        .unwrap_or_else(|| panic!("no start-up tab in {tabs}"))
        .clone();
    eyes.tab = tab["ref"].as_str().unwrap().to_owned();
    // The start-up page has loaded (its navigation is behind us, not among the events below).
    eyes.call("browser_wait_for", json!({"selector": "#more"}));
    eyes.step("extension connected");
    let early = eyes.call("browser_console_messages", json!({}));
    for needle in [
        "early debug 1",
        "early warn",
        "thrown at load",
        "nobody caught me",
        "from the frame",
    ] {
        assert!(
            find(list(&early, "messages"), "text", needle).is_some(),
            "{needle:?} from before the daemon: {}",
            text(&early)
        );
    }

    // The new built-ins are offered like the others; only browser_evaluate is held back.
    offers_the_eyes(&tab);
    assert_eq!(tab["hidden"]["tools"], json!(["browser_evaluate"]), "{tab}");

    every_scenario(&eyes, &pages);
}
