//! A whole page in one capture in Chromium, once the person has granted the optional
//! "debugger" permission (the options page asks for it). A headless browser cannot click the
//! browser's own permission prompt, so the grant is given as an unpacked extension's required
//! permissions are: a copy of the extension whose manifest asks for it up front. Everything
//! else is the real extension, paired with a real daemon.

use crate::browser::drives::*;
use crate::support::cdp::Browser;
use crate::support::chromium::*;
use crate::support::common::*;
use serde_json::{json, Value};
use std::time::Duration;

const PATIENCE: Duration = Duration::from_secs(60);

fn call(d: &TestDaemon, tab: &str, tool: &str, args: Value) -> Value {
    ctl_call(d, tab, tool, &args).unwrap_or_else(|e| panic!("{tool}: {e}"))
}

#[test]
fn whole_page_in_one_capture_once_granted() {
    let Some(exe) = chromium_or_skip("browser::eyes::fast_shots") else {
        return;
    };
    let _lock = machine_wide_lock();
    let pages = PageServer::pages();
    let ext = tempfile::tempdir().unwrap();
    let granted = granted_extension(ext.path());
    let profile = tempfile::tempdir().unwrap();
    let url = pages.url("eyes-shot.html");
    let mut browser = Browser::launch_extension(
        &exe,
        profile.path(),
        &url,
        &["--window-size=1000,700"],
        &granted,
    );
    let d = daemon_in_scan_range(&[]);
    pair_browser(profile.path(), &d);
    // Not a test of consent: the person lets agents act everywhere (issue 31).
    browser.allow_everywhere();
    let tab = listed_tab(&d, PATIENCE, &url, "browser_screenshot");
    let tab = tab["ref"].as_str().unwrap().to_owned();
    let view = call(&d, &tab, "browser_screenshot", json!({}));
    let (vw, _) = png_size(&image(&view).1);

    // 900 + 120 + 200 + 900 CSS pixels tall, as the stitched capture of eyes/files.rs.
    for (format, mime) in [("png", "image/png"), ("jpeg", "image/jpeg")] {
        let full = call(
            &d,
            &tab,
            "browser_screenshot",
            json!({"fullPage": true, "format": format}),
        );
        let (got, bytes) = image(&full);
        assert_eq!(got, mime);
        assert!(
            text(&full).contains("in one capture (the DevTools protocol"),
            "{}",
            text(&full)
        );
        if format == "png" {
            assert_eq!(png_size(&bytes), (vw, 2120), "{}", text(&full));
        }
    }
    // The debugger was detached after the first: a second capture attaches anew.
    let again = call(&d, &tab, "browser_screenshot", json!({"fullPage": true}));
    assert!(text(&again).contains("in one capture"), "{}", text(&again));

    // The options page shows the grant as its labelled switch, on.
    let options = browser.open(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/options.html"
    ));
    let shown = browser.wait_for(
        &options,
        "the trusted input switch to show the grant",
        "(() => { const c = document.getElementById('trusted-input'); \
           return c.checked && !c.closest('.field').hidden && c.labels[0].textContent; })()",
    );
    assert_eq!(shown, "Trusted input and fast screenshots");
}
