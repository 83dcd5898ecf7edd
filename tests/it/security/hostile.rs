//! Hostile peers over real sockets, for every dialect and /mcp: malformed, mistyped, huge,
//! deeply nested and unknown messages, binary and oversize frames, floods, handshakes that
//! never finish, and thousands of connect/disconnect cycles. The daemon answers with clear
//! errors or close codes, keeps serving everyone else, and gives its resources back.

use crate::support::common::*;
use crate::support::harness::*;
use crate::support::peers::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::tungstenite::Message;

/// Frames every dialect must shrug off: not JSON, not objects, wrong types, nesting past
/// serde_json's recursion limit, a huge string, unknown types.
fn junk() -> Vec<String> {
    let mut v: Vec<String> = [
        "",
        "not json",
        "{",
        "[]",
        "[[]]",
        "42",
        "null",
        "\"a string\"",
        r#"{"type":null}"#,
        r#"{"type":42}"#,
        r#"{"type":"tabClosed","tabId":"five"}"#,
        r#"{"type":"tabClosed","tabId":1e999}"#,
        r#"{"type":"tabCreated","tab":{"id":-9223372036854775809}}"#,
        r#"{"type":"tabFocused","tabId":1,"tools":"many"}"#,
        r#"{"type":"hello","instanceId":["x"]}"#,
        r#"{"type":"tool_result","id":{"nested":true}}"#,
        r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":42}"#,
        r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}"#,
        r#"{"type":"somethingNew","x":[1,2,3]}"#,
        "\u{feff}{\"type\":\"ping\"}",
        "{\"type\":\"ping\",\"x\":\"\\ud800\"}",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push(nested(100_000));
    v.push(format!(
        r#"{{"type":"tabUpdated","tab":{{"id":1,"title":{}}}}}"#,
        nested(200)
    ));
    v.push(format!(
        r#"{{"type":"ping","pad":"{}"}}"#,
        "x".repeat(2 << 20)
    ));
    v
}

async fn send_junk(ws: &mut Ws) {
    for frame in junk() {
        ws.send(Message::text(frame)).await.unwrap();
    }
    ws.send(Message::binary(vec![0u8, 159, 146, 150]))
        .await
        .unwrap();
}

