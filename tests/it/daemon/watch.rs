//! `watch` (issue 30): the daemon tells an extension that takes it when an agent is at work, so
//! that the person's pages pay for the extension's bridge only then. An agent's first request
//! waits for the extension's answer, and sees the page tools it reported before answering; the
//! daemon takes it back after `--agent-idle` without agents, not while one listens.

use crate::support::common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A scripted extension that says it takes `watch`.
async fn watcher(d: &TestDaemon, session: &str, tabs: Vec<Value>) -> FakeExtension {
    FakeExtension::connect_saying(d, session, tabs, json!({"features": ["watch"]})).await
}

/// Waits until the daemon holds `n` tabs, asking what no agent asks (`status`).
fn wait_for_tabs(d: &TestDaemon, n: u64) {
    wait_until(Duration::from_secs(10), "the tabs", || {
        (d.status()["tabs"] == n).then_some(())
    });
}

/// The next `watch`, within `limit`; other messages are skipped.
async fn next_watch(ext: &mut FakeExtension, limit: Duration) -> Option<Value> {
    let deadline = Instant::now() + limit;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let m = ext.try_recv(left).await?;
        if m["type"] == "watch" {
            return Some(m);
        }
    }
    None
}

fn tab_tools(tabs: &Value, id: &str) -> Vec<String> {
    let tab = tabs["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["ref"] == id)
        .unwrap_or_else(|| panic!("no tab {id} in {tabs}"));
    tab["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agents_first_listing_waits_for_the_pages_the_extension_watches() {
    let d = TestDaemon::builder().args(&["--agent-idle", "1s"]).start();
    let mut ext = watcher(&d, "w1", vec![tab(7, "Shop", vec![])]).await;
    // The daemon's own state is no agent's business: nobody is told.
    wait_for_tabs(&d, 1);
    assert_eq!(d.status()["agentAtWork"], false);
    assert!(
        next_watch(&mut ext, Duration::from_millis(300))
            .await
            .is_none(),
        "told before any agent asked"
    );

    // An agent lists the tabs: the extension is told, and the listing waits for its answer.
    let listing = ctl_async(&d, &["--json", "tabs"]);
    let watch = next_watch(&mut ext, Duration::from_secs(5))
        .await
        .expect("watch");
    assert_eq!(watch["watching"], true, "{watch}");
    assert_eq!(watch["sessionId"], "w1", "{watch}");
    // A second agent's listing meanwhile waits for the same answer, not for nothing.
    let second = ctl_async(&d, &["--json", "tools"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!second.is_finished(), "a second request went by the arming");
    assert!(
        !listing.is_finished(),
        "the listing did not wait for the extension"
    );
    // The page's tools reach the daemon before the answer, as our extension sends them.
    ext.send(
        json!({"type": "toolsChanged", "sessionId": "w1", "tabId": 7, "tools": [search_tool()]}),
    )
    .await;
    ext.send(json!({"type": "watching", "sessionId": "w1", "requestId": watch["requestId"], "watching": true}))
        .await;
    let out = listing.await.unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(d.status()["agentAtWork"], true);
    let tabs: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(tab_tools(&tabs, "b1:7"), ["search"], "{tabs}");
    let out = second.await.unwrap();
    assert!(stdout(&out).contains("\"search\""), "{}", stdout(&out));

    // Told once: the next requests go straight through.
    let started = Instant::now();
    d.ctl_json(&["tabs"]);
    assert!(next_watch(&mut ext, Duration::from_millis(200))
        .await
        .is_none());
    assert!(started.elapsed() < Duration::from_secs(2));

    // A second browser that joins while an agent is at work is told as it joins.
    let mut late = watcher(&d, "w2", vec![tab(9, "Docs", vec![])]).await;
    let told = next_watch(&mut late, Duration::from_secs(5))
        .await
        .expect("watch on joining");
    assert_eq!(told["watching"], true, "{told}");

    // No agent for --agent-idle: both are told it is over.
    for e in [&mut ext, &mut late] {
        let off = next_watch(e, Duration::from_secs(10))
            .await
            .expect("watch off");
        assert_eq!(off["watching"], false, "{off}");
        e.send(json!({"type": "watching", "sessionId": e.session, "requestId": off["requestId"], "watching": false}))
            .await;
    }
    assert_eq!(d.status()["agentAtWork"], false);
    let text = d.ctl(&["status"]);
    assert!(
        stdout(&text).contains("an agent at work: no"),
        "{}",
        stdout(&text)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_listening_agent_keeps_the_pages_watched_and_a_silent_extension_delays_no_one_long() {
    let d = TestDaemon::builder().args(&["--agent-idle", "1s"]).start();
    // It never answers `watch`: an agent's first request waits a bounded time, then goes on.
    let mut ext = watcher(&d, "w1", vec![tab(7, "Shop", vec![search_tool()])]).await;
    wait_for_tabs(&d, 1);
    // A seed-001 extension that names no features is never told.
    let mut plain = FakeExtension::connect(&d, "p1", vec![tab(8, "Plain", vec![])]).await;
    wait_for_tabs(&d, 2);

    let mut events = d.ctl_spawn(&["events", "--type", "toolsChanged"]);
    let watch = next_watch(&mut ext, Duration::from_secs(5))
        .await
        .expect("watch");
    assert_eq!(watch["watching"], true, "{watch}");
    let started = Instant::now();
    let tabs = d.ctl_json(&["tabs"]);
    assert_eq!(tabs["tabs"].as_array().unwrap().len(), 2, "{tabs}");
    // Whichever request armed, nobody waits past the bound (2.5 s) plus a process start.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    // The event stream is an agent listening: no `watch: false` while it is open, however long.
    assert!(
        next_watch(&mut ext, Duration::from_secs(3)).await.is_none(),
        "stood down while an agent listened"
    );
    events.kill().unwrap();
    events.wait().unwrap();
    let off = next_watch(&mut ext, Duration::from_secs(10))
        .await
        .expect("watch off after the stream closed");
    assert_eq!(off["watching"], false, "{off}");
    assert!(
        next_watch(&mut plain, Duration::from_millis(200))
            .await
            .is_none(),
        "a seed-001 extension was sent `watch`"
    );
    // And the daemon is fine.
    assert_eq!(d.ctl_json(&["tabs"])["tabs"].as_array().unwrap().len(), 2);
}
