//! The short way for calls of listed tab tools (issue 17): answered by the transport, past
//! rmcp's service, and still the same answers. Raw clients, so what is on the wire is what is
//! checked: over `/mcp` one `application/json` answer (rmcp's path answers as an event
//! stream), over `browserctl mcp` whole lines however the two kinds of answer interleave.

use crate::support::common::*;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// One MCP client of `/mcp` on one keep-alive connection, with a session.
struct Http {
    sender: SendRequest<Full<Bytes>>,
    host: String,
    token: String,
    session: Option<String>,
}

impl Http {
    /// A connection of its own, in `session` if given.
    async fn connect(d: &TestDaemon, session: Option<String>) -> Http {
        let host = format!("127.0.0.1:{}", d.port);
        let stream = tokio::net::TcpStream::connect(&host).await.unwrap();
        Http {
            sender: http1_client(stream).await,
            host,
            token: d.token.clone(),
            session,
        }
    }

    async fn start(d: &TestDaemon) -> Http {
        let mut c = Http::connect(d, None).await;
        let (_, init) = c
            .post(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}}}),
            )
            .await;
        assert!(init[0]["result"]["serverInfo"].is_object(), "{init:?}");
        assert!(c.session.is_some(), "a session id");
        c.post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        c
    }

    /// POSTs one message; the answer's content type and the messages it carries.
    async fn post(&mut self, msg: Value) -> (String, Vec<Value>) {
        let mut req = hyper::Request::post("/mcp")
            .header("host", &self.host)
            .header("authorization", format!("Bearer {}", self.token))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s);
        }
        let req = req.body(Full::new(Bytes::from(msg.to_string()))).unwrap();
        self.sender.ready().await.unwrap();
        let resp = tokio::time::timeout(Duration::from_secs(20), self.sender.send_request(req))
            .await
            .expect("an answer within 20 s")
            .unwrap();
        assert!(resp.status().is_success(), "{msg}: {}", resp.status());
        if let Some(s) = resp.headers().get("mcp-session-id") {
            self.session = Some(s.to_str().unwrap().to_owned());
        }
        let kind = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8(body.to_vec()).unwrap();
        let messages = if kind.starts_with("application/json") {
            vec![serde_json::from_str(&text).unwrap()]
        } else {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str(d.trim()).ok())
                .collect()
        };
        (kind, messages)
    }
}

fn call(id: u64, name: &str, meta: Option<Value>) -> Value {
    let mut params = json!({"name": name, "arguments": {"query": "q"}});
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// The next line of `browserctl mcp`, as JSON.
async fn read(lines: &mut StdoutLines) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("a line within 20 s")
        .unwrap()
        .expect("browserctl mcp still talking");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

fn answer_to(messages: &[Value], id: u64) -> Value {
    messages
        .iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("an answer to {id} in {messages:?}"))
        .clone()
}

type StdoutLines = tokio::io::Lines<BufReader<tokio::process::ChildStdout>>;

/// Messages as newline-delimited JSON, ready for one write.
fn ndjson(messages: &[Value]) -> String {
    messages.iter().map(|m| m.to_string() + "\n").collect()
}

/// `initialize` (id 1), `notifications/initialized` and `tools/list` (id 2), as one write.
fn handshake() -> String {
    ndjson(&[
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ])
}

/// A daemon with one tab (7) whose page has a `search` tool.
async fn daemon_with_search() -> (TestDaemon, FakeExtension) {
    let d = TestDaemon::start();
    let ext = FakeExtension::search_tab(&d).await;
    (d, ext)
}

/// `browserctl mcp` ends, successfully, within 10 s (`when` says when it should have).
async fn ends_well(mut child: tokio::process::Child, when: &str) {
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap_or_else(|_| panic!("{when}"))
        .unwrap();
    assert!(status.success(), "{status}");
}

