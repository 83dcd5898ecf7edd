//! Per-site consent on a fresh install, in Firefox (issue 31; chromium_consent.rs is the
//! Chromium counterpart): nothing chosen in the options page, so the first call that acts on a
//! site waits for the person, in a popup prompt that names the agent, the site and the tool.
//! *Allow once* lets one call through, *Deny* fails it, *Always for this site* lets this and
//! every later call through (and is kept), another site still asks, and a tab the agent opened
//! itself does not.

use super::{
    allowed_for_good, asking, nobody_answers, search_args, spawn_ctl,
    the_agents_own_tab_does_not_ask, FirefoxFace,
};
use crate::support::bidi::Context;
use crate::support::chromium::*;
use crate::support::common::*;
use crate::support::firefox::*;
use serde_json::json;

/// Clicks the pending prompt's button that reads `label` and waits for the prompt to leave.
fn answer(ff: &mut Firefox, popup: &Context, label: &str) {
    let clicked = ff.eval(
        popup,
        &format!(
            "(() => {{ const b = [...document.querySelectorAll('#pending button')].find((x) => x.textContent === {}); b?.click(); return !!b; }})()",
            json!(label)
        ),
    );
    assert_eq!(clicked, json!(true), "a {label:?} button in the prompt");
    ff.wait_for(
        popup,
        "the answered prompt to leave",
        "document.getElementById('pending-section').hidden",
    );
}

#[test]
fn a_fresh_install_asks_before_an_agent_acts_on_a_site() {
    let Some(FirefoxFace {
        mut ff,
        d,
        pages,
        lock: _lock,
    }) = FirefoxFace::fresh(
        "browser::face::firefox_consent::a_fresh_install_asks_before_an_agent_acts_on_a_site",
    )
    else {
        return;
    };
    let url = pages.url("recipes");
    let site = pages.origin();
    let tab = listed_tab(&d, FIREFOX_WAIT, &url, "search_recipes");
    let tab_ref = tab["ref"].as_str().unwrap().to_owned();
    let popup = ff.open_extension_page(&format!("ui/popup.html?tab={}", tab["id"]));

    // Nothing set for this site: the popup says calls here wait for the person.
    let asks = ff.wait_for(
        &popup,
        "the popup",
        "document.getElementById('site').textContent.startsWith('http') && [document.getElementById('expose').checked, document.getElementById('ask').checked]",
    );
    assert_eq!(asks, json!([true, true]), "a fresh install asks");

    // Allow once: this call runs, and the prompt names who asked, where, and what.
    let call = asking(&mut ff, &popup, &d, &tab_ref);
    let says = ff.eval(
        &popup,
        "document.querySelector('#pending .prompt').textContent",
    );
    let says = says.as_str().unwrap_or("");
    assert!(
        says.contains("browserctl") && says.contains(&site),
        "the prompt names the agent and the site: {says}"
    );
    answer(&mut ff, &popup, "Allow once");
    let out = call.join().unwrap();
    assert!(out.status.success(), "allowed once: {}", stderr(&out));
    assert!(stdout(&out).contains("Recipe box"), "{}", stdout(&out));

    // Once was once: the next call asks again, and the person denies it.
    let call = asking(&mut ff, &popup, &d, &tab_ref);
    answer(&mut ff, &popup, "Deny");
    fails(&call.join().unwrap(), 20, "USER_DENIED");

    // Always for this site: this call and every later one, kept in the person's policy.
    let call = spawn_ctl(&d, &search_args(&tab_ref, "leeks"));
    ff.wait_for(
        &popup,
        "the prompt for search_recipes",
        "document.querySelector('#pending .prompt strong')?.textContent === 'search_recipes'",
    );
    answer(&mut ff, &popup, "Always for this site");
    allowed_for_good(&mut ff, &popup, &d, &site, &tab_ref, call);

    // Another site (the same server under another name) is not allowed: nobody answers there.
    let other = url.replace("127.0.0.1", "localhost");
    assert_ne!(other, url);
    let person_tab = ff.open(&other);
    let listed = listed_tab(&d, FIREFOX_WAIT, &other, "search_recipes");
    nobody_answers(&d, listed["ref"].as_str().unwrap());
    ff.bidi.close(&person_tab).unwrap();

    // A tab the agent opened itself, on that same site, does not ask.
    the_agents_own_tab_does_not_ask(&d, &other);
}
