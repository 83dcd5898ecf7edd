//! Seed 002, the register/hello dialect: registration, hello, instances and their tools, calls.

use super::*;

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
        &[("Origin", OUR_ORIGIN)],
        Some(body),
    )
    .await;
    assert_eq!(status, 200, "our extension may register");
    // Another extension, only with proof (issue 35, item 8).
    let other = [("Origin", "chrome-extension://abc")];
    let (status, v) = http(&d, "POST", "/register", &other, Some(body)).await;
    assert_eq!(status, 401, "{v}");
    let bearer = format!("Bearer {}", d.token);
    let with_token = [other[0], ("Authorization", bearer.as_str())];
    let (status, v) = http(&d, "POST", "/register", &with_token, Some(body)).await;
    assert_eq!(status, 200, "with the token: {v}");

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
        ws: FakeExtension::raw(&d.ws_url(), &[("Origin", OUR_ORIGIN)])
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