/// `browserctl mcp` with raw stdio, past `initialize` and a listing of the tools (so that the
/// page's tools go the short way).
async fn stdio_session(
    d: &TestDaemon,
) -> (
    tokio::process::Child,
    tokio::process::ChildStdin,
    StdoutLines,
) {
    let mut child = tokio::process::Command::new(CTL)
        .arg("--socket")
        .arg(&d.socket)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    stdin.write_all(handshake().as_bytes()).await.unwrap();
    assert_eq!(read(&mut lines).await["id"], 1);
    let listed = read(&mut lines).await;
    assert_eq!(listed["id"], 2, "{listed}");
    (child, stdin, lines)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listed_tools_call_over_mcp_is_one_json_answer_equal_to_rmcps() {
    let (d, mut ext) = daemon_with_search().await;
    let mut c = Http::start(&d).await;

    // Before any listing the name is looked up afresh, on rmcp's path: an event stream.
    let (kind, first) = tokio::join!(c.post(call(2, "search", None)), async {
        ext.answer_call(json!("found")).await;
    })
    .0;
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    let (_, listed) = c
        .post(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
        .await;
    assert!(listed[0]["result"]["tools"]
        .to_string()
        .contains("\"search\""));

    // Listed: one JSON answer, the same as rmcp's.
    let ((kind, short), _) = tokio::join!(c.post(call(4, "search", None)), async {
        ext.answer_call(json!("found")).await;
    });
    assert!(kind.starts_with("application/json"), "{kind}");
    let short = answer_to(&short, 4);
    assert_eq!(short["result"], answer_to(&first, 2)["result"]);
    assert_eq!(short["jsonrpc"], "2.0");

    // A progress token asks for rmcp's path (progress rides on its stream); same answer.
    let ((kind, slow), _) = tokio::join!(
        c.post(call(5, "search", Some(json!({"progressToken": "p"})))),
        async {
            ext.answer_call(json!("found")).await;
        }
    );
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    assert_eq!(answer_to(&slow, 5)["result"], short["result"]);

    // Errors of the page, and invalid arguments, come the short way too, as results.
    let (_, bad) = c
        .post(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
            "params": {"name": "search", "arguments": {}}}))
        .await;
    let bad = answer_to(&bad, 6);
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(
        bad["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("INVALID_ARGUMENTS"),
        "{bad}"
    );

    // Cancelled the short way: the call ends with CANCELLED in the daemon, and its request
    // ends without an answer, as on rmcp's path.
    let before = d.status();
    let mut canceller = Http::connect(&d, c.session.clone()).await;
    let cancel = async {
        ext.expect("callTool").await;
        canceller
            .post(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 7, "reason": "enough"}}),
            )
            .await
    };
    let ((_, cancelled), (_, accepted)) = tokio::join!(c.post(call(7, "search", None)), cancel);
    assert!(accepted.is_empty(), "{accepted:?}");
    assert!(
        cancelled.iter().all(|m| m["id"] != 7),
        "no answer to a cancelled call: {cancelled:?}"
    );
    wait_until(Duration::from_secs(10), "the call to be cancelled", || {
        let s = d.status();
        (s["callsInFlight"] == 0
            && s["callsCancelled"] == before["callsCancelled"].as_u64().unwrap() + 1)
            .then_some(())
    });

    // The session goes on.
    let ((_, again), _) = tokio::join!(c.post(call(8, "search", None)), async {
        ext.answer_call(json!("found")).await;
    });
    assert_eq!(answer_to(&again, 8)["result"], short["result"]);
}

/// Short calls (10, 12) and an rmcp request (ping, 11), then `more`, as one write.
fn mixed_batch(more: &[Value]) -> String {
    let mut all = vec![
        call(10, "search", None),
        json!({"jsonrpc": "2.0", "id": 11, "method": "ping"}),
        call(12, "search", None),
    ];
    all.extend_from_slice(more);
    ndjson(&all)
}

