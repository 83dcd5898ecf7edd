//! Network requests: statuses, failures, filters, paging, request bodies once asked for.

use crate::browser::drives::*;
use crate::support::chromium::*;
use serde_json::{json, Value};

pub(super) fn network<E: DrivesTab>(eyes: &E, pages: &PageServer) {
    let page = pages.url(&format!("eyes-network.html?dead={}", dead_port()));
    eyes.navigate(&page);
    eyes.call(
        "browser_wait_for",
        json!({"selector": "#state", "text": "done", "timeout": 20000}),
    );
    let r = eyes.until("the failed request to be reported", || {
        let r = eyes.call("browser_network_requests", json!({}));
        find(list(&r, "requests"), "url", "/refused")
            .is_some_and(|e| e["state"] == "failed")
            .then_some(r)
    });
    let reqs = list(&r, "requests");
    let doc = find(reqs, "url", "eyes-network.html").expect("the page itself");
    assert_eq!(
        (&doc["type"], &doc["status"], &doc["method"]),
        (&json!("main_frame"), &json!(200), &json!("GET"))
    );
    let ok = find(reqs, "url", "eyes-data.json").expect("the fetch");
    assert_eq!(ok["status"], 200, "{ok}");
    assert_eq!(ok["type"], "xmlhttprequest");
    assert_eq!(ok["state"], "done");
    assert_eq!(ok["size"], 21, "Content-Length of eyes-data.json: {ok}");
    assert!(ok["duration"].as_u64().is_some(), "{ok}");
    let missing = find(reqs, "url", "missing.json").expect("the 404");
    assert_eq!(missing["status"], 404, "{missing}");
    // Each browser names the failure its own way.
    let refused_error = if eyes.firefox() {
        "NS_ERROR_CONNECTION_REFUSED"
    } else {
        "net::ERR_CONNECTION_REFUSED"
    };
    let refused = find(reqs, "url", "/refused").unwrap();
    assert_eq!(refused["error"], refused_error, "{refused}");
    assert!(refused["status"].is_null(), "{refused}");
    assert!(
        find(reqs, "url", "eyes-console.html").is_none(),
        "only since this page loaded: {}",
        text(&r)
    );
    let t = text(&r);
    assert!(
        t.contains("404") && t.contains(&format!("failed {refused_error}")),
        "{t}"
    );

    // Filters: status, a class, failures, a URL pattern, a type (with its alias).
    let count = |args: Value| list(&eyes.call("browser_network_requests", args), "requests").len();
    assert_eq!(count(json!({"status": 404})), 1);
    assert_eq!(count(json!({"status": "4xx"})), 1);
    assert_eq!(count(json!({"status": "failed"})), 1);
    assert_eq!(count(json!({"status": "error"})), 2);
    assert_eq!(count(json!({"url": "*/missing.*"})), 1);
    assert_eq!(count(json!({"type": "fetch"})), 3);
    assert_eq!(count(json!({"type": ["main_frame", "xmlhttprequest"]})), 4);
    // Paging by cursor: one at a time, the marker says how to go on.
    let first = eyes.call("browser_network_requests", json!({"limit": 1}));
    assert_eq!(list(&first, "requests").len(), 1);
    let t = text(&first);
    let cursor = first["structuredContent"]["cursor"].as_u64().unwrap();
    assert!(
        t.contains("… truncated: 3 more requests not shown (the limit of 1)")
            && t.contains(&format!("since={cursor}")),
        "{t}"
    );
    let next = eyes.call(
        "browser_network_requests",
        json!({"since": cursor, "limit": 1}),
    );
    assert!(list(&next, "requests")[0]["id"].as_u64().unwrap() > cursor);

    // Request bodies, once asked for.
    let on = eyes.call("browser_network_requests", json!({"captureBodies": true}));
    assert!(
        text(&on).contains("request bodies are being recorded"),
        "{}",
        text(&on)
    );
    eyes.call("browser_click", json!({"selector": "#post"}));
    let posted = eyes.until("the POST", || {
        let r = eyes.call(
            "browser_network_requests",
            json!({"url": "eyes-data.json", "status": 200}),
        );
        list(&r, "requests")
            .iter()
            .find(|e| e["method"] == "POST" && e["state"] == "done")
            .cloned()
    });
    assert_eq!(posted["requestBody"], "item=leeks&n=2", "{posted}");
    assert!(
        ok.get("requestBody").is_none(),
        "no body recorded before it was asked for: {ok}"
    );
    eyes.call("browser_network_requests", json!({"captureBodies": false}));

    // Nothing of the console page's console shows here: "since the page loaded".
    let c = eyes.call("browser_console_messages", json!({}));
    assert!(
        find(list(&c, "messages"), "text", "early").is_none(),
        "{}",
        text(&c)
    );
    eyes.step("network");
}
