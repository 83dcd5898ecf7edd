//! Seed 003, the JSON-RPC 2.0 dialect: browsers that provide tools and agents that call them.

use super::*;

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
