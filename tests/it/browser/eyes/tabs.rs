//! browser_tabs: list, open, select, close, and the memory a closed tab's logs held, freed.

use crate::browser::drives::*;
use crate::support::chromium::*;
use serde_json::{json, Value};

pub(super) fn tabs_and_memory<E: DrivesTab>(eyes: &E, pages: &PageServer) {
    let held = |r: &Value| -> Vec<i64> {
        r["structuredContent"]["held"]["tabIds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect()
    };
    let r = eyes.call("browser_tabs", json!({}));
    let me = list(&r, "tabs")
        .iter()
        .find(|t| t["current"] == true)
        .unwrap_or_else(|| panic!("this tab in {}", text(&r)))
        .clone();
    let my_id = me["id"].as_i64().unwrap();
    assert!(held(&r).contains(&my_id), "{}", r["structuredContent"]);

    let opened = eyes.call(
        "browser_tabs",
        json!({"action": "open", "url": pages.url("eyes-console.html"), "background": true}),
    );
    let other = opened["structuredContent"]["tab"]["id"].as_i64().unwrap();
    // Its console and requests are recorded…
    eyes.until("the new tab's logs to be held", || {
        held(&eyes.call("browser_tabs", json!({})))
            .contains(&other)
            .then_some(())
    });
    let other_ref = format!("{}:{other}", eyes.tab().split(':').next().unwrap());
    let theirs = eyes.until("the new tab's console", || {
        let out = eyes.daemon().ctl(&[
            "--json",
            "call",
            "browser_console_messages",
            "--tab",
            &other_ref,
        ]);
        let v: Value = serde_json::from_slice::<Value>(&out.stdout).ok()?["result"].clone();
        // All eight: five levels, the throw, the rejection, the frame's warning.
        (list(&v, "messages").len() == 8).then_some(v)
    });
    assert!(find(list(&theirs, "messages"), "text", "early warn").is_some());

    eyes.call(
        "browser_tabs",
        json!({"action": "select", "tabId": other_ref}),
    );
    let r = eyes.call("browser_tabs", json!({}));
    let active = |id: i64| {
        list(&r, "tabs")
            .iter()
            .any(|t| t["id"] == id && t["active"] == true)
    };
    assert!(active(other) && !active(my_id), "{}", text(&r));
    eyes.call("browser_tabs", json!({"action": "select", "tabId": my_id}));

    // …and freed when the tab closes.
    let count = |r: &Value, what: &str| r["structuredContent"]["held"][what].as_u64().unwrap();
    let before = eyes.call("browser_tabs", json!({}));
    eyes.call("browser_tabs", json!({"action": "close", "tabId": other}));
    let r = eyes.until("the closed tab's logs to be freed", || {
        let r = eyes.call("browser_tabs", json!({}));
        (!held(&r).contains(&other)).then_some(r)
    });
    assert!(
        !list(&r, "tabs").iter().any(|t| t["id"] == other),
        "{}",
        text(&r)
    );
    assert!(held(&r).contains(&my_id));
    // The closed tab's eight console messages and its requests went with it.
    assert_eq!(
        count(&before, "consoleMessages") - count(&r, "consoleMessages"),
        8,
        "{} → {}",
        before["structuredContent"]["held"],
        r["structuredContent"]["held"]
    );
    assert!(count(&r, "networkRequests") < count(&before, "networkRequests"));
    eyes.step("tabs and memory");
}
