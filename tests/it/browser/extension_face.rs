//! The extension's face as a person sees it: headless Chromium with our extension, the real
//! daemon on a port the extension scans, and a test page with one WebMCP tool. The popup and
//! the options page are opened as extension pages and driven over the DevTools protocol (keys
//! and clicks, like a person), screenshots are kept under target/test-artifacts/extension_face/,
//! and what they promise is checked against `browserctl`.
//!
//! Without Chromium the tests say SKIPPED loudly and pass, except under CI=true, where a
//! missing browser is a failure. `BROWSER_MCP_CHROMIUM` names another binary.

use crate::support::cdp::*;
use crate::support::chromium::*;
use crate::support::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The page under test: one WebMCP tool (read-only), a form for the built-ins.
const PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Recipe box</title></head>
<body>
  <h1>Recipe box</h1>
  <label>Ingredient <input id="q"></label> <button id="go">Search</button>
  <script>
    navigator.modelContext.registerTool({
      name: 'search_recipes',
      title: 'Search recipes',
      description: 'Find recipes by ingredient',
      inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
      annotations: { readOnlyHint: true },
      execute: async ({ query }) => {
        console.error(`searched for ${query}`);
        return { content: [{ type: 'text', text: `3 recipes with ${query}` }] };
      },
    });
  </script>
</body></html>"#;

