//! What a scoped MCP session exposes (`--tab`, `--url`, `--session`), and the control
//! socket's MCP session, which only an upgrade opens, scoped by its query.

use super::rmcp_client::{
    find, params, scripted_extension, status_until, stdio_client, text, META_TOOLS,
};
use crate::support::common::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Issue 35, item 3: scope is checked when a call is made, for every tool. A `--url` session's
/// listed tool is refused once its tab has moved to another site (the page never hears of
/// the call), and a scoped session has no `browser_tabs`, which reaches every tab.
#[tokio::test(flavor = "multi_thread")]
async fn scope_holds_at_call_time_and_browser_tabs_stays_out() {
    let d = TestDaemon::start();
    let tabs_tool = json!({"name": "browser_tabs", "description": "every tab",
        "inputSchema": {"type": "object", "properties": {"action": {"type": "string"}}}});
    let mut ext = FakeExtension::connect(
        &d,
        "s1",
        vec![
            tab(7, "Mail", vec![search_tool(), tabs_tool.clone()]),
            tab(9, "Bank", vec![search_tool(), tabs_tool]),
        ],
    )
    .await;
    d.wait_tabs("two tabs", |t| t.len() == 2);

    let (everyone, _) = stdio_client(&d, &[]).await;
    find(&everyone.list_all_tools().await.unwrap(), "browser_tabs");
    let (scoped, _) = stdio_client(&d, &["--tab", "b1:9"]).await;
    let tools = scoped.list_all_tools().await.unwrap();
    assert!(!tools.iter().any(|t| t.name == "browser_tabs"));
    for (tool, args) in [
        ("browser_tabs", json!({"action": "list"})),
        (
            "browserctl_call_tool",
            json!({"name": "browser_tabs", "tab": "b1:7"}),
        ),
    ] {
        let r = scoped.call_tool(params(tool, args)).await.unwrap();
        assert_eq!(r.is_error, Some(true), "{r:?}");
        assert!(text(&r).contains("does not offer it"), "{}", text(&r));
    }

    let (by_url, _) = stdio_client(&d, &["--url", "https://example.com/9"]).await;
    find(&by_url.list_all_tools().await.unwrap(), "search");
    ext.send(json!({"type": "tabUpdated", "sessionId": "s1",
        "tab": {"id": 9, "title": "Elsewhere", "url": "https://elsewhere.example/"}}))
        .await;
    d.wait_tabs("tab 9 moved", |t| {
        t.iter().any(|t| t["url"] == "https://elsewhere.example/")
    });
    let r = by_url
        .call_tool(params("search", json!({"query": "balance"})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(text(&r).starts_with("TAB_NOT_FOUND: "), "{}", text(&r));
    let heard = ext.try_recv(std::time::Duration::from_millis(300)).await;
    assert!(
        heard.as_ref().is_none_or(|m| m["type"] != "callTool"),
        "the page heard of the call: {heard:?}"
    );
    for c in [everyone, scoped, by_url] {
        c.cancel().await.unwrap();
    }
}

/// A built-in goes to the session's selected tab while it is there; once it closed, to the
/// focused one. A call is sent once: the page that gets it is the one the agent meant.
#[tokio::test(flavor = "multi_thread")]
async fn a_built_in_follows_the_selected_tab_then_the_focused_one() {
    let d = TestDaemon::start();
    let peek = json!({"name": "browser_peek", "description": "a built-in",
        "inputSchema": {"type": "object", "properties": {}}});
    let mut ext = FakeExtension::connect(
        &d,
        "s1",
        vec![tab(7, "A", vec![peek.clone()]), tab(9, "B", vec![peek])],
    )
    .await;
    ext.send(json!({"type": "tabFocused", "sessionId": "s1", "tabId": 7}))
        .await;
    d.wait_tabs("7 focused", |t| t.iter().any(|t| t["focused"] == true));
    let (client, _) = stdio_client(&d, &[]).await;
    let selected = client
        .call_tool(params("browserctl_select_tab", json!({"tab": "b1:9"})))
        .await
        .unwrap();
    assert_ne!(selected.is_error, Some(true), "{selected:?}");
    let (r, call) = tokio::join!(
        client.call_tool(params("browser_peek", json!({}))),
        ext.answer_call(json!("from 9"))
    );
    assert_eq!(
        (call["tabId"].clone(), text(&r.unwrap())),
        (json!(9), "from 9".into())
    );
    ext.send(json!({"type": "tabClosed", "sessionId": "s1", "tabId": 9}))
        .await;
    d.wait_tabs("9 closed", |t| t.len() == 1);
    let (r, call) = tokio::join!(
        client.call_tool(params("browser_peek", json!({}))),
        ext.answer_call(json!("from 7"))
    );
    assert_eq!(
        (call["tabId"].clone(), text(&r.unwrap())),
        (json!(7), "from 7".into())
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn scoping_flags_limit_what_the_stdio_server_exposes() {
    let d = TestDaemon::start();
    let _ext = scripted_extension(&d).await;
    let (client, _) = stdio_client(&d, &["--tab", "b1:9"]).await;
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    // Alone in scope, tab 9's search has its plain name again.
    assert_eq!(names, [&META_TOOLS[..], &["search"]].concat());
    let r = client
        .call_tool(params("browserctl_close_tab", json!({"tab": "b1:7"})))
        .await
        .unwrap();
    assert!(text(&r).starts_with("TAB_NOT_FOUND: "), "{}", text(&r));
    client.cancel().await.unwrap();

    let (client, _) =
        stdio_client(&d, &["--url", "https://example.com/7", "--session", "s1"]).await;
    let tools = client.list_all_tools().await.unwrap();
    find(&tools, "search");
    find(&tools, "fill_form");
    assert_eq!(
        tools.len(),
        2 + META_TOOLS.len(),
        "two tab tools and the meta tools"
    );
    client.cancel().await.unwrap();

    let (client, _) = stdio_client(&d, &["--session", "nobody"]).await;
    assert_eq!(
        client.list_all_tools().await.unwrap().len(),
        META_TOOLS.len()
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_control_socket_serves_mcp_only_as_an_upgrade() {
    use crate::support::harness::api;
    let d = TestDaemon::start();
    let _ext = scripted_extension(&d).await;
    let (code, v) = api(&d, "GET", "/v1/mcp", None).await;
    assert_eq!(
        (code, v["error"]["code"].as_str()),
        (400, Some("BAD_REQUEST")),
        "{v}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Upgrade: mcp-stdio"),
        "{v}"
    );
    let (code, v) = api(&d, "GET", "/v1/mcp?tabs=1", None).await;
    assert_eq!(code, 400, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("`tabs`"),
        "{v}"
    );

    // Upgraded, the connection is one MCP session in stdio framing, scoped by the query.
    let mut s = tokio::net::UnixStream::connect(&d.socket).await.unwrap();
    s.write_all(b"GET /v1/mcp?tab=b1%3A9 HTTP/1.1\r\nHost: d\r\nConnection: Upgrade\r\nUpgrade: mcp-stdio\r\n\r\n")
        .await
        .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(s.read_u8().await.unwrap());
    }
    assert!(
        head.starts_with(b"HTTP/1.1 101"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    s.write_all(format!("{init}\n{list}\n").as_bytes())
        .await
        .unwrap();
    let mut lines = tokio::io::BufReader::new(s);
    let mut answers = Vec::new();
    while answers.len() < 2 {
        let mut line = String::new();
        use tokio::io::AsyncBufReadExt;
        assert!(
            lines.read_line(&mut line).await.unwrap() > 0,
            "the session ended"
        );
        answers.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "browser-mcp");
    // The session keeps its place among the control connections (--max-control-connections):
    // this one and the status request's own.
    assert_eq!(d.status()["controlConnections"], 2);
    let names: Vec<&str> = answers[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, [&META_TOOLS[..], &["search"]].concat());
    drop(lines);
    status_until(&d, "the session's place to be given back", |s| {
        s["controlConnections"] == 1
    })
    .await;
}
