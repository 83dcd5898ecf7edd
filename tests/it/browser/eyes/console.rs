//! The console: levels, call sites, uncaught errors, rejections, frames, filters, cursors, page
//! events; and a flood of 10,000 lines kept within its budget.

use crate::browser::drives::*;
use crate::support::chromium::*;
use serde_json::json;
use std::time::Instant;

/// The extension's default character budget for console and network answers (ring.js).
const BUDGET: usize = 20_000;

pub(super) fn console<E: DrivesTab>(eyes: &E, pages: &PageServer) {
    let since = eyes.last_seq();
    eyes.navigate(&pages.url("eyes-console.html"));
    let page = pages.url("eyes-console.html");
    // Straight after the load, every frame's messages are in the answer (the call collects
    // what the frames have not sent yet).
    let r = eyes.until("the frame's message too", || {
        let r = eyes.call("browser_console_messages", json!({}));
        find(list(&r, "messages"), "text", "from the frame")
            .is_some()
            .then_some(r)
    });
    let m = list(&r, "messages");
    let at = |needle: &str| {
        find(m, "text", needle).unwrap_or_else(|| panic!("no {needle:?} in {}", text(&r)))
    };
    for (needle, level) in [
        ("early debug 1", "debug"),
        ("early log {a: 1, b: [1, 2]}", "log"),
        ("early info", "info"),
        ("early warn", "warn"),
        ("early error Error: bad thing", "error"),
    ] {
        let msg = at(needle);
        assert_eq!(msg["level"], level, "{msg}");
        assert_eq!(msg["source"], "console", "{msg}");
        assert_eq!(msg["url"], page.as_str(), "the calling script: {msg}");
        assert!(msg["time"].as_u64().unwrap() > 1_600_000_000_000, "{msg}");
    }
    assert_eq!(at("early debug 1")["line"], 4, "the line that logged it");
    let thrown = at("thrown at load");
    assert_eq!(thrown["source"], "exception", "{thrown}");
    assert_eq!(thrown["level"], "error");
    assert_eq!(thrown["text"], "Uncaught TypeError: thrown at load");
    assert_eq!(thrown["url"], page.as_str());
    assert_eq!(thrown["line"], 12, "{thrown}");
    let rejected = at("nobody caught me");
    assert_eq!(rejected["source"], "rejection", "{rejected}");
    assert!(
        rejected["text"]
            .as_str()
            .unwrap()
            .starts_with("Uncaught (in promise) Error: nobody caught me"),
        "{rejected}"
    );
    let framed = at("from the frame");
    assert_eq!(framed["level"], "warn");
    assert!(framed["frameId"].as_i64().unwrap() > 0, "{framed}");
    let t = text(&r);
    assert!(
        t.starts_with("Console of tab ") && t.contains("[error]") && t.contains(&page),
        "{t}"
    );

    // Filters: a level and up, a text.
    let errors = eyes.call("browser_console_messages", json!({"level": "error"}));
    let em = list(&errors, "messages");
    assert_eq!(
        em.len(),
        3,
        "console.error, the throw, the rejection: {em:?}"
    );
    assert!(em.iter().all(|m| m["level"] == "error"));
    let warn = eyes.call("browser_console_messages", json!({"text": "EARLY WARN"}));
    assert_eq!(list(&warn, "messages").len(), 1, "{}", text(&warn));

    // A cursor: only what came after it.
    let cursor = r["structuredContent"]["cursor"].as_u64().unwrap();
    eyes.call("browser_click", json!({"selector": "#more"}));
    let after = eyes.until("the click's line", || {
        let a = eyes.call("browser_console_messages", json!({ "since": cursor }));
        (!list(&a, "messages").is_empty()).then_some(a)
    });
    let am = list(&after, "messages");
    assert_eq!(am.len(), 1, "{}", text(&after));
    assert_eq!(am[0]["text"], "clicked 1");
    assert!(am[0]["id"].as_u64().unwrap() > cursor);

    // The navigation and then the page's errors are events too, with sequence numbers.
    let nav = eyes.events(&since, "navigated", 1).remove(0);
    assert_eq!(nav["data"]["url"], page.as_str(), "{nav}");
    assert_eq!(nav["data"]["sameDocument"], false);
    assert_eq!(nav["data"]["transition"], "link", "{nav}");
    let events = eyes.events(&nav["seq"].to_string(), "consoleError", 3);
    let errors: Vec<&str> = events
        .iter()
        .map(|e| {
            assert_eq!(e["data"]["level"], "error", "{e}");
            assert!(e["data"]["time"].as_u64().is_some(), "{e}");
            e["data"]["text"].as_str().unwrap()
        })
        .collect();
    assert!(
        errors.iter().any(|t| t.contains("thrown at load"))
            && errors.iter().any(|t| t.contains("nobody caught me"))
            && errors.iter().any(|t| t.contains("bad thing")),
        "{errors:?}"
    );
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    eyes.step("console");
}

/// A subframe that logs and moves on before the agent reads the console: its lines are still
/// in the answer (its first document's relay came when it started in a driven tab, and sent
/// them on within ~150 ms; without it they would wait in that document and go with it).
pub(super) fn moving_frame<E: DrivesTab>(eyes: &E, pages: &PageServer) {
    eyes.navigate(&pages.url("eyes-console-moving.html"));
    std::thread::sleep(std::time::Duration::from_secs(1));
    eyes.call("browser_click", json!({"selector": "#leave"}));
    let r = eyes.until("the frame's second document's line", || {
        let r = eyes.call("browser_console_messages", json!({}));
        find(list(&r, "messages"), "text", "frame second document")
            .is_some()
            .then_some(r)
    });
    let first = find(list(&r, "messages"), "text", "frame first document")
        .unwrap_or_else(|| panic!("the frame's first document's line: {}", text(&r)));
    assert!(first["frameId"].as_i64().unwrap() > 0, "{first}");
    assert!(
        first["url"]
            .as_str()
            .unwrap_or("")
            .ends_with("eyes-console-moving-frame.html"),
        "{first}"
    );
    eyes.step("a frame that moved on");
}

pub(super) fn flood<E: DrivesTab>(eyes: &E, pages: &PageServer) {
    eyes.navigate(&pages.url("eyes-flood.html"));
    eyes.call(
        "browser_wait_for",
        json!({"selector": "#state", "text": "flooded", "timeout": 20000}),
    );
    // The error survives the flood: errors have a ring of their own.
    eyes.until("the flood to arrive", || {
        let r = eyes.call("browser_console_messages", json!({"level": "error"}));
        find(list(&r, "messages"), "text", "the one error").map(|_| ())
    });
    let start = Instant::now();
    let r = eyes.call("browser_console_messages", json!({}));
    let took = start.elapsed();
    let t = text(&r);
    assert!(t.len() <= BUDGET, "{} characters", t.len());
    assert!(
        t.contains("… truncated: ") && t.contains("Ask again with since="),
        "the marker says how to get more: …{}",
        &t[t.len().saturating_sub(600)..]
    );
    assert!(r["structuredContent"]["more"].as_u64().unwrap() > 0);
    assert!(
        r["structuredContent"]["dropped"].as_u64().unwrap() >= 8_000,
        "the ring keeps the newest: {}",
        r["structuredContent"]
    );
    // The figure the issue asks about, for the report (timing asserts live in the benchmark).
    eyes.step(&format!(
        "flood: 10,000 lines → {} characters in {took:?} (browserctl round trip)",
        t.len()
    ));
}
