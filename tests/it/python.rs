//! An independent MCP client: the official Python SDK (`pip install mcp`) launches
//! `browserctl mcp` over stdio (tests/python/mcp_stdio_client.py) while this side scripts the
//! extension. Without the package it is skipped, loudly, except under `CI=true`, where
//! .ci/run installs it and a missing package is a failure.

use crate::common::*;
use serde_json::json;
use std::process::Stdio;
use std::time::Duration;

fn python_has_mcp() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import mcp"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_python_sdk_drives_browserctl_mcp_over_stdio() {
    if !python_has_mcp() {
        return skip(
            "python::the_official_python_sdk_drives_browserctl_mcp_over_stdio",
            "python3 cannot `import mcp`",
            "pip install mcp; .ci/run installs it",
        );
    }
    let d = TestDaemon::start();
    let mut ext =
        FakeExtension::connect(&d, "s1", vec![tab(7, "Search", vec![search_tool()])]).await;
    d.wait_tabs("tab 7", |t| t.len() == 1);
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/mcp_stdio_client.py"
    );
    let child = tokio::process::Command::new("python3")
        .arg(script)
        .env("BROWSERCTL", CTL)
        .env("BROWSER_MCP_SOCKET", &d.socket)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run python3");
    let output = child.wait_with_output();
    tokio::pin!(output);
    let report = |out: std::process::Output| {
        format!(
            "the Python client failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    // Answer the one call the client makes, unless it stops before making it.
    let call = tokio::select! {
        call = ext.answer_call(json!("results for test")) => call,
        out = &mut output => panic!("{}", report(out.expect("python3 ran"))),
    };
    assert_eq!(call["toolName"], "search");
    assert_eq!(call["args"], json!({"query": "test"}));
    let out = tokio::time::timeout(Duration::from_secs(60), output)
        .await
        .expect("the Python client finishes within 60 s")
        .expect("python3 ran");
    let ok = out.status.success() && String::from_utf8_lossy(&out.stdout).contains("client: ok");
    assert!(ok, "{}", report(out));
}
