//! Configured limits: connections per listener, tabs per browser, tools per tab, calls in
//! flight (daemon-wide and per agent), and the event-stream buffer. Each is enforced with
//! LIMIT_EXCEEDED (or a JSON-RPC -32000 carrying it), never a crash or a silent drop, and
//! the daemon serves again once the load is gone.

use crate::support::common::*;
use crate::support::harness::*;
use crate::support::peers::*;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread")]
async fn connection_limits_refuse_with_limit_exceeded_and_recover() {
    let d = TestDaemon::builder()
        .args(&["--max-connections", "3", "--max-control-connections", "3"])
        .start();
    let port = d.port;
    let mut held = Vec::new();
    for i in 0..3 {
        held.push(FakeExtension::connect(&d, &format!("s{i}"), vec![]).await);
    }
    // Any route over the limit: an answer that says why, then the connection closes.
    for req in [
        upgrade_request("/", port, ""),
        "POST /register HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}".to_owned(),
        "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".to_owned(),
    ] {
        let (status, v) = parse_response(&raw_http(port, &req).await);
        assert_eq!(status, 429, "{v}");
        assert_eq!(v["error"]["code"], "LIMIT_EXCEEDED");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("--max-connections"),
            "{v}"
        );
    }
    // Control socket: three event streams fill it; a fourth request is refused.
    let mut streams = Vec::new();
    for _ in 0..3 {
        let mut s = tokio::net::UnixStream::connect(&d.socket).await.unwrap();
        s.write_all(b"GET /v1/events HTTP/1.1\r\nHost: d\r\n\r\n")
            .await
            .unwrap();
        let mut r = tokio::io::BufReader::new(s);
        let mut line = String::new();
        r.read_line(&mut line).await.unwrap();
        assert!(line.starts_with("HTTP/1.1 200"), "{line}");
        streams.push(r);
    }
    let (code, v) = api(&d, "GET", "/v1/status", None).await;
    assert_eq!(code, 429, "{v}");
    assert_eq!(v["error"]["code"], "LIMIT_EXCEEDED");
    drop(streams.pop());
    // The freed slot serves again, and status saw it all.
    let s = status_until(&d, "a free control slot", |_| true).await;
    assert_eq!(s["extensionConnections"], 3);
    assert!(s["limitsExceeded"].as_u64().unwrap() >= 4, "{s}");
    drop(held.pop());
    status_until(&d, "a free extension slot", |s| {
        s["extensionConnections"] == 2
    })
    .await;
    let _again = FakeExtension::connect(&d, "again", vec![]).await;
    // The held connections were never disturbed.
    let s = status(&d).await;
    assert_eq!(s["browsers"], 3, "{s}");
}