#[test]
fn popup_and_options_show_the_daemon_the_tools_and_the_site_switch() {
    let Some(exe) = chromium_or_skip(
        "extension_face::popup_and_options_show_the_daemon_the_tools_and_the_site_switch",
    ) else {
        return;
    };
    let _lock = machine_wide_lock();
    let pages = PageServer::page(PAGE);
    let d = daemon_in_scan_range(&[]);
    let profile = tempfile::tempdir().unwrap();
    let mut b = Browser::launch(&exe, profile.path(), &pages.url("recipes"));
    // Found by the scan, trusted once paired (issue 21).
    pair_browser(profile.path(), &d);
    let shots = artifacts_dir();

    // The extension found the daemon by its port scan and reported the page with its tools.
    let tab = wait_for_tab(&d, &b, &pages.url("recipes"), |names| {
        names.contains(&"search_recipes") && names.contains(&"browser_snapshot")
    });
    let tab_ref = tab["ref"].as_str().unwrap().to_owned();
    let tab_id = tab["id"].as_i64().unwrap();
    let names = tool_names(&tab);
    assert_eq!(
        names.len(),
        20,
        "the page's tool and 19 built-ins: {names:?}"
    );
    assert!(
        !names.contains(&"browser_evaluate"),
        "browser_evaluate is off until enabled in the options: {names:?}"
    );
    assert_eq!(
        tab["hidden"],
        json!({"tools": ["browser_evaluate"],
            "reason": "browser_evaluate is disabled in the browser-mcp extension's options"}),
        "the daemon is told what is held back, and why"
    );

    // Only this test's daemon: the scan range is a user setting (options page).
    let options = b.open(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/options.html"
    ));
    b.wait_for(
        &options,
        "the options page to render",
        "document.getElementById('conn-pill').textContent !== '…'",
    );
    let range = b.eval(
        &options,
        &format!(
            r#"(async () => {{
        document.getElementById('port-first').value = '{p}';
        document.getElementById('port-last').value = '{p}';
        document.getElementById('save-ports').click();
        await new Promise((r) => setTimeout(r, 100));
        return [document.getElementById('save-ports-status').textContent,
                (await chrome.storage.local.get('scanPorts')).scanPorts];
    }})()"#,
            p = d.port
        ),
    );
    assert_eq!(range[0], "Saved.", "{range}");
    assert_eq!(range[1], json!({"first": d.port, "last": d.port}));

    // Two calls, so the popup has something to show.
    d.ctl_json(&[
        "call",
        "search_recipes",
        "--tab",
        &tab_ref,
        "--query",
        "eggs",
    ]);
    d.ctl_json(&["call", "browser_snapshot", "--tab", &tab_ref]);

    let popup = b.open(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/popup.html?tab={tab_id}"
    ));
    b.viewport(&popup, 400, 600);
    let daemon = format!("127.0.0.1:{}", d.port);
    let shown = b.wait_for(&popup, "the popup to show the daemon, the tools and both calls", &format!(r#"(() => {{
        const daemons = [...document.querySelectorAll('#daemons li.daemon')].map((li) => li.textContent);
        const tools = [...document.querySelectorAll('#tools li.tool, #hidden-tools li.tool')].map((li) => ({{
            name: li.dataset.tool, hidden: li.classList.contains('hidden'),
            chips: [...li.querySelectorAll('.chip')].map((c) => c.textContent) }}));
        const calls = [...document.querySelectorAll('#calls tr')].map((tr) => [...tr.cells].map((c) => c.textContent));
        const ok = daemons.length === 1 && daemons[0].includes('{daemon}') && daemons[0].includes('connected')
            && tools.some((t) => t.name === 'search_recipes') && calls.length >= 2;
        return ok && {{ pill: document.getElementById('conn-pill').textContent, daemons, tools, calls,
            site: document.getElementById('site').textContent, expose: document.getElementById('expose').checked }};
    }})()"#));
    assert_eq!(shown["pill"], "Connected", "{shown}");
    assert!(
        shown["daemons"][0]
            .as_str()
            .unwrap()
            .contains(&format!("v{}", env!("CARGO_PKG_VERSION"))),
        "the daemon's version: {shown}"
    );
    assert_eq!(shown["site"], pages.origin(), "{shown}");
    assert_eq!(shown["expose"], true, "{shown}");
    let tool = |name: &str| {
        shown["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {shown}"))
    };
    assert_eq!(
        tool("search_recipes")["chips"],
        json!(["page tool", "read-only"])
    );
    assert_eq!(tool("search_recipes")["hidden"], false);
    assert_eq!(
        tool("browser_click")["chips"],
        json!(["built-in", "destructive", "open world"])
    );
    assert_eq!(
        tool("browser_evaluate")["hidden"],
        true,
        "evaluate is listed as hidden: {shown}"
    );
    let calls = shown["calls"].as_array().unwrap();
    assert_eq!(calls[0][0], "browser_snapshot", "newest first: {shown}");
    assert_eq!(calls[0][2], "ok");
    assert_eq!(calls[1][0], "search_recipes");

    for dark in [false, true] {
        b.color_scheme(&popup, dark);
        b.screenshot(&popup, &shots.join(format!("popup-{}.png", scheme(dark))));
    }
    b.color_scheme(&popup, false);

    // Keyboard only: the first Tab reaches the switch, which is a labelled switch; Space flips it.
    let first = b.tab_order(&popup, 5);
    assert_eq!(
        first,
        ["expose", "ask", "builtins", "SUMMARY", "open-options"],
        "focus order of the popup (the summary folds the hidden tools)"
    );
    // The list is re-rendered under the keyboard (a tool came or went while the popup's state
    // was on its way): focus stays on the summary, and the next Tab goes on from there.
    let kept = b.eval(
        &popup,
        r#"(async () => {
            const { el, replace } = await import('./ui.js');
            const box = document.getElementById('hidden-tools');
            box.querySelector('summary').focus();
            replace(box, el('details', {}, el('summary', { dataset: { key: 'hidden-tools' }, text: 'changed under the keyboard' })));
            return document.activeElement.textContent;
        })()"#,
    );
    assert_eq!(kept, "changed under the keyboard");
    b.press(&popup, "Tab");
    let next = b.eval(&popup, "document.activeElement?.id");
    assert_eq!(next, "open-options", "Tab after a re-render under focus");
    let switch = b.eval(&popup, "(() => { const s = document.getElementById('expose'); return [s.getAttribute('role'), s.labels[0].textContent.trim().split('\\n')[0], s.getAttribute('aria-describedby')]; })()");
    assert_eq!(switch, json!(["switch", "Expose this site", "expose-hint"]));
    let status = d.status();
    let seq = status["lastEventSeq"]
        .as_u64()
        .unwrap_or_else(|| panic!("lastEventSeq in {status}"));
    b.focus(&popup, "expose");
    b.press(&popup, "Space");
    b.wait_for(
        &popup,
        "the switch to be off",
        "!document.getElementById('expose').checked",
    );

    // At once: the daemon hears toolsChanged, and the site's tools are gone.
    let gone = wait_until(
        Duration::from_secs(10),
        "the site's tools to leave the daemon",
        || {
            let tabs = d.ctl_json(&["tabs"]);
            let t = tabs["tabs"]
                .as_array()?
                .iter()
                .find(|t| t["ref"] == tab_ref.as_str())?
                .clone();
            tool_names(&t).is_empty().then_some(t)
        },
    );
    assert_eq!(gone["url"], pages.url("recipes"));
    let event = d.ctl(&[
        "events",
        "--type",
        "toolsChanged",
        "--tab",
        &tab_ref,
        "--since",
        &seq.to_string(),
        "--count",
        "1",
    ]);
    let event: Value = serde_json::from_str(stdout(&event).trim()).expect("one event");
    assert_eq!(
        event["data"]["tools"],
        json!([]),
        "toolsChanged went out: {event}"
    );
    let out = d.ctl(&["call", "browser_snapshot", "--tab", &tab_ref]);
    assert_eq!(exit_code(&out), 4, "TOOL_NOT_FOUND: {}", stderr(&out));
    // The caller learns why: the user turned the site off, not a missing tool.
    assert!(
        stderr(&out).contains(&format!(
            "TOOL_NOT_FOUND: `browser_snapshot` on {tab_ref} is hidden by the browser extension: \
             this site ({}) is turned off in the browser-mcp extension",
            pages.origin()
        )),
        "{}",
        stderr(&out)
    );
    let off = b.wait_for(&popup, "the popup to show the tools as hidden", r#"(() => {
        const summary = document.querySelector('#hidden-tools summary')?.textContent;
        return summary?.startsWith('21 hidden') && { ask: document.getElementById('ask').disabled, summary,
            exposed: document.getElementById('tools').textContent };
    })()"#);
    assert_eq!(
        off,
        json!({"ask": true, "summary": "21 hidden: this site is not exposed", "exposed": "Nothing is exposed."})
    );
    b.screenshot(&popup, &shots.join("popup-site-off.png"));

    // And back: Space again.
    b.press(&popup, "Space");
    wait_until(Duration::from_secs(10), "the tools to come back", || {
        let tabs = d.ctl_json(&["tabs"]);
        let t = tabs["tabs"]
            .as_array()?
            .iter()
            .find(|t| t["ref"] == tab_ref.as_str())?
            .clone();
        tool_names(&t).contains(&"browser_snapshot").then_some(())
    });

    // Built-ins off for this site only: the page's own tool stays.
    b.focus(&popup, "builtins");
    b.press(&popup, "Space");
    let t = wait_until(Duration::from_secs(10), "the built-ins to leave", || {
        let tabs = d.ctl_json(&["tabs"]);
        let t = tabs["tabs"]
            .as_array()?
            .iter()
            .find(|t| t["ref"] == tab_ref.as_str())?
            .clone();
        (!tool_names(&t).contains(&"browser_snapshot")).then_some(t)
    });
    assert_eq!(tool_names(&t), ["search_recipes"]);
    let builtins_off = format!(
        "built-in tools are turned off for this site ({}) in the browser-mcp extension",
        pages.origin()
    );
    assert_eq!(t["hidden"]["reason"], builtins_off.as_str(), "{t}");
    // The eyes (console, network, downloads, screenshots, tabs) are built-ins too.
    for tool in [
        "browser_snapshot",
        "browser_console_messages",
        "browser_network_requests",
    ] {
        let out = d.ctl(&["call", tool, "--tab", &tab_ref]);
        assert_eq!(exit_code(&out), 4, "TOOL_NOT_FOUND: {}", stderr(&out));
        assert!(stderr(&out).contains(&builtins_off), "{}", stderr(&out));
    }

    // The options page lists the site and the calls.
    b.viewport(&options, 900, 700);
    let listed = b.wait_for(&options, "the options page to list the site and the calls", &format!(r#"(() => {{
        const row = document.querySelector('#sites tr[data-site="{origin}"]');
        const calls = document.querySelectorAll('#activity tr').length;
        return row && calls >= 2 && {{ mode: row.querySelector('select').value, builtins: row.querySelector('input').checked, calls,
            native: document.getElementById('native').textContent }};
    }})()"#, origin = pages.origin()));
    assert_eq!(listed["mode"], "allow", "{listed}");
    assert_eq!(listed["builtins"], false, "{listed}");
    assert!(
        listed["native"]
            .as_str()
            .unwrap()
            .starts_with("unavailable"),
        "no native host in this profile: {listed}"
    );
    for dark in [false, true] {
        b.color_scheme(&options, dark);
        b.screenshot(
            &options,
            &shots.join(format!("options-{}.png", scheme(dark))),
        );
    }

    // Clearing the activity log empties it, there and in the popup.
    b.eval(
        &options,
        "document.getElementById('clear-activity').click()",
    );
    b.wait_for(&options, "the log to be empty", "document.querySelectorAll('#activity tr').length === 0 && !document.getElementById('activity-empty').hidden");
    b.wait_for(
        &popup,
        "the popup's calls to be empty",
        "document.querySelectorAll('#calls tr').length === 0",
    );
    assert_eq!(
        b.eval(&popup, "chrome.action.getBadgeText({})"),
        "on",
        "connected, nothing running"
    );

    // While the built-ins were off, the page's console was not recorded: turned back on, the
    // log has what came after, and the consoleError event went out for that alone.
    let seq = d.ctl_json(&["status"])["lastEventSeq"].to_string();
    d.ctl_json(&[
        "call",
        "search_recipes",
        "--tab",
        &tab_ref,
        "--query",
        "while-off",
    ]);
    b.eval(
        &options,
        &format!(
            r#"(async () => {{
        const {{ sites }} = await chrome.storage.local.get('sites');
        sites['{origin}'] = {{ ...sites['{origin}'], builtins: true }};
        await chrome.storage.local.set({{ sites }});
        return true;
    }})()"#,
            origin = pages.origin()
        ),
    );
    wait_until(
        Duration::from_secs(10),
        "the built-ins to come back",
        || {
            let tabs = d.ctl_json(&["tabs"]);
            let t = tabs["tabs"]
                .as_array()?
                .iter()
                .find(|t| t["ref"] == tab_ref.as_str())?
                .clone();
            tool_names(&t)
                .contains(&"browser_console_messages")
                .then_some(())
        },
    );
    d.ctl_json(&[
        "call",
        "search_recipes",
        "--tab",
        &tab_ref,
        "--query",
        "while-on",
    ]);
    let log = d.ctl_json(&[
        "call",
        "browser_console_messages",
        "--tab",
        &tab_ref,
        "--args",
        r#"{"since": 0}"#,
    ]);
    let texts: Vec<&str> = log["result"]["structuredContent"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert_eq!(texts, ["searched for while-on"], "{log}");
    let event = d.ctl(&[
        "events",
        "--type",
        "consoleError",
        "--tab",
        &tab_ref,
        "--since",
        &seq,
        "--count",
        "1",
    ]);
    let event: Value = serde_json::from_str(stdout(&event).trim()).expect("one event");
    assert_eq!(event["data"]["text"], "searched for while-on", "{event}");

    // The daemon dies: the popup says so, with the reason, and the badge turns to "!".
    let mut d = d;
    let _ = d.child.kill();
    let _ = d.child.wait();
    let lost = b.wait_for(&popup, "the popup to show the lost daemon", "(() => { const li = document.querySelector('#daemons li.daemon'); return li?.classList.contains('state-lost') && [document.getElementById('conn-pill').textContent, li.textContent]; })()");
    assert_eq!(lost[0], "Connection problem", "{lost}");
    assert!(
        lost[1]
            .as_str()
            .unwrap()
            .contains("connection dropped (1006)"),
        "{lost}"
    );
    assert_eq!(b.eval(&popup, "chrome.action.getBadgeText({})"), "!");
    b.screenshot(&popup, &shots.join("popup-daemon-lost.png"));

    // A second daemon, with pairings of its own that do not include this browser: the scan
    // finds it, it gets nothing, and the popup says so and how to pair (issue 21).
    let other = daemon_in_scan_range(&[]);
    let (first, last) = (d.port.min(other.port), d.port.max(other.port));
    b.eval(
        &options,
        &format!("chrome.storage.local.set({{ scanPorts: {{ first: {first}, last: {last} }} }})"),
    );
    let unpaired = b.wait_for(
        &popup,
        "the popup to show the daemon it is not paired with",
        &format!(
            "(() => {{ const li = [...document.querySelectorAll('#daemons li.daemon')]
                .find((li) => li.textContent.includes('127.0.0.1:{}'));
                return li?.classList.contains('state-unpaired') && li.textContent; }})()",
            other.port
        ),
    );
    let text = unpaired.as_str().unwrap();
    assert!(text.contains("found, not paired"), "{unpaired}");
    assert!(text.contains("browserctl pair"), "{unpaired}");
    assert!(
        b.eval(&popup, "document.body.innerText")
            .as_str()
            .unwrap()
            .contains("Pairing code"),
        "the popup offers to pair"
    );
    // It learned nothing about this browser.
    let seen = other.ctl_json(&["tabs"]);
    assert_eq!(
        seen["tabs"],
        json!([]),
        "an unpaired daemon sees no tab: {seen}"
    );
    b.screenshot(&popup, &shots.join("popup-daemon-unpaired.png"));
}

