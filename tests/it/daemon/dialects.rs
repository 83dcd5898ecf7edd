//! The register (seed 002) and JSON-RPC (seed 003) dialects through the real daemon, alone
//! and together with the bridge dialect on the same port.

use crate::support::common::*;
use crate::support::peers::*;
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

fn browsers(d: &TestDaemon) -> Vec<Value> {
    d.ctl_json(&["browsers"])["browsers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn wait_browsers(d: &TestDaemon, what: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    wait_until(Duration::from_secs(10), what, || {
        let b = browsers(d);
        pred(&b).then_some(b)
    })
}

fn id_of(browsers: &[Value], field: &str, value: &str) -> String {
    browsers
        .iter()
        .find(|b| b[field] == value)
        .unwrap_or_else(|| panic!("no browser with {field}={value} in {browsers:?}"))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn names(tools: &Value) -> BTreeSet<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn err_json(out: &std::process::Output) -> Value {
    serde_json::from_str(&stderr(out)).unwrap_or_else(|_| panic!("stderr: {}", stderr(out)))
}

// ---- seed 002 -------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn register_hello_and_calls_through_browserctl() {
    let d = TestDaemon::start();
    let reg = register(&d).await;
    let id = reg["instanceId"].as_str().unwrap().to_owned();
    let parts: Vec<&str> = id.split('_').collect();
    assert_eq!(parts.len(), 3, "{id}");
    assert_eq!(parts[0], "inst");
    assert!(parts[1].len() >= 13 && parts[1].bytes().all(|b| b.is_ascii_digit()));
    assert!(
        parts[2].len() == 6
            && parts[2]
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    );
    assert_eq!(reg["port"], d.port);
    assert_eq!(reg["websocketUrl"], format!("ws://localhost:{}", d.port));
    assert_ne!(register(&d).await["instanceId"], reg["instanceId"]);

    let ws = RegisterPeer::hello(&d, &id).await;
    let mut peer = RegisterPeer {
        ws,
        instance_id: id.clone(),
    };
    let welcome = peer.recv().await;
    assert_eq!(
        welcome,
        json!({"type": "welcome", "instanceId": id, "serverVersion": env!("CARGO_PKG_VERSION")})
    );
    let list = wait_browsers(&d, "the instance", |b| b.len() == 1);
    assert_eq!(list[0]["dialect"], "register");
    assert_eq!(list[0]["sessionId"], id.as_str());
    assert_eq!(list[0]["name"], "Chrome");
    assert_eq!(list[0]["tabs"], 0);
    let b = list[0]["id"].as_str().unwrap().to_owned();
    let tools = d.ctl_json(&["tools", "--browser", &b]);
    let listed = names(&tools["tools"]);
    for t in [
        "browser_navigate",
        "browser_interact",
        "browser_content",
        "browser_execute",
    ] {
        assert!(listed.contains(t), "{listed:?}");
    }
    assert_eq!(
        tools["tools"][0]["tab"],
        b.as_str(),
        "tools hang on the browser"
    );

    // action goto → browser_navigate, the routing-only instanceId is not sent on.
    let cli = ctl_async(
        &d,
        &[
            "call",
            "browser_navigate",
            "--browser",
            &b,
            "--action",
            "goto",
            "--url",
            "https://example.com",
            "--instanceId",
            &id,
        ],
    );
    let result = json!({"success": true, "url": "https://example.com/", "title": "Example Domain"});
    let call = peer.answer(result.clone()).await;
    assert!(call["id"].as_str().unwrap().starts_with("call_"), "{call}");
    assert_eq!(
        call,
        json!({"type": "tool_call", "id": call["id"], "name": "browser_navigate", "args": {"url": "https://example.com"}})
    );
    let out = cli.await.unwrap();
    assert_eq!(exit_code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        serde_json::from_str::<Value>(&stdout(&out)).unwrap(),
        result
    );

    // action wait → browser_wait_for; the browser named as a --tab works too.
    let cli = ctl_async(
        &d,
        &[
            "call",
            "browser_navigate",
            "--tab",
            &b,
            "--action",
            "wait",
            "--selector",
            "#ready",
        ],
    );
    let call = peer.answer(json!({"found": true})).await;
    assert_eq!(call["name"], "browser_wait_for");
    assert_eq!(call["args"], json!({"selector": "#ready"}));
    assert_eq!(exit_code(&cli.await.unwrap()), 0);

    // tool_error with a code: TOOL_ERROR, not retryable, the code kept.
    let cli = ctl_async(
        &d,
        &[
            "--json",
            "call",
            "browser_interact",
            "--browser",
            &b,
            "--action",
            "click",
            "--selector",
            "#nonexistent",
        ],
    );
    let call = peer.expect_call().await;
    assert_eq!(call["name"], "browser_mouse_click");
    peer.send(
        json!({"type": "tool_error", "id": call["id"], "error": {"code": "ELEMENT_NOT_FOUND",
        "message": "No element matches selector: #nonexistent"}}),
    )
    .await;
    let out = cli.await.unwrap();
    assert_eq!(exit_code(&out), 7, "{}", stderr(&out));
    let e = err_json(&out);
    assert_eq!(e["error"]["code"], "TOOL_ERROR");
    assert_eq!(e["error"]["retryable"], false);
    assert_eq!(e["error"]["details"]["toolCode"], "ELEMENT_NOT_FOUND");
    assert!(e["error"]["message"]
        .as_str()
        .unwrap()
        .contains("#nonexistent"));

    // An action outside the catalogue never reaches the extension.
    let out = d.ctl(&[
        "call",
        "browser_navigate",
        "--browser",
        &b,
        "--action",
        "fly",
    ]);
    assert_eq!(exit_code(&out), 6, "{}", stderr(&out));
    // Tab commands are refused clearly.
    let out = d.ctl(&["open", "https://example.com", "--browser", &b]);
    assert_ne!(exit_code(&out), 0);
    assert!(
        stderr(&out).contains("register dialect"),
        "{}",
        stderr(&out)
    );

    // The extension goes: the browser leaves and the instance is unregistered.
    drop(peer);
    wait_browsers(&d, "the instance to leave", |b| b.is_empty());
    let mut again = RegisterPeer::hello(&d, &id).await;
    let StreamFirst { text, code } = first_and_close(&mut again).await;
    assert_eq!(text["error"]["code"], "UNKNOWN_INSTANCE");
    assert_eq!(code, Some(4404));
}

