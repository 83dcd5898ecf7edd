//! Remote use over OpenSSH (issue 33), between two "machines" on this one: the laptop (the
//! test's user, with the browser) and a dev box (a second local user), joined by a real sshd
//! on 127.0.0.1 (support/sshd.rs). Both directions, the errors a person meets, and the round
//! trip of a call through ssh beside a local one.

pub mod agent;
pub mod errors;
pub mod forward;
pub mod timing;

use crate::support::common::*;
use serde_json::json;
use std::process::Stdio;
use std::time::Duration;

/// tests/python/mcp_stdio_client.py (the official Python SDK) launching `argv` as its MCP
/// server, while the scripted browser answers its one call.
pub async fn python_mcp_client(argv: &[String], mut ext: FakeExtension) {
    let has_sdk = std::process::Command::new("python3")
        .args(["-c", "import mcp"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_sdk {
        skip(
            "the Python SDK over ssh",
            "python3 cannot `import mcp`",
            "pip install mcp; .ci/run does",
        );
        return;
    }
    let script = format!(
        "{}/tests/python/mcp_stdio_client.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let client = tokio::process::Command::new("python3")
        .arg(script)
        .env("BROWSERCTL_COMMAND", serde_json::to_string(argv).unwrap())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run python3");
    let mut output = Box::pin(client.wait_with_output());
    tokio::select! {
        call = ext.answer_call(json!("results for test")) => {
            assert_eq!(call["args"], json!({"query": "test"}));
        }
        out = &mut output => {
            let out = out.unwrap();
            panic!("the Python client ended first ({}):\n{}\n{}", out.status, stdout(&out), stderr(&out));
        }
    }
    let out = tokio::time::timeout(Duration::from_secs(60), output)
        .await
        .expect("the Python client finishes within 60 s")
        .unwrap();
    assert!(
        out.status.success() && stdout(&out).contains("client: ok"),
        "the Python client failed ({}):\n{}\n{}",
        out.status,
        stdout(&out),
        stderr(&out)
    );
}
