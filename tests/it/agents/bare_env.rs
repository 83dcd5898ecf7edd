//! `browserctl mcp` started as MCP clients start it (issue 59): Codex CLI and the Inspector
//! pass a server HOME, PATH and a few more, never XDG_RUNTIME_DIR, while the user's daemon
//! (systemd's) listens in the runtime directory. Such a relay looked only in the state
//! directory, answered with 8 `browserctl_*` tools and a green light, and never reached the
//! daemon. It now finds the daemon through the pointer the daemon keeps in the user's state
//! directory (or `/run/user/UID`), and without any daemon its `initialize` fails, after a
//! short wait, with the reason: every client's health check shows a failure.

use crate::support::common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// browserctl with only what Codex CLI passes a server (HOME, PATH, USER, LANG…).
pub fn bare(home: &Path) -> Command {
    let mut c = Command::new(CTL);
    c.env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("USER", "root")
        .env("LANG", "C.UTF-8");
    c
}

/// A user's home and runtime directory (0700, as systemd makes it), in a temp dir.
pub fn user_dirs() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::DirBuilderExt;
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    let runtime = t.path().join("run-user");
    for d in [&home, &runtime] {
        std::fs::DirBuilder::new().mode(0o700).create(d).unwrap();
    }
    (t, home, runtime)
}

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bare-env", "version": "0"}}})
    .to_string()
}

/// Sends `lines` to `browserctl mcp` (HOME only), then reads answers until `want` are in, or
/// until its output ends; the answers, how long the first one took, and its exit and stderr.
fn exchange(home: &Path, lines: &[String], want: usize) -> (Vec<Value>, Duration, String) {
    let mut child = bare(home)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let start = Instant::now();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    let mut answers = Vec::new();
    let mut first = None;
    while answers.len() < want {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(line) => {
                first.get_or_insert(start.elapsed());
                answers.push(serde_json::from_str(&line).unwrap());
            }
            Err(_) => break,
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    (
        answers,
        first.unwrap_or_default(),
        format!("{}; stderr: {}", out.status, stderr(&out)),
    )
}

#[test]
fn a_relay_with_a_bare_environment_finds_the_users_daemon() {
    let (_t, home, runtime) = user_dirs();
    let d = TestDaemon::builder()
        .like_the_users(&home, Some(&runtime))
        .start();
    assert!(d.socket.starts_with(&runtime), "{}", d.socket.display());

    // browserctl itself, as a script run from cron or a client would start it.
    let out = bare(&home).args(["--json", "status"]).output().unwrap();
    assert!(out.status.success(), "status: {}", stderr(&out));
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["socket"], d.socket.display().to_string(), "{status}");

    // The MCP relay: a call reaches the daemon (no DAEMON_UNAVAILABLE).
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "browserctl_list_tabs", "arguments": {}}});
    let (answers, _, how) = exchange(&home, &[initialize(), call.to_string()], 2);
    assert_eq!(answers.len(), 2, "{answers:?} {how}");
    let text = answers[1]["result"]["content"][0]["text"].to_string();
    assert!(
        answers[1]["result"]["isError"] != true && !text.contains("DAEMON_UNAVAILABLE"),
        "the relay did not reach the daemon: {}\n{how}",
        answers[1]
    );
}

#[test]
fn without_a_daemon_the_relay_fails_initialize_and_says_why() {
    let (_t, home, _runtime) = user_dirs();
    let (answers, took, how) = exchange(&home, &[initialize()], 1);
    assert_eq!(answers.len(), 1, "no answer to initialize: {how}");
    let error = &answers[0]["error"];
    assert!(
        error.is_object(),
        "initialize succeeded without a daemon, a green light in every client's health check: {}",
        answers[0]
    );
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("DAEMON_UNAVAILABLE"), "{message}");
    assert!(
        message.contains("systemctl --user start browser-mcpd"),
        "{message}"
    );
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(8),
        "the wait for a daemon: {took:?}"
    );
    assert!(how.contains("exit status: 3"), "{how}");
}

#[test]
fn a_daemon_that_comes_up_during_the_wait_is_used() {
    let (_t, home, runtime) = user_dirs();
    let starter = {
        let (home, runtime) = (home.clone(), runtime.clone());
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(600));
            TestDaemon::builder()
                .like_the_users(&home, Some(&runtime))
                .start()
        })
    };
    let (answers, _, how) = exchange(&home, &[initialize()], 1);
    let _d = starter.join().unwrap();
    assert_eq!(answers.len(), 1, "{how}");
    assert_eq!(
        answers[0]["result"]["serverInfo"]["name"], "browser-mcp",
        "{} {how}",
        answers[0]
    );
}