struct StreamFirst {
    text: Value,
    code: Option<u16>,
}

async fn first_and_close(ws: &mut Ws) -> StreamFirst {
    let text = loop {
        match tokio::time::timeout(Duration::from_secs(10), ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => break serde_json::from_str(t.as_str()).unwrap(),
            Ok(Some(Ok(_))) => continue,
            other => panic!("expected a message, got {other:?}"),
        }
    };
    StreamFirst {
        text,
        code: close_code(ws).await,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn register_refusals_are_clear() {
    let d = TestDaemon::start();
    let body = r#"{"userAgent":"x","windowId":1}"#;
    let (status, v) = http(
        &d,
        "POST",
        "/register",
        &[("Origin", "https://evil.example")],
        Some(body),
    )
    .await;
    assert_eq!(status, 403, "{v}");
    assert_eq!(v["error"]["code"], "UNAUTHORIZED");
    let (status, v) = http(&d, "POST", "/register", &[], Some("not json")).await;
    assert_eq!(status, 400, "{v}");
    assert_eq!(v["error"]["code"], "BAD_REQUEST");
    let (status, _) = http(
        &d,
        "POST",
        "/register",
        &[("Origin", "chrome-extension://abc")],
        Some(body),
    )
    .await;
    assert_eq!(status, 200, "an extension origin may register");

    let mut stranger = RegisterPeer::hello(&d, "inst_1706234567890_abc123").await;
    let f = first_and_close(&mut stranger).await;
    assert_eq!(f.text["type"], "error");
    assert_eq!(f.text["error"]["code"], "UNKNOWN_INSTANCE");
    assert_eq!(f.code, Some(4404));

    let mut first = RegisterPeer::connect(&d).await;
    let mut twin = RegisterPeer::hello(&d, &first.instance_id).await;
    let f = first_and_close(&mut twin).await;
    assert_eq!(f.text["error"]["code"], "ALREADY_CONNECTED");
    assert_eq!(f.code, Some(4409));
    // The first connection is untouched.
    let b = wait_browsers(&d, "one instance", |b| b.len() == 1)[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let cli = ctl_async(
        &d,
        &[
            "call",
            "browser_execute",
            "--browser",
            &b,
            "--expression",
            "1+1",
        ],
    );
    let call = first.answer(json!(2)).await;
    assert_eq!(call["name"], "browser_evaluate");
    assert_eq!(stdout(&cli.await.unwrap()).trim(), "2");
}

#[tokio::test(flavor = "multi_thread")]
async fn missed_pongs_drop_a_dead_peer_and_fail_its_calls_at_once() {
    let d = TestDaemon::builder()
        .args(&["--ws-ping-interval", "250ms"])
        .start();
    // A live peer keeps reading, so its library answers every ping.
    let live = RegisterPeer::connect(&d).await;
    let live_id = live.instance_id.clone();
    let pings = Arc::new(AtomicUsize::new(0));
    let seen = pings.clone();
    let mut live_ws = live.ws;
    let reader = tokio::spawn(async move {
        while let Some(Ok(m)) = live_ws.next().await {
            if matches!(m, Message::Ping(_)) {
                seen.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    // Dead peers: connected, then never read again (so never answer a ping).
    let dead = RegisterPeer::connect(&d).await;
    let _dead_rpc = RpcPeer::browser(&d, "quiet", vec![greet_tool()]).await;
    let list = wait_browsers(&d, "three browsers", |b| b.len() == 3);
    let dead_b = id_of(&list, "sessionId", &dead.instance_id);

    let cli = ctl_async(
        &d,
        &[
            "--json",
            "call",
            "browser_navigate",
            "--browser",
            &dead_b,
            "--action",
            "reload",
            "--timeout",
            "60s",
        ],
    );
    let started = Instant::now();
    let out = cli.await.unwrap();
    assert_eq!(exit_code(&out), 9, "{}", stderr(&out));
    let e = err_json(&out);
    assert_eq!(e["error"]["code"], "WEBSOCKET_ERROR");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "failed when the peer was dropped, not at the 60 s timeout"
    );
    let left = wait_browsers(&d, "the dead peers to be dropped", |b| b.len() == 1);
    assert_eq!(left[0]["sessionId"], live_id.as_str());
    // The live peer answered many pings meanwhile and is still there.
    wait_until(Duration::from_secs(10), "pings to the live peer", || {
        (pings.load(Ordering::Relaxed) >= 6).then_some(())
    });
    assert_eq!(browsers(&d).len(), 1);
    // The dead instance was unregistered.
    let mut again = RegisterPeer::hello(&d, &dead.instance_id).await;
    assert_eq!(first_and_close(&mut again).await.code, Some(4404));
    drop(dead);
    reader.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_silent_bridge_client_still_gets_connect_on_the_shared_root() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension {
        ws: FakeExtension::raw(
            &d.ws_url(),
            &[("Origin", "chrome-extension://abcdefghijklmnop")],
        )
        .await
        .unwrap(),
        session: "patient".into(),
    };
    // It waits for `connect` before it speaks, as a strict seed-001 client may.
    let first = ext.recv().await;
    assert_eq!(first["type"], "connect", "{first}");
    ext.send(json!({"type": "connected", "sessionId": "patient",
        "browser": {"name": "Chrome", "version": "120"}, "tabs": [tab(3, "T", vec![])]}))
        .await;
    d.wait_tabs("the tab", |t| t.len() == 1);
    assert_eq!(browsers(&d)[0]["dialect"], "bridge");
}

// ---- seed 003 -------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn jsonrpc_browser_and_agent_round_trip() {
    let d = TestDaemon::start();
    let mut browser = RpcPeer::browser(&d, "s1", vec![greet_tool()]).await;
    let list = wait_browsers(&d, "the JSON-RPC browser", |b| b.len() == 1);
    assert_eq!(list[0]["dialect"], "jsonrpc");
    assert_eq!(list[0]["sessionId"], "s1");
    let b = list[0]["id"].as_str().unwrap().to_owned();
    let tools = d.ctl_json(&["tools", "--browser", &b]);
    assert_eq!(tools["tools"][0]["name"], "greet");
    assert_eq!(tools["tools"][0]["inputSchema"]["required"][0], "name");
    let out = d.ctl(&[
        "events",
        "--since",
        "0",
        "--type",
        "toolsChanged",
        "--count",
        "1",
    ]);
    let event: Value = serde_json::from_str(stdout(&out).lines().next().unwrap()).unwrap();
    assert_eq!(event["browser"], b.as_str());
    assert_eq!(event["data"]["tools"], json!(["greet"]));

    let mut agent = RpcPeer::agent(&d, "s1").await;
    let list = agent.request("tools/list", json!({})).await;
    assert_eq!(list["result"]["tools"][0]["name"], "greet", "{list}");
    assert_eq!(
        list["result"]["tools"][0]["inputSchema"]["required"][0],
        "name"
    );
    assert_eq!(list["result"]["tools"][0]["target"], b.as_str());

    // The seed's tools/call, verbatim.
    agent
        .send(json!({"jsonrpc": "2.0", "id": "6", "method": "tools/call",
            "params": {"name": "greet", "arguments": {"name": "World"}, "timeout": 30000}}))
        .await;
    let call = browser.expect_request("tools/call").await;
    assert_eq!(call["jsonrpc"], "2.0");
    assert_eq!(
        call["params"],
        json!({"name": "greet", "arguments": {"name": "World"}})
    );
    assert_ne!(
        call["id"], "6",
        "the browser sees the daemon's id, not the agent's"
    );
    browser
        .send(json!({"jsonrpc": "2.0", "id": call["id"], "result": text_result("Hello, World!")}))
        .await;
    let resp = agent.response(&json!("6")).await;
    assert_eq!(
        resp,
        json!({"jsonrpc": "2.0", "id": "6", "result": text_result("Hello, World!")})
    );

    // ping → pong for both kinds, with or without params; numeric ids are echoed as numbers.
    agent
        .send(json!({"jsonrpc": "2.0", "id": "2", "method": "ping"}))
        .await;
    assert_eq!(
        agent.response(&json!("2")).await,
        json!({"jsonrpc": "2.0", "id": "2", "result": {"pong": true}})
    );
    browser
        .send(json!({"jsonrpc": "2.0", "id": 42, "method": "ping", "params": {}}))
        .await;
    assert_eq!(
        browser.response(&json!(42)).await["result"],
        json!({"pong": true})
    );

    // browserctl calls the JSON-RPC browser's tool like any other.
    let cli = ctl_async(&d, &["call", "greet", "--browser", &b, "--name", "Ada"]);
    let call = browser.answer_call(text_result("Hello, Ada!")).await;
    assert_eq!(call["params"]["arguments"], json!({"name": "Ada"}));
    assert_eq!(stdout(&cli.await.unwrap()), "Hello, Ada!\n");

    // tools/register replaces the browser's tools.
    let r = browser
        .request("tools/register", json!({"tools": [tool("other")]}))
        .await;
    assert_eq!(r["result"]["registered"], 1);
    let list = agent.request("tools/list", json!({})).await;
    assert_eq!(
        names(&list["result"]["tools"]),
        BTreeSet::from(["other".to_owned()])
    );

    // The browser goes: the agent sees no tools and calls fail as connection errors.
    drop(browser);
    wait_browsers(&d, "the browser to leave", |b| b.is_empty());
    let list = agent.request("tools/list", json!({})).await;
    assert_eq!(list["result"]["tools"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_ids_never_collide_on_the_browser_side() {
    let d = TestDaemon::start();
    let mut browser = RpcPeer::browser(&d, "s", vec![greet_tool()]).await;
    let mut a = RpcPeer::agent(&d, "s").await;
    let mut b = RpcPeer::agent(&d, "s").await;
    for (peer, name) in [(&mut a, "A"), (&mut b, "B")] {
        peer.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "greet", "arguments": {"name": name}}}))
            .await;
    }
    let first = browser.expect_request("tools/call").await;
    let second = browser.expect_request("tools/call").await;
    assert_ne!(first["id"], second["id"]);
    // Answer in the reverse order, each with the name it was called with.
    for call in [&second, &first] {
        let name = call["params"]["arguments"]["name"].as_str().unwrap();
        browser
            .send(json!({"jsonrpc": "2.0", "id": call["id"], "result": text_result(&format!("Hello, {name}!"))}))
            .await;
    }
    assert_eq!(
        a.response(&json!(1)).await["result"]["content"][0]["text"],
        "Hello, A!"
    );
    assert_eq!(
        b.response(&json!(1)).await["result"]["content"][0]["text"],
        "Hello, B!"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn batches_and_notifications() {
    let d = TestDaemon::start();
    let mut browser = RpcPeer::browser(&d, "s", vec![greet_tool()]).await;
    let mut agent = RpcPeer::agent(&d, "s").await;
    agent
        .send_text(
            r#"[{"jsonrpc":"2.0","id":"a","method":"ping"},
                {"jsonrpc":"2.0","method":"ping"},
                {"jsonrpc":"2.0","id":"b","method":"tools/list"},
                {"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"greet","arguments":{"name":"Batch"}}},
                {"jsonrpc":"2.0","id":"d","method":"nope"},
                5]"#,
        )
        .await;
    browser.answer_call(text_result("Hello, Batch!")).await;
    let resp = agent.recv().await;
    let items = resp
        .as_array()
        .unwrap_or_else(|| panic!("a batch answer: {resp}"));
    assert_eq!(items.len(), 5, "the notification gets no entry: {resp}");
    let by_id = |id: Value| items.iter().find(|i| i["id"] == id).unwrap().clone();
    assert_eq!(by_id(json!("a"))["result"], json!({"pong": true}));
    assert_eq!(by_id(json!("b"))["result"]["tools"][0]["name"], "greet");
    assert_eq!(by_id(json!("c"))["result"], text_result("Hello, Batch!"));
    assert_eq!(by_id(json!("d"))["error"]["code"], -32601);
    assert_eq!(by_id(Value::Null)["error"]["code"], -32600);

    // A batch of notifications gets no answer at all: the next message is the ping's.
    agent
        .send_text(r#"[{"jsonrpc":"2.0","method":"ping"},{"jsonrpc":"2.0","method":"tools/list"}]"#)
        .await;
    agent
        .send(json!({"jsonrpc": "2.0", "id": "after", "method": "ping"}))
        .await;
    let next = agent.recv().await;
    assert_eq!(next["id"], "after", "{next}");

    // An empty batch is one invalid request.
    agent.send_text("[]").await;
    let e = agent.recv().await;
    assert_eq!(e["error"]["code"], -32600, "{e}");
    assert_eq!(e["id"], Value::Null);

    // A browser may register its tools with a notification, and batch its answers.
    browser
        .send(json!({"jsonrpc": "2.0", "method": "tools/register", "params": {"tools": [greet_tool(), tool("two")]}}))
        .await;
    wait_until(Duration::from_secs(5), "two tools", || {
        (d.ctl_json(&["tools"])["tools"].as_array().unwrap().len() == 2).then_some(())
    });
    agent
        .send_text(r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{"name":"x"}}},
                       {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"two","arguments":{}}}]"#)
        .await;
    let c1 = browser.expect_request("tools/call").await;
    let c2 = browser.expect_request("tools/call").await;
    browser
        .send(
            json!([{"jsonrpc": "2.0", "id": c1["id"], "result": text_result("one")},
                     {"jsonrpc": "2.0", "id": c2["id"], "result": text_result("two")}]),
        )
        .await;
    let resp = agent.recv().await;
    let texts: BTreeSet<String> = resp
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(texts, BTreeSet::from(["one".to_owned(), "two".to_owned()]));
}

fn error_of(resp: &Value) -> (i64, String, Value) {
    let e = &resp["error"];
    assert!(e.is_object(), "expected an error: {resp}");
    (
        e["code"].as_i64().unwrap(),
        e["message"].as_str().unwrap().to_owned(),
        e["data"].clone(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn every_jsonrpc_error_code_from_its_cause() {
    let d = TestDaemon::start();
    let mut browser = RpcPeer::browser(&d, "s", vec![greet_tool()]).await;
    let mut agent = RpcPeer::agent(&d, "s").await;

    // -32700: not JSON.
    agent.send_text("{\"jsonrpc\": \"2.0\", ").await;
    let r = agent.recv().await;
    assert_eq!(error_of(&r).0, -32700);
    assert_eq!(r["id"], Value::Null);

    // -32600: not a JSON-RPC 2.0 request (the id is echoed when it can be read).
    agent
        .send(json!({"jsonrpc": "1.0", "id": "x", "method": "ping"}))
        .await;
    let r = agent.response(&json!("x")).await;
    assert_eq!(error_of(&r).0, -32600);

    // -32601: an unknown method, and a browser method called by an agent.
    let r = agent.request("tools/fly", json!({})).await;
    assert_eq!(error_of(&r).0, -32601);
    let r = agent.request("tools/register", json!({"tools": []})).await;
    assert_eq!(error_of(&r).0, -32601);
    let r = browser
        .request("tools/call", json!({"name": "greet"}))
        .await;
    assert_eq!(error_of(&r).0, -32601);

    // -32602: params missing or of the wrong type, arguments against the schema, no such tool.
    let r = agent.request("tools/call", json!({"arguments": {}})).await;
    assert_eq!(error_of(&r).0, -32602);
    let r = agent
        .request("tools/call", json!({"name": "greet", "arguments": 5}))
        .await;
    assert_eq!(error_of(&r).0, -32602);
    let r = agent
        .request("tools/call", json!({"name": "greet", "timeout": -1}))
        .await;
    assert_eq!(error_of(&r).0, -32602);
    let r = agent
        .request(
            "tools/call",
            json!({"name": "greet", "arguments": {"name": 5}}),
        )
        .await;
    let (code, _, data) = error_of(&r);
    assert_eq!(code, -32602);
    assert_eq!(data["code"], "INVALID_ARGUMENTS");
    assert_eq!(data["retryable"], false);
    let r = agent.request("tools/call", json!({"name": "nope"})).await;
    let (code, _, data) = error_of(&r);
    assert_eq!(code, -32602);
    assert_eq!(data["code"], "TOOL_NOT_FOUND");
    assert_eq!(data["details"]["available"], json!(["greet"]));
    let r = agent
        .request("session/join", json!({"sessionId": "no spaces"}))
        .await;
    assert_eq!(error_of(&r).0, -32602);

    // -32603: the tool failed in the browser.
    let id = agent.id();
    agent
        .send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "greet", "arguments": {"name": "x"}}}))
        .await;
    let call = browser.expect_request("tools/call").await;
    browser
        .send(
            json!({"jsonrpc": "2.0", "id": call["id"], "error": {"code": -32603,
            "message": "No element matches selector: #x", "data": {"code": "ELEMENT_NOT_FOUND"}}}),
        )
        .await;
    let (code, message, data) = error_of(&agent.response(&json!(id)).await);
    assert_eq!(code, -32603);
    assert!(message.contains("No element matches"), "{message}");
    assert_eq!(data["code"], "TOOL_ERROR");
    assert_eq!(data["retryable"], false);
    assert_eq!(data["details"]["toolCode"], "ELEMENT_NOT_FOUND");

    // -32000: no answer in time, the browser gone mid-call, no browser in the session.
    let r = agent
        .request(
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "x"}, "timeout": 200}),
        )
        .await;
    let (code, _, data) = error_of(&r);
    assert_eq!(code, -32000);
    assert_eq!(data["code"], "MESSAGE_TIMEOUT");
    assert_eq!(data["retryable"], true);
    let id = agent.id();
    agent
        .send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "greet", "arguments": {"name": "y"}, "timeout": 60000}}))
        .await;
    let _ = browser
        .wait_for("the call", |v| v["params"]["arguments"]["name"] == "y")
        .await;
    drop(browser);
    let (code, _, data) = error_of(&agent.response(&json!(id)).await);
    assert_eq!(code, -32000);
    assert_eq!(data["code"], "WEBSOCKET_ERROR");
    wait_browsers(&d, "the browser to leave", |b| b.is_empty());
    let r = agent.request("tools/call", json!({"name": "greet"})).await;
    let (code, _, data) = error_of(&r);
    assert_eq!(code, -32000);
    assert_eq!(data["code"], "NO_BROWSER");
    assert_eq!(data["retryable"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn agents_must_authenticate_and_parameters_are_checked_before_the_upgrade() {
    let d = TestDaemon::start();
    let (status, body) = refused(&ws_url(&d, "s", "agent", None), &[]).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");
    assert!(body["error"]["message"].as_str().unwrap().contains("token"));
    let (status, _) = refused(&ws_url(&d, "s", "agent", Some("wrong")), &[]).await;
    assert_eq!(status, 401);
    let (status, _) = refused(
        &ws_url(&d, "s", "agent", Some(&d.token)),
        &[("Origin", "https://evil.example")],
    )
    .await;
    assert_eq!(status, 403, "web origins are refused");
    let bearer = format!("Bearer {}", d.token);
    let mut ws = FakeExtension::raw(
        &ws_url(&d, "s", "agent", None),
        &[("Authorization", bearer.as_str())],
    )
    .await
    .expect("a Bearer token is accepted");
    let welcome = ws.next().await.unwrap().unwrap();
    assert!(welcome.to_text().unwrap().contains("welcome"));

    let base = format!("ws://127.0.0.1:{}/ws", d.port);
    for (query, needle) in [
        ("?clientType=browser", "sessionId"),
        ("?sessionId=s", "clientType"),
        ("?sessionId=s&clientType=robot", "robot"),
        ("?sessionId=a%20b&clientType=browser", "malformed"),
        (
            "?sessionId=s&clientType=browser&version=2.0.0",
            "unsupported",
        ),
        ("?sessionId=s&clientType=browser&version=one", "malformed"),
    ] {
        let (status, body) = refused(&format!("{base}{query}"), &[]).await;
        assert_eq!(status, 400, "{query}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{query}: {message}");
    }
    // Browsers need no token; version defaults to 1.0.0.
    let mut ok = FakeExtension::raw(&format!("{base}?sessionId=s&clientType=browser"), &[])
        .await
        .expect("a browser connects");
    let welcome: Value =
        serde_json::from_str(ok.next().await.unwrap().unwrap().to_text().unwrap()).unwrap();
    assert_eq!(welcome["params"]["version"], "1.0.0");
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_in_flight_cap_is_an_error_not_a_drop() {
    let d = TestDaemon::builder()
        .args(&["--agent-max-in-flight", "1"])
        .start();
    let mut browser = RpcPeer::browser(&d, "s", vec![greet_tool()]).await;
    let mut agent = RpcPeer::agent(&d, "s").await;
    agent
        .send(
            json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
            "params": {"name": "greet", "arguments": {"name": "slow"}}}),
        )
        .await;
    let call = browser.expect_request("tools/call").await;
    let r = agent
        .request(
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "more"}}),
        )
        .await;
    let (code, message, data) = error_of(&r);
    assert_eq!(code, -32000);
    assert_eq!(data["code"], "LIMIT_EXCEEDED");
    assert_eq!(data["retryable"], true);
    assert_eq!(data["details"]["limit"], "agentMaxInFlight");
    assert!(message.contains("in flight"), "{message}");
    browser
        .send(json!({"jsonrpc": "2.0", "id": call["id"], "result": text_result("done")}))
        .await;
    assert_eq!(
        agent.response(&json!("slow")).await["result"],
        text_result("done")
    );
    // The slot is free again.
    let id = agent.id();
    agent
        .send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "greet", "arguments": {"name": "again"}}}))
        .await;
    browser.answer_call(text_result("again")).await;
    assert_eq!(
        agent.response(&json!(id)).await["result"],
        text_result("again")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_rate_limit_is_an_error_not_a_drop() {
    let d = TestDaemon::builder()
        .args(&["--agent-rate-limit", "3"])
        .start();
    let _browser = RpcPeer::browser(&d, "s", vec![greet_tool()]).await;
    let mut agent = RpcPeer::agent(&d, "s").await;
    let batch: Vec<Value> = (0..8)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "nope"}}))
        .collect();
    agent.send(Value::Array(batch)).await;
    let resp = agent.recv().await;
    let items = resp.as_array().unwrap();
    assert_eq!(items.len(), 8);
    let kinds: Vec<String> = items
        .iter()
        .map(|r| r["error"]["data"]["code"].as_str().unwrap().to_owned())
        .collect();
    assert!(kinds.contains(&"TOOL_NOT_FOUND".to_owned()), "{kinds:?}");
    let limited: Vec<&Value> = items
        .iter()
        .filter(|r| r["error"]["data"]["code"] == "LIMIT_EXCEEDED")
        .collect();
    assert!(!limited.is_empty(), "{kinds:?}");
    assert_eq!(limited[0]["error"]["code"], -32000);
    assert_eq!(
        limited[0]["error"]["data"]["details"]["limit"],
        "agentRateLimit"
    );
    // Still connected.
    assert_eq!(
        agent.request("ping", json!({})).await["result"]["pong"],
        true
    );
}

