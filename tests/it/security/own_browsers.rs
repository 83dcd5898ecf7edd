//! Issue 58, item 6: an agent limited to its own tabs (`browserctl mcp --own-tabs`) reaches
//! no browser it did not launch. It closed the browser a pipeline had launched, and launched the
//! persistent profile `work` by name: the person's logins, in a browser that asks no consent.
//! Now it closes only what it launched, and no MCP agent starts a persistent profile unless
//! the person's config names it for agents (`agent-profile`). Real Chromium, launched by the
//! daemon; rmcp's client over `browserctl mcp`.

use crate::mcp::rmcp_client::{params, stdio_client, text, McpClient};
use crate::support::chromium::chromium_or_skip;
use crate::support::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A daemon that launches `exe` as chromium into `dir`; SIGTERM when dropped, so that what it
/// launched stops and its profiles are let go before the directory is removed.
struct Launcher {
    d: TestDaemon,
}

impl Drop for Launcher {
    fn drop(&mut self) {
        self.d.stop(Duration::from_secs(30));
    }
}

fn launcher(dir: &Path, exe: &Path, extra: &[&str]) -> Launcher {
    let managed = dir.join("managed");
    let profiles = dir.join("profiles");
    let browser = format!("chromium={}", exe.display());
    let mut args = vec![
        "--managed-dir",
        managed.to_str().unwrap(),
        "--profiles-dir",
        profiles.to_str().unwrap(),
        "--browser-path",
        &browser,
    ];
    args.extend_from_slice(extra);
    Launcher {
        d: TestDaemon::builder()
            .env("DISPLAY", "")
            .env("WAYLAND_DISPLAY", "")
            .env("DBUS_SESSION_BUS_ADDRESS", "")
            .args(&args)
            .start(),
    }
}

async fn call(c: &McpClient, tool: &str, args: Value) -> String {
    let r = c
        .call_tool(params(tool, args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    let t = text(&r);
    if r.is_error == Some(true) {
        t
    } else {
        serde_json::to_string(&r.structured_content).unwrap()
    }
}

fn state_of(d: &TestDaemon, browser: &str) -> String {
    let list = d.ctl_json(&["browser", "list"]);
    list["managed"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|b| b["browser"] == browser)
        .map(|b| b["state"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_else(|| format!("not listed: {list}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_own_tabs_agent_closes_and_opens_only_its_own_browsers() {
    let Some(exe) = chromium_or_skip("security::own_browsers") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let profiles: PathBuf = dir.path().join("profiles");
    let l = launcher(dir.path(), &exe, &[]);
    let d = &l.d;
    // A pipeline's browser.
    let launched = d.ctl_json(&["browser", "launch", "--browser", "chromium"]);
    let pipeline = launched["browser"].as_str().unwrap().to_owned();
    assert_eq!(state_of(d, &pipeline), "running", "{launched}");

    let (agent, _) = stdio_client(d, &["--own-tabs"]).await;
    let said = call(
        &agent,
        "browserctl_close_browser",
        json!({"browser": pipeline}),
    )
    .await;
    assert!(
        said.starts_with("UNAUTHORIZED: "),
        "an --own-tabs agent closed the pipeline's browser: {said}"
    );
    assert_eq!(state_of(d, &pipeline), "running");

    // The persistent profile the person logs into: neither this agent's nor any other's.
    let (everything, _) = stdio_client(d, &[]).await;
    for c in [&agent, &everything] {
        let said = call(
            c,
            "browserctl_launch_browser",
            json!({"profile": "work", "browser": "chromium"}),
        )
        .await;
        assert!(
            said.starts_with("UNAUTHORIZED: ") && said.contains("agent-profile"),
            "an agent launched the profile `work`: {said}"
        );
    }
    assert!(!profiles.join("work").exists(), "no profile `work` made");
    agent.cancel().await.ok();
    everything.cancel().await.ok();
    drop(l);

    // A profile the person names for agents is an agent's to launch; what one agent launched,
    // another --own-tabs agent does not close, and the one that launched it does.
    let dir = tempfile::tempdir().unwrap();
    let l = launcher(dir.path(), &exe, &["--agent-profile", "scratch"]);
    let d = &l.d;
    let (agent, _) = stdio_client(d, &["--own-tabs"]).await;
    let said = call(
        &agent,
        "browserctl_launch_browser",
        json!({"profile": "scratch", "browser": "chromium"}),
    )
    .await;
    let v: Value = serde_json::from_str(&said).unwrap_or_else(|_| panic!("{said}"));
    let own = v["browser"].as_str().unwrap().to_owned();
    assert_eq!(v["profile"], "scratch", "{v}");
    let (other, _) = stdio_client(d, &["--own-tabs"]).await;
    let said = call(&other, "browserctl_close_browser", json!({"browser": own})).await;
    assert!(said.starts_with("UNAUTHORIZED: "), "{said}");
    let said = call(&agent, "browserctl_close_browser", json!({"browser": own})).await;
    assert!(said.contains(&own), "{said}");
    assert_ne!(state_of(d, &own), "running");
    agent.cancel().await.ok();
    other.cancel().await.ok();
}
