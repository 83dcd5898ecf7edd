//! Every seed-001 message, both directions, through the real daemon.

use crate::support::common::*;
use futures_util::SinkExt;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn names(tabs: &[Value]) -> Vec<String> {
    tabs.iter()
        .map(|t| t["ref"].as_str().unwrap().to_owned())
        .collect()
}

/// `browserctl call browser_evaluate` on tab b1:7.
const EVALUATE_ON_7: [&str; 6] = [
    "call",
    "browser_evaluate",
    "--tab",
    "b1:7",
    "--expression",
    "1",
];

#[tokio::test(flavor = "multi_thread")]
async fn connected_snapshot_and_every_tab_event_reach_the_registry() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::connect(
        &d,
        "s1",
        vec![
            tab(1, "Example", vec![]),
            tab(2, "Other", vec![search_tool()]),
        ],
    )
    .await;
    let tabs = d.wait_tabs("two tabs", |t| t.len() == 2);
    assert_eq!(names(&tabs), vec!["b1:1", "b1:2"]);
    let browsers = d.ctl_json(&["browsers"]);
    assert_eq!(browsers["browsers"][0]["name"], "Chrome");
    assert_eq!(browsers["browsers"][0]["version"], "120.0.0.0");
    assert_eq!(browsers["browsers"][0]["sessionId"], "s1");

    ext.send(json!({"type": "tabCreated", "sessionId": "s1", "tab": tab(3, "New Tab", vec![])}))
        .await;
    d.wait_tabs("tab 3", |t| t.len() == 3);
    ext.send(json!({"type": "tabUpdated", "sessionId": "s1",
        "tab": {"id": 3, "title": "Updated Title", "url": "https://example.com/u", "tools": [tool("a")]}})).await;
    let tabs = d.wait_tabs("tab 3 updated", |t| {
        t.iter().any(|t| t["title"] == "Updated Title")
    });
    let t3 = tabs.iter().find(|t| t["id"] == 3).unwrap();
    assert_eq!(t3["url"], "https://example.com/u");
    assert_eq!(t3["tools"][0]["name"], "a");

    ext.send(json!({"type": "tabFocused", "sessionId": "s1", "tabId": 1, "tools": [tool("b")]}))
        .await;
    let tabs = d.wait_tabs("tab 1 focused", |t| {
        t.iter().any(|t| t["id"] == 1 && t["focused"] == true)
    });
    assert_eq!(tabs[0]["tools"][0]["name"], "b");

    ext.send(json!({"type": "toolsChanged", "sessionId": "s1", "tabId": 1, "tools": [search_tool(), tool("c")]})).await;
    let tools = wait_until(Duration::from_secs(5), "tools of tab 1", || {
        let v = d.ctl_json(&["tools", "--tab", "b1:1"]);
        (v["tools"].as_array().unwrap().len() == 2).then_some(v)
    });
    assert_eq!(tools["tools"][0]["name"], "search");
    assert_eq!(tools["tools"][0]["inputSchema"]["required"][0], "query");
    assert_eq!(tools["tools"][0]["tab"], "b1:1");

    ext.send(json!({"type": "tabClosed", "sessionId": "s1", "tabId": 2}))
        .await;
    let tabs = d.wait_tabs("tab 2 gone", |t| t.len() == 2);
    assert_eq!(names(&tabs), vec!["b1:1", "b1:3"]);

    // ping → pong
    ext.send(json!({"type": "ping"})).await;
    assert_eq!(ext.expect("pong").await, json!({"type": "pong"}));

    // The extension says goodbye: its tabs vanish.
    ext.send(json!({"type": "disconnected", "sessionId": "s1"}))
        .await;
    d.wait_tabs("no tabs", |t| t.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn call_search_query_test_returns_the_scripted_result() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::search_tab(&d).await;
    let cli = ctl_async(&d, &["call", "search", "--query", "test"]);
    let call = ext.answer_call(json!({"data": "found 3 results"})).await;
    assert_eq!(call["toolName"], "search");
    assert_eq!(call["tabId"], 7);
    assert_eq!(call["args"], json!({"query": "test"}));
    assert_eq!(call["sessionId"], "s1");
    assert!(call["callId"].as_str().unwrap().starts_with("call_"));
    let out = cli.await.unwrap();
    assert_eq!(exit_code(&out), 0, "{}", stderr(&out));
    let printed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(printed, json!({"data": "found 3 results"}));

    // Text content prints as text; --json prints the whole answer, result and tab.
    let cli = ctl_async(&d, &["call", "search", "--query", "x"]);
    ext.answer_call(json!({"content": [{"type": "text", "text": "hello"}]}))
        .await;
    assert_eq!(stdout(&cli.await.unwrap()), "hello\n");
    let cli = ctl_async(
        &d,
        &["--json", "call", "search", "--args", r#"{"query":"y"}"#],
    );
    let call = ext.answer_call(json!([1, 2])).await;
    assert_eq!(call["args"], json!({"query": "y"}));
    let answer: Value = serde_json::from_slice(&cli.await.unwrap().stdout).unwrap();
    assert_eq!(
        (answer["result"].clone(), answer["tab"].clone()),
        (json!([1, 2]), json!("b1:7"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_errors_come_back_typed() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::search_tab(&d).await;
    let cli = ctl_async(&d, &["call", "search", "--query", "q"]);
    let call = ext.expect("callTool").await;
    ext.send(
        json!({"type": "toolResult", "callId": call["callId"], "result": null,
        "error": "Tool execution failed: reason"}),
    )
    .await;
    let out = cli.await.unwrap();
    fails(&out, 7, "TOOL_ERROR: Tool execution failed: reason");
    assert!(stdout(&out).is_empty());

    let cli = ctl_async(&d, &["--json", "call", "search", "--query", "q"]);
    let call = ext.expect("callTool").await;
    ext.send(json!({"type": "toolResult", "callId": call["callId"],
        "error": {"code": "ELEMENT_NOT_FOUND", "message": "No element matches selector: #x"}}))
        .await;
    let out = cli.await.unwrap();
    assert_eq!(exit_code(&out), 7);
    let e: Value = serde_json::from_str(&stderr(&out)).unwrap();
    assert_eq!(e["error"]["code"], "TOOL_ERROR");
    assert_eq!(e["error"]["retryable"], false);
    assert_eq!(e["error"]["details"]["toolCode"], "ELEMENT_NOT_FOUND");
}

/// The hands' own failures (issue 57) keep their codes and exit codes: a script tells a covered
/// element (nothing done) from input the person stopped halfway (the page saw part of it).
#[tokio::test(flavor = "multi_thread")]
async fn the_hands_codes_reach_scripts_as_they_are() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::search_tab(&d).await;
    for (code, exit) in [("ELEMENT_COVERED", 19), ("INPUT_CANCELLED", 26)] {
        let cli = ctl_async(&d, &["--json", "call", "search", "--query", "q"]);
        let call = ext.expect("callTool").await;
        ext.send(json!({"type": "toolResult", "callId": call["callId"],
            "error": {"code": code, "message": "what happened"}}))
            .await;
        let out = cli.await.unwrap();
        assert_eq!(exit_code(&out), exit, "{code}: {}", stderr(&out));
        let e: Value = serde_json::from_str(&stderr(&out)).unwrap();
        assert_eq!(e["error"]["code"], code, "{e}");
        assert_eq!(e["error"]["message"], "what happened", "{e}");
        assert_eq!(e["error"]["retryable"], false, "{e}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn open_close_and_discover_round_trip() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::connect(&d, "s1", vec![tab(1, "T", vec![])]).await;
    d.wait_tabs("tab", |t| t.len() == 1);

    let cli = ctl_async(&d, &["open", "https://example.com/new", "--focus"]);
    let open = ext.expect("openTab").await;
    assert_eq!(open["url"], "https://example.com/new");
    assert_eq!(open["focus"], true);
    // An unrelated tab event first: the daemon must wait for its own requestId.
    ext.send(json!({"type": "tabCreated", "tab": tab(40, "Other", vec![])}))
        .await;
    ext.send(json!({"type": "tabCreated", "tab": tab(41, "New", vec![]), "requestId": open["requestId"]})).await;
    let out = cli.await.unwrap();
    assert_eq!(stdout(&out).trim(), "b1:41", "{}", stderr(&out));

    let cli = ctl_async(&d, &["close", "b1:41"]);
    let close = ext.expect("closeTab").await;
    assert_eq!(close["tabId"], 41);
    ext.send(json!({"type": "tabClosed", "tabId": 41})).await;
    let out = cli.await.unwrap();
    assert_eq!(stdout(&out).trim(), "closed b1:41", "{}", stderr(&out));

    // A close the browser refuses (a tab of a site the user turned off) fails at once, with
    // the browser's reason, and the tab stays.
    let cli = ctl_async(&d, &["--json", "close", "b1:40"]);
    let close = ext.expect("closeTab").await;
    assert!(close["requestId"].is_string(), "{close}");
    let started = std::time::Instant::now();
    ext.send(json!({"type": "error", "requestId": close["requestId"],
        "error": {"code": "SITE_DISABLED", "message": "tab 40 was not closed: browser-mcp is turned off for https://bank.test"}}))
        .await;
    let out = cli.await.unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(exit_code(&out), 7, "{}", stderr(&out));
    let e: Value = serde_json::from_str(&stderr(&out)).unwrap();
    assert_eq!(e["error"]["details"]["toolCode"], "SITE_DISABLED", "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("turned off"),
        "{e}"
    );
    d.wait_tabs("the refused tab to stay", |t| {
        t.iter().any(|t| t["ref"] == "b1:40")
    });

    let cli = ctl_async(&d, &["--json", "discover", "1"]);
    let disc = ext.expect("discoverTools").await;
    assert_eq!(disc["tabId"], 1);
    ext.send(json!({"type": "toolsDiscovered", "callId": disc["callId"], "tabId": 1, "tools": [search_tool()]})).await;
    let out = cli.await.unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tools"][0]["name"], "search");
    let tools = d.ctl_json(&["tools", "--tab", "b1:1"]);
    assert_eq!(
        tools["tools"][0]["name"], "search",
        "discovered tools land in the registry"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_browsers_with_clashing_tab_ids() {
    let d = TestDaemon::start();
    let mut a = FakeExtension::connect(&d, "sa", vec![tab(1, "A1", vec![search_tool()])]).await;
    let mut b = FakeExtension::connect(&d, "sb", vec![tab(1, "B1", vec![search_tool()])]).await;
    let tabs = d.wait_tabs("two tabs", |t| t.len() == 2);
    assert_eq!(names(&tabs), vec!["b1:1", "b2:1"]);

    let out = d.ctl(&["call", "search", "--query", "q"]);
    assert_eq!(exit_code(&out), 5, "{}", stderr(&out));
    assert!(stderr(&out).contains("AMBIGUOUS_TARGET"));
    assert!(stderr(&out).contains("b1:1") && stderr(&out).contains("b2:1"));
    let out = d.ctl(&["close", "1"]);
    assert_eq!(
        exit_code(&out),
        5,
        "a bare tab id shared by two browsers is ambiguous"
    );

    let cli = ctl_async(&d, &["call", "search", "--tab", "b2:1", "--query", "q"]);
    b.answer_call(json!("from b")).await;
    assert_eq!(stdout(&cli.await.unwrap()).trim(), "from b");
    // Focus decides when no tab is named.
    a.send(json!({"type": "tabFocused", "tabId": 1})).await;
    d.wait_tabs("focus", |t| t.iter().any(|t| t["focused"] == true));
    let cli = ctl_async(&d, &["call", "search", "--query", "q"]);
    a.answer_call(json!("from a")).await;
    assert_eq!(stdout(&cli.await.unwrap()).trim(), "from a");
    let out = d.ctl(&["tabs", "--browser", "b2"]);
    assert!(stdout(&out).contains("B1") && !stdout(&out).contains("A1"));
}

/// `browserctl --json call search --query q --timeout TIMEOUT`, running.
fn search_within(d: &TestDaemon, timeout: &str) -> tokio::task::JoinHandle<std::process::Output> {
    let args = [
        "--json",
        "call",
        "search",
        "--query",
        "q",
        "--timeout",
        timeout,
    ];
    ctl_async(d, &args)
}

#[tokio::test(flavor = "multi_thread")]
async fn disconnect_mid_call_fails_fast_with_websocket_error() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::search_tab(&d).await;
    let cli = search_within(&d, "60s");
    ext.expect("callTool").await;
    let dropped = Instant::now();
    drop(ext);
    let out = cli.await.unwrap();
    let took = dropped.elapsed();
    assert_eq!(exit_code(&out), 9, "{}", stderr(&out));
    let e: Value = serde_json::from_str(&stderr(&out)).unwrap();
    assert_eq!(e["error"]["code"], "WEBSOCKET_ERROR");
    assert_eq!(e["error"]["retryable"], true);
    // Far below the 60 s timeout: the call failed when the socket did.
    assert!(took < Duration::from_secs(10), "took {took:?}");
    d.wait_tabs("tabs gone", |t| t.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn silence_gives_message_timeout_and_late_answers_are_dropped() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::search_tab(&d).await;
    let cli = search_within(&d, "300ms");
    let call = ext.expect("callTool").await;
    let out = cli.await.unwrap();
    assert_eq!(exit_code(&out), 8, "{}", stderr(&out));
    let e: Value = serde_json::from_str(&stderr(&out)).unwrap();
    assert_eq!(e["error"]["code"], "MESSAGE_TIMEOUT");
    // A tool without read-only/idempotent hints is not retried after a timeout.
    assert!(ext
        .try_recv(Duration::from_millis(300))
        .await
        .is_none_or(|m| m["type"] != "callTool"));

    // The late answer and a stray one are counted and change nothing.
    ext.send(json!({"type": "toolResult", "callId": call["callId"], "result": 1}))
        .await;
    ext.send(json!({"type": "toolResult", "callId": "call_999999", "result": 1}))
        .await;
    ext.send(json!({"type": "toolResult", "result": 1})).await;
    let s = wait_until(Duration::from_secs(5), "counters", || {
        let s = d.status();
        (s["unknownResponses"] == 2).then_some(s)
    });
    assert_eq!(s["lateResponses"], 1);
    assert_eq!(s["callsInFlight"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_frames_leave_the_daemon_and_other_connections_working() {
    let d = TestDaemon::start();
    let mut good =
        FakeExtension::connect(&d, "good", vec![tab(1, "Good", vec![search_tool()])]).await;
    let mut bad = FakeExtension::connect(&d, "bad", vec![tab(5, "Bad", vec![])]).await;
    d.wait_tabs("two tabs", |t| t.len() == 2);
    for frame in [
        "not json",
        "{",
        "[]",
        "42",
        r#"{"no":"type"}"#,
        r#"{"type":"tabClosed","tabId":"five"}"#,
        r#"{"type":"tabCreated"}"#,
        r#"{"type":"tabUpdated","tab":{"id":"x"}}"#,
        r#"{"type":"toolsChanged","tabId":5,"tools":[{"nope":1}]}"#,
        r#"{"type":"somethingNew","x":[1,2,3]}"#,
        r#"{"type":"toolResult","callId":{"a":1}}"#,
    ] {
        bad.send_text(frame).await;
    }
    bad.ws
        .send(tokio_tungstenite::tungstenite::Message::binary(vec![
            0u8, 1, 2,
        ]))
        .await
        .unwrap();
    // The bad connection itself still works.
    bad.send(json!({"type": "ping"})).await;
    bad.expect("pong").await;
    let s = wait_until(Duration::from_secs(5), "bad messages counted", || {
        let s = d.status();
        (s["badMessages"].as_u64().unwrap() >= 10).then_some(s)
    });
    assert_eq!(s["browsers"], 2);
    let cli = ctl_async(&d, &["call", "search", "--tab", "b1:1", "--query", "ok"]);
    good.answer_call(json!("still fine")).await;
    assert_eq!(stdout(&cli.await.unwrap()).trim(), "still fine");
    assert_eq!(
        d.wait_tabs("tab 5 intact", |t| t.len() == 2)[1]["title"],
        "Bad"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn reconnect_of_the_same_session_keeps_its_browser_id() {
    let d = TestDaemon::start();
    let a = FakeExtension::connect(&d, "stable", vec![tab(1, "T", vec![])]).await;
    let _other = FakeExtension::connect(&d, "other", vec![]).await;
    d.wait_tabs("tab", |t| t.len() == 1);
    drop(a);
    d.wait_tabs("gone", |t| t.is_empty());
    let _a =
        FakeExtension::connect(&d, "stable", vec![tab(1, "T", vec![]), tab(2, "U", vec![])]).await;
    let tabs = d.wait_tabs("back", |t| t.len() == 2);
    assert_eq!(
        names(&tabs),
        vec!["b1:1", "b1:2"],
        "no duplicates, same browser id"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_open_and_failed_discovery_come_back_as_errors() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::connect(&d, "s1", vec![tab(1, "T", vec![])]).await;
    d.wait_tabs("tab", |t| t.len() == 1);
    let cli = ctl_async(&d, &["open", "javascript:alert(1)"]);
    let open = ext.expect("openTab").await;
    ext.send(json!({"type": "error", "requestId": open["requestId"],
        "error": {"code": "INVALID_ARGUMENTS", "message": "only http(s) URLs can be opened"}}))
        .await;
    let out = cli.await.unwrap();
    fails(&out, 6, "only http(s) URLs");

    let cli = ctl_async(&d, &["discover", "b1:1"]);
    let disc = ext.expect("discoverTools").await;
    ext.send(
        json!({"type": "toolsDiscovered", "callId": disc["callId"], "tabId": 1, "tools": [],
        "error": {"code": "TAB_NOT_FOUND", "message": "no such tab"}}),
    )
    .await;
    let out = cli.await.unwrap();
    assert_eq!(exit_code(&out), 4, "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_the_extension_hides_fails_with_its_reason() {
    let d = TestDaemon::start();
    let evaluate_off = "browser_evaluate is disabled in the browser-mcp extension's options";
    let mut t7 = tab(7, "Search", vec![search_tool()]);
    t7["hidden"] = json!({"tools": ["browser_evaluate"], "reason": evaluate_off});
    let mut ext = FakeExtension::connect(&d, "s1", vec![t7, tab(8, "Other", vec![])]).await;
    let tabs = d.wait_tabs("two tabs", |t| t.len() == 2);
    assert_eq!(
        tabs[0]["hidden"],
        json!({"tools": ["browser_evaluate"], "reason": evaluate_off})
    );
    assert!(tabs[1].get("hidden").is_none(), "{}", tabs[1]);

    // Named tab, and no tab named: both say why.
    for args in [
        &EVALUATE_ON_7[..],
        &["call", "browser_evaluate", "--expression", "1"][..],
    ] {
        let hidden = format!(
            "TOOL_NOT_FOUND: `browser_evaluate` on b1:7 is hidden by the browser extension: {evaluate_off}"
        );
        fails(&d.ctl(args), 4, &hidden);
    }

    // The user turns the site off: the tools go, the reason comes, and replaces the old one.
    let site_off = "this site (https://example.com) is turned off in the browser-mcp extension";
    ext.send(
        json!({"type": "toolsChanged", "sessionId": "s1", "tabId": 7, "tools": [],
        "hidden": {"tools": ["search", "browser_snapshot"], "reason": site_off}}),
    )
    .await;
    d.wait_tabs("tab 7 without tools", |t| {
        t[0]["tools"] == json!([]) && t[0]["hidden"]["reason"] == site_off
    });
    let out = d.ctl(&["--json", "call", "search", "--tab", "b1:7", "--query", "q"]);
    fails(&out, 4, site_off);
    let out = d.ctl(&EVALUATE_ON_7);
    assert!(
        stderr(&out).contains("no tool `browser_evaluate` on b1:7"),
        "the old hint went with the old tools: {}",
        stderr(&out)
    );

    // A malformed hint costs nothing but itself: the tools it came with still land.
    ext.send(
        json!({"type": "toolsChanged", "sessionId": "s1", "tabId": 7,
        "tools": [tool("a")], "hidden": {"tools": "search"}}),
    )
    .await;
    let tabs = d.wait_tabs("tab 7 with tool a", |t| t[0]["tools"][0]["name"] == "a");
    assert!(tabs[0].get("hidden").is_none(), "{}", tabs[0]);
    let out = d.ctl(&["call", "search", "--tab", "b1:7", "--query", "q"]);
    fails(&out, 4, "no tool `search` on b1:7");
}
