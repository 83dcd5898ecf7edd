//! The round trip of `browserctl call` through ssh, beside a local one in the same run (issue
//! 33): one connection per call (`BROWSER_MCP_SSH_PERSIST=0`), and calls sharing one ssh
//! connection (ControlMaster, the default). Printed, not asserted: speed targets live in
//! benches/bridge/. What is asserted is that every call answers, each way.

use crate::support::common::*;
use crate::support::sshd::Machines;
use serde_json::json;
use std::process::Command;
use std::time::{Duration, Instant};

const CALLS: usize = 15;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Runs `cmd()` CALLS times (each a whole `browserctl call`, process start included).
fn calls(what: &str, mut cmd: impl FnMut() -> Command) -> Duration {
    let mut took = Vec::new();
    for _ in 0..CALLS {
        let start = Instant::now();
        let out = cmd()
            .args(["--json", "call", "search", "--query", "x"])
            .output()
            .unwrap();
        took.push(start.elapsed());
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        assert!(stdout(&out).contains("answer"), "{what}: {}", stdout(&out));
    }
    median(took)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_through_ssh_costs_this_much_more_than_a_local_one() {
    let Some(m) = Machines::new("the remote round trip") else {
        return;
    };
    let d = m.laptop_daemon();
    let mut ext = FakeExtension::search_tab(&d).await;
    let answering = tokio::spawn(async move {
        loop {
            ext.answer_call(json!("answer")).await;
        }
    });
    let (local, one_shot, shared) = tokio::task::block_in_place(|| {
        let local = calls("local", || {
            let mut c = Command::new(CTL);
            c.arg("--socket").arg(&d.socket);
            c
        });
        let one_shot = calls("one ssh per call", || {
            let mut c = m.devbox_ctl();
            c.args(["--host", "ssh://laptop"])
                .env("BROWSER_MCP_SSH_PERSIST", "0");
            c
        });
        let shared = calls("a shared ssh connection", || {
            let mut c = m.devbox_ctl();
            c.args(["--host", "ssh://laptop"]);
            c
        });
        (local, one_shot, shared)
    });
    answering.abort();
    let ratio = |x: Duration| x.as_secs_f64() / local.as_secs_f64().max(1e-6);
    let report = format!(
        "\nbrowserctl call round trip, median of {CALLS} (process start included):\n  \
         local socket           {local:>10.1?}  1.0x\n  \
         ssh, one per call      {one_shot:>10.1?}  {:.1}x\n  \
         ssh, shared connection {shared:>10.1?}  {:.1}x\n",
        ratio(one_shot),
        ratio(shared)
    );
    // Straight to fd 2, so it shows even when the test passes.
    let _ = std::io::Write::write_all(&mut std::io::stderr(), report.as_bytes());
}
