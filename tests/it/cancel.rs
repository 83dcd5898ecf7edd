//! Cancelling a call through the control API: `DELETE /v1/calls/{callId}`.

use crate::common::*;
use browser_mcp::client::Client;
use browser_mcp::protocol::control::CallResponse;
use hyper::Method;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn a_call_with_a_call_id_can_be_cancelled_through_the_control_api() {
    let d = TestDaemon::start();
    let mut ext =
        FakeExtension::connect(&d, "s1", vec![tab(7, "Search", vec![search_tool()])]).await;
    d.wait_tabs("tab 7", |t| t.len() == 1);
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
