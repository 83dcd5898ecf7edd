//! Hostile pages with the real extension in headless Chromium (issue 31): a page that tries to
//! pose as browser-mcp (tests/e2e/pages/hostile-impostor.html, open in two tabs that replay
//! each other's messages) patches JSON, CustomEvent and EventTarget.prototype before any other
//! script of its own, registers WebMCP tools named like the built-ins and the MCP front's own
//! tools, forges every browser-mcp:* DOM event, and tries the extension's messaging and
//! storage. None of it shadows a built-in, runs a call, reads another tab's data (a bank page
//! the agent reads meanwhile, on another site), or changes the person's policy.

use crate::support::cdp::Browser;
use crate::support::chromium::*;
use crate::support::common::*;
use crate::support::site::SiteServer;
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// The tab at `url` once its tools satisfy `ready`.
fn tab_at(d: &TestDaemon, url: &str, ready: impl Fn(&[&str]) -> bool) -> Value {
    wait_until(WAIT, &format!("{url} with its tools"), || {
        let tabs = d.ctl_json(&["tabs"]);
        tabs["tabs"]
            .as_array()?
            .iter()
            .find(|t| t["url"] == url && ready(&tool_names(t)))
            .cloned()
    })
}

#[test]
fn a_page_cannot_pose_as_browser_mcp() {
    let Some(exe) = chromium_or_skip("security::hostile_pages::a_page_cannot_pose_as_browser_mcp")
    else {
        return;
    };
    let _lock = machine_wide_lock();
    let site = SiteServer::start();
    let hostile_url = format!("{}/hostile-impostor.html", site.origin());
    let twin_url = format!("{hostile_url}?twin");
    // The bank is another site (localhost, not 127.0.0.1).
    let bank_url = format!(
        "{}/secret.html",
        site.origin().replace("127.0.0.1", "localhost")
    );
    let d = daemon_in_scan_range(&[]);
    let profile = tempfile::tempdir().unwrap();
    let mut b = Browser::launch(&exe, profile.path(), "about:blank");
    pair_browser(profile.path(), &d);
    // The person allows these two sites, in the options page, and nothing else: the policy the
    // page will try to change.
    let options = b.open(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/options.html"
    ));
    for origin in [
        site.origin(),
        site.origin().replace("127.0.0.1", "localhost"),
    ] {
        let added = b.eval(
            &options,
            &format!(
                r#"(async () => {{
                    for (let i = 0; i < 200 && !document.getElementById('add-site'); i++) await new Promise((r) => setTimeout(r, 50));
                    document.getElementById('new-site').value = {origin};
                    document.getElementById('new-site-mode').value = 'allow';
                    document.getElementById('add-site').requestSubmit();
                    for (let i = 0; i < 100; i++) {{
                        const {{ sites = {{}} }} = await chrome.storage.local.get('sites');
                        if (sites[{origin}]?.mode === 'allow') return true;
                        await new Promise((r) => setTimeout(r, 50));
                    }}
                    return false;
                }})()"#,
                origin = json!(origin)
            ),
        );
        assert_eq!(added, json!(true), "{origin} allowed");
    }
    let policy_before = b.eval(&options, "chrome.storage.local.get(['sites', 'defaultMode', 'evaluateEnabled', 'builtinsByDefault'])");

    let hostile = b.open(&hostile_url);
    let twin = b.open(&twin_url);
    let _bank = b.open(&bank_url);
    let tab = tab_at(&d, &hostile_url, |n| n.contains(&"innocent"));
    let tab_ref = tab["ref"].as_str().unwrap().to_owned();

    // Its tools named like ours are not offered: each built-in once, and ours.
    let names = tool_names(&tab);
    for builtin in [
        "browser_click",
        "browser_snapshot",
        "browser_navigate",
        "browser_tabs",
    ] {
        assert_eq!(
            names.iter().filter(|n| **n == builtin).count(),
            1,
            "{builtin} once: {names:?}"
        );
    }
    let page_named: Vec<&&str> = names
        .iter()
        .filter(|n| !n.starts_with("browser_") || n.to_lowercase() != **n)
        .collect();
    assert_eq!(
        page_named,
        vec![&"innocent"],
        "the page's only tool: {names:?}"
    );
    let click = tab["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "browser_click")
        .unwrap();
    assert!(
        click["description"]
            .as_str()
            .unwrap()
            .starts_with("Click an element (by ref or CSS selector)"),
        "the built-in's own declaration: {click}"
    );

    // Called by name, browser_click is the built-in: the button is pressed, the page's own
    // browser_click never runs.
    let out = d.ctl(&[
        "call",
        "browser_click",
        "--tab",
        &tab_ref,
        "--selector",
        "#press",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The page forges a tool list of its own every 150 ms (naming only built-ins, which are
    // dropped): a page may say what its own tools are, so `innocent` comes and goes with it.
    // Asked again while it is gone, the call reaches the page's own innocent.
    let out = wait_until(
        Duration::from_secs(30),
        "the page's innocent to answer",
        || {
            let out = d.ctl(&["call", "innocent", "--tab", &tab_ref]);
            (!stderr(&out).contains("TOOL_NOT_FOUND")).then_some(out)
        },
    );
    assert!(
        stdout(&out).contains("the page's own innocent ran"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let pressed = b.eval(&hostile, "[window.pressed, hostile.ran]");
    assert_eq!(
        pressed,
        json!([1, ["innocent"]]),
        "the built-in pressed; only `innocent` of the page's ran"
    );

    // The agent reads the bank meanwhile; the hostile pages forge and replay for a while.
    let bank = tab_at(&d, &bank_url, |n| n.contains(&"browser_snapshot"));
    let out = d.ctl(&[
        "call",
        "browser_snapshot",
        "--tab",
        bank["ref"].as_str().unwrap(),
    ]);
    assert!(
        stdout(&out).contains("4417-SECRET-8812"),
        "{}",
        stdout(&out)
    );
    b.wait_for(
        &twin,
        "the twin to replay the first page's messages",
        "hostile.replayed > 20",
    );
    b.wait_for(
        &hostile,
        "the page to replay its twin's",
        "hostile.replayed > 20",
    );

    // Nothing of the bank reached either page, whatever it patched or heard.
    for (name, page) in [("hostile", &hostile), ("twin", &twin)] {
        let seen = b.eval(page, "hostile.seen.join('\\n')");
        let seen = seen.as_str().unwrap();
        assert!(
            !seen.contains("SECRET"),
            "{name} saw the bank: {seen:.2000}"
        );
        assert!(
            !seen.is_empty(),
            "{name} did see our messages (its own tools)"
        );
        // The extension's channels are closed to a page.
        let tried = b.eval(page, "hostile.tried.filter((t) => !t.startsWith('post'))");
        assert!(
            tried.as_array().is_some_and(
                |t| !t.is_empty() && t.iter().all(|x| !x.as_str().unwrap().ends_with(": done"))
            ),
            "{name}: {tried}"
        );
    }
    // Still the page it was: no forged navigation.
    assert_eq!(b.eval(&hostile, "location.href"), json!(hostile_url));

    // No call ran but the agent's, and the person's policy is what they set. The agent may have
    // asked for `innocent` while the page's forged list had dropped it: those attempts are
    // logged as failed (TOOL_NOT_FOUND), and ran nothing.
    let calls = b.eval(&options, "chrome.runtime.sendMessage({ type: 'face:state' }).then((s) => s.calls.map((c) => [c.tool, c.ok ? 'ok' : c.code]))");
    let calls = calls.as_array().unwrap();
    let mut ran: Vec<&str> = calls
        .iter()
        .filter(|c| c[1] == "ok")
        .map(|c| c[0].as_str().unwrap())
        .collect();
    ran.sort_unstable();
    assert_eq!(
        ran,
        ["browser_click", "browser_snapshot", "innocent"],
        "only the agent's calls ran: {calls:?}"
    );
    assert!(
        calls
            .iter()
            .all(|c| c[1] == "ok" || (c[0] == "innocent" && c[1] == "TOOL_NOT_FOUND")),
        "the only failed calls are the agent's tries at a dropped innocent: {calls:?}"
    );
    let policy_after = b.eval(&options, "chrome.storage.local.get(['sites', 'defaultMode', 'evaluateEnabled', 'builtinsByDefault'])");
    assert_eq!(
        policy_after, policy_before,
        "the person's policy, unchanged"
    );
    let again = tab_at(&d, &hostile_url, |n| n.contains(&"innocent"));
    assert_eq!(
        tool_names(&again),
        names,
        "the forged tool lists changed nothing"
    );
}
