//! The control API and browserctl's behaviour as a Unix tool.

use crate::support::common::*;
use crate::support::harness::raw_request_at;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::time::Duration;

/// One raw HTTP/1.1 request over the control socket; returns (status, body).
pub fn raw_request(d: &TestDaemon, request: &str) -> (u16, String) {
    raw_request_at(&d.socket, request)
}

#[test]
fn errors_are_typed_json_with_fitting_statuses() {
    let d = TestDaemon::start();
    let cases = [
        ("GET /v1/nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 404, "NOT_FOUND"),
        ("PUT /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405, "METHOD_NOT_ALLOWED"),
        ("POST /v1/call HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\n{nope", 400, "BAD_REQUEST"),
        ("POST /v1/call HTTP/1.1\r\nHost: x\r\nContent-Length: 16\r\nConnection: close\r\n\r\n{\"tool\":\"x\"}    ", 404, "NO_BROWSER"),
        ("GET /v1/tabs/b9:1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 404, "TAB_NOT_FOUND"),
        ("GET /v1/events?since=abc HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400, "BAD_REQUEST"),
    ];
    for (req, status, code) in cases {
        let (s, body) = raw_request(&d, req);
        assert_eq!(s, status, "{req}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|_| panic!("{req}: {body}"));
        assert_eq!(v["error"]["code"], code, "{req}");
        assert!(v["error"]["message"].as_str().unwrap().len() > 3);
        assert!(v["error"]["retryable"].is_boolean());
    }
    // The daemon is still fine.
    assert_eq!(d.status()["browsers"], 0);
}

#[test]
fn daemon_not_running_says_so_with_its_own_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(CTL)
        .arg("--socket")
        .arg(dir.path().join("none.sock"))
        .arg("tabs")
        .output()
        .unwrap();
    assert_eq!(exit_code(&out), 3);
    let err = stderr(&out);
    assert!(
        err.contains("DAEMON_UNAVAILABLE") && err.contains("browser-mcpd"),
        "{err}"
    );
    assert!(stdout(&out).is_empty());
}

#[test]
fn status_and_empty_listings() {
    let d = TestDaemon::start();
    let s = d.status();
    assert_eq!(s["port"], d.port);
    assert_eq!(s["pid"], d.child.id());
    assert_eq!(s["tabs"], 0);
    let out = d.ctl(&["status"]);
    assert!(stdout(&out).contains(&format!("127.0.0.1:{}", d.port)));
    let out = d.ctl(&["tabs"]);
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("no browser connected"),
        "{}",
        stderr(&out)
    );
    let out = d.ctl(&["call", "search", "--query", "x"]);
    assert_eq!(exit_code(&out), 4);
    assert!(stderr(&out).contains("NO_BROWSER"));
    // BROWSER_MCP_SOCKET is honoured like --socket.
    let out = std::process::Command::new(CTL)
        .arg("status")
        .env("BROWSER_MCP_SOCKET", &d.socket)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread")]
async fn events_stream_is_sequenced_filterable_and_resumable() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::connect(&d, "s1", vec![tab(1, "T", vec![])]).await;
    d.wait_tabs("tab", |t| t.len() == 1);
    let first = d.ctl(&["events", "--since", "0", "--count", "2"]);
    let lines: Vec<Value> = stdout(&first)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["type"], "browserConnected");
    assert_eq!(lines[0]["seq"], 1);
    assert_eq!(lines[1]["type"], "tabCreated");
    assert_eq!(lines[1]["tab"], "b1:1");
    assert_eq!(lines[1]["seq"], 2);

    // A live reader filtered by type sees only what it asked for. It starts from the last
    // event so far, whenever its subscription lands relative to the events below.
    let now = d.status()["lastEventSeq"].to_string();
    let live = ctl_async(
        &d,
        &[
            "events",
            "--type",
            "tabClosed",
            "--count",
            "1",
            "--since",
            &now,
        ],
    );
    ext.send(json!({"type": "tabCreated", "tab": tab(2, "U", vec![])}))
        .await;
    ext.send(json!({"type": "tabClosed", "tabId": 2})).await;
    let out = live.await.unwrap();
    let v: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["type"], "tabClosed");
    assert_eq!(v["tab"], "b1:2");

    // Resume after seq 2: exactly the events after it, in order.
    let out = d.ctl(&["events", "--since", "2", "--count", "2"]);
    let seqs: Vec<u64> = stdout(&out)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(seqs, vec![3, 4]);
    let out = d.ctl(&["events", "--type", "bogus", "--count", "1"]);
    assert_eq!(exit_code(&out), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reader_that_falls_behind_gets_a_lagged_event() {
    let d = TestDaemon::builder().args(&["--event-buffer", "8"]).start();
    let mut ext = FakeExtension::connect(&d, "s1", vec![]).await;
    for i in 0..40 {
        ext.send(json!({"type": "tabCreated", "tab": tab(i, "T", vec![])}))
            .await;
    }
    d.wait_tabs("40 tabs", |t| t.len() == 40);
    let out = d.ctl(&["events", "--since", "0", "--count", "3"]);
    let first: Value = serde_json::from_str(stdout(&out).lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "lagged");
    assert_eq!(first["data"]["from"], 1);
    let to = first["data"]["to"].as_u64().unwrap();
    let second: Value = serde_json::from_str(stdout(&out).lines().nth(1).unwrap()).unwrap();
    assert_eq!(
        second["seq"].as_u64().unwrap(),
        to + 1,
        "nothing silently skipped"
    );
}

#[test]
fn closed_stdout_exits_quietly() {
    let d = TestDaemon::start();
    let mut child = std::process::Command::new(CTL)
        .arg("--socket")
        .arg(&d.socket)
        .args(["events", "--since", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    drop(stdout);
    // Produce events so the write hits the closed pipe.
    let _c = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async { FakeExtension::connect(&d, "s", vec![tab(1, "T", vec![])]).await });
    let status = wait_until(Duration::from_secs(10), "browserctl to exit", || {
        child.try_wait().unwrap()
    });
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{status}: {err}");
    assert!(err.is_empty(), "{err}");
}

#[test]
fn sigterm_exits_zero_and_cleans_up() {
    let mut d = TestDaemon::start();
    assert!(d.socket.exists() && d.discovery_file.exists());
    let status = d.terminate();
    assert!(status.success(), "{status}\n{}", d.log());
    assert!(!d.socket.exists(), "socket removed");
    assert!(!d.discovery_file.exists(), "discovery file removed");
}

#[test]
fn a_live_socket_is_not_stolen_and_a_stale_one_is_replaced() {
    let d = TestDaemon::start();
    let out = std::process::Command::new(DAEMON)
        .args(["--port", "0", "--discovery-dir"])
        .arg(&d.discovery_dir)
        .arg("--socket")
        .arg(&d.socket)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("already listening"),
        "{}",
        stderr(&out)
    );
    assert!(
        d.status()["pid"] == d.child.id(),
        "the first daemon still serves"
    );

    // A socket file nobody listens on is replaced.
    let dir = tempfile::tempdir().unwrap();
    let stale = dir.path().join("ctl.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    let d2 = TestDaemon::builder().dir(dir).start();
    assert!(d2.status()["pid"] == d2.child.id());
    let _ = BufReader::new(&b""[..]).lines();
}
