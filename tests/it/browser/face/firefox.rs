//! The extension's face in headless Firefox ESR: the popup and the options page opened as the
//! extension's own pages (moz-extension://) and driven over WebDriver BiDi, the badge, the
//! per-site policy and "ask" mode, each checked against what `browserctl` sees. The Chromium
//! counterparts are chromium_popup.rs and chromium_ask.rs.
//!
//! Without Firefox the test says SKIPPED loudly and passes, except under CI=true, where a
//! missing browser is a failure. `BROWSER_MCP_FIREFOX` names another binary.

use super::{
    allowed_then_listed, asking, nobody_answers, popup_shows, scan_only, search_args, spawn_ctl,
    tab_once, PAGE,
};
use crate::support::chromium::*;
use crate::support::common::*;
use crate::support::driver::Ctl;
use crate::support::firefox::*;
use serde_json::json;
use std::time::Instant;

#[test]
fn popup_options_badge_site_policy_and_ask_mode() {
    let Some(exe) =
        firefox_or_skip("browser::face::firefox::popup_options_badge_site_policy_and_ask_mode")
    else {
        return;
    };
    let _lock = machine_wide_lock();
    let started = Instant::now();
    let step = |name: &str| eprintln!("firefox face {:>6.1?} {name}", started.elapsed());
    let pages = PageServer::page(PAGE);
    let mut d = daemon_in_scan_range(&[]);
    let mut ff = Firefox::launch(&exe, &Options::default());
    // Found by the scan but not paired (issue 21): the popup says so in words, offers the
    // pairing form, and the daemon has heard of no tab.
    let popup = ff.open_extension_page("ui/popup.html");
    let unpaired = ff.wait_for(
        &popup,
        "the popup to show the daemon found, not paired",
        &format!(
            r#"(() => {{
            const li = [...document.querySelectorAll('#daemons li.daemon')].find((li) => li.textContent.includes('127.0.0.1:{port}'));
            return li?.classList.contains('state-unpaired') && {{ text: li.textContent,
                pairOffered: !document.getElementById('pair-section').hidden }};
        }})()"#,
            port = d.port
        ),
    );
    let text = unpaired["text"].as_str().unwrap();
    assert!(
        text.contains("found, not paired") && text.contains("run browserctl pair"),
        "{unpaired}"
    );
    assert_eq!(unpaired["pairOffered"], true, "{unpaired}");
    assert_eq!(
        d.ctl_json(&["tabs"])["tabs"],
        json!([]),
        "no tab for an unpaired daemon"
    );
    ff.bidi.close(&popup).unwrap();
    // Trusted once paired; the person lets agents act everywhere (consent in Firefox is the
    // "ask" part below, for one site).
    ff.pair(&d);
    ff.allow_everywhere();
    let url = pages.url("recipes");
    ff.show(&url);
    let c = Ctl {
        d: &d,
        what: "Firefox face",
    };
    c.ok(
        &ff,
        &["wait", "--tool", "search_recipes", "--timeout", "60s"],
    );
    let tab = c
        .tabs(&ff)
        .into_iter()
        .find(|t| t["url"] == url.as_str())
        .unwrap_or_else(|| panic!("the recipes tab\n{}", c.context(&ff)));
    let tab_ref = tab["ref"].as_str().unwrap().to_owned();
    let tab_id = tab["id"].as_i64().unwrap();
    let names = tool_names(&tab);
    assert!(
        names.contains(&"search_recipes")
            && names.contains(&"browser_snapshot")
            && names
                .iter()
                .all(|n| *n == "search_recipes" || n.starts_with("browser_"))
            && !names.contains(&"browser_evaluate"),
        "the page's tool and the built-ins but browser_evaluate: {names:?}"
    );
    assert_eq!(
        tab["hidden"],
        json!({"tools": ["browser_evaluate"],
            "reason": "browser_evaluate is disabled in the browser-mcp extension's options"}),
    );
    step("tab up");

    // Options: only this test's daemon (the scan range is a setting), and browser_evaluate on.
    let options = ff.open_extension_page("ui/options.html");
    scan_only(&mut ff, &options, d.port);
    // Firefox's WebCrypto computes the handshake's HMACs as the daemon does.
    assert_eq!(
        ff.eval(&options, crate::security::trust::AUTH_SELF_TEST),
        crate::security::trust::auth_vectors(),
        "extension/worker/connection/auth.js in Firefox against src/protocol/auth.rs"
    );
    // The pairing made at launch is listed, and the daemon is trusted because of it.
    let listed = ff.wait_for(
        &options,
        "the options page to list the pairing and the paired daemon",
        r#"(() => {
            const pairings = [...document.querySelectorAll('#pairings li.pairing')].map((li) => li.dataset.pairing);
            const daemons = [...document.querySelectorAll('#daemons li.daemon .state')].map((s) => s.textContent.trim());
            return pairings.length === 1 && daemons.length === 1 && { pairings, daemons };
        })()"#,
    );
    assert_eq!(listed["daemons"], json!(["connected · paired"]), "{listed}");
    let pairing_id = listed["pairings"][0].as_str().unwrap().to_owned();
    let on_daemon = d.ctl_json(&["pair", "--list"]);
    assert!(
        on_daemon.to_string().contains(&pairing_id),
        "the daemon knows pairing {pairing_id}: {on_daemon}"
    );
    ff.eval(&options, "document.getElementById('evaluate').click()");
    tab_once(&d, &tab_ref, "browser_evaluate to be offered", |n| {
        n.contains(&"browser_evaluate")
    });
    let out = c.json(
        &ff,
        &[
            "call",
            "browser_evaluate",
            "--tab",
            &tab_ref,
            "--expression",
            "document.title + '!'",
        ],
    );
    assert_eq!(
        out["result"]["structuredContent"]["value"], "Recipe box!",
        "{out}"
    );
    c.json(&ff, &search_args(&tab_ref, "eggs"));
    step("options done");

    // The popup of that tab: the daemon, the site, the tools and the calls; the badge says "on".
    let popup = ff.open_extension_page(&format!("ui/popup.html?tab={tab_id}"));
    let daemon = format!("127.0.0.1:{}", d.port);
    let shown = popup_shows(&mut ff, &popup, &daemon, "connected · paired");
    assert_eq!(shown["pill"], "Connected", "{shown}");
    assert_eq!(shown["site"], pages.origin(), "{shown}");
    assert_eq!(shown["expose"], true, "{shown}");
    assert_eq!(
        shown["pairOffered"], false,
        "paired: no pairing form: {shown}"
    );
    assert_eq!(
        shown["calls"][0][0], "search_recipes",
        "newest first: {shown}"
    );
    assert_eq!(shown["calls"][1][0], "browser_evaluate", "{shown}");
    let chips = shown["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search_recipes")
        .map(|t| t["chips"].clone());
    assert_eq!(chips, Some(json!(["page tool", "read-only"])), "{shown}");
    assert_eq!(ff.eval(&popup, "chrome.action.getBadgeText({})"), "on");

    // Expose off: the site's tools leave the daemon at once, and a call says why.
    // A switch is clicked like a person does; the test goes on once the extension's worker
    // holds the new policy (`policy` is a JS condition on what it reports for the tab).
    let flip = |ff: &mut Firefox, id: &str, policy: &str| {
        ff.eval(&popup, &format!("document.getElementById('{id}').click()"));
        ff.wait_for(
            &popup,
            &format!("the worker to see {id}: {policy}"),
            &format!(
                "chrome.runtime.sendMessage({{ type: 'face:state', tabId: {tab_id} }})\
                 .then((s) => {{ const p = s.tab.policy; return {policy}; }})"
            ),
        );
    };
    flip(&mut ff, "expose", "p.mode === 'off'");
    tab_once(&d, &tab_ref, "the site's tools to leave", |n| n.is_empty());
    let out = d.ctl(&["call", "browser_snapshot", "--tab", &tab_ref]);
    assert_eq!(exit_code(&out), 4, "TOOL_NOT_FOUND: {}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "this site ({}) is turned off in the browser-mcp extension",
            pages.origin()
        )),
        "{}",
        stderr(&out)
    );
    flip(&mut ff, "expose", "p.mode === 'allow'");
    tab_once(&d, &tab_ref, "the tools to come back", |n| {
        n.contains(&"browser_snapshot")
    });

    // Built-ins off for this site: the page's own tool stays.
    flip(&mut ff, "builtins", "!p.builtins");
    let t = tab_once(&d, &tab_ref, "the built-ins to leave", |n| {
        !n.contains(&"browser_snapshot")
    });
    assert_eq!(tool_names(&t), ["search_recipes"]);
    flip(&mut ff, "builtins", "p.builtins");
    step("site switches done");

    // Ask mode; prompts give up after 1.5 s (a setting in storage).
    ff.eval(
        &popup,
        "chrome.storage.local.set({ consentTimeoutMs: 1500 })",
    );
    flip(&mut ff, "ask", "p.mode === 'ask'");
    nobody_answers(&d, &tab_ref);

    // Denied in the popup, while the badge counts the call. (The desktop notification that asks
    // too is not checked here: headless Firefox has no notification service, so it is closed as
    // soon as it is made, which in Firefox must not count as a denial.)
    ff.eval(
        &popup,
        "chrome.storage.local.set({ consentTimeoutMs: 20000 })",
    );
    let call = asking(&mut ff, &popup, &d, &tab_ref);
    ff.eval(&popup, "[...document.querySelectorAll('#pending button')].find((x) => x.textContent === 'Deny').click()");
    let out = call.join().unwrap();
    assert_eq!(exit_code(&out), 20, "{}", stderr(&out));
    assert!(stderr(&out).contains("USER_DENIED"), "{}", stderr(&out));

    // Allowed in the popup.
    let call = spawn_ctl(&d, &search_args(&tab_ref, "leeks"));
    ff.wait_for(
        &popup,
        "the next prompt",
        "document.querySelector('#pending .prompt strong')?.textContent === 'search_recipes'",
    );
    ff.eval(&popup, "[...document.querySelectorAll('#pending button')].find((x) => x.textContent === 'Allow once').click()");
    allowed_then_listed(&mut ff, &popup, call);
    step("ask mode done");

    // The daemon dies: the popup says so and the badge turns to "!".
    let _ = d.child.kill();
    let _ = d.child.wait();
    let lost = ff.wait_for(&popup, "the popup to show the lost daemon", "(() => { const li = document.querySelector('#daemons li.daemon'); return li?.classList.contains('state-lost') && document.getElementById('conn-pill').textContent; })()");
    assert_eq!(lost, "Connection problem");
    assert_eq!(ff.eval(&popup, "chrome.action.getBadgeText({})"), "!");
    step("done");
}
