//! A start that fails cleans up after itself, and says what to do (issue 18, item 7).

use crate::support::common::*;
use std::process::{Command, Stdio};

#[test]
fn a_taken_port_says_what_to_do_and_leaves_nothing_behind() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run/browser-mcp");
    let socket = run.join("browser-mcpd.sock");
    let discovery = dir.path().join("tmp/browser-mcp");
    let out = Command::new(DAEMON)
        .args(["--port", &port, "--socket"])
        .arg(&socket)
        .arg("--discovery-dir")
        .arg(&discovery)
        .env("XDG_RUNTIME_DIR", dir.path().join("run"))
        .env("XDG_CONFIG_HOME", dir.path().join("no-config"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(text.contains("already in use"), "{text}");
    assert!(text.contains("another browser-mcpd"), "{text}");
    assert!(text.contains("--port"), "{text}");
    // The socket it had bound, and the directories it had made, are gone again.
    assert!(!socket.exists(), "the control socket was left behind");
    assert!(!run.exists(), "the socket directory was left behind");
    assert!(
        !discovery.exists(),
        "the discovery directory was left behind"
    );
    assert!(!dir.path().join("tmp").exists());
    // So doctor does not find a dead socket to call fine.
    let out = Command::new(CTL)
        .args(["--json", "doctor", "--socket"])
        .arg(&socket)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "control socket")
        .unwrap();
    assert_eq!(check["ok"], false);
    assert!(check["detail"]
        .as_str()
        .unwrap()
        .starts_with("no socket at"));
    drop(taken);
}

/// Directories that were there before the failed start stay (it removes only its own).
#[test]
fn a_failed_start_keeps_what_was_already_there() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let d = TestDaemon::start();
    let out = Command::new(DAEMON)
        .args(["--port", &port, "--socket"])
        .arg(d.dir.path().join("second.sock"))
        .arg("--discovery-dir")
        .arg(&d.discovery_dir)
        .env("XDG_CONFIG_HOME", d.dir.path().join("no-config"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(d.discovery_dir.is_dir());
    assert!(
        d.discovery_file.exists(),
        "the first daemon's file is untouched"
    );
    assert!(d.socket.exists());
    assert!(!d.dir.path().join("second.sock").exists());
    d.status();
}
