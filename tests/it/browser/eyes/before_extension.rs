//! A page that was open before the extension (installed or updated while the person browses,
//! issue 30), in Firefox, where a test can install the add-on into a running browser (WebDriver
//! BiDi). Firefox puts the manifest's content scripts into open pages at install, after their
//! load: what they logged before is gone, and from then on the top frame's lines reach the
//! agent, and a subframe's too once the first read gives it its relay (observe.js; the test
//! fails without that). Chromium leaves open pages without content scripts, and our worker's
//! own injection there (ensureConsoleCapture) is not reached by a test: a Chromium here loads
//! the extension only at start.

use crate::browser::drives::*;
use crate::support::chromium::*;
use crate::support::common::*;
use crate::support::firefox::*;
use serde_json::json;

#[test]
fn a_page_from_before_the_extension_has_its_console_read_from_the_first_read_on() {
    let Some(exe) = firefox_or_skip(
        "browser::eyes::before_extension::a_page_from_before_the_extension_has_its_console_read_from_the_first_read_on",
    ) else {
        return;
    };
    let _lock = machine_wide_lock();
    let pages = PageServer::pages();
    let d = daemon_in_scan_range(&[]);
    let url = pages.url("console-before.html");
    let (mut ff, page) = Firefox::launch_showing_first(&exe, &Options::default(), &url);
    ff.pair(&d);
    ff.allow_everywhere();
    let tab = listed_tab(&d, FIREFOX_WAIT, &url, "browser_console_messages");
    let tab = tab["ref"].as_str().unwrap().to_owned();
    let read = || {
        ctl_call(&d, &tab, "browser_console_messages", &json!({}))
            .unwrap_or_else(|e| panic!("browser_console_messages: {e}"))
    };
    // What was logged before there was anything to hear it is gone, and the read says nothing
    // wrong about it.
    let first = read();
    assert!(
        find(list(&first, "messages"), "text", "before the extension").is_none(),
        "{}",
        text(&first)
    );
    // Logged after that first read, in the top frame and in the frame.
    assert_eq!(
        ff.eval(&page, "document.getElementById('log').click(), window.n"),
        json!(1)
    );
    let r = wait_until(FIREFOX_WAIT, "both frames' lines", || {
        let r = read();
        let m = list(&r, "messages");
        (find(m, "text", "top 1").is_some() && find(m, "text", "frame 1").is_some()).then_some(r)
    });
    let m = list(&r, "messages");
    let top = find(m, "text", "top 1").unwrap();
    assert_eq!(top["level"], "log", "{top}");
    let framed = find(m, "text", "frame 1").unwrap();
    assert_eq!(framed["level"], "warn", "{framed}");
    assert!(
        framed["frameId"].as_i64().unwrap() > 0,
        "from the subframe: {framed}"
    );
    assert!(
        framed["url"]
            .as_str()
            .unwrap_or("")
            .ends_with("console-before-frame.html"),
        "where the frame logged it: {framed}"
    );
}
