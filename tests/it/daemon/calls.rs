//! Seed 000 call semantics through the real daemon: retries, backoff, timeouts, validation,
//! reconnect routing, and browserctl's helpers for scripts (`call --help`, `wait`).

use crate::support::common::*;
use browser_mcp::ctl::client::Client;
use browser_mcp::protocol::control::CallRequest;
use browser_mcp::ErrorCode;
use serde_json::{json, Value};
use std::time::Duration;

fn read_only(name: &str) -> Value {
    json!({"name": name, "annotations": {"readOnlyHint": true},
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}})
}

fn err_json(out: &std::process::Output) -> Value {
    serde_json::from_str(&stderr(out)).unwrap_or_else(|_| panic!("stderr: {}", stderr(out)))
}

const FAST_BACKOFF: &[&str] = &[
    "--backoff-base",
    "50ms",
    "--backoff-multiplier",
    "2",
    "--backoff-max",
    "120ms",
];

#[tokio::test(flavor = "multi_thread")]
async fn read_only_tool_is_retried_with_growing_clamped_backoff() {
    let d = TestDaemon::builder().args(FAST_BACKOFF).start();
    let mut ext = FakeExtension::single(&d, tab(1, "T", vec![read_only("peek")])).await;
    let cli = call_async(
        &d,
        "peek",
        &["--attempt-timeout", "200ms", "--retries", "3"],
    );
    let mut ids = Vec::new();
    for _ in 0..4 {
        ids.push(
            ext.expect("callTool").await["callId"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let out = cli.await.unwrap();
    assert_eq!(exit_code(&out), 9, "{}", stderr(&out));
    let e = err_json(&out);
    assert_eq!(e["error"]["code"], "MAX_RETRIES_EXCEEDED");
    assert_eq!(e["error"]["details"]["attempts"], 4);
    assert_eq!(
        e["error"]["details"]["lastError"]["code"],
        "MESSAGE_TIMEOUT"
    );
    let history = e["error"]["details"]["history"].as_array().unwrap();
    let delays: Vec<u64> = history
        .iter()
        .map(|h| h["delayMs"].as_u64().unwrap())
        .collect();
    assert_eq!(
        delays,
        vec![50, 100, 120, 0],
        "base × multiplier^attempt, clamped"
    );
    assert!(history.iter().all(|h| h["code"] == "MESSAGE_TIMEOUT"));
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "every attempt has its own message id");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plain_tool_is_not_retried_after_a_timeout_unless_asked() {
    let d = TestDaemon::builder().args(FAST_BACKOFF).start();
    let mut ext = FakeExtension::single(&d, tab(1, "T", vec![tool("click")])).await;
    let cli = call_async(
        &d,
        "click",
        &["--attempt-timeout", "150ms", "--retries", "3"],
    );
    ext.expect("callTool").await;
    let out = cli.await.unwrap();
    assert_eq!(err_json(&out)["error"]["code"], "MESSAGE_TIMEOUT");
    let again = ext.try_recv(Duration::from_millis(400)).await;
    assert!(
        again.as_ref().is_none_or(|m| m["type"] != "callTool"),
        "no second attempt: {again:?}"
    );

    let cli = ctl_async(
        &d,
        &[
            "call",
            "click",
            "--attempt-timeout",
            "150ms",
            "--retries",
            "1",
            "--retry-on-timeout",
        ],
    );
    ext.expect("callTool").await;
    ext.answer_call(json!("second time lucky")).await;
    let out = cli.await.unwrap();
    assert_eq!(stdout(&out).trim(), "second time lucky", "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn transient_tool_errors_are_retried_and_unknown_ones_are_not() {
    let d = TestDaemon::builder().args(FAST_BACKOFF).start();
    let mut ext = FakeExtension::single(&d, tab(1, "T", vec![tool("submit")])).await;
    let cli = ctl_async(&d, &["--json", "call", "submit"]);
    let c = ext.expect("callTool").await;
    ext.send(json!({"type": "toolResult", "callId": c["callId"], "error": "Network error: connection reset"})).await;
    ext.answer_call(json!("ok")).await;
    let out = cli.await.unwrap();
    let answer: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", stderr(&out)));
    assert_eq!(
        (answer["result"].as_str(), answer["attempts"].as_u64()),
        (Some("ok"), Some(2))
    );

    let cli = ctl_async(&d, &["--json", "call", "submit"]);
    let c = ext.expect("callTool").await;
    ext.send(
        json!({"type": "toolResult", "callId": c["callId"], "error": "something odd happened"}),
    )
    .await;
    let out = cli.await.unwrap();
    let e = err_json(&out);
    assert_eq!(e["error"]["code"], "TOOL_ERROR");
    assert_eq!(e["error"]["retryable"], false);
    assert!(ext
        .try_recv(Duration::from_millis(300))
        .await
        .is_none_or(|m| m["type"] != "callTool"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_after_reconnect_goes_to_the_new_connection() {
    let d = TestDaemon::builder().args(FAST_BACKOFF).start();
    let mut first =
        FakeExtension::connect(&d, "same", vec![tab(3, "T", vec![read_only("peek")])]).await;
    d.wait_tabs("tab", |t| t.len() == 1);
    let cli = ctl_async(&d, &["--json", "call", "peek", "--timeout", "5s"]);
    first.expect("callTool").await;
    drop(first); // the browser's connection breaks mid-call
    let mut second =
        FakeExtension::connect(&d, "same", vec![tab(3, "T", vec![read_only("peek")])]).await;
    let c = second.answer_call(json!("from the new connection")).await;
    assert_eq!(c["tabId"], 3);
    let out = cli.await.unwrap();
    let answer: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", stderr(&out)));
    assert_eq!(
        answer["result"],
        "from the new connection",
        "{}",
        stderr(&out)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn arguments_are_validated_against_the_schema_before_sending() {
    let d = TestDaemon::start();
    let schema_tool = json!({"name": "find", "inputSchema": {"type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1},
                       "mode": {"type": "string", "enum": ["fast", "full"]}},
        "required": ["query"], "additionalProperties": false}});
    let mut ext = FakeExtension::connect(&d, "s", vec![tab(1, "T", vec![schema_tool])]).await;
    d.wait_tabs("tab", |t| t.len() == 1);
    for (args, path) in [
        (vec!["--limit", "3"], "/"),
        (vec!["--query", "x", "--limit", "0"], "/limit"),
        (vec!["--query", "x", "--mode", "slow"], "/mode"),
    ] {
        let mut argv = vec!["--json", "call", "find"];
        argv.extend(args);
        let out = d.ctl(&argv);
        assert_eq!(exit_code(&out), 6, "{argv:?}: {}", stderr(&out));
        let e = err_json(&out);
        assert_eq!(e["error"]["code"], "INVALID_ARGUMENTS");
        assert_eq!(e["error"]["details"]["errors"][0]["path"], path, "{e}");
    }
    let out = d.ctl(&["call", "find", "--query", "x", "--limit", "many"]);
    assert_eq!(exit_code(&out), 6);
    assert!(
        stderr(&out).contains("--limit: `many` is not an integer"),
        "{}",
        stderr(&out)
    );
    let out = d.ctl(&["call", "find", "--bogus", "1"]);
    assert!(
        stderr(&out).contains("--query"),
        "lists the known parameters: {}",
        stderr(&out)
    );
    assert!(
        ext.try_recv(Duration::from_millis(200)).await.is_none(),
        "nothing reached the tab"
    );

    let cli = ctl_async(
        &d,
        &[
            "call", "find", "--query", "x", "--limit", "2", "--mode", "fast",
        ],
    );
    let c = ext.answer_call(json!("fine")).await;
    assert_eq!(c["args"], json!({"query": "x", "limit": 2, "mode": "fast"}));
    assert!(cli.await.unwrap().status.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn not_found_codes() {
    let d = TestDaemon::start();
    let _ext = FakeExtension::search_tab(&d).await;
    let out = d.ctl(&["--json", "call", "search", "--tab", "b1:99", "--query", "x"]);
    assert_eq!(
        (exit_code(&out), err_json(&out)["error"]["code"].clone()),
        (4, json!("TAB_NOT_FOUND"))
    );
    let out = d.ctl(&["--json", "call", "nothing"]);
    assert_eq!(
        (exit_code(&out), err_json(&out)["error"]["code"].clone()),
        (4, json!("TOOL_NOT_FOUND"))
    );
    assert_eq!(
        err_json(&out)["error"]["details"]["available"],
        json!(["search"])
    );
    let out = d.ctl(&[
        "--json",
        "call",
        "search",
        "--browser",
        "b7",
        "--query",
        "x",
    ]);
    assert_eq!(err_json(&out)["error"]["code"], "NO_BROWSER");
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_help_is_generated_from_the_live_schema() {
    let d = TestDaemon::start();
    let t = json!({"name": "find", "title": "Find things", "description": "Finds things on the page.",
        "annotations": {"readOnlyHint": true},
        "inputSchema": {"type": "object", "properties": {
            "query": {"type": "string", "description": "What to look for"},
            "limit": {"type": "integer", "default": 10},
            "mode": {"type": "string", "enum": ["fast", "full"]},
            "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["query"]}});
    let _ext = FakeExtension::connect(&d, "s", vec![tab(1, "T", vec![t])]).await;
    d.wait_tabs("tab", |t| t.len() == 1);
    let out = d.ctl(&["call", "find", "--help"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let help = stdout(&out);
    for needle in [
        "Finds things on the page.",
        "Find things",
        "--query <string>",
        "(required) What to look for",
        "--limit <integer>",
        "[default: 10]",
        "[one of: fast, full]",
        "--tags <string, repeatable>",
        "readOnlyHint=true",
        "b1:1",
    ] {
        assert!(help.contains(needle), "missing {needle:?} in:\n{help}");
    }
    let out = d.ctl(&["call", "--help"]);
    assert!(
        stdout(&out).contains("--retry-on-timeout"),
        "{}",
        stdout(&out)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_returns_when_a_tool_or_tab_appears() {
    let d = TestDaemon::start();
    let waiter = ctl_async(&d, &["wait", "--tool", "search", "--timeout", "10s"]);
    let url_waiter = ctl_async(
        &d,
        &[
            "wait",
            "--tab-url",
            "https://example.com/*",
            "--timeout",
            "10s",
        ],
    );
    // Ready when the daemon has the waiters' connections (and this probe's): the tab then
    // most likely appears while they wait. Either way `wait` must find it, since it opens its
    // event stream before it first looks.
    wait_until(Duration::from_secs(10), "the waiters to connect", || {
        (d.status()["controlConnections"].as_u64() >= Some(3)).then_some(())
    });
    let mut ext = FakeExtension::connect(&d, "s", vec![tab(1, "T", vec![])]).await;
    let out = url_waiter.await.unwrap();
    assert_eq!(stdout(&out).trim(), "b1:1", "{}", stderr(&out));
    ext.send(json!({"type": "toolsChanged", "tabId": 1, "tools": [search_tool()]}))
        .await;
    let out = waiter.await.unwrap();
    assert_eq!(stdout(&out).trim(), "b1:1", "{}", stderr(&out));
    let out = d.ctl(&["wait", "--tool", "never", "--timeout", "200ms"]);
    assert_eq!(exit_code(&out), 8, "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn thousands_of_late_answers_leave_no_pending_entries() {
    let d = TestDaemon::start();
    // A read-only tool, so that every call reaches the tab at once: an action would wait for
    // its turn there (issue 60), and most would time out before they were sent.
    let mut search = search_tool();
    search["annotations"] = json!({"readOnlyHint": true});
    let mut ext = FakeExtension::single(&d, tab(7, "Search", vec![search])).await;
    const N: usize = 2000;
    let client = std::sync::Arc::new(Client::new(&d.socket));
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..N {
        let client = client.clone();
        calls.spawn(async move {
            let req = CallRequest {
                tool: "search".into(),
                args: Some(
                    serde_json::value::to_raw_value(&json!({"query": i.to_string()})).unwrap(),
                ),
                timeout_ms: Some(300),
                retries: Some(0),
                ..Default::default()
            };
            client
                .json::<Value>(hyper::Method::POST, "/v1/call", Some(&req))
                .await
                .unwrap_err()
                .code
        });
    }
    let mut ids = Vec::new();
    while ids.len() < N {
        ids.push(ext.expect("callTool").await["callId"].clone());
    }
    while let Some(code) = calls.join_next().await {
        assert_eq!(code.unwrap(), ErrorCode::MessageTimeout);
    }
    for id in &ids {
        ext.send(json!({"type": "toolResult", "callId": id, "result": "too late"}))
            .await;
    }
    let s = wait_until(Duration::from_secs(20), "all late answers counted", || {
        let s = d.status();
        (s["lateResponses"].as_u64().unwrap() == N as u64).then_some(s)
    });
    assert_eq!(s["pendingCalls"], 0);
    assert_eq!(s["callsInFlight"], 0);
    assert_eq!(s["unknownResponses"], 0);
}
