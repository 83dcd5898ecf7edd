//! Each agent in its own lane (issue 60), with the real daemon, `browserctl mcp` sessions
//! named by their clients, and a scripted extension: a tab an agent opened is its own (another
//! agent reads it, and is refused acting in it with TAB_OWNED naming the owner, unless the
//! person allows it); the tab's group names the agent; another agent's action does not move a
//! session's current tab. The order of calls on one tab, and its bound: `daemon::turns`.

use super::rmcp_client::{params, stdio_with, text};
use crate::support::common::*;
use rmcp::model::{CallToolResult, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{RoleClient, RunningService};
use rmcp::ClientHandler;
use serde_json::{json, Value};
use std::time::Duration;

/// An MCP client that says its name.
#[derive(Clone)]
struct Named(&'static str);

impl ClientHandler for Named {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(self.0, "1.0"),
        )
    }
}

type Agent = RunningService<RoleClient, Named>;

async fn agent(d: &TestDaemon, name: &'static str) -> Agent {
    stdio_with(d, &[], Named(name)).await
}

async fn call(a: &Agent, tool: &str, args: Value) -> CallToolResult {
    a.call_tool(params(tool, args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// A built-in as the extension declares it (the MCP front lists a bridge browser's `browser_*`
/// tools once, with a `tab` argument).
fn builtin(name: &str, read_only: bool) -> Value {
    json!({"name": name, "description": format!("the {name} built-in"),
        "inputSchema": {"type": "object", "properties": {
            "ref": {"type": "string"}, "action": {"type": "string"}, "tabId": {}}},
        "annotations": {"readOnlyHint": read_only}})
}

fn builtins() -> Vec<Value> {
    vec![
        builtin("browser_snapshot", true),
        builtin("browser_click", false),
        builtin("browser_tabs", false),
    ]
}

fn page(id: i64, focused: bool) -> Value {
    let mut t = tab(id, &format!("Tab {id}"), builtins());
    t["focused"] = json!(focused);
    t
}

/// Answers the next `openTab` with a new tab `id` (focused when it asked); gives the request.
async fn open_as(ext: &mut FakeExtension, id: i64) -> Value {
    let open = ext.expect("openTab").await;
    let mut t = page(id, open["focus"] == true);
    t["url"] = open["url"].clone();
    ext.send(json!({"type": "tabCreated", "tab": t, "requestId": open["requestId"]}))
        .await;
    open
}

/// Runs `call` while the extension answers the next callTool; gives both.
async fn answered(
    ext: &mut FakeExtension,
    call: impl std::future::Future<Output = CallToolResult>,
) -> (CallToolResult, Value) {
    let (r, seen) = tokio::join!(call, ext.answer_call(json!("done")));
    (r, seen)
}

/// The tab a session's `browser_snapshot` without `tab` lands in: its current tab.
async fn snapshot_lands(ext: &mut FakeExtension, a: &Agent) -> i64 {
    let (r, seen) = answered(ext, call(a, "browser_snapshot", json!({}))).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    seen["tabId"].as_i64().unwrap()
}

/// Asserts that nothing reached the extension (a refused call never does).
async fn nothing_sent(ext: &mut FakeExtension) {
    while let Some(m) = ext.try_recv(Duration::from_millis(300)).await {
        assert_ne!(
            m["type"], "callTool",
            "a refused call reached the browser: {m}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agents_tab_is_its_own_another_reads_it_and_is_refused_acting_in_it() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::connect(&d, "s1", vec![page(1, true)]).await;
    d.wait_tabs("the person's tab", |t| t.len() == 1);
    let (a, b) = (agent(&d, "agent-a").await, agent(&d, "agent-b").await);

    // A opens a tab: it joins a group named after A, and is A's.
    let (opened, request) = tokio::join!(
        call(
            &a,
            "browserctl_open_tab",
            json!({"url": "https://example.com/a"})
        ),
        open_as(&mut ext, 11)
    );
    assert_eq!(request["group"]["title"], "agent-a", "{request}");
    assert_eq!(opened.structured_content.as_ref().unwrap()["tab"], "b1:11");
    let tabs = d.ctl_json(&["tabs"]);
    let owner = |tabs: &Value, id: i64| {
        let t = tabs["tabs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id);
        t.map(|t| t["owner"].clone())
    };
    assert_eq!(owner(&tabs, 11), Some(json!("agent-a")), "{tabs}");
    assert_eq!(
        owner(&tabs, 1),
        Some(Value::Null),
        "the person's tab is nobody's"
    );

    // A acts in its tab, its current one.
    let (r, seen) = answered(&mut ext, call(&a, "browser_click", json!({"ref": "e1"}))).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(seen["tabId"], 11);

    // B reads it...
    let read = call(&b, "browser_snapshot", json!({"tab": "b1:11"}));
    let (r, seen) = answered(&mut ext, read).await;
    assert_eq!(
        (r.is_error, seen["tabId"].clone()),
        (Some(false), json!(11))
    );
    // ...and sees whose it is...
    let listed = call(&b, "browserctl_list_tabs", json!({})).await;
    let rows = listed.structured_content.unwrap()["tabs"].clone();
    assert_eq!(rows[1]["owner"], "agent-a", "{rows}");
    // ...but acts in it in no way: clicking, closing it, selecting or closing it from another
    // tab with browser_tabs. Each refusal names the owner; nothing reaches the browser.
    for (tool, args) in [
        ("browser_click", json!({"tab": "b1:11", "ref": "e1"})),
        ("browserctl_close_tab", json!({"tab": "b1:11"})),
        (
            "browser_tabs",
            json!({"tab": "b1:1", "action": "close", "tabId": 11}),
        ),
        (
            "browser_tabs",
            json!({"tab": "b1:1", "action": "select", "tabId": "b1:11"}),
        ),
    ] {
        let r = call(&b, tool, args).await;
        let t = text(&r);
        assert_eq!(r.is_error, Some(true), "{tool}: {t}");
        assert!(
            t.starts_with("TAB_OWNED: tab b1:11 is agent-a's"),
            "{tool}: {t}"
        );
        assert!(t.contains(r#""owner":"agent-a""#), "{t}");
        nothing_sent(&mut ext).await;
    }
    // The person's own tab is nobody's: B acts there.
    let click = call(&b, "browser_click", json!({"tab": "b1:1", "ref": "e1"}));
    let (r, _) = answered(&mut ext, click).await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));

    // The person is no agent: browserctl acts in any tab.
    let cli = call_async(&d, "browser_click", &["--tab", "b1:11", "--ref", "e1"]);
    let seen = ext.answer_call(json!("done")).await;
    assert_eq!(seen["tabId"], 11);
    let out = cli.await.unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    // A second session of the same client is another lane, told apart in its group's name.
    let a2 = agent(&d, "agent-a").await;
    let (opened, request) = tokio::join!(
        call(
            &a2,
            "browserctl_open_tab",
            json!({"url": "https://example.com/a2"})
        ),
        open_as(&mut ext, 12)
    );
    assert_eq!(request["group"]["title"], "agent-a (2)", "{request}");
    assert_eq!(opened.is_error, Some(false));
    let r = call(&a2, "browser_click", json!({"tab": "b1:11"})).await;
    assert!(
        text(&r).starts_with("TAB_OWNED: tab b1:11 is agent-a's"),
        "{}",
        text(&r)
    );

    // A's session ends: its tab is nobody's, and B may act in it.
    a.cancel().await.unwrap();
    wait_until(Duration::from_secs(10), "A's tab to be nobody's", || {
        owner(&d.ctl_json(&["tabs"]), 11)
            .filter(Value::is_null)
            .map(drop)
    });
    let click = call(&b, "browser_click", json!({"tab": "b1:11"}));
    let (r, seen) = answered(&mut ext, click).await;
    assert_eq!(
        (r.is_error, seen["tabId"].clone()),
        (Some(false), json!(11))
    );
    b.cancel().await.unwrap();
    a2.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_person_may_let_agents_act_in_each_others_tabs() {
    let d = TestDaemon::builder().args(&["--share-agent-tabs"]).start();
    let mut ext = FakeExtension::connect(&d, "s1", vec![page(1, true)]).await;
    d.wait_tabs("the person's tab", |t| t.len() == 1);
    let (a, b) = (agent(&d, "agent-a").await, agent(&d, "agent-b").await);
    let (_, _) = tokio::join!(
        call(
            &a,
            "browserctl_open_tab",
            json!({"url": "https://example.com/a"})
        ),
        open_as(&mut ext, 11)
    );
    let click = call(&b, "browser_click", json!({"tab": "b1:11"}));
    let (r, seen) = answered(&mut ext, click).await;
    assert_eq!(
        (r.is_error, seen["tabId"].clone()),
        (Some(false), json!(11))
    );
    // Still A's: the group and the owner name the agent that opened it.
    let tabs = d.ctl_json(&["tabs"]);
    assert_eq!(tabs["tabs"][1]["owner"], "agent-a", "{tabs}");
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
}

/// An agent that never selected a tab works in the tab the person focused. Another agent
/// bringing a tab to the front (`browser_tabs select`, a tab opened in front) does not move
/// it; the person focusing another tab does.
#[tokio::test(flavor = "multi_thread")]
async fn another_agents_focus_change_does_not_move_a_sessions_current_tab() {
    let d = TestDaemon::start();
    let tabs = vec![page(1, true), page(2, false), page(3, false)];
    let mut ext = FakeExtension::connect(&d, "s1", tabs).await;
    d.wait_tabs("three tabs", |t| t.len() == 3);
    let (a, b) = (agent(&d, "agent-a").await, agent(&d, "agent-b").await);
    assert_eq!(snapshot_lands(&mut ext, &b).await, 1);

    // A selects tab 2 from tab 3: the browser focuses it while A's call runs, and again
    // after A's call answered (the order Chromium's events may take).
    let select = call(
        &a,
        "browser_tabs",
        json!({"tab": "b1:3", "action": "select", "tabId": 2}),
    );
    let browser = async {
        let c = ext.expect("callTool").await;
        assert_eq!(c["tabId"], 3);
        ext.send(json!({"type": "tabFocused", "tabId": 2})).await;
        let result = json!({"content": [{"type": "text", "text": "Selected tab 2"}],
            "structuredContent": {"tab": {"id": 2}}});
        ext.send(
            json!({"type": "toolResult", "sessionId": "s1", "callId": c["callId"],
            "result": result, "error": null}),
        )
        .await;
        ext.send(json!({"type": "tabFocused", "tabId": 2})).await;
    };
    let (r, ()) = tokio::join!(select, browser);
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    d.wait_tabs("tab 2 focused", |t| {
        t.iter().any(|t| t["id"] == 2 && t["focused"] == true)
    });
    // A's current tab is the one it selected; B's has not moved.
    let (_, seen) = answered(&mut ext, call(&a, "browser_snapshot", json!({}))).await;
    assert_eq!(seen["tabId"], 2);
    assert_eq!(snapshot_lands(&mut ext, &b).await, 1);

    // A opens a tab in front: B stays.
    let (_, _) = tokio::join!(
        call(
            &a,
            "browserctl_open_tab",
            json!({"url": "https://example.com/a", "focus": true})
        ),
        open_as(&mut ext, 11)
    );
    d.wait_tabs("the new tab focused", |t| {
        t.iter().any(|t| t["id"] == 11 && t["focused"] == true)
    });
    assert_eq!(snapshot_lands(&mut ext, &b).await, 1);

    // The person focuses tab 3, after the agents' actions are over: B follows.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    ext.send(json!({"type": "tabFocused", "tabId": 3})).await;
    d.wait_tabs("tab 3 focused", |t| {
        t.iter().any(|t| t["id"] == 3 && t["focused"] == true)
    });
    assert_eq!(snapshot_lands(&mut ext, &b).await, 3);
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
}
