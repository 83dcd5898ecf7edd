//! The library's typed client and the example program, against a real daemon.

use crate::support::common::*;
use browser_mcp::client::{Client, EventFilter, ToolFilter};
use browser_mcp::ErrorCode;
use futures_util::StreamExt;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn typed_client_covers_the_api() {
    let d = TestDaemon::start();
    let c = Client::new(&d.socket);
    assert_eq!(c.status().await.unwrap().pid, d.child.id());
    let waiting = {
        let c = c.clone();
        tokio::spawn(async move {
            c.wait_for_tool("search", None, Duration::from_secs(10))
                .await
        })
    };
    let mut events = c
        .events(&EventFilter {
            types: vec!["tabCreated".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    let mut ext = FakeExtension::connect(&d, "s", vec![tab(4, "Four", vec![search_tool()])]).await;
    let found = waiting.await.unwrap().unwrap();
    assert_eq!(found[0].tab, "b1:4");
    let event = events.next().await.unwrap().unwrap();
    assert_eq!(
        (event.kind.as_str(), event.tab.as_deref()),
        ("tabCreated", Some("b1:4"))
    );

    assert_eq!(c.browsers().await.unwrap()[0].session_id, "s");
    assert_eq!(c.tabs(None).await.unwrap()[0].title, "Four");
    assert_eq!(c.tab("b1:4").await.unwrap().tools[0].name, "search");
    let filter = ToolFilter {
        name: Some("search".into()),
        ..Default::default()
    };
    assert_eq!(c.tools(&filter).await.unwrap().len(), 1);

    let call = {
        let c = c.clone();
        tokio::spawn(async move { c.call("search", json!({"query": "rust"})).await })
    };
    let req = ext.answer_call(json!({"hits": 2})).await;
    assert_eq!(req["args"], json!({"query": "rust"}));
    let answer = call.await.unwrap().unwrap();
    assert_eq!(
        (answer.tab.as_str(), answer.attempts, answer.result.get()),
        ("b1:4", 1, r#"{"hits":2}"#)
    );

    let e = c.call("nope", json!({})).await.unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolNotFound);
    let e = Client::new(d.dir.path().join("missing.sock"))
        .status()
        .await
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::DaemonUnavailable);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_example_program_waits_calls_and_follows_events() {
    let d = TestDaemon::start();
    let exe = std::env::current_exe().unwrap();
    let example = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/wait_and_call");
    assert!(
        example.exists(),
        "cargo test builds examples: {}",
        example.display()
    );
    let mut child = tokio::process::Command::new(&example)
        .args(["search", r#"{"query":"from the example"}"#])
        .env("BROWSER_MCP_SOCKET", &d.socket)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut ext = FakeExtension::connect(&d, "s", vec![tab(1, "T", vec![search_tool()])]).await;
    let req = ext.answer_call(json!("example result")).await;
    assert_eq!(req["args"]["query"], "from the example");
    let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap());
    let mut text = String::new();
    use tokio::io::AsyncBufReadExt;
    // The example subscribes to events only after it printed the answer, so a tab created
    // before that is not in its stream: keep creating tabs until one shows up.
    let mut next_tab = 2;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    // Outside the loop: a read cut short by the timeout keeps what it read so far.
    let mut line = String::new();
    while !text.contains("tabCreated b1:") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no tabCreated: {text}"
        );
        if text.contains("following tab events") {
            ext.send(json!({"type": "tabCreated", "tab": tab(next_tab, "U", vec![])}))
                .await;
            next_tab += 1;
        }
        match tokio::time::timeout(Duration::from_millis(200), out.read_line(&mut line)).await {
            Ok(n) => assert!(n.unwrap() > 0, "example exited early: {text}"),
            Err(_) => continue,
        }
        text.push_str(&line);
        line.clear();
    }
    assert!(text.contains("`search` is offered by b1:1"), "{text}");
    assert!(text.contains("\"example result\""), "{text}");
    child.kill().await.unwrap();
}
