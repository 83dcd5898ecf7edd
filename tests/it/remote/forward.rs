//! The browser reaches out (issue 33): `browserctl forward ssh://devbox` on the laptop puts
//! its daemon's socket on the dev box, where a plain `browserctl` (and `browserctl mcp`, under
//! the official Python SDK) finds it without flags; the link comes back after the dev box's
//! sshd restarts, and doctor on either side says whether it is up.

use crate::support::common::*;
use crate::support::sshd::{read_until, Machines, Watchdog};
use serde_json::{json, Value};
use std::io::BufReader;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

fn tabs_on_devbox(m: &Machines) -> Value {
    let out = m.devbox_ctl().args(["tabs", "--json"]).output().unwrap();
    assert!(
        out.status.success(),
        "tabs on the dev box: {}",
        stderr(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn doctor(mut cmd: std::process::Command) -> String {
    let out = cmd.arg("doctor").output().unwrap();
    format!("{}{}", stdout(&out), stderr(&out))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_laptop_lends_its_browser_to_the_dev_box_and_the_link_outlives_sshd() {
    let Some(mut m) = Machines::new("the forward test") else {
        return;
    };
    let d = m.laptop_daemon();
    let mut ext = FakeExtension::search_tab(&d).await;
    // The far end's directory, already there and open to everyone's eyes: it is closed.
    let out = m
        .as_devbox("/usr/bin/mkdir")
        .args(["-p", "-m", "0755"])
        .arg(m.forwarded_socket().parent().unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let mut forward = forward_to_devbox(&m, &d.socket, Stdio::piped());
    let _watch = Watchdog::new(forward.0.id(), Duration::from_secs(120));
    let mut lines = BufReader::new(forward.0.stdout.take().unwrap());
    let up = read_until(&mut lines, "the link up", |l| l.contains(r#""event":"up""#));
    let far = m.forwarded_socket();
    assert!(up.contains(&far.display().to_string()), "{up}");

    // The far end: the user's own 0700 directory, a 0600 socket of theirs.
    let socket = std::fs::metadata(&far).unwrap();
    let dir = std::fs::metadata(far.parent().unwrap()).unwrap();
    assert_eq!((socket.uid(), dir.uid()), (m.uid, m.uid));
    assert_eq!(socket.permissions().mode() & 0o777, 0o600);
    assert_eq!(dir.permissions().mode() & 0o777, 0o700);

    // A plain browserctl on the dev box: tabs and a call.
    assert_eq!(tabs_on_devbox(&m)["tabs"][0]["ref"], "b1:7");
    let call = m
        .devbox_ctl()
        .args(["--json", "call", "search", "--query", "from the dev box"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let asked = ext.answer_call(json!("answered by the laptop")).await;
    assert_eq!(asked["args"], json!({"query": "from the dev box"}));
    let out = tokio::task::block_in_place(|| call.wait_with_output().unwrap());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("answered by the laptop"),
        "{}",
        stdout(&out)
    );

    let there = doctor(m.devbox_ctl());
    assert!(
        there.contains("✓ forward from the browser's machine: up"),
        "{there}"
    );
    let here = doctor({
        let mut c = m.laptop_ctl();
        c.arg("--socket").arg(&d.socket);
        c
    });
    assert!(here.contains("✓ forward to ssh://devbox: up"), "{here}");

    // The dev box's sshd goes away with every session: the link is down, and says so.
    m.stop_sshd();
    tokio::task::block_in_place(|| {
        read_until(&mut lines, "the link down", |l| {
            l.contains(r#""event":"down""#)
        })
    });
    let there = doctor(m.devbox_ctl());
    assert!(
        there.contains("✗ forward from the browser's machine: down"),
        "{there}"
    );
    let out = m.devbox_ctl().arg("tabs").output().unwrap();
    assert_eq!(exit_code(&out), 3, "{}", stderr(&out));

    // It comes back by itself.
    m.start_sshd();
    tokio::task::block_in_place(|| {
        read_until(&mut lines, "the link up again", |l| {
            l.contains(r#""event":"up""#)
        })
    });
    assert_eq!(tabs_on_devbox(&m)["tabs"][0]["ref"], "b1:7");

    // `browserctl mcp` on the dev box, without flags, under the official Python SDK.
    let argv = m.devbox_ctl_argv(&["mcp"]);
    super::python_mcp_client(&argv, ext).await;

    // SIGTERM ends it cleanly, and its state with it.
    let pid = nix::unistd::Pid::from_raw(forward.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = tokio::task::block_in_place(|| forward.0.wait().unwrap());
    assert!(status.success(), "forward ended with {status}");
    let here = doctor({
        let mut c = m.laptop_ctl();
        c.arg("--socket").arg(&d.socket);
        c
    });
    assert!(!here.contains("forward to ssh://devbox"), "{here}");
}

/// An MCP client on the dev box started before the forward is back (an editor opened at
/// login, the laptop's `browserctl forward` still reconnecting): its `browserctl mcp` answers
/// alone, since the socket a forward left here says one comes back (issue 59: without a
/// daemon and without that socket, `initialize` fails, `agents::bare_env`), then finds the
/// forwarded socket when it comes and offers the laptop's tabs.
#[tokio::test(flavor = "multi_thread")]
async fn browserctl_mcp_on_the_dev_box_finds_a_forward_that_comes_later() {
    use std::io::{BufRead, Write};
    let Some(m) = Machines::new("the late forward test") else {
        return;
    };
    let d = m.laptop_daemon();
    let _ext = FakeExtension::search_tab(&d).await;
    // The laptop lent its browser before; that link is gone, its socket stays behind.
    let mut before = forward_to_devbox(&m, &d.socket, Stdio::null());
    let mut lines = BufReader::new(before.0.stdout.take().unwrap());
    tokio::task::block_in_place(|| {
        read_until(&mut lines, "the first link up", |l| {
            l.contains(r#""event":"up""#)
        })
    });
    let pid = nix::unistd::Pid::from_raw(before.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    tokio::task::block_in_place(|| before.0.wait().unwrap());
    let out = m.devbox_ctl().arg("tabs").output().unwrap();
    assert_eq!(exit_code(&out), 3, "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(m.forwarded_socket()).is_ok());
    let mut mcp = KillOnDrop(
        m.devbox_ctl()
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let _watch_mcp = Watchdog::new(mcp.0.id(), Duration::from_secs(60));
    let mut input = mcp.0.stdin.take().unwrap();
    let mut output = BufReader::new(mcp.0.stdout.take().unwrap());
    let mut send = |v: Value| writeln!(input, "{v}").unwrap();
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "late", "version": "1"}}}),
    );
    let mut line = String::new();
    output.read_line(&mut line).unwrap();
    assert!(line.contains(r#""id":1"#), "{line}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let mut forward = forward_to_devbox(&m, &d.socket, Stdio::null());
    let _watch = Watchdog::new(forward.0.id(), Duration::from_secs(60));
    let mut lines = BufReader::new(forward.0.stdout.take().unwrap());
    tokio::task::block_in_place(|| {
        read_until(&mut lines, "the link up", |l| l.contains(r#""event":"up""#));
        // The relay says the tools changed once it reaches the daemon.
        read_until(&mut output, "tools/list_changed", |l| {
            l.contains("notifications/tools/list_changed")
        });
    });
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let listed = tokio::task::block_in_place(|| {
        read_until(&mut output, "the tool list", |l| l.contains(r#""id":2"#))
    });
    assert!(listed.contains(r#""name":"search""#), "{listed}");
}

/// `browserctl forward ssh://devbox --json` on the laptop, lending the daemon at `socket`; its
/// stdout piped for the events.
pub(crate) fn forward_to_devbox(m: &Machines, socket: &Path, stderr: Stdio) -> KillOnDrop {
    KillOnDrop(
        m.laptop_ctl()
            .arg("--socket")
            .arg(socket)
            .args(["forward", "ssh://devbox", "--json"])
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap(),
    )
}
