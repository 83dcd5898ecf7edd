//! "Ask" mode in Chromium: a call waits for the person's answer, and the policy survives a
//! restart; the options page shows the native host and the daemons it lists.

use super::*;
use crate::support::cdp::*;
use crate::support::chromium::*;
use crate::support::common::*;
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn ask_mode_waits_for_the_user_and_the_policy_survives_a_restart() {
    let Some(exe) = chromium_or_skip(
        "browser::face::chromium_ask::ask_mode_waits_for_the_user_and_the_policy_survives_a_restart",
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
    let Some(exe) = chromium_or_skip(
        "browser::face::chromium_ask::options_show_the_native_host_and_the_daemon_it_lists",
    ) else {
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
