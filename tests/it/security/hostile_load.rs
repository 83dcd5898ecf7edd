//! Hostile peers at scale: thousands of connections, deep JSON, hundreds of event streams, a
//! browser that stops reading. None of them may hang, crash or starve the daemon.

use crate::security::hostile::still_serves;
use crate::support::common::*;
use crate::support::harness::*;
use serde_json::json;
use tokio::io::AsyncWriteExt;

#[tokio::test(flavor = "multi_thread")]
async fn ten_thousand_connections_come_and_go_and_leave_nothing_behind() {
    let d = TestDaemon::builder()
        .args(&["--sniff-window", "50ms"])
        .start();
    let pid = d.child.id();
    // Warm up every path once, then take the baseline.
    let mut good =
        FakeExtension::connect(&d, "good", vec![tab(1, "Good", vec![search_tool()])]).await;
    still_serves(&d, &mut good).await;
    let base = status_until(&d, "a quiet start", |s| s["extensionConnections"] == 1).await;
    let (rss0, threads0) = proc_status(pid);

    let port = d.port;
    let token = d.token.clone();
    const CYCLES: usize = 10_000;
    const WORKERS: usize = 8;
    let mut workers = Vec::new();
    for w in 0..WORKERS {
        let token = token.clone();
        workers.push(tokio::spawn(async move {
            for i in (w..CYCLES).step_by(WORKERS) {
                let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .unwrap();
                let req = match i % 4 {
                    // Connect and go.
                    0 => None,
                    1 => Some(upgrade_request("/", port, "")),
                    // A new session id each time: nothing may be kept per session forever.
                    2 => Some(upgrade_request(
                        &format!("/ws?sessionId=c{i}&clientType=browser"),
                        port,
                        "",
                    )),
                    _ => Some(upgrade_request(
                        &format!("/ws?sessionId=c&clientType=agent&token={token}"),
                        port,
                        "",
                    )),
                };
                if let Some(req) = req {
                    s.write_all(req.as_bytes()).await.unwrap();
                    let mut buf = [0u8; 256];
                    let n = tokio::io::AsyncReadExt::read(&mut s, &mut buf)
                        .await
                        .unwrap_or(0);
                    assert!(
                        buf[..n].starts_with(b"HTTP/1.1 101"),
                        "{}",
                        String::from_utf8_lossy(&buf[..n])
                    );
                }
                drop(s);
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    still_serves(&d, &mut good).await;
    let after = status_until(&d, "every connection to be gone", |s| {
        s["extensionConnections"] == 1 && s["tasks"].as_u64() <= base["tasks"].as_u64()
    })
    .await;
    let (rss1, threads1) = proc_status(pid);
    eprintln!(
        "10k cycles: rss {rss0} kB → {rss1} kB, threads {threads0} → {threads1}, tasks {} → {}",
        base["tasks"], after["tasks"]
    );
    assert_eq!(threads1, threads0, "threads back to baseline");
    assert_eq!(after["browsers"], 1, "no ghost browsers: {after}");
    assert_eq!(after["pendingCalls"], 0);
    // Memory: allocator caches may keep a little; a leak of even 1 kB per connection would
    // show as 10 MB.
    assert!(
        rss1 < rss0 + 8 * 1024,
        "rss grew from {rss0} kB to {rss1} kB"
    );
}

/// serde_json stops parsing at 128 levels, but `RawValue` (tool schemas, arguments, results)
/// is skipped over without that limit: whatever parses it later must cope, and nothing may
/// recurse without bound (a stack overflow would abort the whole daemon).
#[tokio::test(flavor = "multi_thread")]
async fn deep_json_is_refused_or_passed_through_never_recursed() {
    // On the default single runtime thread (the main thread's 8 MiB stack), and on worker
    // threads (2 MiB stacks), where deep recursion would overflow first.
    deep_json(&[]).await;
    deep_json(&["--threads", "2"]).await;
}

async fn deep_json(flags: &[&str]) {
    let d = TestDaemon::builder().args(flags).start();
    let tools = [
        format!(r#"{{"name":"deep","inputSchema":{}}}"#, deep_schema(60)),
        format!(r#"{{"name":"over","inputSchema":{{"type":"object","x":{}}}}}"#, nested(100_000)),
        r##"{"name":"cyclic","inputSchema":{"$ref":"#"}}"##.to_owned(),
        r##"{"name":"cyclic2","inputSchema":{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}}"##.to_owned(),
        r##"{"name":"cyclic3","inputSchema":{"type":"object","properties":{"a":{"$ref":"#"}}}}"##.to_owned(),
    ];
    let ws = FakeExtension::raw(&d.ws_url(), &[]).await.unwrap();
    let mut ext = FakeExtension {
        ws,
        session: "deep".into(),
    };
    ext.send_text(&format!(
        r#"{{"type":"connected","sessionId":"deep","browser":{{"name":"C","version":"1"}},"tabs":[{{"id":1,"title":"T","url":"https://x","tools":[{}]}}]}}"#,
        tools.join(",")
    ))
    .await;
    ext.expect("connect").await;
    status_until(&d, "5 tools", |s| s["tools"] == 5).await;

    let mut deep_args = r#""x""#.to_owned();
    for _ in 0..60 {
        deep_args = format!(r#"{{"a":{deep_args}}}"#);
    }
    let mut cyclic_args = "{}".to_owned();
    for _ in 0..100 {
        cyclic_args = format!(r#"{{"a":{cyclic_args}}}"#);
    }
    let deep_result = nested(100_000);
    for (tool, args) in [
        ("deep", deep_args.as_str()),
        ("over", "{}"),
        ("cyclic", "{}"),
        ("cyclic2", "{}"),
        ("cyclic3", cyclic_args.as_str()),
    ] {
        let body = format!(r#"{{"tool":"{tool}","tab":"b1:1","args":{args},"timeoutMs":5000}}"#);
        let socket = d.socket.clone();
        let req =
            tokio::spawn(async move { api_at(&socket, "POST", "/v1/call", Some(&body)).await });
        let call = ext.expect("callTool").await;
        ext.send_text(&format!(
            r#"{{"type":"toolResult","callId":"{}","result":{deep_result},"error":null}}"#,
            call["callId"].as_str().unwrap()
        ))
        .await;
        // The answer is passed through as it came (too deep for the test's parser too).
        let (code, _) = req.await.unwrap();
        assert_eq!(code, 200, "{tool}");
    }
    // Arguments deeper than serde_json's limit are refused, not passed on.
    for args in [nested(200), format!(r#"{{"a":{}}}"#, nested(100_000))] {
        let body = format!(r#"{{"tool":"deep","tab":"b1:1","args":{args}}}"#);
        let (code, v) = api(&d, "POST", "/v1/call", Some(&body)).await;
        assert_eq!(code, 400, "{v}");
        assert_eq!(v["error"]["code"], "INVALID_ARGUMENTS");
    }
    // MCP clients see every tool (a schema too deep to read becomes `{"type":"object"}`) and
    // get a deep result as text.
    let auth = format!("Bearer {}", d.token);
    let client = rmcp_client(&d, &auth).await;
    let listed = client.list_all_tools().await.unwrap();
    assert!(
        listed.iter().any(|t| t.name.starts_with("over")),
        "{listed:?}"
    );
    let call = tokio::spawn(async move {
        let r = client
            .call_tool(
                rmcp::model::CallToolRequestParams::new("deep")
                    .with_arguments(serde_json::from_str(&deep_args).unwrap()),
            )
            .await;
        (client, r)
    });
    let c = ext.expect("callTool").await;
    ext.send_text(&format!(
        r#"{{"type":"toolResult","callId":"{}","result":{deep_result},"error":null}}"#,
        c["callId"].as_str().unwrap()
    ))
    .await;
    let (client, r) = call.await.unwrap();
    let r = r.unwrap();
    let text = serde_json::to_string(&r.content).unwrap();
    assert!(
        text.contains("[[[[") && r.is_error != Some(true),
        "{}",
        &text[..200.min(text.len())]
    );
    let _ = client.cancel().await;
    assert_eq!(status(&d).await["browsers"], 1);
}

async fn rmcp_client(
    d: &TestDaemon,
    auth: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::ServiceExt;
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("http://127.0.0.1:{}/mcp", d.port))
            .auth_header(auth.trim_start_matches("Bearer ").to_owned()),
    );
    ().serve(transport).await.expect("an MCP session")
}

#[tokio::test(flavor = "multi_thread")]
async fn hundreds_of_event_streams_block_no_one() {
    use tokio::io::AsyncBufReadExt;
    let d = TestDaemon::start();
    let base = status(&d).await;
    let mut streams = Vec::new();
    for i in 0..300 {
        let mut s = tokio::net::UnixStream::connect(&d.socket).await.unwrap();
        // Some ask for the whole backlog; none reads until later (most never do).
        let q = if i % 3 == 0 { "?since=0" } else { "" };
        s.write_all(format!("GET /v1/events{q} HTTP/1.1\r\nHost: d\r\n\r\n").as_bytes())
            .await
            .unwrap();
        streams.push(tokio::io::BufReader::new(s));
    }
    let mut ext = FakeExtension::connect(&d, "s", vec![tab(1, "T", vec![search_tool()])]).await;
    for i in 0..200 {
        ext.send(json!({"type": "tabUpdated", "tab": {"id": 1, "title": format!("t{i}"), "url": "https://x"}}))
            .await;
    }
    // Calls and status go on meanwhile.
    still_serves(&d, &mut ext).await;
    let s = status_until(&d, "300 streams", |s| s["controlConnections"] == 301).await;
    assert!(s["lastEventSeq"].as_u64().unwrap() >= 200);
    // A reader that does read sees events.
    let r = &mut streams[0];
    let mut line = String::new();
    let mut seen = 0;
    while seen < 5 {
        line.clear();
        r.read_line(&mut line).await.unwrap();
        if line.starts_with('{') {
            seen += 1;
        }
    }
    drop(streams);
    let after = status_until(&d, "the streams gone", |s| {
        s["controlConnections"] == 1
            && s["tasks"].as_u64() <= Some(base["tasks"].as_u64().unwrap() + 1)
    })
    .await;
    assert_eq!(after["browsers"], 1);
}

/// A browser that stops reading: the daemon's writes to it block, its command queue (1024)
/// fills, and then callers must still get an answer within their timeout (they used to wait
/// for room in the queue with no deadline, for as long as the socket stayed open).
#[tokio::test(flavor = "multi_thread")]
async fn a_browser_that_stops_reading_cannot_hang_callers() {
    let d = TestDaemon::start();
    let mut good =
        FakeExtension::connect(&d, "good", vec![tab(1, "Good", vec![search_tool()])]).await;
    // A read-only tool, so that the calls go out side by side: an action would wait for its
    // turn on the tab (issue 60), one at a time, and never fill the connection's queue.
    let mut read_only = search_tool();
    read_only["annotations"] = json!({"readOnlyHint": true});
    let stuck = FakeExtension::connect(&d, "stuck", vec![tab(2, "Stuck", vec![read_only])]).await;
    status_until(&d, "two browsers", |s| s["browsers"] == 2).await;
    // Never read again; big arguments fill the socket buffers quickly.
    let _held = stuck;
    let big = "x".repeat(256 << 10);
    const CALLS: usize = 1200;
    let started = std::time::Instant::now();
    let mut calls = Vec::new();
    for i in 0..CALLS {
        let socket = d.socket.clone();
        let query = if i < 64 { big.clone() } else { i.to_string() };
        let body = json!({"tool": "search", "tab": "b2:2", "args": {"query": query},
            "timeoutMs": 2000, "retries": 0})
        .to_string();
        calls.push(tokio::spawn(async move {
            api_at(&socket, "POST", "/v1/call", Some(&body)).await
        }));
    }
    // Everyone else is served meanwhile.
    still_serves(&d, &mut good).await;
    let mut codes = std::collections::BTreeMap::new();
    for c in calls {
        let (status, v) = c.await.unwrap();
        assert!(status >= 400, "{v}");
        *codes
            .entry(v["error"]["code"].as_str().unwrap_or("none").to_owned())
            .or_insert(0) += 1;
    }
    let took = started.elapsed();
    eprintln!("{CALLS} calls to a browser that stopped reading: {codes:?} in {took:?}");
    assert!(
        codes
            .keys()
            .all(|c| c == "MESSAGE_TIMEOUT" || c == "SEND_ERROR"),
        "{codes:?}"
    );
    assert!(
        codes.contains_key("SEND_ERROR"),
        "the queue did fill: {codes:?}"
    );
    still_serves(&d, &mut good).await;
}
