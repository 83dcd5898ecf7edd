//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, the version pinned
//! in `.ci/mcp-conformance-version`, installed by `.ci/run`) against a real daemon's `/mcp`:
//! the server scenarios that need no test fixtures on the server's side.
//!
//! The suite is found at `$MCP_CONFORMANCE` (its `conformance` program) or where `.ci/run`
//! puts it, `target/conformance/`. Without it the test fails under `CI=true` and prints a
//! loud SKIPPED otherwise.

use crate::support::common::*;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};

const PINNED: &str = include_str!("../../../.ci/mcp-conformance-version");

/// The scenarios that apply to a bridge whose tools come from browser tabs (the others want
/// the suite's own fixture tools, prompts and resources on the server).
const SCENARIOS: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "logging-set-level",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
];

fn suite() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MCP_CONFORMANCE") {
        return Some(PathBuf::from(p));
    }
    // CARGO_TARGET_TMPDIR is <target>/tmp; .ci/run installs into <target>/conformance.
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let p = target
        .parent()?
        .join("conformance/node_modules/.bin/conformance");
    p.exists().then_some(p)
}

/// Runs one scenario; returns its checks (from the `checks.json` the suite writes).
fn run(suite: &PathBuf, url: &str, scenario: &str, out: &std::path::Path) -> Vec<Value> {
    let dir = out.join(scenario);
    let o = Command::new(suite)
        .args(["server", "--url", url, "--scenario", scenario, "-o"])
        .arg(&dir)
        .stdin(Stdio::null())
        .output()
        .expect("run the conformance suite");
    let report = std::fs::read_dir(&dir)
        .ok()
        .and_then(|mut entries| entries.next())
        .and_then(|e| e.ok())
        .map(|e| e.path().join("checks.json"))
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_else(|| {
            panic!(
                "{scenario}: no checks.json (exit {})\n{}{}",
                exit_code(&o),
                stdout(&o),
                stderr(&o)
            )
        });
    let checks: Vec<Value> = serde_json::from_str(&report).unwrap();
    let bad: Vec<&Value> = checks
        .iter()
        .filter(|c| c["status"] != "SUCCESS" && c["status"] != "INFO")
        .collect();
    assert!(
        bad.is_empty() && o.status.success(),
        "{scenario} against {url}: {bad:#?}\n{}",
        stdout(&o)
    );
    let passed = checks.iter().filter(|c| c["status"] == "SUCCESS").count();
    assert!(passed > 0, "{scenario}: no check ran: {checks:#?}");
    checks
}

#[test]
fn the_official_conformance_suite_passes_against_mcp() {
    let Some(suite) = suite() else {
        return skip(
            "the_official_conformance_suite_passes_against_mcp",
            "the MCP conformance suite is not installed",
            "run .ci/run, or npm install --prefix target/conformance \
             @modelcontextprotocol/conformance@VERSION (.ci/mcp-conformance-version)",
        );
    };
    let version = Command::new(&suite).arg("--version").output().unwrap();
    assert_eq!(
        stdout(&version).trim(),
        PINNED.trim(),
        "the installed suite is not the pinned version"
    );
    let out = tempfile::tempdir().unwrap();

    // The suite sends no Authorization header (and /mcp takes the token from nowhere else),
    // so it runs against a daemon with `--mcp-auth none`, the setup its DNS-rebinding
    // scenario is written for: Host and Origin alone keep a rebinding page out, and a
    // localhost Origin is served. tests/it/mcp/rmcp_client.rs checks the same Origin rules with the token.
    let d = TestDaemon::builder().args(&["--mcp-auth", "none"]).start();
    for host in ["localhost", "127.0.0.1"] {
        let url = format!("http://{host}:{}/mcp", d.port);
        let mut total = 0;
        for scenario in SCENARIOS {
            total += run(&suite, &url, scenario, &out.path().join(host)).len();
        }
        assert!(total >= SCENARIOS.len(), "{total} checks");
    }
}