/// The daemon still serves a call through a well-behaved browser.
pub(crate) async fn still_serves(d: &TestDaemon, good: &mut FakeExtension) {
    let cli = ctl_async(d, &["call", "search", "--tab", "b1:1", "--query", "ok"]);
    good.answer_call(json!("still fine")).await;
    let out = cli.await.unwrap();
    assert_eq!(stdout(&out).trim(), "still fine", "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn junk_on_every_dialect_leaves_everyone_else_served() {
    let d = TestDaemon::start();
    let mut good =
        FakeExtension::connect(&d, "good", vec![tab(1, "Good", vec![search_tool()])]).await;

    // Seed 001, after `connected`.
    let mut bridge = FakeExtension::connect(&d, "bad", vec![tab(5, "Bad", vec![])]).await;
    send_junk(&mut bridge.ws).await;
    bridge.send(json!({"type": "ping"})).await;
    bridge.expect("pong").await;

    // Seed 001/002 on `GET /` before any valid first message: junk as the first frame makes
    // it a bridge connection that is still waiting for `connected`.
    let mut first = FakeExtension::raw(&d.ws_url(), &[]).await.unwrap();
    send_junk(&mut first).await;

    // Seed 002, after a valid hello.
    let mut reg = RegisterPeer::connect(&d).await;
    send_junk(&mut reg.ws).await;

    // Seed 003: each junk frame gets a JSON-RPC error, never silence or a crash.
    let mut rpc_browser = RpcPeer::browser(&d, "s3", vec![greet_tool()]).await;
    let mut agent = RpcPeer::agent(&d, "s3").await;
    for peer in [&mut rpc_browser, &mut agent] {
        for frame in junk() {
            peer.send_text(&frame).await;
        }
        peer.ws
            .send(Message::binary(vec![1u8, 2, 3]))
            .await
            .unwrap();
        let r = peer.request("ping", json!({})).await;
        assert_eq!(r["result"]["pong"], true, "{r}");
        let mut errors = 0;
        while let Some(m) = peer.try_recv(Duration::from_millis(200)).await {
            // A batch is answered with a batch.
            let first = m.as_array().and_then(|a| a.first()).unwrap_or(&m);
            assert!(first["error"]["code"].is_i64(), "{m}");
            errors += 1;
        }
        assert!(errors >= 15, "each bad frame is answered ({errors})");
    }
    // A huge string goes through intact.
    agent
        .send(
            json!({"jsonrpc": "2.0", "id": "big", "method": "tools/call",
            "params": {"name": "greet", "arguments": {"name": "x".repeat(1 << 20)}}}),
        )
        .await;
    let call = rpc_browser.answer_call(text_result("hi")).await;
    assert_eq!(
        call["params"]["arguments"]["name"].as_str().unwrap().len(),
        1 << 20
    );
    let r = agent.response(&json!("big")).await;
    assert_eq!(r["result"]["content"][0]["text"], "hi", "{r}");

    still_serves(&d, &mut good).await;
    let s = status(&d).await;
    assert!(s["badMessages"].as_u64().unwrap() >= 40, "{s}");
    assert_eq!(s["browsers"], 4, "{s}");
    // The junk changed no tab: the bad bridge's tab 5 is as it was.
    let (_, tab5) = api(&d, "GET", "/v1/tabs/b2:5", None).await;
    assert_eq!(tab5["title"], "Bad", "{tab5}");
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_http_requests_get_clear_errors() {
    let d = TestDaemon::start();
    let port = d.port;
    let post = |path: &str, body: &str, extra: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    // /register: malformed, mistyped, nested, oversize.
    for (body, want) in [
        ("not json", 400),
        ("[]", 400),
        (r#"{"userAgent": 5}"#, 400),
        (r#"{"windowId": "x"}"#, 400),
        (&nested(5000), 400),
        (&format!(r#"{{"userAgent":"{}"}}"#, "x".repeat(70_000)), 413),
    ] {
        let (status, v) = parse_response(&raw_http(port, &post("/register", body, "")).await);
        assert_eq!(status, want, "{}: {v}", &body[..body.len().min(40)]);
        assert!(v["error"]["code"].is_string(), "{v}");
    }
    // A body that lies about its length, a chunked body that never ends, garbage request
    // lines and headers: answered or closed, never hung (raw_http waits 10 s at most).
    for req in [
        "POST /register HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999999999999999\r\n\r\n".to_owned(),
        "GARBAGE\r\n\r\n".to_owned(),
        "GET / HTTP/9.9\r\nHost: localhost\r\n\r\n".to_owned(),
        format!("GET /{} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", "a".repeat(100_000)),
        format!("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nX: {}\r\n\r\n", "b".repeat(200_000)),
        "GET / HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\nConnection: close\r\n\r\n".to_owned(),
        "GET /nope HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".to_owned(),
    ] {
        let answer = raw_http(port, &req).await;
        let (status, _) = parse_response(&answer);
        assert!(status == 0 || status >= 400, "{}: {answer}", &req[..req.len().min(60)]);
    }
    // /mcp with the token: junk JSON-RPC is a JSON-RPC or HTTP error, oversize is refused.
    let auth = format!(
        "Authorization: Bearer {}\r\nAccept: application/json, text/event-stream\r\n",
        d.token
    );
    for body in [
        "not json".to_owned(),
        "[]".to_owned(),
        nested(100_000),
        r#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#.to_owned(),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}}"#,
            nested(120)
        ),
    ] {
        let answer = raw_http(port, &post("/mcp", &body, &auth)).await;
        let (status, _) = parse_response(&answer);
        assert!(
            (400..500).contains(&status),
            "{}: {answer}",
            &body[..body.len().min(40)]
        );
    }
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":"{}"}}}}"#,
        "x".repeat(5 << 20)
    );
    let (status, _) = parse_response(&raw_http(port, &post("/mcp", &huge, &auth)).await);
    assert_eq!(status, 413, "oversize /mcp body");
    // Still serving.
    let mut ext = FakeExtension::connect(&d, "s1", vec![tab(1, "T", vec![search_tool()])]).await;
    still_serves(&d, &mut ext).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn control_api_refuses_junk_and_oversize_bodies() {
    let d = TestDaemon::start();
    for (method, path, body, want) in [
        ("POST", "/v1/call", "{nope".to_owned(), 400),
        ("POST", "/v1/call", r#"{"tool": 5}"#.to_owned(), 400),
        (
            "POST",
            "/v1/call",
            r#"{"tool": "x", "timeoutMs": -1}"#.to_owned(),
            400,
        ),
        (
            "POST",
            "/v1/call",
            r#"{"tool": "x", "timeoutMs": 18446744073709551615}"#.to_owned(),
            400,
        ),
        (
            "POST",
            "/v1/call",
            r#"{"tool": "x", "retries": 4000000000}"#.to_owned(),
            400,
        ),
        ("POST", "/v1/call", nested(100_000), 400),
        ("POST", "/v1/tabs", r#"{"url": ["x"]}"#.to_owned(), 400),
        (
            "POST",
            "/v1/call",
            // Past what a call takes (an upload's bytes in base64, handlers::MAX_CALL_BODY).
            format!(r#"{{"tool":"{}"}}"#, "x".repeat(48 << 20)),
            413,
        ),
        ("DELETE", "/v1/tabs/b1:1?timeoutMs=soon", String::new(), 400),
        ("DELETE", "/v1/tabs/b1:1?timeoutMs=0", String::new(), 400),
        ("GET", "/v1/events?count=-1", String::new(), 400),
        ("GET", "/v1/events?type=nope", String::new(), 400),
        ("GET", "/v1/tabs/%ff%fe", String::new(), 404),
        ("GET", "/v1/../../etc/passwd", String::new(), 404),
        ("GET", "/v2/status", String::new(), 404),
        ("PATCH", "/v1/call", String::new(), 405),
    ] {
        let (status, v) = api(&d, method, path, Some(&body)).await;
        assert_eq!(
            status,
            want,
            "{method} {path} {}: {v}",
            &body[..body.len().min(40)]
        );
        assert!(v["error"]["code"].is_string(), "{v}");
    }
    let s = status(&d).await;
    assert_eq!(s["callsInFlight"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn oversize_frames_close_with_1009_on_every_dialect() {
    let d = TestDaemon::builder()
        .args(&["--max-frame-bytes", "65536"])
        .start();
    let big = format!(r#"{{"type":"ping","pad":"{}"}}"#, "x".repeat(70_000));
    let mut good =
        FakeExtension::connect(&d, "good", vec![tab(1, "Good", vec![search_tool()])]).await;

    let mut bridge = FakeExtension::connect(&d, "b", vec![]).await;
    bridge.send_text(&big).await;
    assert_eq!(close_code(&mut bridge.ws).await, Some(1009), "bridge");

    let mut first = FakeExtension::raw(&d.ws_url(), &[]).await.unwrap();
    first.send(Message::text(big.clone())).await.unwrap();
    assert_eq!(
        close_code(&mut first).await,
        Some(1009),
        "a first message on GET /"
    );

    let mut reg = RegisterPeer::connect(&d).await;
    reg.ws.send(Message::text(big.clone())).await.unwrap();
    assert_eq!(close_code(&mut reg.ws).await, Some(1009), "register");

    for client in ["browser", "agent"] {
        let mut p = RpcPeer::connect(&d, "s", client).await;
        p.send_text(&big).await;
        assert_eq!(close_code(&mut p.ws).await, Some(1009), "jsonrpc {client}");
    }
    // Binary frames over the cap too.
    let mut bin = FakeExtension::connect(&d, "bin", vec![]).await;
    bin.ws
        .send(Message::binary(vec![7u8; 70_000]))
        .await
        .unwrap();
    assert_eq!(close_code(&mut bin.ws).await, Some(1009), "binary");

    still_serves(&d, &mut good).await;
    status_until(&d, "the closed connections to be gone", |s| {
        s["browsers"] == 1
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_on_one_connection_does_not_starve_the_others() {
    let d = TestDaemon::start();
    let mut good =
        FakeExtension::connect(&d, "good", vec![tab(1, "Good", vec![search_tool()])]).await;
    let flooder = FakeExtension::connect(&d, "flood", vec![tab(7, "F", vec![])]).await;
    let (mut sink, stream) = flooder.ws.split();
    // Never read: the daemon's pongs back up in the socket buffers.
    let flood = tokio::spawn(async move {
        for i in 0..20_000u32 {
            let m = if i % 2 == 0 {
                json!({"type": "ping"}).to_string()
            } else {
                json!({"type": "tabUpdated", "tab": {"id": 7, "title": format!("t{i}"), "url": "https://x"}}).to_string()
            };
            if sink.feed(Message::text(m)).await.is_err() {
                break;
            }
        }
        let _ = sink.flush().await;
        (sink, stream)
    });
    for _ in 0..5 {
        still_serves(&d, &mut good).await;
    }
    let (_sink, _stream) = flood.await.unwrap();
    // The flood was read and applied, in order.
    let s = status_until(&d, "the flood to be applied", |s| {
        s["lastEventSeq"].as_u64().unwrap() >= 10_000
    })
    .await;
    assert_eq!(s["browsers"], 2);
    let (_, tab) = api(&d, "GET", "/v1/tabs/b2:7", None).await;
    assert_eq!(tab["title"], "t19999", "{tab}");
}

#[tokio::test(flavor = "multi_thread")]
async fn handshakes_that_never_finish_are_timed_out() {
    let d = TestDaemon::builder()
        .args(&["--handshake-timeout", "300ms", "--sniff-window", "100ms"])
        .start();
    let limit = Duration::from_secs(5);
    // Extension port: nothing at all, half a request line, half a header block.
    for partial in [
        "",
        "GET / HT",
        "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: Upgr",
    ] {
        let mut s = tokio::net::TcpStream::connect(("127.0.0.1", d.port))
            .await
            .unwrap();
        s.write_all(partial.as_bytes()).await.unwrap();
        assert!(
            closed_within(&mut s, limit).await.is_some(),
            "not closed: {partial:?}"
        );
    }
    // A body that never arrives on /register.
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", d.port))
        .await
        .unwrap();
    s.write_all(
        b"POST /register HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{\"user",
    )
    .await
    .unwrap();
    assert!(
        closed_within(&mut s, limit).await.is_some(),
        "a slow /register body"
    );
    // A WebSocket on GET / that never says `connected`: closed with 1008.
    let mut silent = FakeExtension::raw(&d.ws_url(), &[]).await.unwrap();
    assert_eq!(close_code(&mut silent).await, Some(1008));

    // Control socket: half a request does not block a whole one, and is closed in time.
    let mut half = tokio::net::UnixStream::connect(&d.socket).await.unwrap();
    half.write_all(b"GET /v1/status HTTP/1.1\r\nHost: d\r\n")
        .await
        .unwrap();
    let mut half_body = tokio::net::UnixStream::connect(&d.socket).await.unwrap();
    half_body
        .write_all(b"POST /v1/call HTTP/1.1\r\nHost: d\r\nContent-Length: 50\r\n\r\n{\"to")
        .await
        .unwrap();
    assert_eq!(status(&d).await["browsers"], 0);
    let mut buf = Vec::new();
    let read = tokio::time::timeout(
        limit,
        tokio::io::AsyncReadExt::read_to_end(&mut half, &mut buf),
    )
    .await;
    assert!(read.is_ok(), "a half-sent control request is closed");
    let mut buf = Vec::new();
    tokio::time::timeout(
        limit,
        tokio::io::AsyncReadExt::read_to_end(&mut half_body, &mut buf),
    )
    .await
    .expect("a control body that never ends is answered and closed")
    .unwrap();
    let (code, v) = parse_response(&String::from_utf8_lossy(&buf));
    assert_eq!(code, 400, "{v}");
    status_until(&d, "idle", |s| {
        s["controlConnections"] == 1 && s["extensionConnections"] == 0
    })
    .await;
}
