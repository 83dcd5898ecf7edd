//! "Ask" mode in Chromium: a call waits for the person's answer, and the policy survives a
//! restart; the options page shows the native host and the daemons it lists.

use super::*;
use crate::support::cdp::*;
use crate::support::chromium::*;
use crate::support::common::*;
use serde_json::json;
use std::io::BufRead;
use std::time::Duration;

/// The lines `from` writes, as they come.
fn lines_of(from: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(from).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    rx
}

#[test]
fn ask_mode_waits_for_the_user_and_the_policy_survives_a_restart() {
    let test =
        "browser::face::chromium_ask::ask_mode_waits_for_the_user_and_the_policy_survives_a_restart";
    let Some(face) = ChromiumFace::start(test) else {
        return;
    };
    let ChromiumFace {
        exe,
        mut b,
        d,
        pages,
        ref profile,
        ..
    } = face;
    let url = pages.url("recipes");
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

    nobody_answers(&d, &tab_ref);

    // The user denies in the popup. One call in flight on the badge, and a desktop
    // notification asking too. The call says on stderr, within a second, what it waits for
    // (issue 59).
    let origin = url.splitn(4, '/').take(3).collect::<Vec<_>>().join("/");
    let mut call = d.ctl_spawn(&["call", "browser_snapshot", "--tab", &tab_ref]);
    let said = lines_of(call.stderr.take().unwrap());
    b.wait_for(&popup, "the prompt in the popup", "!document.getElementById('pending-section').hidden && document.querySelector('#pending .prompt strong')?.textContent === 'browser_snapshot'");
    let waiting = said
        .recv_timeout(Duration::from_secs(1))
        .expect("browserctl call said nothing within a second of the prompt");
    assert!(
        waiting.contains("waiting for your answer in the browser")
            && waiting.contains("`browser_snapshot`")
            && waiting.contains(&origin),
        "{waiting}"
    );
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
    let status = call.wait().unwrap();
    let said: Vec<String> = said.iter().collect();
    assert_eq!(status.code(), Some(20), "{said:?}");
    assert!(
        said.iter()
            .any(|l| l.contains("USER_DENIED") && l.contains("denied")),
        "{said:?}"
    );
    // `browserctl events` has both prompts, each asked then answered: unanswered, denied.
    let out = d.ctl(&[
        "events",
        "--since",
        "0",
        "--type",
        "consentRequested,consentAnswered",
        "--count",
        "4",
    ]);
    let seen: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<_> = seen
        .iter()
        .map(|e| (e["type"].as_str(), e["data"]["outcome"].as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (Some("consentRequested"), None),
            (Some("consentAnswered"), Some("unanswered")),
            (Some("consentRequested"), None),
            (Some("consentAnswered"), Some("denied")),
        ],
        "{seen:?}"
    );
    assert_eq!(seen[2]["data"]["tool"], "browser_snapshot", "{seen:?}");

    // And allows the next one, with the keyboard: the Allow button gets focus and Enter.
    let call = spawn_ctl(&d, &search_args(&tab_ref, "leeks"));
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
    allowed_then_listed(&mut b, &popup, call);

    // Built-ins off too, then a browser restart on the same profile.
    b.eval(&popup, "document.getElementById('builtins').click()");
    tab_once(&d, &tab_ref, "the built-ins to leave", |n| {
        !n.contains(&"browser_snapshot")
    });
    b.close();
    // As at the first start: the page once the extension is back.
    let mut b = Browser::launch(&exe, profile.path(), "about:blank");
    wait_until(Duration::from_secs(30), "the browser back", || {
        (d.status()["browsers"] == 1).then_some(())
    });
    b.open(&url);
    let tab = wait_for_tab(&d, &b, &url, |n| n.contains(&"search_recipes"));
    assert_eq!(
        tool_names(&tab),
        ["search_recipes"],
        "built-ins stay off after the restart: {tab}"
    );
    let tab_ref = tab["ref"].as_str().unwrap().to_owned();
    let out = d.ctl(&search_args(&tab_ref, "eggs"));
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
    d.install_host(profile.path());
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