#[test]
fn ask_mode_waits_for_the_user_and_the_policy_survives_a_restart() {
    let Some(exe) = chromium_or_skip(
        "extension_face::ask_mode_waits_for_the_user_and_the_policy_survives_a_restart",
    ) else {
        return;
    };
    let _lock = machine_wide_lock();
    let pages = PageServer::page(PAGE);
    let d = daemon_in_scan_range(&[]);
    let profile = tempfile::tempdir().unwrap();
    let url = pages.url("recipes");
    let mut b = Browser::launch(&exe, profile.path(), &url);
    pair_browser(profile.path(), &d);
    let shots = artifacts_dir();
    let tab = wait_for_tab(&d, &b, &url, |n| {
        n.contains(&"search_recipes") && n.contains(&"browser_snapshot")
    });
    let tab_ref = tab["ref"].as_str().unwrap().to_owned();

    // "Ask" for this site, from the popup; prompts give up after 1.5 s (a setting in storage).
    let popup = b.open(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/popup.html?tab={}",
        tab["id"]
    ));
    b.viewport(&popup, 400, 600);
    b.wait_for(
        &popup,
        "the popup",
        "document.getElementById('site').textContent.startsWith('http')",
    );
    b.eval(
        &popup,
        "chrome.storage.local.set({ consentTimeoutMs: 1500 })",
    );
    b.eval(&popup, "document.getElementById('ask').click()");
    b.wait_for(&popup, "ask mode", "document.getElementById('ask').checked");

    // Nobody answers: the call fails after the timeout with its own code, and did not run.
    let started = Instant::now();
    let out = d.ctl(&[
        "call",
        "search_recipes",
        "--tab",
        &tab_ref,
        "--query",
        "eggs",
    ]);
    let waited = started.elapsed();
    assert_eq!(exit_code(&out), 7, "TOOL_ERROR: {}", stderr(&out));
    assert!(
        stderr(&out).contains("USER_CONSENT_TIMEOUT"),
        "{}",
        stderr(&out)
    );
    assert!(
        waited >= Duration::from_millis(1500),
        "answered after {waited:?}, before the prompt's timeout"
    );

    // The user denies in the popup.
    let call = spawn_ctl(&d, &["call", "browser_snapshot", "--tab", &tab_ref]);
    b.wait_for(&popup, "the prompt in the popup", "!document.getElementById('pending-section').hidden && document.querySelector('#pending .prompt strong')?.textContent === 'browser_snapshot'");
    // One call in flight on the badge, and a desktop notification asking too.
    let badge = b.wait_for(
        &popup,
        "the badge to count the call",
        "chrome.action.getBadgeText({}).then((t) => t === '1' && t)",
    );
    assert_eq!(badge, "1");
    let notes = b.eval(
        &popup,
        "chrome.notifications.getAll().then((all) => Object.keys(all))",
    );
    assert!(
        notes.as_array().is_some_and(
            |n| n.len() == 1 && n[0].as_str().unwrap().starts_with("browser-mcp-consent-")
        ),
        "{notes}"
    );
    b.color_scheme(&popup, false);
    b.screenshot(&popup, &shots.join("popup-ask-light.png"));
    b.color_scheme(&popup, true);
    b.screenshot(&popup, &shots.join("popup-ask-dark.png"));
    b.color_scheme(&popup, false);
    b.eval(&popup, "[...document.querySelectorAll('#pending button')].find((x) => x.textContent === 'Deny').click()");
    let out = call.join().unwrap();
    assert_eq!(exit_code(&out), 7, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("USER_DENIED") && stderr(&out).contains("denied"),
        "{}",
        stderr(&out)
    );

    // And allows the next one, with the keyboard: the Allow button gets focus and Enter.
    let call = spawn_ctl(
        &d,
        &[
            "call",
            "search_recipes",
            "--tab",
            &tab_ref,
            "--query",
            "leeks",
        ],
    );
    b.wait_for(
        &popup,
        "the next prompt",
        "document.querySelector('#pending .prompt strong')?.textContent === 'search_recipes'",
    );
    let allow_key = b.eval(&popup, "[...document.querySelectorAll('#pending button')].find((x) => x.textContent === 'Allow once').dataset.key");
    b.eval(
        &popup,
        &format!(
            "document.querySelector('[data-key=\"{}\"]').focus()",
            allow_key.as_str().unwrap()
        ),
    );
    b.press(&popup, "Enter");
    let out = call.join().unwrap();
    assert!(out.status.success(), "allowed: {}", stderr(&out));
    assert!(
        stdout(&out).contains("3 recipes with leeks"),
        "{}",
        stdout(&out)
    );
    let calls = b.wait_for(&popup, "the three calls in the popup", "(() => { const rows = [...document.querySelectorAll('#calls tr')].map((tr) => tr.cells[2].textContent); return rows.length >= 3 && !['waiting for you', 'running'].includes(rows[0]) && rows; })()");
    assert_eq!(
        calls,
        json!(["ok", "denied", "no answer"]),
        "what a person reads"
    );

    // Built-ins off too, then a browser restart on the same profile.
    b.eval(&popup, "document.getElementById('builtins').click()");
    wait_until(Duration::from_secs(10), "the built-ins to leave", || {
        let tabs = d.ctl_json(&["tabs"]);
        let t = tabs["tabs"]
            .as_array()?
            .iter()
            .find(|t| t["ref"] == tab_ref.as_str())?
            .clone();
        (!tool_names(&t).contains(&"browser_snapshot")).then_some(())
    });
    b.close();
    let mut b = Browser::launch(&exe, profile.path(), &url);
    let tab = wait_for_tab(&d, &b, &url, |n| n.contains(&"search_recipes"));
    assert_eq!(
        tool_names(&tab),
        ["search_recipes"],
        "built-ins stay off after the restart: {tab}"
    );
    let tab_ref = tab["ref"].as_str().unwrap().to_owned();
    let out = d.ctl(&[
        "call",
        "search_recipes",
        "--tab",
        &tab_ref,
        "--query",
        "eggs",
    ]);
    assert!(
        stderr(&out).contains("USER_CONSENT_TIMEOUT"),
        "still \"ask\", still 1.5 s: {}",
        stderr(&out)
    );
    let popup = b.open(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/popup.html?tab={}",
        tab["id"]
    ));
    let state = b.wait_for(&popup, "the popup after the restart", "document.getElementById('site').textContent.startsWith('http') && [document.getElementById('expose').checked, document.getElementById('ask').checked, document.getElementById('builtins').checked]");
    assert_eq!(state, json!([true, true, false]));
}

