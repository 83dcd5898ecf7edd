//! Row 10: what an unscoped MCP session sees (issue 29): the tool list with 1, 20 and 100
//! tabs, and `list_changed` while tabs other than the current one change. The scripted
//! browser's tabs offer the real extension's built-ins (scripts/builtin-tools.mjs) and one
//! page tool each; tab 1 is focused.

use crate::prelude::*;
use tokio::io::AsyncWriteExt;

/// The caps the tool list is held to.
pub(crate) const MAX_TOOLS: usize = 40;
pub(crate) const MAX_LIST_BYTES: usize = 40 * 1024;

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;
use tokio::net::TcpStream;

/// The extension's built-in declarations, as its own code declares them.
pub(crate) fn builtin_tools() -> Vec<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/builtin-tools.mjs");
    let out = Command::new("node")
        .arg(&script)
        .output()
        .unwrap_or_else(|e| panic!("row 10 needs node to read the built-ins: {e}"));
    assert!(
        out.status.success(),
        "{}: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the built-ins as JSON")
}

fn tab(id: usize, builtins: &[Value], focused: bool) -> Value {
    let mut tools = builtins.to_vec();
    tools.push(
        json!({"name": "search", "description": format!("Search site {id}"),
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}),
    );
    json!({"id": id, "title": format!("Site {id}"), "url": format!("https://site{id}.example/"),
        "focused": focused, "tools": tools})
}

/// A scripted browser with `tabs` tabs, kept to send tab events.
async fn browser(port: u16, tabs: usize, builtins: &[Value]) -> Ws {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}/"))
        .await
        .unwrap();
    let tabs: Vec<Value> = (1..=tabs).map(|i| tab(i, builtins, i == 1)).collect();
    let hello = json!({"type": "connected", "sessionId": "view",
        "browser": {"name": "Bench", "version": "1"}, "tabs": tabs});
    ws.send(Message::text(hello.to_string())).await.unwrap();
    ws
}

/// An unscoped MCP session on the control socket, initialized (its watcher started).
async fn session(d: &Daemon) -> McpSocket {
    let mut c = McpSocket::open(d, "").await;
    c.ask(initialize(0)).await;
    c.w.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    c
}

async fn list(c: &mut McpSocket) -> Vec<Value> {
    let v = c
        .ask(json!({"jsonrpc": "2.0", "id": 0, "method": "tools/list"}))
        .await;
    v["result"]["tools"].as_array().expect("tools").clone()
}

/// One tool list: its names and its size, serialized.
pub(crate) struct Listing {
    pub(crate) names: Vec<String>,
    pub(crate) bytes: usize,
}

/// The unscoped tool list with `tabs` tabs open.
pub(crate) async fn listing(tabs: usize, builtins: &[Value]) -> Listing {
    let d = Daemon::start();
    let _ws = browser(d.port, tabs, builtins).await;
    d.wait_tabs(tabs).await;
    let mut c = session(&d).await;
    let tools = list(&mut c).await;
    Listing {
        names: tools
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
            .collect(),
        bytes: serde_json::to_string(&tools).unwrap().len(),
    }
}

/// `list_changed` notifications heard within `quiet` after `events`.
async fn heard_after(c: &mut McpSocket, ws: &mut Ws, events: Vec<Value>, quiet: Duration) -> usize {
    for e in events {
        ws.send(Message::text(e.to_string())).await.unwrap();
    }
    let mut heard = 0;
    let end = tokio::time::Instant::now() + quiet;
    while let Ok(Ok(Some(line))) = tokio::time::timeout_at(end, c.lines.next_line()).await {
        if line.contains("notifications/tools/list_changed") {
            heard += 1;
        }
    }
    heard
}

