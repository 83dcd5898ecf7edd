//! Each tab's turn (issue 60), with a scripted extension that holds its answers: calls on one
//! tab reach the browser one at a time in the order they came (reads side by side), calls on
//! another tab meanwhile at once, and one call more than `--tab-queue` allows waiting is
//! refused with BUSY and a retry hint, having never reached the browser.

use crate::support::common::*;
use serde_json::{json, Value};
use std::time::Duration;

fn act(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object", "properties": {"n": {"type": "number"}}}})
}

fn read(name: &str) -> Value {
    let mut t = act(name);
    t["annotations"] = json!({"readOnlyHint": true});
    t
}

fn tabs() -> Vec<Value> {
    vec![
        tab(1, "One", vec![act("act"), read("read")]),
        tab(2, "Two", vec![act("act")]),
    ]
}

/// `browserctl call TOOL --tab TAB --n N`, running.
fn start(
    d: &TestDaemon,
    tool: &str,
    tab: &str,
    n: u32,
) -> tokio::task::JoinHandle<std::process::Output> {
    call_async(d, tool, &["--tab", tab, "--n", &n.to_string()])
}

/// Waits until the daemon has this many calls in flight (running or waiting for a turn), so
/// that the next one surely comes after them.
fn in_flight(d: &TestDaemon, n: u64) {
    wait_until(
        Duration::from_secs(10),
        &format!("{n} calls in flight"),
        || (d.status()["callsInFlight"] == n).then_some(()),
    );
}

async fn answer(ext: &mut FakeExtension, call: &Value) {
    ext.send(
        json!({"type": "toolResult", "sessionId": ext.session, "callId": call["callId"],
        "result": format!("n={}", call["args"]["n"]), "error": null}),
    )
    .await;
}

/// The next call that reaches the browser, if one does within a moment.
async fn next_call(ext: &mut FakeExtension) -> Option<Value> {
    while let Some(m) = ext.try_recv(Duration::from_millis(400)).await {
        if m["type"] == "callTool" {
            return Some(m);
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread")]
async fn one_tabs_calls_take_turns_in_order_other_tabs_run_at_once_and_the_wait_is_bounded() {
    let d = TestDaemon::builder().args(&["--tab-queue", "2"]).start();
    let mut ext = FakeExtension::connect(&d, "s1", tabs()).await;
    d.wait_tabs("two tabs", |t| t.len() == 2);

    // An action holds tab 1; two more wait behind it, in the order they came.
    let first = start(&d, "act", "b1:1", 1);
    let c1 = next_call(&mut ext).await.expect("the first call");
    assert_eq!(c1["args"]["n"], 1);
    let second = start(&d, "act", "b1:1", 2);
    in_flight(&d, 2);
    let third = start(&d, "read", "b1:1", 3);
    in_flight(&d, 3);
    assert!(
        next_call(&mut ext).await.is_none(),
        "a call went past the one running"
    );

    // Tab 2 is not held up.
    let other = start(&d, "act", "b1:2", 9);
    let c9 = next_call(&mut ext).await.expect("tab 2's call at once");
    assert_eq!(c9["tabId"], 2);
    answer(&mut ext, &c9).await;
    assert!(other.await.unwrap().status.success());

    // A third waiting call is one too many: BUSY at once, with a hint, never sent.
    let out = d.ctl(&["--json", "call", "act", "--tab", "b1:1", "--n", "4"]);
    assert_eq!(exit_code(&out), 18, "{}", stderr(&out));
    let e: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(e["error"]["code"], "BUSY", "{e}");
    assert_eq!(e["error"]["retryable"], true);
    assert_eq!(e["error"]["details"]["waiting"], 2);
    let hint = e["error"]["details"]["retryAfterMs"].as_u64().unwrap();
    assert!((50..=10_000).contains(&hint), "{e}");

    // Their turns come one by one, in order.
    answer(&mut ext, &c1).await;
    let c2 = next_call(&mut ext).await.expect("the second call");
    assert_eq!(c2["args"]["n"], 2);
    assert!(
        next_call(&mut ext).await.is_none(),
        "the read waits for the action"
    );
    answer(&mut ext, &c2).await;
    let c3 = next_call(&mut ext).await.expect("the third call");
    assert_eq!(c3["args"]["n"], 3);
    answer(&mut ext, &c3).await;
    for (call, n) in [(first, 1), (second, 2), (third, 3)] {
        let out = call.await.unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stdout(&out).contains(&format!("n={n}")), "{}", stdout(&out));
    }

    // Reads share a turn: both reach the page before either answers.
    let (r1, r2) = (start(&d, "read", "b1:1", 5), start(&d, "read", "b1:1", 6));
    let a = next_call(&mut ext).await.expect("a read");
    let b = next_call(&mut ext)
        .await
        .expect("the other read, beside it");
    answer(&mut ext, &a).await;
    answer(&mut ext, &b).await;
    assert!(r1.await.unwrap().status.success());
    assert!(r2.await.unwrap().status.success());
    assert_eq!(d.status()["callsInFlight"], 0);
}

/// A call whose budget runs out while it waits for its turn never runs: BUSY, not a timeout
/// of something that may have happened.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_out_of_time_before_its_turn_never_ran() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::connect(&d, "s1", tabs()).await;
    d.wait_tabs("two tabs", |t| t.len() == 2);
    let first = start(&d, "act", "b1:1", 1);
    let c1 = next_call(&mut ext).await.expect("the first call");
    let out = d.ctl(&[
        "--json",
        "call",
        "act",
        "--tab",
        "b1:1",
        "--n",
        "2",
        "--timeout",
        "300ms",
    ]);
    assert_eq!(exit_code(&out), 18, "{}", stderr(&out));
    let e: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("it did not run"),
        "{e}"
    );
    answer(&mut ext, &c1).await;
    assert!(first.await.unwrap().status.success());
    assert!(
        next_call(&mut ext).await.is_none(),
        "the call out of time was sent"
    );
}
