//! Where a call goes without --tab, and how long it may take (issue 18, items 4 and 5): the
//! default target rule depends on nothing but the tabs, a call's --timeout is its whole
//! budget, and the answer names the tab that gave it.

use crate::support::common::*;
use crate::support::harness::api;
use serde_json::{json, Value};
use std::time::Duration;

fn read_only(name: &str) -> Value {
    json!({"name": name, "annotations": {"readOnlyHint": true},
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}})
}

fn focused(id: i64, title: &str, tools: Vec<Value>) -> Value {
    let mut t = tab(id, title, tools);
    t["focused"] = json!(true);
    t
}

#[tokio::test(flavor = "multi_thread")]
async fn two_browsers_with_a_focused_tab_each_are_ambiguous() {
    let d = TestDaemon::start();
    let mut one =
        FakeExtension::connect(&d, "one", vec![focused(1, "A", vec![search_tool()])]).await;
    let mut two =
        FakeExtension::connect(&d, "two", vec![focused(1, "B", vec![search_tool()])]).await;
    d.wait_tabs("two tabs", |t| {
        t.len() == 2 && t.iter().all(|t| t["focused"] == true)
    });
    // Formerly the newer browser won silently; now it is the caller's choice.
    let out = d.ctl(&["--json", "call", "search", "--query", "x"]);
    assert_eq!(exit_code(&out), 5, "{}", stderr(&out));
    let e: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(e["error"]["code"], "AMBIGUOUS_TARGET");
    assert!(e["error"]["message"]
        .as_str()
        .unwrap()
        .contains("2 of them are focused"));
    let cands: Vec<&str> = e["error"]["details"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tab"].as_str().unwrap())
        .collect();
    assert_eq!(cands, ["b1:1", "b2:1"]);
    // --browser settles it, and the answer says which tab answered.
    let cli = call_async(&d, "search", &["--browser", "b2", "--query", "x"]);
    two.answer_call(json!("from two")).await;
    let out = cli.await.unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["tab"].as_str(), v["result"].as_str()),
        (Some("b2:1"), Some("from two"))
    );
    // open without --browser: which one? Ambiguous too.
    let out = d.ctl(&["--json", "open", "https://example.com/"]);
    assert_eq!(exit_code(&out), 5, "{}", stderr(&out));
    let e: Value = serde_json::from_slice(&out.stderr).unwrap();
    let candidates: Vec<&str> = e["error"]["details"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["browser"].as_str().unwrap())
        .collect();
    assert_eq!(candidates, ["b1", "b2"], "{e}");
    // One browser left: the rule picks its tab, and open its browser.
    drop(two);
    d.wait_tabs("one tab", |t| t.len() == 1);
    let cli = ctl_async(&d, &["--json", "call", "search", "--query", "x"]);
    one.answer_call(json!("from one")).await;
    let v: Value = serde_json::from_slice(&cli.await.unwrap().stdout).unwrap();
    assert_eq!(v["tab"], "b1:1");
}

#[tokio::test(flavor = "multi_thread")]
async fn one_browser_the_focused_tab_among_several_wins_none_focused_is_ambiguous() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::connect(
        &d,
        "s",
        vec![
            tab(1, "A", vec![search_tool()]),
            focused(2, "B", vec![search_tool()]),
            tab(3, "C", vec![tool("peek")]),
        ],
    )
    .await;
    d.wait_tabs("three tabs", |t| t.len() == 3);
    let cli = ctl_async(&d, &["--json", "call", "search", "--query", "x"]);
    let call = ext.answer_call(json!("ok")).await;
    assert_eq!(call["tabId"], 2);
    let v: Value = serde_json::from_slice(&cli.await.unwrap().stdout).unwrap();
    assert_eq!(v["tab"], "b1:2");
    // The only tab with `peek` answers, focused or not.
    let cli = ctl_async(&d, &["call", "peek", "-v"]);
    let call = ext.answer_call(json!("peeked")).await;
    assert_eq!(call["tabId"], 3);
    let out = cli.await.unwrap();
    assert!(
        stderr(&out).contains("b1:3 answered `peek`"),
        "{}",
        stderr(&out)
    );
    // Focus moves to the tab without `search`: two candidates, none focused.
    ext.send(json!({"type": "tabFocused", "sessionId": "s", "tabId": 3}))
        .await;
    d.wait_tabs("tab 3 focused", |t| {
        t.iter().any(|t| t["id"] == 3 && t["focused"] == true)
    });
    let out = d.ctl(&["--json", "call", "search", "--query", "x"]);
    assert_eq!(exit_code(&out), 5, "{}", stderr(&out));
    let e: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert!(e["error"]["message"]
        .as_str()
        .unwrap()
        .contains("none of them is focused"));
}

