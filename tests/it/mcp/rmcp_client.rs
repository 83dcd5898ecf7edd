//! The MCP front, driven by rmcp's own client over both transports (`browserctl mcp` on
//! stdio, `/mcp` over Streamable HTTP) against a real daemon and a scripted extension.

use crate::support::common::*;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, JsonObject, PingRequest,
    ServerResult, Tool,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// An MCP client that reports every `notifications/tools/list_changed`.
#[derive(Clone)]
pub(crate) struct Watcher(mpsc::UnboundedSender<()>);

impl ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(());
    }
}

pub(crate) type McpClient = RunningService<RoleClient, Watcher>;

/// The meta tools, in the order every listing starts with.
pub(crate) const META_TOOLS: [&str; 8] = [
    "browserctl_list_tabs",
    "browserctl_select_tab",
    "browserctl_open_tab",
    "browserctl_close_tab",
    "browserctl_list_tools",
    "browserctl_call_tool",
    "browserctl_launch_browser",
    "browserctl_close_browser",
];

/// `browserctl mcp EXTRA…` on stdio, initialized by `handler`.
pub(crate) async fn stdio_with<H: ClientHandler>(
    d: &TestDaemon,
    extra: &[&str],
    handler: H,
) -> RunningService<RoleClient, H> {
    let socket = d.socket.clone();
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    let cmd = tokio::process::Command::new(CTL).configure(|c| {
        c.arg("--socket").arg(&socket).arg("mcp").args(&extra);
    });
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn browserctl mcp");
    handler
        .serve(transport)
        .await
        .expect("initialize over stdio")
}

pub(crate) async fn stdio_client(
    d: &TestDaemon,
    extra: &[&str],
) -> (McpClient, mpsc::UnboundedReceiver<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (stdio_with(d, extra, Watcher(tx)).await, rx)
}

async fn http_client(d: &TestDaemon) -> (McpClient, mpsc::UnboundedReceiver<()>) {
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://127.0.0.1:{}/mcp", d.port))
            .auth_header(d.token.clone());
    let transport = StreamableHttpClientTransport::from_config(config);
    let (tx, rx) = mpsc::unbounded_channel();
    let client = Watcher(tx)
        .serve(transport)
        .await
        .expect("initialize over HTTP");
    (client, rx)
}

