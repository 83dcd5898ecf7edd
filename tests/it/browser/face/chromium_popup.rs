//! The popup and the options page in Chromium: the daemon, the tools, the site switch, the
//! badge, keyboard order, light and dark.

use super::*;
use crate::support::cdp::*;
use crate::support::chromium::*;
use crate::support::common::*;
use serde_json::json;

#[test]
fn popup_and_options_show_the_daemon_the_tools_and_the_site_switch() {
    let test = "browser::face::chromium_popup::popup_and_options_show_the_daemon_the_tools_and_the_site_switch";
    let Some(face) = ChromiumFace::start(test) else {
        return;
    };
    let ChromiumFace {
        mut b, d, pages, ..
    } = face;
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
        21,
        "the page's tool and 20 built-ins: {names:?}"
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
    scan_only(&mut b, &options, d.port);

    // Calls, so the popup has something to show. The console read makes the worker hold the
    // search's error before the site's built-ins go off below (they take it with them).
    d.ctl_json(&search_args(&tab_ref, "eggs"));
    let log = d.ctl_json(&["call", "browser_console_messages", "--tab", &tab_ref]);
    assert!(
        log["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("searched for eggs")),
        "{log}"
    );
    d.ctl_json(&["call", "browser_snapshot", "--tab", &tab_ref]);

    let popup = b.open(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/popup.html?tab={tab_id}"
    ));
    b.viewport(&popup, 400, 600);
    let daemon = format!("127.0.0.1:{}", d.port);
    // The version comes with the daemon's first messages, after the line that lists it.
    b.wait_for(
        &popup,
        "the daemon's version in the popup",
        &format!(
            "document.querySelector('#daemons li.daemon')?.textContent.includes('v{}')",
            env!("CARGO_PKG_VERSION")
        ),
    );
    let shown = popup_shows(&mut b, &popup, &daemon, "connected");
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
    assert_eq!(calls[1][0], "browser_console_messages");
    assert_eq!(calls[2][0], "search_recipes");

    for dark in [false, true] {
        b.color_scheme(&popup, dark);
        b.screenshot(&popup, &shots.join(format!("popup-{}.png", scheme(dark))));
    }
    b.color_scheme(&popup, false);

    // Keyboard only: the first Tab reaches the switch, which is a labelled switch; Space flips it.
    let first = b.tab_order(&popup, 5);
    assert_eq!(
        first,
        ["expose", "ask", "builtins", "SUMMARY", "open-activity"],
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
    assert_eq!(next, "open-activity", "Tab after a re-render under focus");
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
    tab_once(&d, &tab_ref, "the site's tools to leave the daemon", |n| {
        n.is_empty()
    });
    // And the tab is known by its origin alone (issue 35): no title, no path.
    let origin_only = format!("{}/", pages.origin());
    let gone = wait_until(
        Duration::from_secs(20),
        "the tab's place to be hidden",
        || {
            let t = tab_once(&d, &tab_ref, "the tab", |_| true);
            (t["url"] == origin_only.as_str()).then_some(t)
        },
    );
    assert_eq!(gone["title"], "", "{gone}");
    let event = one_event(&d, "toolsChanged", &tab_ref, &seq.to_string());
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
        return summary?.startsWith('22 hidden') && { ask: document.getElementById('ask').disabled, summary,
            exposed: document.getElementById('tools').textContent };
    })()"#);
    assert_eq!(
        off,
        json!({"ask": true, "summary": "22 hidden: this site is not exposed", "exposed": "Nothing is exposed."})
    );
    b.screenshot(&popup, &shots.join("popup-site-off.png"));

    // And back: Space again.
    b.press(&popup, "Space");
    tab_once(&d, &tab_ref, "the tools to come back", |n| {
        n.contains(&"browser_snapshot")
    });

    // Built-ins off for this site only: the page's own tool stays.
    b.focus(&popup, "builtins");
    b.press(&popup, "Space");
    let t = tab_once(&d, &tab_ref, "the built-ins to leave", |n| {
        !n.contains(&"browser_snapshot")
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
    d.ctl_json(&search_args(&tab_ref, "while-off"));
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
    tab_once(&d, &tab_ref, "the built-ins to come back", |n| {
        n.contains(&"browser_console_messages")
    });
    d.ctl_json(&search_args(&tab_ref, "while-on"));
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
    let event = one_event(&d, "consoleError", &tab_ref, &seq);
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
