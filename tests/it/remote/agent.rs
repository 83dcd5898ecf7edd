//! The agent reaches out (issue 33): on the dev box, `browserctl --host ssh://laptop` (or
//! `BROWSER_MCP_HOST`) talks to the laptop's daemon through ssh and `browserctl dial-stdio`
//! there: tabs, a call, `wait`, the event stream, doctor, and MCP through the official Python
//! SDK. The dev box is a second local user; the laptop's browser is scripted.

use crate::support::common::*;
use crate::support::sshd::{read_until, Machines, Watchdog};
use serde_json::{json, Value};
use std::io::BufReader;
use std::process::{Output, Stdio};
use std::time::Duration;

fn json_of(out: &Output) -> Value {
    assert!(out.status.success(), "browserctl failed: {}", stderr(out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(out)))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_on_the_dev_box_uses_the_laptops_browser_through_ssh() {
    let Some(m) = Machines::new("the --host test") else {
        return;
    };
    let m = std::sync::Arc::new(m);
    let d = m.laptop_daemon();
    let mut ext = FakeExtension::search_tab(&d).await;

    // The local end of a link a killed browserctl left behind is swept by the next one.
    let stale = m.home.join(".local/state/browser-mcp/link-999999-dead");
    let out = m
        .as_devbox("/usr/bin/mkdir")
        .args(["-p", "-m", "0700"])
        .arg(&stale)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    let tabs = json_of(
        &m.devbox_ctl()
            .args(["--host", "ssh://laptop", "tabs", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(tabs["tabs"][0]["ref"], "b1:7", "{tabs}");
    assert!(!stale.exists(), "{} is still there", stale.display());

    // BROWSER_MCP_HOST, and a call answered by the laptop's browser.
    let m2 = m.clone();
    let call = tokio::task::spawn_blocking(move || {
        m2.devbox_ctl()
            .env("BROWSER_MCP_HOST", "ssh://laptop")
            .args(["--json", "call", "search", "--query", "far away"])
            .output()
            .unwrap()
    });
    let asked = ext.answer_call(json!("found from the dev box")).await;
    assert_eq!(asked["args"], json!({"query": "far away"}));
    let answer = json_of(&call.await.unwrap());
    assert_eq!(answer["result"], "found from the dev box", "{answer}");
    assert_eq!(answer["tab"], "b1:7");

    let found = json_of(
        &m.devbox_ctl()
            .args([
                "--host",
                "ssh://laptop",
                "--json",
                "wait",
                "--tool",
                "search",
            ])
            .output()
            .unwrap(),
    );
    assert!(found.to_string().contains("b1:7"), "{found}");

    // The event stream, live across the link: the second event happens after the first
    // came through.
    let since = d.status()["lastEventSeq"].as_u64().unwrap();
    let mut events = KillOnDrop(
        m.devbox_ctl()
            .args([
                "--host",
                "ssh://laptop",
                "events",
                "--type",
                "browserConnected",
            ])
            .args(["--count", "2", "--since", &since.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let _watch = Watchdog::new(events.0.id(), Duration::from_secs(60));
    let mut lines = BufReader::new(events.0.stdout.take().unwrap());
    let _s2 = FakeExtension::connect(&d, "s2", vec![]).await;
    let first = tokio::task::block_in_place(|| {
        read_until(&mut lines, "the first event", |l| l.contains("s2"))
    });
    assert!(first.contains("browserConnected"), "{first}");
    let _s3 = FakeExtension::connect(&d, "s3", vec![]).await;
    let second = tokio::task::block_in_place(|| {
        read_until(&mut lines, "the second event", |l| l.contains("s3"))
    });
    assert!(second.contains("browserConnected"), "{second}");
    let status = tokio::task::block_in_place(|| events.0.wait().unwrap());
    assert!(status.success(), "events ended with {status}");

    let doctor = m
        .devbox_ctl()
        .args(["--host", "ssh://laptop", "doctor"])
        .output()
        .unwrap();
    assert!(
        stdout(&doctor).contains("✓ ssh link: up: ssh://laptop"),
        "{}{}",
        stdout(&doctor),
        stderr(&doctor)
    );

    // The config an MCP client on the dev box needs: stdio through ssh, no loopback URL
    // (the port is the laptop's).
    let config = json_of(
        &m.devbox_ctl()
            .args(["--host", "ssh://laptop", "mcp", "--print-config", "--json"])
            .output()
            .unwrap(),
    );
    let args = &config["stdio"]["mcpServers"]["browser"]["args"];
    assert_eq!(args, &json!(["--host", "ssh://laptop", "mcp"]), "{config}");
    assert!(config["http"].is_null(), "{config}");
}

/// `browserctl mcp --host ssh://laptop` on the dev box, driven by the official Python SDK.
#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_client_on_the_dev_box_uses_the_laptops_browser() {
    let Some(m) = Machines::new("the MCP --host test") else {
        return;
    };
    let d = m.laptop_daemon();
    let ext = FakeExtension::search_tab(&d).await;
    let argv = m.devbox_ctl_argv(&["--host", "ssh://laptop", "mcp"]);
    super::python_mcp_client(&argv, ext).await;
}

/// Ctrl-C on a call made through ssh cancels it in the laptop's daemon, as it does locally;
/// `open` opens a tab there.
#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_through_ssh_cancels_the_call_there_and_open_opens_there() {
    let Some(m) = Machines::new("the remote Ctrl-C test") else {
        return;
    };
    let d = m.laptop_daemon();
    let mut ext = FakeExtension::search_tab(&d).await;
    let child = m
        .devbox_ctl()
        .args(["--host", "ssh://laptop", "call", "search", "--query", "q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _watch = Watchdog::new(child.id(), Duration::from_secs(60));
    ext.expect("callTool").await;
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = tokio::task::block_in_place(|| child.wait_with_output().unwrap());
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("interrupted: the call was cancelled"),
        "{}",
        stderr(&out)
    );
    let s = wait_until(Duration::from_secs(10), "the call to end", || {
        let s = d.status();
        (s["callsInFlight"] == 0).then_some(s)
    });
    assert_eq!(s["callsCancelled"], 1, "{s}");

    // `open` through ssh: the laptop's browser opens the tab, the dev box hears which.
    let child = m
        .devbox_ctl()
        .args(["--host", "ssh://laptop", "open", "https://example.com/new"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _watch_open = Watchdog::new(child.id(), Duration::from_secs(60));
    let open = ext.expect("openTab").await;
    assert_eq!(open["url"], "https://example.com/new");
    ext.send(json!({"type": "tabCreated", "tab": tab(41, "New", vec![]), "requestId": open["requestId"]}))
        .await;
    let out = tokio::task::block_in_place(|| child.wait_with_output().unwrap());
    assert_eq!(stdout(&out).trim(), "b1:41", "{}", stderr(&out));
}

/// `--socket` typed with `--host` names the daemon's socket on that machine; the dev box's own
/// $BROWSER_MCP_SOCKET stays on the dev box.
#[tokio::test(flavor = "multi_thread")]
async fn a_socket_typed_with_host_is_the_one_on_that_machine() {
    let Some(m) = Machines::new("the --host --socket test") else {
        return;
    };
    let far = m.path("laptop/elsewhere/it's here.sock");
    let d = TestDaemon::builder().socket(far.clone()).start();
    let _ext = FakeExtension::search_tab(&d).await;
    let far = far.to_str().unwrap();

    let tabs = json_of(
        &m.devbox_ctl()
            .args(["--host", "ssh://laptop", "--socket", far, "tabs", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(tabs["tabs"][0]["ref"], "b1:7", "{tabs}");
    // After the command, as everywhere else.
    let tabs = json_of(
        &m.devbox_ctl()
            .args(["tabs", "--host", "ssh://laptop", "--socket", far, "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(tabs["tabs"][0]["ref"], "b1:7", "{tabs}");

    // The laptop's default socket has no daemon: the environment's socket went nowhere.
    let out = m
        .devbox_ctl()
        .env("BROWSER_MCP_SOCKET", far)
        .args(["--host", "ssh://laptop", "tabs", "--json"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(
        !stderr(&out).contains("here.sock") && stderr(&out).contains("browser-mcpd.sock"),
        "{}",
        stderr(&out)
    );
}
