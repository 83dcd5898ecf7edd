//! What a person meets when the link cannot be made (issue 33): each failure is DAEMON_UNAVAILABLE
//! (exit 3) with a `details.link` code a script can branch on, and words that say what to do.
//! An unknown host key stays unknown: nothing is added to known_hosts behind the person's back.

use crate::support::common::*;
use crate::support::sshd::Machines;
use serde_json::Value;
use std::process::{Command, Output};

/// The JSON error of a failed browserctl, which must have exited 3.
fn link_error(out: &Output) -> Value {
    assert_eq!(exit_code(out), 3, "{}{}", stdout(out), stderr(out));
    let line = stderr(out);
    let v: Value = serde_json::from_str(line.trim())
        .unwrap_or_else(|e| panic!("not a JSON error ({e}): {line}"));
    v["error"].clone()
}

fn tabs(mut cmd: Command, host: &str) -> Value {
    link_error(
        &cmd.args(["--host", host, "--json", "tabs"])
            .output()
            .unwrap(),
    )
}

#[test]
fn each_way_a_link_fails_has_its_code_and_its_words() {
    let Some(mut m) = Machines::new("the link errors test") else {
        return;
    };

    // No daemon on the laptop yet: the remote browserctl says so, from there.
    let e = tabs(m.devbox_ctl(), "ssh://laptop");
    assert_eq!(e["code"], "DAEMON_UNAVAILABLE", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("browser-mcpd is not running for root"),
        "{e}"
    );
    assert_eq!(e["details"]["host"], "ssh://laptop", "{e}");

    // No ssh program.
    let mut cmd = m.devbox_ctl();
    cmd.env("PATH", "/nonexistent")
        .env_remove("BROWSER_MCP_SSH_COMMAND");
    let e = tabs(cmd, "ssh://laptop");
    assert_eq!(e["details"]["link"], "NO_SSH", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("openssh-client"),
        "{e}"
    );

    // A host key ssh has never seen: refused, and still unknown afterwards.
    let mut cmd = m.devbox_ctl();
    cmd.envs(m.devbox_env("ssh_config_unknown"));
    let e = tabs(cmd, "ssh://laptop");
    assert_eq!(e["details"]["link"], "HOST_KEY_UNKNOWN", "{e}");
    assert!(e["message"].as_str().unwrap().contains("answer yes"), "{e}");
    assert_eq!(
        std::fs::read_to_string(m.path("empty_known_hosts")).unwrap(),
        ""
    );

    // A user whose door our key does not open.
    let e = tabs(m.devbox_ctl(), "ssh://nobody@laptop");
    assert_eq!(e["details"]["link"], "AUTH_FAILED", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("authorized_keys"),
        "{e}"
    );

    // Nothing listening.
    let mut cmd = m.devbox_ctl();
    let e = tabs(
        {
            cmd.env_remove("BROWSER_MCP_SSH_COMMAND");
            cmd
        },
        "ssh://127.0.0.1:1",
    );
    assert_eq!(e["details"]["link"], "UNREACHABLE", "{e}");

    // Another control API: refused by the far end before the socket is touched.
    let out = m
        .devbox_ctl()
        .args(["dial-stdio", "--control-api", "999"])
        .output()
        .unwrap();
    let e = link_error(&out);
    assert_eq!(e["details"]["link"], "VERSION_MISMATCH", "{e}");
    assert_eq!(e["details"]["controlApi"], 1, "{e}");

    // A browserctl there from before remote use: clap refuses the subcommand.
    m.with_remote_browserctl(
        "#!/bin/sh\necho \"error: unrecognized subcommand 'dial-stdio'\" >&2\nexit 2\n",
    );
    let e = tabs(m.devbox_ctl(), "ssh://laptop");
    assert_eq!(e["details"]["link"], "VERSION_MISMATCH", "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("same browser-mcp version"),
        "{e}"
    );

    // No browserctl on the other side: for --host, and for forward (which then gives up at
    // once rather than trying forever).
    m.without_remote_browserctl();
    let e = tabs(m.devbox_ctl(), "ssh://laptop");
    assert_eq!(e["details"]["link"], "NO_REMOTE_BROWSERCTL", "{e}");
    assert!(e["message"].as_str().unwrap().contains("PATH"), "{e}");
    let d = m.laptop_daemon();
    let out = m
        .laptop_ctl()
        .arg("--socket")
        .arg(&d.socket)
        .args(["--json", "forward", "ssh://devbox"])
        .output()
        .unwrap();
    let e = link_error(&out);
    assert_eq!(e["details"]["link"], "NO_REMOTE_BROWSERCTL", "{e}");
}
