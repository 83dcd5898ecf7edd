//! Cancelling a call through the control API: `DELETE /v1/calls/{callId}`.

use crate::support::common::*;
use browser_mcp::client::Client;
use browser_mcp::protocol::control::CallResponse;
use hyper::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn a_call_with_a_call_id_can_be_cancelled_through_the_control_api() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::search_tab(&d).await;
    let c = std::sync::Arc::new(Client::new(&d.socket));
    let req = json!({"tool": "search", "tab": "b1:7", "args": {"query": "q"}, "callId": "job-1"});
    let c2 = c.clone();
    let body = req.clone();
    let pending = tokio::spawn(async move {
        c2.json::<CallResponse>(Method::POST, "/v1/call", Some(&body))
            .await
    });
    ext.expect("callTool").await;
    // The same callId cannot be used twice at once.
    let dup = c
        .json::<CallResponse>(Method::POST, "/v1/call", Some(&req))
        .await
        .unwrap_err();
    assert_eq!(dup.code.as_str(), "BAD_REQUEST");
    let started = Instant::now();
    let v: Value = c
        .json(Method::DELETE, "/v1/calls/job-1", None::<&()>)
        .await
        .expect("cancel");
    assert_eq!(v, json!({"cancelled": "job-1"}));
    let e = pending.await.unwrap().unwrap_err();
    assert_eq!(e.code.as_str(), "CANCELLED");
    // The connection forgot the call: nothing is left pending.
    wait_until(Duration::from_secs(5), "no pending call", || {
        (d.status()["pendingCalls"] == 0).then_some(())
    });
    assert!(started.elapsed() < Duration::from_secs(10));
    let again = c
        .json::<Value>(Method::DELETE, "/v1/calls/job-1", None::<&()>)
        .await
        .unwrap_err();
    assert_eq!(again.code.as_str(), "NOT_FOUND");
}

/// Ctrl-C on `browserctl call` (item 8 of issue 18): the call is cancelled in the daemon, by
/// name, and counted in callsCancelled; browserctl exits 130.
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_on_call_cancels_it_and_counts() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::search_tab(&d).await;
    let child = d.ctl_spawn(&["call", "search", "--query", "q"]);
    ext.expect("callTool").await;
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("interrupted: the call was cancelled"),
        "{}",
        stderr(&out)
    );
    let s = wait_until(Duration::from_secs(5), "the call to end", || {
        let s = d.status();
        (s["callsInFlight"] == 0).then_some(s)
    });
    assert_eq!(s["callsCancelled"], 1, "{s}");
    assert_eq!(s["pendingCalls"], 0, "{s}");
}

/// A caller that goes away without a word (killed, or a client that just closes its
/// connection) cancels its call too, and it counts the same way.
#[tokio::test(flavor = "multi_thread")]
async fn a_caller_that_hangs_up_cancels_its_call() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::search_tab(&d).await;
    let mut child = d.ctl_spawn(&["call", "search", "--query", "q"]);
    ext.expect("callTool").await;
    child.kill().unwrap();
    child.wait().unwrap();
    let s = wait_until(Duration::from_secs(10), "the daemon to notice", || {
        let s = d.status();
        (s["callsCancelled"] == 1).then_some(s)
    });
    assert_eq!(s["callsInFlight"], 0, "{s}");
    assert_eq!(s["pendingCalls"], 0, "{s}");
}