/// `call slow --timeout 1` used to run 6 s and end in MAX_RETRIES_EXCEEDED: the budget is
/// now the whole call's.
#[tokio::test(flavor = "multi_thread")]
async fn timeout_is_the_whole_call_s_budget() {
    let d = TestDaemon::builder()
        .args(&["--backoff-base", "100ms", "--backoff-max", "100ms"])
        .start();
    let mut ext = FakeExtension::single(&d, tab(1, "T", vec![read_only("peek")])).await;
    // One attempt of 1 s, then a retry that gets only what is left of 1.5 s: two attempts,
    // where retries alone would allow six.
    let cli = call_async(
        &d,
        "peek",
        &[
            "--timeout",
            "1500ms",
            "--attempt-timeout",
            "1s",
            "--retries",
            "5",
        ],
    );
    ext.expect("callTool").await;
    ext.expect("callTool").await;
    let out = cli.await.unwrap();
    assert_eq!(exit_code(&out), 8, "{}", stderr(&out));
    let e: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(e["error"]["code"], "MESSAGE_TIMEOUT");
    let message = e["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("time budget of 1500 ms (2 attempts)"),
        "{message}"
    );
    assert_eq!(e["error"]["details"]["budgetMs"], 1500);
    assert!(
        ext.try_recv(Duration::from_millis(300))
            .await
            .is_none_or(|m| m["type"] != "callTool"),
        "no third attempt"
    );

    // The same through the control API, and a budget shorter than one attempt.
    let body = json!({"tool": "peek", "timeoutMs": 300, "retries": 5}).to_string();
    let (code, v) = api(&d, "POST", "/v1/call", Some(&body)).await;
    assert_eq!(code, 504, "{v}");
    assert_eq!(v["error"]["code"], "MESSAGE_TIMEOUT");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("(1 attempt)"),
        "{v}"
    );
    // attemptTimeoutMs is checked like timeoutMs, in the API's own words.
    let body = json!({"tool": "peek", "attemptTimeoutMs": 0}).to_string();
    let (code, v) = api(&d, "POST", "/v1/call", Some(&body)).await;
    assert_eq!(code, 400, "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("attemptTimeoutMs"));
}

/// A retry whose backoff would not fit in the budget is not tried: the call ends with the
/// last error at once instead of overrunning.
#[tokio::test(flavor = "multi_thread")]
async fn a_retry_that_cannot_fit_is_not_tried() {
    let d = TestDaemon::builder()
        .args(&["--backoff-base", "5s", "--backoff-max", "5s"])
        .start();
    let mut ext = FakeExtension::single(&d, tab(1, "T", vec![tool("submit")])).await;
    let cli = ctl_async(&d, &["--json", "call", "submit", "--timeout", "2s"]);
    let c = ext.expect("callTool").await;
    // A transient failure, worth a retry, whose 5 s backoff does not fit in 2 s.
    ext.send(json!({"type": "toolResult", "callId": c["callId"],
        "error": "Network error: connection reset"}))
        .await;
    let out = cli.await.unwrap();
    assert_eq!(exit_code(&out), 7, "{}", stderr(&out));
    let e: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no time left in the call's 2000 ms budget"),
        "{e}"
    );
    assert!(ext
        .try_recv(Duration::from_millis(200))
        .await
        .is_none_or(|m| m["type"] != "callTool"));
}
