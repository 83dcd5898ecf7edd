//! Per-site consent on a fresh install, in Chromium (issue 31): the first call that acts on a
//! site the person has not allowed waits for them, in a prompt that names the agent, the site
//! and the tool. The person answers the way a person does, with the mouse and the keyboard
//! (DevTools input, which the page cannot tell from a person's): *Allow once* lets one call
//! through, *Deny* fails it, *Always for this site* lets this and every later call through,
//! and nobody answering fails it after the timeout. A tab the agent opened itself does not ask.

use super::*;
use crate::support::cdp::*;
use crate::support::chromium::*;
use crate::support::common::*;
use serde_json::json;

/// Waits for the popup's prompt of `tool` and returns what it says, as a person reads it.
fn prompt_says(b: &mut Browser, popup: &Page, tool: &str) -> String {
    let says = b.wait_for(
        popup,
        &format!("the prompt for {tool}"),
        &format!(
            "(() => {{ const p = document.querySelector('#pending .prompt'); return p?.querySelector('strong')?.textContent === {} && p.textContent; }})()",
            json!(tool)
        ),
    );
    says.as_str().unwrap().to_owned()
}

/// A person's click on the prompt's button that reads `label`: the mouse, at the button.
fn person_clicks(b: &mut Browser, popup: &Page, label: &str) {
    let button = format!(
        "[...document.querySelectorAll('#pending button')].find((x) => x.textContent === {})",
        json!(label)
    );
    mouse_on(b, popup, &button);
}

/// A mouse click in the middle of the element `element` (an expression) finds.
fn mouse_on(b: &mut Browser, popup: &Page, element: &str) {
    b.person_clicks(popup, element);
}

fn snapshot_of(d: &TestDaemon, tab_ref: &str) -> std::thread::JoinHandle<Output> {
    spawn_ctl(d, &["call", "browser_snapshot", "--tab", tab_ref])
}

/// The answered prompt has left the popup (so the next one found is the next call's).
fn answered(b: &mut Browser, popup: &Page) {
    b.wait_for(
        popup,
        "the answered prompt to leave",
        "document.getElementById('pending-section').hidden",
    );
}

#[test]
fn a_fresh_install_asks_before_an_agent_acts_on_a_site() {
    let test =
        "browser::face::chromium_consent::a_fresh_install_asks_before_an_agent_acts_on_a_site";
    let Some(face) = ChromiumFace::fresh(test) else {
        return;
    };
    let ChromiumFace {
        mut b, d, pages, ..
    } = face;
    let shots = artifacts_dir();
    let url = pages.url("recipes");
    let site = pages.origin();
    let tab = wait_for_tab(&d, &b, &url, |n| n.contains(&"browser_snapshot"));
    let tab_ref = tab["ref"].as_str().unwrap().to_owned();
    let popup = b.open(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/popup.html?tab={}",
        tab["id"]
    ));
    b.viewport(&popup, 400, 640);

    // Nothing set for this site: the popup says calls here wait for the person.
    let asks = b.wait_for(
        &popup,
        "the popup",
        "document.getElementById('site').textContent.startsWith('http') && [document.getElementById('expose').checked, document.getElementById('ask').checked]",
    );
    assert_eq!(asks, json!([true, true]), "a fresh install asks");

    // Allow once, with the mouse: this call runs, and it names who asked, where, and what.
    let call = snapshot_of(&d, &tab_ref);
    let says = prompt_says(&mut b, &popup, "browser_snapshot");
    assert!(
        says.contains("browserctl") && says.contains(&site),
        "the prompt names the agent and the site: {says}"
    );
    for dark in [false, true] {
        b.color_scheme(&popup, dark);
        let name = format!("popup-consent-{}.png", scheme(dark));
        b.screenshot(&popup, &shots.join(name));
    }
    b.color_scheme(&popup, false);
    person_clicks(&mut b, &popup, "Allow once");
    answered(&mut b, &popup);
    let out = call.join().unwrap();
    assert!(out.status.success(), "allowed once: {}", stderr(&out));
    assert!(stdout(&out).contains("Recipe box"), "{}", stdout(&out));

    // Once was once: the next call asks again, and the person denies it.
    let call = snapshot_of(&d, &tab_ref);
    prompt_says(&mut b, &popup, "browser_snapshot");
    person_clicks(&mut b, &popup, "Deny");
    answered(&mut b, &popup);
    let out = call.join().unwrap();
    fails(&out, 20, "USER_DENIED");

    // Always for this site, with the keyboard: focus on the button, Enter.
    let call = spawn_ctl(&d, &search_args(&tab_ref, "leeks"));
    prompt_says(&mut b, &popup, "search_recipes");
    let key = b.eval(&popup, "[...document.querySelectorAll('#pending button')].find((x) => x.textContent === 'Always for this site').dataset.key");
    b.eval(
        &popup,
        &format!(
            "document.querySelector('[data-key=\"{}\"]').focus()",
            key.as_str().unwrap()
        ),
    );
    b.press(&popup, "Enter");
    answered(&mut b, &popup);
    allowed_for_good(&mut b, &popup, &d, &site, &tab_ref, call);
    // The popup's log says who acted: the calls, by browserctl, in the person's words.
    let calls = b.wait_for(&popup, "the calls, with who made them", "(() => { const rows = [...document.querySelectorAll('#calls tr')].map((tr) => [tr.cells[2].textContent, tr.cells[4].textContent]); return rows.length >= 4 && !['running', 'waiting for you'].includes(rows[0][0]) && rows.slice(0, 4); })()");
    assert_eq!(
        calls,
        json!([
            ["ok", "browserctl"],
            ["ok", "browserctl"],
            ["denied", "browserctl"],
            ["ok", "browserctl"]
        ]),
        "what a person reads"
    );

    // Another site (the same server under another name) is not allowed: nobody answers there.
    let other = url.replace("127.0.0.1", "localhost");
    assert_ne!(other, url);
    let person_tab = b.open(&other);
    let tab = wait_for_tab(&d, &b, &other, |n| n.contains(&"search_recipes"));
    let other_ref = tab["ref"].as_str().unwrap().to_owned();
    nobody_answers(&d, &other_ref);
    b.close_page(&person_tab);

    // A tab the agent opened itself, on that same site, does not ask.
    the_agents_own_tab_does_not_ask(&d, &other);

    // The log is one click away: the popup's link opens it, on the log.
    mouse_on(&mut b, &popup, "document.getElementById('open-activity')");
    let log = b.attach(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/options.html#activity-h"
    ));
    let rows = b.wait_for(&log, "the activity log, focused, with the calls", "(() => { const rows = [...document.querySelectorAll('#activity tr')].map((tr) => tr.cells[6].textContent); return document.activeElement?.id === 'activity-h' && rows.length >= 6 && rows; })()");
    assert!(
        rows.as_array()
            .is_some_and(|r| r.iter().all(|a| a == "browserctl")),
        "{rows}"
    );
}
