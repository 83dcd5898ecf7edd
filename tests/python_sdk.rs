//! An independent MCP client: the official Python SDK (`pip install mcp`) launches
//! `browserctl mcp` over stdio (tests/python/mcp_stdio_client.py), and talks to the daemon's
//! `/mcp` in both protocol revisions (tests/python/mcp_http_client.py), while this side
//! scripts the extension.
//!
//! Its own test binary with libtest-mimic's harness, because libtest cannot decide at run
//! time that a test is skipped: without the package this test reports itself as ignored
//! (with a loud note), not as passed. Under CI (`CI` set) .ci/run installs the package, and a
//! missing one fails the test instead.

#[path = "it/support/common.rs"]
mod common;
#[path = "it/support/python.rs"]
mod python;

use common::*;
use libtest_mimic::{Arguments, Failed, Trial};
use python::*;
use serde_json::json;
use std::future::Future;

const NAME: &str = "the_official_python_sdk_drives_browserctl_mcp_over_stdio";
const HTTP: &str = "the_official_python_sdk_drives_mcp_over_http_in_both_revisions";

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let skip = !python_has_mcp() && std::env::var_os("CI").is_none();
    if skip {
        eprintln!("\n*** SKIPPED {NAME}: python3 cannot `import mcp` (pip install mcp) ***\n");
    }
    let trials = vec![
        Trial::test(NAME, run).with_ignored_flag(skip),
        Trial::test(HTTP, run_http).with_ignored_flag(skip),
        Trial::test(
            "without_the_sdk_the_test_reports_itself_ignored",
            ignored_without_sdk,
        ),
    ];
    libtest_mimic::run(&args, trials).exit_code()
}

/// This harness again, with a python3 that cannot import anything: the SDK test must come out
/// ignored, with the note, and not passed (and failed under CI).
fn ignored_without_sdk() -> Result<(), Failed> {
    use std::os::unix::fs::PermissionsExt;
    let fake = tempfile::tempdir()?;
    let python = fake.path().join("python3");
    std::fs::write(&python, "#!/bin/sh\nexit 1\n")?;
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755))?;
    let path = format!(
        "{}:{}",
        fake.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let me = std::env::current_exe()?;
    let run = |ci: bool| {
        let mut cmd = std::process::Command::new(&me);
        cmd.args(["--exact", NAME])
            .env("PATH", &path)
            .env_remove("CI");
        if ci {
            cmd.env("CI", "true");
        }
        cmd.output()
    };
    let out = run(false)?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !(out.status.success() && text.contains("1 ignored") && text.contains("0 passed")) {
        return Err(format!("expected an ignored test:\n{text}").into());
    }
    if !text.contains("*** SKIPPED") {
        return Err(format!("expected the loud note:\n{text}").into());
    }
    let out = run(true)?;
    if out.status.success() {
        return Err("under CI a missing SDK must fail the test".into());
    }
    Ok(())
}

fn run() -> Result<(), Failed> {
    in_runtime(drive)
}

fn run_http() -> Result<(), Failed> {
    in_runtime(drive_http)
}

fn in_runtime<F: Future<Output = ()>>(drive: impl FnOnce() -> F) -> Result<(), Failed> {
    if !python_has_mcp() {
        return Err(
            "CI must have the Python MCP SDK: .ci/run installs it with `pip install mcp`".into(),
        );
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(drive());
    Ok(())
}

/// A daemon with one scripted tab (b1:7) offering `search`.
async fn daemon_with_a_search_tab() -> (TestDaemon, FakeExtension) {
    let d = TestDaemon::start();
    let ext = FakeExtension::search_tab(&d).await;
    (d, ext)
}

async fn drive() {
    let (d, mut ext) = daemon_with_a_search_tab().await;
    let env = [
        ("BROWSERCTL", CTL.as_ref()),
        ("BROWSER_MCP_SOCKET", d.socket.as_os_str()),
    ];
    let mut client = PythonScript::start("client", "mcp_stdio_client.py", &env);
    // Answer the one call the client makes, unless it stops before making it.
    let call = client
        .beside(ext.answer_call(json!("results for test")))
        .await;
    assert_eq!(call["toolName"], "search");
    assert_eq!(call["args"], json!({"query": "test"}));
    client.finish("client: ok").await;
}

/// tests/python/mcp_http_client.py against /mcp: one call per revision, each answered with
/// "results for QUERY".
async fn drive_http() {
    let (d, mut ext) = daemon_with_a_search_tab().await;
    let url = format!("http://127.0.0.1:{}/mcp", d.port);
    let env = [
        ("BROWSER_MCP_URL", url.as_ref()),
        ("BROWSER_MCP_TOKEN", d.token.as_ref()),
    ];
    let mut client = PythonScript::start("HTTP client", "mcp_http_client.py", &env);
    for want in ["legacy", "modern"] {
        let answer = async {
            let call = ext.expect("callTool").await;
            let query = call["args"]["query"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            ext.send(json!({"type": "toolResult", "sessionId": ext.session,
                "callId": call["callId"], "result": format!("results for {query}"), "error": null}))
                .await;
            query
        };
        assert_eq!(client.beside(answer).await, want);
    }
    client.finish("HTTP client: ok").await;
}