/// `browserctl mcp` with raw stdio: answers of both paths come as whole lines, whatever
/// arrives together; a cancelled short call gets no answer and the next one does.
#[tokio::test(flavor = "multi_thread")]
async fn over_stdio_short_and_rmcp_answers_interleave_as_whole_lines() {
    let (d, mut ext) = daemon_with_search().await;
    let (child, mut stdin, mut lines) = stdio_session(&d).await;

    // Short calls and rmcp's requests in one write; the page answers both calls.
    let batch = mixed_batch(&[json!({"jsonrpc": "2.0", "id": 13, "method": "tools/list"})]);
    stdin.write_all(batch.as_bytes()).await.unwrap();
    ext.answer_call(json!("one")).await;
    ext.answer_call(json!("two")).await;
    let mut ids = Vec::new();
    for _ in 0..4 {
        let m = read(&mut lines).await;
        assert!(m.get("result").is_some(), "{m}");
        ids.push(m["id"].as_u64().unwrap());
    }
    ids.sort();
    assert_eq!(ids, [10, 11, 12, 13]);

    // Cancelled: no answer to 20; the next call's answer is the next line.
    let before = d.status();
    stdin
        .write_all(ndjson(&[call(20, "search", None)]).as_bytes())
        .await
        .unwrap();
    ext.expect("callTool").await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 20}});
    stdin
        .write_all(ndjson(&[cancel, call(21, "search", None)]).as_bytes())
        .await
        .unwrap();
    ext.answer_call(json!("after")).await;
    let next = read(&mut lines).await;
    assert_eq!(next["id"], 21, "{next}");
    wait_until(Duration::from_secs(10), "the call to be cancelled", || {
        let s = d.status();
        (s["callsInFlight"] == 0
            && s["callsCancelled"] == before["callsCancelled"].as_u64().unwrap() + 1)
            .then_some(())
    });
    drop(stdin);
    ends_well(child, "browserctl mcp ends with its input").await;
}

/// `printf … | browserctl mcp`: requests in flight when the input ends still get their
/// answers, short calls' and rmcp's alike, and then browserctl ends.
#[tokio::test(flavor = "multi_thread")]
async fn browserctl_mcp_answers_what_it_owes_after_its_input_ends() {
    let (d, mut ext) = daemon_with_search().await;
    let (child, mut stdin, mut lines) = stdio_session(&d).await;
    let batch = mixed_batch(&[]);
    stdin.write_all(batch.as_bytes()).await.unwrap();
    drop(stdin);
    // The page answers after the input has ended.
    ext.answer_call(json!("one")).await;
    ext.answer_call(json!("two")).await;
    let mut ids = Vec::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("a line or the end within 20 s")
        .unwrap()
    {
        let m: Value = serde_json::from_str(&line).unwrap();
        assert!(m.get("result").is_some(), "{m}");
        ids.push(m["id"].as_u64().unwrap());
    }
    ids.sort();
    assert_eq!(ids, [10, 11, 12], "every request answered before the end");
    ends_well(child, "browserctl mcp ends after its last answer").await;
}

/// A client of the socket's MCP session that sends everything and closes its sending side
/// (`printf … | socat`) still hears every answer, short calls' and rmcp's alike.
#[tokio::test(flavor = "multi_thread")]
async fn a_half_closed_socket_session_still_gets_its_answers() {
    let (d, mut ext) = daemon_with_search().await;
    let mut s = tokio::net::UnixStream::connect(&d.socket).await.unwrap();
    let lines = handshake();
    s.write_all(
        format!(
            "GET /v1/mcp HTTP/1.1\r\nHost: d\r\nConnection: Upgrade\r\nUpgrade: mcp-stdio\r\n\r\n{lines}"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let (r, mut w) = s.into_split();
    let mut r = BufReader::new(r);
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") {
        let mut line = String::new();
        assert!(r.read_line(&mut line).await.unwrap() > 0, "{head}");
        head.push_str(&line);
    }
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let mut lines = r.lines();
    assert_eq!(next_message(&mut lines).await.unwrap()["id"], 1);
    assert_eq!(next_message(&mut lines).await.unwrap()["id"], 2);
    // A short call and a ping, then the end of the client's input.
    let batch = ndjson(&[
        call(3, "search", None),
        json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
    ]);
    w.write_all(batch.as_bytes()).await.unwrap();
    w.shutdown().await.unwrap();
    ext.answer_call(json!("late but heard")).await;
    let mut ids = Vec::new();
    while let Some(m) = next_message(&mut lines).await {
        ids.push(m["id"].as_u64().unwrap());
    }
    ids.sort();
    assert_eq!(ids, [3, 4], "every answer, then the end");
}

/// The next message on a raw socket session, `None` at its end.
async fn next_message(
    lines: &mut tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
) -> Option<Value> {
    let l = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("a line within 20 s")
        .unwrap();
    l.map(|l| serde_json::from_str(&l).unwrap())
}