#[tokio::test(flavor = "multi_thread")]
async fn tab_and_tool_limits_refuse_what_goes_beyond_and_keep_the_rest() {
    let d = TestDaemon::builder()
        .args(&["--max-tabs-per-browser", "3", "--max-tools-per-tab", "2"])
        .start();
    let tabs: Vec<Value> = (1..=5)
        .map(|i| tab(i, &format!("T{i}"), vec![tool("a")]))
        .collect();
    let mut ext = FakeExtension::connect(&d, "s", tabs).await;
    let s = status_until(&d, "three tabs", |s| s["tabs"] == 3).await;
    assert_eq!(s["limitsExceeded"], 1, "{s}");
    ext.send(json!({"type": "tabCreated", "tab": tab(6, "T6", vec![])}))
        .await;
    ext.send(json!({"type": "tabFocused", "tabId": 7})).await;
    ext.send(
        json!({"type": "toolsChanged", "tabId": 1, "tools": [tool("a"), tool("b"), tool("c")]}),
    )
    .await;
    // Updates within the limits still apply.
    ext.send(json!({"type": "toolsChanged", "tabId": 2, "tools": [tool("a"), tool("b")]}))
        .await;
    let s = status_until(&d, "the refusals", |s| s["limitsExceeded"] == 4).await;
    assert_eq!(s["tabs"], 3);
    let (_, t1) = api(&d, "GET", "/v1/tabs/b1:1", None).await;
    assert_eq!(
        t1["tools"].as_array().unwrap().len(),
        1,
        "the old tool set is kept: {t1}"
    );
    let (_, t2) = api(&d, "GET", "/v1/tabs/b1:2", None).await;
    assert_eq!(t2["tools"].as_array().unwrap().len(), 2);
    let log = d.log();
    assert!(
        log.contains("LIMIT_EXCEEDED") && log.contains("--max-tabs-per-browser"),
        "{log}"
    );

    // JSON-RPC browsers are told.
    let mut b = RpcPeer::browser(&d, "r", vec![greet_tool()]).await;
    let r = b
        .request(
            "tools/register",
            json!({"tools": [tool("a"), tool("b"), tool("c")]}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32000, "{r}");
    assert_eq!(r["error"]["data"]["code"], "LIMIT_EXCEEDED", "{r}");
    let r = b.request("ping", json!({})).await;
    assert_eq!(r["result"]["pong"], true, "still connected");
    let (_, tools) = api(&d, "GET", "/v1/tools?browser=b2", None).await;
    assert_eq!(
        tools["tools"][0]["name"], "greet",
        "the registered set is kept: {tools}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_in_flight_are_capped_daemon_wide_and_per_mcp_session() {
    let d = TestDaemon::builder()
        .args(&["--max-calls-in-flight", "2", "--agent-max-in-flight", "1"])
        .start();
    let mut ext = FakeExtension::connect(&d, "s", vec![tab(1, "T", vec![search_tool()])]).await;
    let slow = |q: &str| {
        let socket = d.socket.clone();
        let body = json!({"tool": "search", "args": {"query": q}, "timeoutMs": 10000}).to_string();
        tokio::spawn(async move { api_at(&socket, "POST", "/v1/call", Some(&body)).await })
    };
    let a = slow("a");
    let first = ext.expect("callTool").await;
    // The second waits for its turn on the tab (issue 60): in flight all the same.
    let b = slow("b");
    wait_until(Duration::from_secs(10), "two calls in flight", || {
        (d.status()["callsInFlight"] == 2).then_some(())
    });
    let (code, v) = call_search(&d, "c").await;
    assert_eq!(code, 429, "{v}");
    assert_eq!(v["error"]["code"], "LIMIT_EXCEEDED");
    assert_eq!(v["error"]["retryable"], true);
    ext.send(json!({"type": "toolResult", "callId": first["callId"], "result": "done"}))
        .await;
    let second = ext.expect("callTool").await;
    ext.send(json!({"type": "toolResult", "callId": second["callId"], "result": "done"}))
        .await;
    assert_eq!(a.await.unwrap().0, 200);
    assert_eq!(b.await.unwrap().0, 200);

    // One MCP session may have one call in flight (--agent-max-in-flight).
    use rmcp::ServiceExt;
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            format!("http://127.0.0.1:{}/mcp", d.port),
        )
        .auth_header(d.token.clone()),
    );
    let client = std::sync::Arc::new(().serve(transport).await.unwrap());
    let args: rmcp::model::JsonObject = serde_json::from_value(json!({"query": "m"})).unwrap();
    let c1 = {
        let client = client.clone();
        let args = args.clone();
        tokio::spawn(async move {
            client
                .call_tool(rmcp::model::CallToolRequestParams::new("search").with_arguments(args))
                .await
        })
    };
    let held = ext.expect("callTool").await;
    let r = client
        .call_tool(rmcp::model::CallToolRequestParams::new("search").with_arguments(args))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let text = serde_json::to_string(&r.content).unwrap();
    assert!(text.contains("LIMIT_EXCEEDED"), "{text}");
    ext.send(json!({"type": "toolResult", "callId": held["callId"], "result": "ok"}))
        .await;
    let r = c1.await.unwrap().unwrap();
    assert_ne!(r.is_error, Some(true));
    let s = status(&d).await;
    assert_eq!(s["callsInFlight"], 0);
    assert!(s["limitsExceeded"].as_u64().unwrap() >= 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tiny_event_stream_buffer_loses_nothing_silently() {
    let d = TestDaemon::builder()
        .args(&["--event-stream-buffer", "1"])
        .start();
    let mut ext = FakeExtension::connect(&d, "s", vec![]).await;
    let mut s = tokio::net::UnixStream::connect(&d.socket).await.unwrap();
    s.write_all(b"GET /v1/events?since=0 HTTP/1.1\r\nHost: d\r\n\r\n")
        .await
        .unwrap();
    let mut r = tokio::io::BufReader::new(s);
    // A burst the reader cannot take one by one.
    for i in 0..300 {
        ext.send(json!({"type": "tabCreated", "tab": tab(i, "T", vec![])}))
            .await;
    }
    let last = status_until(&d, "the burst applied", |s| s["tabs"] == 300).await["lastEventSeq"]
        .as_u64()
        .unwrap();
    // Every seq up to the last is either delivered or inside a `lagged` range, in order.
    let mut next = 1u64;
    let mut line = String::new();
    while next <= last {
        line.clear();
        tokio::time::timeout(Duration::from_secs(10), r.read_line(&mut line))
            .await
            .expect("events")
            .unwrap();
        let Ok(e) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        if e["type"] == "lagged" {
            assert_eq!(e["data"]["from"].as_u64().unwrap(), next, "{e}");
            next = e["data"]["to"].as_u64().unwrap() + 1;
        } else {
            assert_eq!(e["seq"].as_u64().unwrap(), next, "{e}");
            next += 1;
        }
    }
}