fn annotated_tool() -> Value {
    json!({"name": "fill.form", "title": "Fill the form",
        "description": "Fills the form",
        "inputSchema": {"type": "object", "properties": {
            "fields": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
            "required": ["fields"], "additionalProperties": false},
        "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true}})
}

fn args(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => panic!("arguments are an object"),
    }
}

pub(crate) fn params(name: &str, a: Value) -> CallToolRequestParams {
    let mut p = CallToolRequestParams::new(name.to_owned());
    p.arguments = Some(args(a));
    p
}

pub(crate) fn text(r: &CallToolResult) -> String {
    let v = serde_json::to_value(&r.content).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Asserts that a result's text begins with `prefix` (an error's code, say), and shows it if not.
#[track_caller]
fn assert_starts(r: &CallToolResult, prefix: &str) {
    let t = text(r);
    assert!(t.starts_with(prefix), "{t}");
}

pub(super) fn find<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools.iter().find(|t| t.name == name).unwrap_or_else(|| {
        panic!(
            "no tool {name} in {:?}",
            tools.iter().map(|t| &t.name).collect::<Vec<_>>()
        )
    })
}

pub(super) async fn status_until(
    d: &TestDaemon,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let start = Instant::now();
    loop {
        let s = d.status();
        if pred(&s) {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}: {s}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The whole conversation an AI client has, the same over either transport.
async fn converse(
    d: &TestDaemon,
    ext: &mut FakeExtension,
    client: McpClient,
    mut changed: mpsc::UnboundedReceiver<()>,
) {
    // initialize: who we are and what we offer.
    let info = client.peer_info().expect("server info after initialize");
    assert_eq!(info.server_info.as_ref().unwrap().name, "browser-mcp");
    let tools_cap = info.capabilities.tools.clone().expect("tools capability");
    assert_eq!(tools_cap.list_changed, Some(true));

    // ping
    let pong = client
        .send_request(ClientRequest::PingRequest(PingRequest::default()))
        .await
        .expect("ping");
    assert!(matches!(pong, ServerResult::EmptyResult(_)), "{pong:?}");

    // tools/list: the meta tools and the current (focused) tab's page tools by their own
    // names, schemas and annotations intact; the other tab's through the meta tools.
    let tools = client.list_all_tools().await.expect("tools/list");
    for meta in META_TOOLS {
        find(&tools, meta);
    }
    assert_eq!(
        tools.len(),
        META_TOOLS.len() + 2,
        "{:?}",
        tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    let s7 = find(&tools, "search");
    assert_eq!(
        Value::Object((*s7.input_schema).clone()),
        search_tool()["inputSchema"]
    );
    let d7 = s7.description.as_deref().unwrap();
    assert!(d7.starts_with("Search the page"), "{d7}");
    assert!(
        d7.contains("b1:7") && d7.contains("\"Search\"") && d7.contains("https://example.com/7"),
        "{d7}"
    );
    let fill = find(&tools, "fill_form");
    assert_eq!(
        Value::Object((*fill.input_schema).clone()),
        annotated_tool()["inputSchema"]
    );
    assert_eq!(fill.title.as_deref(), Some("Fill the form"));
    assert_eq!(
        serde_json::to_value(fill.annotations.as_ref().unwrap()).unwrap(),
        annotated_tool()["annotations"]
    );

    // tools/call: success, through the daemon's call path to the right tab.
    let (result, seen) = tokio::join!(
        client.call_tool(params("search", json!({"query": "test"}))),
        ext.answer_call(json!("results for test")),
    );
    let result = result.expect("tools/call");
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(text(&result), "results for test");
    // The tab that answered, in every call result.
    let meta = result.meta.as_ref().expect("_meta");
    assert_eq!(meta.0.get("dev.browsermcp/tab"), Some(&json!("b1:7")));
    assert_eq!(
        (seen["tabId"].clone(), seen["toolName"].clone()),
        (json!(7), json!("search"))
    );
    assert_eq!(seen["args"], json!({"query": "test"}));

    // tools/call: the tool fails in the page → isError with our code.
    let failing = async {
        let call = ext.expect("callTool").await;
        assert_eq!(call["tabId"], 9);
        ext.send(json!({"type": "toolResult", "sessionId": ext.session, "callId": call["callId"],
            "result": null, "error": {"code": "ELEMENT_NOT_FOUND", "message": "No element matches #x"}}))
            .await;
    };
    let other_tab = json!({"name": "search", "tab": "b1:9", "arguments": {"query": "x"}});
    let (result, ()) = tokio::join!(
        client.call_tool(params("browserctl_call_tool", other_tab)),
        failing
    );
    let result = result.expect("tools/call");
    assert_eq!(result.is_error, Some(true));
    assert_starts(&result, "TOOL_ERROR: ELEMENT_NOT_FOUND");

    // Invalid arguments never reach the page.
    let result = client
        .call_tool(params("search", json!({})))
        .await
        .expect("tools/call");
    assert_eq!(result.is_error, Some(true));
    assert_starts(&result, "INVALID_ARGUMENTS: ");
    let result = client
        .call_tool(params("no_such_tool", json!({})))
        .await
        .expect("tools/call");
    assert_starts(&result, "TOOL_NOT_FOUND: ");

    // A meta tool.
    let tabs = client
        .call_tool(params("browserctl_list_tabs", json!({})))
        .await
        .expect("list tabs");
    let listed = tabs.structured_content.clone().expect("structured tabs");
    assert_eq!(listed["tabs"][0]["tab"], "b1:7");
    assert_eq!(listed["tabs"][0]["current"], true);
    assert_eq!(listed["tabs"][0]["tools"], json!(["search", "fill.form"]));

    // A tab opens in the background: the list stays, no list_changed; its tool is there
    // through the meta tools.
    while changed.try_recv().is_ok() {}
    ext.send(json!({"type": "tabCreated", "sessionId": ext.session,
        "tab": tab(11, "Fresh", vec![tool("fresh")])}))
        .await;
    d.wait_tabs("tab 11", |t| t.len() == 3);
    let rows = client
        .call_tool(params("browserctl_list_tools", json!({"tab": "b1:11"})))
        .await
        .expect("list tools");
    assert_eq!(
        rows.structured_content.unwrap()["tools"][0]["tool"],
        "fresh"
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(500), changed.recv())
            .await
            .is_err(),
        "no list_changed for a tab that is not the current one"
    );
    // Selected, it is the current tab: list_changed, and its tool by name.
    client
        .call_tool(params("browserctl_select_tab", json!({"tab": "b1:11"})))
        .await
        .expect("select");
    tokio::time::timeout(Duration::from_secs(10), changed.recv())
        .await
        .expect("list_changed within 10 s")
        .expect("the client is alive");
    let tools = client.list_all_tools().await.expect("tools/list");
    find(&tools, "fresh");
    assert!(!tools.iter().any(|t| t.name == "search"));
    client
        .call_tool(params("browserctl_select_tab", json!({"tab": "7"})))
        .await
        .expect("select");
    find(&client.list_all_tools().await.unwrap(), "search");

    // Cancellation: the page never answers; the client cancels; the daemon ends the call
    // with CANCELLED long before its 30 s timeout and forgets the pending entry.
    let before = d.status();
    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params(
                "search",
                json!({"query": "slow"}),
            ))),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("send tools/call");
    let call = ext.expect("callTool").await;
    let cancelled_at = Instant::now();
    handle
        .cancel(Some("the user changed their mind".into()))
        .await
        .expect("cancel");
    let after = status_until(d, "the call to be cancelled", |s| {
        s["callsInFlight"] == 0
            && s["pendingCalls"] == 0
            && s["callsCancelled"] == before["callsCancelled"].as_u64().unwrap() + 1
    })
    .await;
    assert!(cancelled_at.elapsed() < Duration::from_secs(10));
    assert_eq!(
        after["callsFailed"],
        before["callsFailed"].as_u64().unwrap() + 1
    );
    // The page answers after all: the daemon had forgotten the call, so it is late.
    ext.send(
        json!({"type": "toolResult", "sessionId": ext.session, "callId": call["callId"],
        "result": "too late", "error": null}),
    )
    .await;
    status_until(d, "the late answer to be counted", |s| {
        s["lateResponses"] == before["lateResponses"].as_u64().unwrap() + 1
    })
    .await;

    client.cancel().await.expect("close the MCP session");
}

pub(super) async fn scripted_extension(d: &TestDaemon) -> FakeExtension {
    let mut ext = FakeExtension::connect(
        d,
        "s1",
        vec![
            tab(7, "Search", vec![search_tool(), annotated_tool()]),
            tab(9, "Other", vec![search_tool()]),
        ],
    )
    .await;
    ext.send(json!({"type": "tabFocused", "sessionId": ext.session, "tabId": 7}))
        .await;
    d.wait_tabs("two tabs, 7 focused", |t| {
        t.len() == 2 && t.iter().any(|t| t["id"] == 7 && t["focused"] == true)
    });
    ext
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_client_over_stdio_lists_calls_is_notified_and_cancels() {
    let d = TestDaemon::start();
    let mut ext = scripted_extension(&d).await;
    let (client, changed) = stdio_client(&d, &[]).await;
    converse(&d, &mut ext, client, changed).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_client_over_streamable_http_lists_calls_is_notified_and_cancels() {
    let d = TestDaemon::start();
    let mut ext = scripted_extension(&d).await;
    let (client, changed) = http_client(&d).await;
    converse(&d, &mut ext, client, changed).await;
}

/// Waits for `list_changed` and lists again until `name` is (or, `gone`, is no longer) there.
async fn until_listed(
    client: &McpClient,
    changed: &mut mpsc::UnboundedReceiver<()>,
    name: &str,
    gone: bool,
) -> Vec<Tool> {
    let start = Instant::now();
    loop {
        let tools = client.list_all_tools().await.expect("tools/list");
        if tools.iter().any(|t| t.name == name) != gone {
            return tools;
        }
        let left = Duration::from_secs(20).saturating_sub(start.elapsed());
        tokio::time::timeout(left, changed.recv())
            .await
            .unwrap_or_else(|_| panic!("list_changed and `{name}` within 20 s"))
            .expect("the client is alive");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_stdio_server_rides_out_a_daemon_that_dies_and_comes_back() {
    let mut d = TestDaemon::start();
    let mut ext = scripted_extension(&d).await;
    let (client, mut changed) = stdio_client(&d, &[]).await;
    find(&client.list_all_tools().await.unwrap(), "search");

    // A call in flight when the daemon dies is answered, not left hanging.
    let dying = async {
        ext.expect("callTool").await;
        d.child.kill().unwrap(); // SIGKILL: no goodbye
        d.child.wait().unwrap();
    };
    let (result, ()) = tokio::join!(
        client.call_tool(params("search", json!({"query": "q"}))),
        dying
    );
    let result = result.expect("tools/call answered");
    assert_eq!(result.is_error, Some(true));
    assert_starts(&result, "DAEMON_UNAVAILABLE: ");
    // Its tab tools are gone, and the client is told so.
    let tools = until_listed(&client, &mut changed, "search", true).await;
    assert_eq!(tools.len(), META_TOOLS.len(), "only the meta tools");
    let r = client
        .call_tool(params("browserctl_list_tabs", json!({})))
        .await
        .unwrap();
    assert_starts(&r, "DAEMON_UNAVAILABLE: ");

    // A daemon on the same socket: the same MCP session carries on with it.
    let dir = std::mem::replace(&mut d.dir, tempfile::tempdir().unwrap());
    let d2 = TestDaemon::builder().dir(dir).start();
    let mut ext2 = scripted_extension(&d2).await;
    until_listed(&client, &mut changed, "search", false).await;
    let (result, seen) = tokio::join!(
        client.call_tool(params("search", json!({"query": "again"}))),
        ext2.answer_call(json!("results again")),
    );
    let result = result.expect("tools/call");
    assert_eq!(text(&result), "results again", "{result:?}");
    assert_eq!(seen["args"], json!({"query": "again"}));
    client.cancel().await.unwrap();
}

/// One raw HTTP/1.1 request to `/mcp`; returns the status code and the response head.
async fn raw(port: u16, method: &str, host: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let body = if method == "POST" {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
        .to_string()
    } else {
        String::new()
    };
    let mut req = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    s.write_all(req.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        if s.read(&mut byte).await.unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status = head
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("status line in {head:?}"));
    (status, head)
}

async fn raw_status(port: u16, host: &str, headers: &[(&str, &str)]) -> u16 {
    raw(port, "POST", host, headers).await.0
}

#[tokio::test(flavor = "multi_thread")]
async fn the_http_transport_takes_loopback_origins_and_refuses_foreign_hosts_web_origins_and_missing_tokens(
) {
    let d = TestDaemon::start();
    let host = format!("127.0.0.1:{}", d.port);
    let bearer = format!("Bearer {}", d.token);
    let auth = ("Authorization", bearer.as_str());
    assert_eq!(raw_status(d.port, &host, &[auth]).await, 200);
    assert_eq!(
        raw_status(d.port, &format!("localhost:{}", d.port), &[auth]).await,
        200
    );
    assert_eq!(
        raw_status(d.port, &format!("evil.example:{}", d.port), &[auth]).await,
        403
    );
    assert_eq!(
        raw_status(d.port, &host, &[auth, ("Origin", "https://evil.example")]).await,
        403
    );
    assert_eq!(raw_status(d.port, &host, &[]).await, 401);
    assert_eq!(
        raw_status(d.port, &host, &[("Authorization", "Bearer wrong")]).await,
        401
    );
    // Pages served from this machine may ask (DNS rebinding cannot fake a loopback Origin),
    // with the token all the same; any other web origin is refused whatever it presents.
    for origin in [
        format!("http://localhost:{}", d.port),
        "http://127.0.0.1:3000".to_owned(),
        "http://[::1]:8080".to_owned(),
    ] {
        let o = ("Origin", origin.as_str());
        assert_eq!(raw_status(d.port, &host, &[auth, o]).await, 200, "{origin}");
        assert_eq!(raw_status(d.port, &host, &[o]).await, 401, "{origin}");
    }
    for origin in [
        "http://localhost.evil.example",
        "null",
        "http://localhost@evil.example",
    ] {
        let o = ("Origin", origin);
        assert_eq!(raw_status(d.port, &host, &[auth, o]).await, 403, "{origin}");
    }

    // A session ends with DELETE (204), after which its id is unknown (404).
    let (status, head) = raw(d.port, "POST", &host, &[auth]).await;
    assert_eq!(status, 200);
    let sid = head
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id: "))
        .unwrap_or_else(|| panic!("no session id in {head}"))
        .to_owned();
    let session = ("Mcp-Session-Id", sid.as_str());
    assert_eq!(raw(d.port, "DELETE", &host, &[auth, session]).await.0, 204);
    assert_eq!(raw(d.port, "GET", &host, &[auth, session]).await.0, 404);

    let open = TestDaemon::builder().args(&["--mcp-auth", "none"]).start();
    let host = format!("127.0.0.1:{}", open.port);
    assert_eq!(raw_status(open.port, &host, &[]).await, 200);
    assert_eq!(
        raw_status(open.port, &host, &[("Origin", "http://localhost:3000")]).await,
        200
    );
    assert_eq!(
        raw_status(open.port, &host, &[("Origin", "https://evil.example")]).await,
        403
    );
    let rebinding = [("Origin", "http://evil.example:80")];
    assert_eq!(
        raw_status(open.port, "evil.example:80", &rebinding).await,
        403
    );
}

#[test]
fn print_config_gives_stdio_and_http_snippets() {
    let d = TestDaemon::start();
    let v = d.ctl_json(&["mcp", "--print-config", "--url", "https://example.com/*"]);
    let stdio = &v["stdio"]["mcpServers"]["browser"];
    assert!(
        stdio["command"].as_str().unwrap().ends_with("browserctl"),
        "{v}"
    );
    assert_eq!(
        stdio["args"],
        json!([
            "--socket",
            d.socket.display().to_string(),
            "mcp",
            "--url",
            "https://example.com/*"
        ])
    );
    let http = &v["http"]["mcpServers"]["browser"];
    assert_eq!(http["url"], format!("http://127.0.0.1:{}/mcp", d.port));
    assert_eq!(
        http["headers"]["Authorization"],
        format!("Bearer {}", d.token)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_daemon_the_stdio_server_fails_initialize_with_the_reason() {
    // A green `initialize` over the meta tools alone was what every client's health check
    // showed while no daemon was there (issue 59); the reason now fails the handshake.
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("nobody-here.sock");
    let cmd = tokio::process::Command::new(CTL).configure(|c| {
        c.arg("--socket").arg(&socket).arg("mcp");
    });
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, _rx) = mpsc::unbounded_channel();
    let Err(err) = Watcher(tx).serve(transport).await else {
        panic!("initialize succeeded without a daemon");
    };
    let text = format!("{err:?}");
    assert!(text.contains("DAEMON_UNAVAILABLE"), "{text}");
    assert!(text.contains("nobody-here.sock"), "{text}");
}
