//! All three dialects at once on one daemon.

use super::*;

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

/// The bridge's callTool says who asks (issue 31), for the browser's consent prompt:
/// `browserctl` for browserctl call, `JSON-RPC agent SESSION` for a seed-003 agent, and
/// nothing for a control-API caller that does not say.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_names_its_agent_to_the_browser() {
    let d = TestDaemon::start();
    let mut bridge =
        FakeExtension::connect(&d, "shared", vec![tab(7, "Search", vec![search_tool()])]).await;
    d.wait_tabs("the tab", |t| t.len() == 1);

    let cli = call_async(&d, "search", &["--query", "a"]);
    let call = bridge.answer_call(json!("found")).await;
    assert_eq!(call["agent"], "browserctl", "{call}");
    assert!(cli.await.unwrap().status.success());

    let mut agent = RpcPeer::agent(&d, "shared").await;
    agent
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "b"}}}))
        .await;
    let call = bridge.answer_call(json!("found")).await;
    assert_eq!(call["agent"], "JSON-RPC agent shared", "{call}");
    assert!(agent.response(&json!(1)).await.get("result").is_some());

    let body = json!({"tool": "search", "args": {"query": "c"}}).to_string();
    let plain = tokio::spawn({
        let socket = d.socket.clone();
        async move { crate::support::harness::api_at(&socket, "POST", "/v1/call", Some(&body)).await }
    });
    let call = bridge.answer_call(json!("found")).await;
    assert!(
        call.get("agent").is_none(),
        "a caller that does not say: {call}"
    );
    assert_eq!(plain.await.unwrap().0, 200);
}