/// `list_changed` per 100 events of tabs that are not the current one (opened, retitled,
/// navigated, closed), and, as the control that shows a notification would be heard, after
/// the focus moves to another tab (the current tab changes).
pub(crate) async fn list_changed(builtins: &[Value]) -> (usize, usize) {
    let d = Daemon::start();
    let mut ws = browser(d.port, 20, builtins).await;
    d.wait_tabs(20).await;
    let mut c = session(&d).await;
    list(&mut c).await;
    let mut events = Vec::new();
    for i in 0..25 {
        let id = 100 + i;
        events.push(json!({"type": "tabCreated", "tab": tab(id, builtins, false)}));
        events.push(
            json!({"type": "tabUpdated", "tab": {"id": id, "title": format!("Moved {id}"),
            "url": format!("https://moved{id}.example/")}}),
        );
        events.push(json!({"type": "tabUpdated", "tab": {"id": 2 + i % 19,
            "title": format!("Retitled {i}"), "url": format!("https://other{i}.example/")}}));
        events.push(json!({"type": "tabClosed", "tabId": id}));
    }
    let unrelated = heard_after(&mut c, &mut ws, events, Duration::from_secs(1)).await;
    let focus = vec![json!({"type": "tabFocused", "tabId": 2})];
    let control = heard_after(&mut c, &mut ws, focus, Duration::from_secs(2)).await;
    (unrelated, control)
}

/// A snapshot as the extension answers one (extension/worker/frames/frames.js): readable text, and
/// the same elements as `structuredContent`.
fn scripted_snapshot() -> Value {
    let elements: Vec<Value> = (1..=60)
        .map(|i| {
            json!({"ref": format!("e{i}"), "role": if i % 3 == 0 { "textbox" } else { "button" },
            "name": format!("Item number {i}")})
        })
        .collect();
    let lines: Vec<String> = elements
        .iter()
        .map(|e| {
            format!(
                "[{} {}] {}",
                e["role"].as_str().unwrap(),
                e["ref"].as_str().unwrap(),
                e["name"].as_str().unwrap()
            )
        })
        .collect();
    let text = format!(
        "# Order form\nURL: https://shop.example/order\n\nFill in the form below.\n{}",
        lines.join("\n")
    );
    json!({"content": [{"type": "text", "text": text}],
        "structuredContent": {"url": "https://shop.example/order", "title": "Order form",
            "elements": elements, "truncated": false, "moreElements": 0}})
}

/// A scripted browser with one tab whose `browser_snapshot` answers `result`.
async fn answering_browser(
    port: u16,
    builtins: &[Value],
    result: Value,
) -> tokio::task::JoinHandle<()> {
    let mut ws = browser(port, 1, builtins).await;
    tokio::spawn(async move {
        while let Some(Ok(m)) = ws.next().await {
            let Message::Text(t) = m else { continue };
            let Ok(v) = serde_json::from_str::<Value>(t.as_str()) else {
                continue;
            };
            if v["type"] == "callTool" {
                let reply = json!({"type": "toolResult", "callId": v["callId"],
                    "result": result, "error": null});
                if ws.send(Message::text(reply.to_string())).await.is_err() {
                    break;
                }
            }
        }
    })
}

/// Characters a model reads of one snapshot: over MCP (every text block) and as
/// `browserctl call` prints it.
pub(crate) async fn snapshot_chars(builtins: &[Value]) -> (usize, usize) {
    let d = Daemon::start();
    let _browser = answering_browser(d.port, builtins, scripted_snapshot()).await;
    d.wait_tabs(1).await;
    let mut c = session(&d).await;
    let r = c
        .ask(
            json!({"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": {
            "name": "browser_snapshot", "arguments": {"tab": "b1:1"}}}),
        )
        .await;
    let mcp: usize = r["result"]["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|b| b["text"].as_str())
        .map(|t| t.chars().count())
        .sum();
    let out = tokio::process::Command::new(CTL)
        .arg("--socket")
        .arg(&d.socket)
        .args(["call", "browser_snapshot", "--tab", "b1:1"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cli = String::from_utf8_lossy(&out.stdout)
        .trim_end()
        .chars()
        .count();
    (mcp, cli)
}
