//! Page events (`tabEvent` on the bridge): what a page did becomes a typed, sequenced event on
//! `browserctl events`; anything malformed or oversized is dropped without harm.

use crate::support::common::*;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread")]
async fn page_events_reach_browserctl_events_and_bad_ones_are_dropped() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::connect(&d, "s1", vec![tab(7, "Shop", vec![])]).await;
    d.wait_tabs("tab 7", |t| t.len() == 1);
    let since = d.ctl_json(&["status"])["lastEventSeq"]
        .as_u64()
        .unwrap_or(0)
        .to_string();

    let error = json!({"id": 3, "level": "error", "source": "exception",
        "text": "Uncaught TypeError: boom", "url": "https://example.com/7", "line": 12, "column": 5});
    let download = json!({"id": 1, "url": "https://example.com/r.csv", "state": "complete",
        "bytes": 42, "filename": "/tmp/r.csv"});
    let nav =
        json!({"url": "https://example.com/next", "transition": "link", "sameDocument": false});
    let event = |name: &str, tab_id: i64, data: Value| json!({"type": "tabEvent", "sessionId": "s1", "tabId": tab_id, "event": name, "data": data});
    ext.send(event("consoleError", 7, error.clone())).await;
    // Dropped: an unknown event, an unknown tab, data that is not an object, data too big, no tab.
    ext.send(event("pageExploded", 7, json!({}))).await;
    ext.send(event("navigated", 99, nav.clone())).await;
    ext.send(event("navigated", 7, json!("https://example.com/x")))
        .await;
    ext.send(event(
        "consoleError",
        7,
        json!({"text": "x".repeat(64 * 1024)}),
    ))
    .await;
    ext.send(json!({"type": "tabEvent", "sessionId": "s1", "event": "navigated", "data": {}}))
        .await;
    ext.send(event("downloadFinished", 7, download.clone()))
        .await;
    ext.send(event("navigated", 7, nav.clone())).await;

    let out = d.ctl(&[
        "events",
        "--since",
        &since,
        "--type",
        "consoleError,downloadFinished,navigated",
        "--count",
        "3",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("NDJSON"))
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["consoleError", "downloadFinished", "navigated"]);
    for (e, data) in events.iter().zip([&error, &download, &nav]) {
        assert_eq!(e["tab"], "b1:7", "{e}");
        assert_eq!(e["browser"], "b1", "{e}");
        assert_eq!(&e["data"], data, "{e}");
    }
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");

    // The bad ones were counted, and the connection and the registry are fine.
    let status = d.ctl_json(&["status"]);
    // Not an object, too big, no tabId.
    assert_eq!(status["badMessages"], 3, "{status}");
    assert_eq!(d.ctl_json(&["tabs"])["tabs"].as_array().unwrap().len(), 1);

    // The new types are known to the filter, and a typo is still refused.
    let out = d.ctl(&["events", "--type", "consoleErrors", "--count", "1"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("downloadFinished"),
        "{}",
        stderr(&out)
    );
}