#[test]
fn options_show_the_native_host_and_the_daemon_it_lists() {
    let Some(exe) =
        chromium_or_skip("extension_face::options_show_the_native_host_and_the_daemon_it_lists")
    else {
        return;
    };
    let _lock = machine_wide_lock();
    let pages = PageServer::page(PAGE);
    // Off the scan range and wanting its token: only the native host can bring the browser here.
    let d = TestDaemon::builder().args(&["--require-token"]).start();
    let profile = tempfile::tempdir().unwrap();
    let out = ctl_plain(&[
        "install-native-host",
        "--user-data-dir",
        profile.path().to_str().unwrap(),
        "--discovery-dir",
        d.discovery_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "install: {}", stderr(&out));
    let mut b = Browser::launch(&exe, profile.path(), &pages.url("recipes"));
    wait_for_tab(&d, &b, &pages.url("recipes"), |n| {
        n.contains(&"search_recipes")
    });

    let options = b.open(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/options.html"
    ));
    b.viewport(&options, 900, 700);
    let shown = b.wait_for(
        &options,
        "the options page to show the host and its daemon",
        &format!(
            r#"(() => {{
                const li = document.querySelector('#daemons li.daemon');
                return li?.textContent.includes('127.0.0.1:{}') && li.classList.contains('state-connected') && {{
                    daemon: li.textContent, native: document.getElementById('native').textContent,
                    hint: document.getElementById('native-hint').hidden }};
            }})()"#,
            d.port
        ),
    );
    assert_eq!(shown["native"], "connected: lists 1 daemon", "{shown}");
    assert_eq!(
        shown["hint"], true,
        "no install hint when the host runs: {shown}"
    );
    let daemon = shown["daemon"].as_str().unwrap();
    assert!(
        daemon.contains("native host")
            && daemon.contains(&format!("v{}", env!("CARGO_PKG_VERSION"))),
        "{shown}"
    );
    b.screenshot(&options, &artifacts_dir().join("options-native-host.png"));
}

// ---- the browser ----------------------------------------------------------------------------

/// target/test-artifacts/extension_face (not committed).
fn artifacts_dir() -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let dir = target.join("test-artifacts").join("extension_face");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Polls `browserctl tabs` until the tab showing `url` has tools that satisfy `ready`.
fn wait_for_tab(d: &TestDaemon, b: &Browser, url: &str, ready: impl Fn(&[&str]) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let tabs = d.ctl_json(&["tabs"]);
        if let Some(t) = tabs["tabs"].as_array().and_then(|ts| {
            ts.iter()
                .find(|t| t["url"] == url && ready(&tool_names(t)))
                .cloned()
        }) {
            return t;
        }
        if start.elapsed() > BROWSER_WAIT {
            panic!(
                "no tab {url} with its tools after {BROWSER_WAIT:?}: {tabs}\n--- daemon ---\n{}\n--- chromium ---\n{}",
                d.log(),
                b.log_tail()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn spawn_ctl(d: &TestDaemon, args: &[&str]) -> std::thread::JoinHandle<Output> {
    let socket = d.socket.clone();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    std::thread::spawn(move || {
        Command::new(CTL)
            .arg("--socket")
            .arg(&socket)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .expect("run browserctl")
    })
}
