//! `/mcp` answers each protocol revision in its own shape (issue 59): the resumption priming
//! event (an SSE event with an empty `data`, SEP-1699) only for 2025-11-25 and later. A client
//! of 2025-06-18 (Gemini CLI's SDK) parses every event's data as JSON, and an empty one
//! failed its tool discovery with `SyntaxError: Unexpected end of JSON input`.

use crate::support::common::*;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::json;

type Http = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

/// POSTs `body` to `/mcp` as a client of `revision` (the header once there is a session);
/// returns the session id and the body.
async fn post(
    c: &Http,
    d: &TestDaemon,
    session: Option<&str>,
    revision: Option<&str>,
    body: serde_json::Value,
) -> (Option<String>, String) {
    let mut req = hyper::Request::post(format!("http://127.0.0.1:{}/mcp", d.port))
        .header("Authorization", format!("Bearer {}", d.token))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream");
    if let Some(s) = session {
        req = req.header("Mcp-Session-Id", s);
    }
    if let (Some(_), Some(v)) = (session, revision) {
        req = req.header("Mcp-Protocol-Version", v);
    }
    let resp = c
        .request(req.body(Full::new(Bytes::from(body.to_string()))).unwrap())
        .await
        .expect("POST /mcp");
    assert!(
        resp.status() == 200 || resp.status() == 202,
        "{}",
        resp.status()
    );
    let id = resp
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (id, String::from_utf8_lossy(&body).into_owned())
}

/// The SSE events of a body whose `data` is empty: what a client that parses every event's
/// data as JSON chokes on.
fn empty_data_events(sse: &str) -> Vec<String> {
    sse.split("\n\n")
        .filter(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .collect();
            !data.is_empty() && data.iter().all(|d| d.trim().is_empty())
        })
        .map(str::to_owned)
        .collect()
}

/// Initialize as `revision`, then list tools; every answer's events.
async fn session_of(d: &TestDaemon, revision: &str, header: Option<&str>) -> Vec<String> {
    let c: Http = Client::builder(TokioExecutor::new()).build_http();
    let (session, init) = post(
        &c,
        d,
        None,
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": revision, "capabilities": {},
            "clientInfo": {"name": "revisions", "version": "0"}}}),
    )
    .await;
    assert!(
        init.contains(&format!("\"protocolVersion\":\"{revision}\"")),
        "{init}"
    );
    let session = session.expect("a session");
    post(
        &c,
        d,
        Some(&session),
        header,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    let (_, list) = post(
        &c,
        d,
        Some(&session),
        header,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    assert!(list.contains("browserctl_list_tabs"), "{list}");
    vec![init, list]
}

#[tokio::test(flavor = "multi_thread")]
async fn no_priming_event_before_2025_11_25() {
    let d = TestDaemon::start();
    for (revision, header) in [
        ("2025-06-18", Some("2025-06-18")),
        // A client of 2025-03-26 sends no revision header: the server assumes that revision.
        ("2025-03-26", None),
    ] {
        for body in session_of(&d, revision, header).await {
            let empty = empty_data_events(&body);
            assert!(
                empty.is_empty(),
                "a {revision} client got events with empty data: {empty:?}\n{body}"
            );
        }
    }
    // 2025-11-25 clients resume streams with it: they still get it.
    let bodies = session_of(&d, "2025-11-25", Some("2025-11-25")).await;
    assert!(
        bodies.iter().any(|b| !empty_data_events(b).is_empty()),
        "a 2025-11-25 client lost its priming event: {bodies:?}"
    );
}