// ---- all three at once ----------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn all_three_dialects_at_once() {
    let d = TestDaemon::start();
    let disco = read_json(&d.discovery_file).unwrap();
    assert_eq!(disco["protocols"], json!(["bridge", "register", "jsonrpc"]));

    let mut bridge =
        FakeExtension::connect(&d, "shared", vec![tab(7, "Search", vec![search_tool()])]).await;
    let mut reg = RegisterPeer::connect(&d).await;
    let mut rpc_browser = RpcPeer::browser(&d, "shared", vec![greet_tool()]).await;
    let list = wait_browsers(&d, "three browsers", |b| b.len() == 3);
    let bridge_b = id_of(&list, "dialect", "bridge");
    let reg_b = id_of(&list, "dialect", "register");
    let rpc_b = id_of(&list, "dialect", "jsonrpc");

    // The agent of session "shared" sees the bridge tab's tools and the JSON-RPC browser's.
    let mut agent = RpcPeer::agent(&d, "shared").await;
    let tools = agent.request("tools/list", json!({})).await["result"]["tools"].clone();
    assert_eq!(
        names(&tools),
        BTreeSet::from(["greet".to_owned(), "search".to_owned()])
    );
    let search = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search")
        .unwrap();
    assert_eq!(search["target"], format!("{bridge_b}:7"));

    // Agent → a bridge-dialect tab.
    agent
        .send(json!({"jsonrpc": "2.0", "id": "s", "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "rust"}}}))
        .await;
    let call = bridge
        .answer_call(json!({"content": [{"type": "text", "text": "3 results"}]}))
        .await;
    assert_eq!(call["tabId"], 7);
    assert_eq!(call["args"], json!({"query": "rust"}));
    let r = agent.response(&json!("s")).await;
    assert_eq!(r["result"]["content"][0]["text"], "3 results", "{r}");

    // browserctl → the JSON-RPC browser's tool.
    let cli = ctl_async(&d, &["call", "greet", "--browser", &rpc_b, "--name", "Ada"]);
    rpc_browser.answer_call(text_result("Hello, Ada!")).await;
    assert_eq!(stdout(&cli.await.unwrap()), "Hello, Ada!\n");
    // …and without naming it: greet is offered once.
    let cli = ctl_async(&d, &["call", "greet", "--name", "Bo"]);
    rpc_browser.answer_call(text_result("Hello, Bo!")).await;
    assert_eq!(stdout(&cli.await.unwrap()), "Hello, Bo!\n");

    // The agent joins the register instance's session and uses a consolidated tool.
    let joined = agent
        .request("session/join", json!({"sessionId": reg.instance_id}))
        .await;
    assert_eq!(joined["result"]["browsers"], json!([reg_b]), "{joined}");
    let id = agent.id();
    agent
        .send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "browser_navigate", "arguments": {"action": "wait", "selector": "#ok"}}}))
        .await;
    let call = reg.answer(json!({"found": true})).await;
    assert_eq!(call["name"], "browser_wait_for");
    assert_eq!(call["args"], json!({"selector": "#ok"}));
    assert_eq!(
        agent.response(&json!(id)).await["result"],
        json!({"found": true})
    );

    // browserctl → the register instance, named as a tab.
    let cli = ctl_async(
        &d,
        &[
            "call",
            "browser_content",
            "--tab",
            &reg_b,
            "--action",
            "get",
        ],
    );
    let call = reg.answer(json!({"content": "<html></html>"})).await;
    assert_eq!(call["name"], "browser_get_content");
    assert_eq!(exit_code(&cli.await.unwrap()), 0);

    // Every dialect's browser is listed, each with its tools.
    let all = d.ctl_json(&["tools"]);
    let listed = names(&all["tools"]);
    for t in ["search", "greet", "browser_navigate"] {
        assert!(listed.contains(t), "{listed:?}");
    }
}
