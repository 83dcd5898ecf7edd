//! Consent per frame and per document (issue 58, items 3 and 4), with the real extension in
//! Chromium and Firefox and the person answering in the popup.
//!
//! A site the person set to *Ask*, or never answered, stays out of an agent's reach when it is
//! framed: inside a page the person allowed, and inside a tab the agent opened itself (whose
//! exemption covers only what the person has not set to ask). Its frame's text, console and
//! requests are not shown, and a call that names a ref inside it asks the person first. An
//! agent's own tab navigating to an *Ask* site asks. And an answer binds to the document it was
//! given for: a page that navigates its tab to another site while the prompt waits gets the
//! call failed, never run there.

use super::person::*;
use serde_json::{json, Value};

const BANK_TEXT: [&str; 4] = [
    "Frame text bank",
    "Srcdoc secret",
    "Blank secret",
    "Frame text nested",
];

/// Snapshots `tab` until `ready` holds (frames load on their own time); the last text.
fn snapshot_until(s: &Scene, tab: &str, what: &str, ready: impl Fn(&str) -> bool) -> String {
    crate::support::common::wait_until(PATIENCE, what, || {
        let snap = text_of(&call(&s.d, tab, "browser_snapshot", json!({})).ok()?);
        ready(&snap).then_some(snap)
    })
}

/// A call that must answer; its text.
fn ok_text(s: &Scene, tab: &str, tool: &str, args: Value) -> String {
    let v = ok(s, tab, tool, args);
    text_of(&v) + &v["structuredContent"].to_string()
}

/// A call that must fail with `code`; its message.
fn failed(result: Result<Value, Failure>, code: &str, what: &str) -> String {
    match result {
        Ok(v) => panic!("{what}: should fail with {code}, answered {v}"),
        Err(f) => {
            assert_eq!(f.code, code, "{what}: {}", f.message);
            f.message
        }
    }
}

/// The bank's words are not in `text` (`what` says where from); the allowed frame's `kept` is.
fn none_of_the_bank(text: &str, what: &str) {
    for secret in BANK_TEXT {
        assert!(!text.contains(secret), "{what} shows {secret:?}:\n{text}");
    }
}

fn framed_sites_stay_out_of_reach(test: &str, family: &str) {
    let Some(mut s) = Scene::fresh(test, family) else {
        return;
    };
    let (news, bank) = (s.site.origin(), s.other_origin());
    let page = format!("{news}/hands-off-frames.html");
    let at = s.person.open(&page);
    let (tab, id) = s.tab_at(&page);
    let popup = s.person.popup(id);

    // Both sites allowed (*Always for this site*, earlier): the agent records the tab's requests
    // with their bodies, the person reloads, and the bank frame is the agent's to read and use.
    s.person.set(
        popup,
        json!({"sites": {&news: {"mode": "allow"}, &bank: {"mode": "allow"}}, "consentTimeoutMs": 30000}),
    );
    ok_text(
        &s,
        &tab,
        "browser_network_requests",
        json!({"captureBodies": true}),
    );
    s.person.eval(at, "location.reload(), true");
    let snap = snapshot_until(&s, &tab, "the bank frame and the frames it wrote", |t| {
        BANK_TEXT.iter().all(|k| t.contains(k)) && t.contains("Frame text allowed")
    });
    let bank_field = ref_on_line(&snap, "Field bank").expect("the bank's field");
    let bank_frame = ref_on_line(&snap, "Bank frame").expect("the bank's iframe");
    let console = |s: &Scene| ok_text(s, &tab, "browser_console_messages", json!({}));
    let requests = |s: &Scene| {
        ok_text(
            s,
            &tab,
            "browser_network_requests",
            json!({"maxChars": 100000}),
        )
    };
    crate::support::common::wait_until(PATIENCE, "the frames' console and requests", || {
        let (c, r) = (console(&s), requests(&s));
        (c.contains("frame says bank") && r.contains("hunter2-bank")).then_some(())
    });

    // 1. The bank never answered (a fresh install's default): what it shows, logs and sends
    // is not the agent's, in a page the person allowed.
    s.person
        .set(popup, json!({"sites": {&news: {"mode": "allow"}}}));
    let snap = ok_text(&s, &tab, "browser_snapshot", json!({}));
    assert!(snap.contains("Frame text allowed"), "{snap}");
    none_of_the_bank(&snap, "the snapshot of the allowed page");
    assert!(snap.contains(&bank), "the hidden frame is named: {snap}");
    let (c, r) = (console(&s), requests(&s));
    assert!(c.contains("frame says allowed"), "{c}");
    for leak in ["frame says bank", "srcdoc says", "frame says nested"] {
        assert!(!c.contains(leak), "the console shows {leak:?}:\n{c}");
    }
    assert!(r.contains("hunter2-allowed"), "{r}");
    for leak in ["hunter2-bank", "hunter2-nested"] {
        assert!(!r.contains(leak), "the requests show {leak:?}:\n{r}");
    }
    // Acting by a ref inside it asks the person, who denies.
    let typing = spawn_call(
        &s.d,
        &tab,
        "browser_type",
        json!({"ref": bank_field, "text": "leak"}),
    );
    let says = s.person.prompt(popup, "browser_type");
    assert!(
        says.contains(&bank),
        "the prompt names the framed site: {says}"
    );
    s.person.answer(popup, "Deny");
    failed(
        typing.join().unwrap(),
        "USER_DENIED",
        "typing in the bank frame",
    );

    // 2. The bank set to *Ask*: the same, and the person lets one call through at a time.
    s.person.set(
        popup,
        json!({"sites": {&news: {"mode": "allow"}, &bank: {"mode": "ask"}}}),
    );
    none_of_the_bank(
        &ok_text(&s, &tab, "browser_snapshot", json!({})),
        "the snapshot with the bank set to ask",
    );
    let typing = spawn_call(
        &s.d,
        &tab,
        "browser_type",
        json!({"ref": bank_field, "text": "mine"}),
    );
    s.person.prompt(popup, "browser_type");
    s.person.answer(popup, "Allow once");
    let typed = typing.join().unwrap();
    assert!(
        typed.as_ref().is_ok_and(|v| text_of(v).contains("Typed")),
        "allowed once: {typed:?}"
    );
    // The hidden frame's iframe ref is the way to ask to read it.
    let reading = spawn_call(&s.d, &tab, "browser_snapshot", json!({"ref": bank_frame}));
    let says = s.person.prompt(popup, "browser_snapshot");
    assert!(says.contains(&bank), "{says}");
    s.person.answer(popup, "Always for this site");
    let shown = reading.join().unwrap().map(|v| text_of(&v));
    assert!(
        shown.as_ref().is_ok_and(|t| t.contains("Frame text bank")),
        "allowed: {shown:?}"
    );
    let stored = s.person.eval(
        popup,
        "chrome.storage.local.get('sites').then((x) => x.sites)",
    );
    assert_eq!(stored[&bank]["mode"], "allow", "{stored}");
    let snap = ok_text(&s, &tab, "browser_snapshot", json!({}));
    assert!(
        BANK_TEXT.iter().all(|k| snap.contains(k)),
        "allowed for good: {snap}"
    );

    // 3. A tab the agent opened: a site nobody answered is the agent's there, one set to ask
    // is not, and navigating there asks.
    s.person.set(popup, json!({"sites": {}}));
    let own = s.agent_opens(&page);
    snapshot_until(&s, &own, "the agent's tab with the bank frame", |t| {
        BANK_TEXT.iter().all(|k| t.contains(k))
    });
    s.person
        .set(popup, json!({"sites": {&bank: {"mode": "ask"}}}));
    none_of_the_bank(
        &ok_text(&s, &own, "browser_snapshot", json!({})),
        "the agent's own tab with the bank set to ask",
    );
    let own_id: i64 = own.split(':').nth(1).unwrap().parse().unwrap();
    let own_popup = s.person.popup(own_id);
    let going = spawn_call(
        &s.d,
        &own,
        "browser_navigate",
        json!({"url": format!("{bank}/secret.html")}),
    );
    let says = s.person.prompt(own_popup, "browser_navigate");
    assert!(says.contains(&bank), "{says}");
    s.person.answer(own_popup, "Deny");
    let msg = failed(
        going.join().unwrap(),
        "USER_DENIED",
        "navigating to the bank",
    );
    assert!(!msg.contains("Bank statement"), "{msg}");
    let tabs = s.d.ctl_json(&["tabs"]);
    let listed = tabs["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["ref"] == own.as_str())
        .unwrap_or_else(|| panic!("{own} in {tabs}"));
    assert_eq!(listed["url"], page.as_str(), "the tab stayed: {listed}");

    // Allowed once, it goes; back from there asks too (the bank's page is the tab's now); and
    // a step back in history that lands on the bank names the site alone.
    let going = spawn_call(
        &s.d,
        &own,
        "browser_navigate",
        json!({"url": format!("{bank}/secret.html")}),
    );
    s.person.prompt(own_popup, "browser_navigate");
    s.person.answer(own_popup, "Allow once");
    let went = going.join().unwrap().map(|v| text_of(&v));
    assert!(
        went.as_ref().is_ok_and(|t| t.contains("Bank statement")),
        "allowed once: {went:?}"
    );
    let back = spawn_call(&s.d, &own, "browser_navigate", json!({"url": page}));
    s.person.prompt(own_popup, "browser_navigate");
    s.person.answer(own_popup, "Allow once");
    back.join()
        .unwrap()
        .expect("back to the news, allowed once");
    let stepped = ok_text(&s, &own, "browser_navigate_back", json!({}));
    assert!(
        stepped.contains(&bank)
            && !stepped.contains("Bank statement")
            && !stepped.contains("secret.html"),
        "history to the bank: {stepped}"
    );
}

#[test]
fn framed_sites_stay_out_of_reach_in_chromium() {
    framed_sites_stay_out_of_reach(
        "security::framed_consent::framed_sites_stay_out_of_reach_in_chromium",
        "chromium",
    );
}

#[test]
fn framed_sites_stay_out_of_reach_in_firefox() {
    framed_sites_stay_out_of_reach(
        "security::framed_consent::framed_sites_stay_out_of_reach_in_firefox",
        "firefox",
    );
}

/// While the prompt for a call on one site waits, the page sends its tab to another site; the
/// person, who read the first site's name, allows. The call must not run on the second site.
fn an_answer_binds_to_its_document(test: &str, family: &str) {
    let Some(mut s) = Scene::fresh(test, family) else {
        return;
    };
    let (shop, bank) = (s.site.origin(), s.other_origin());
    let page = format!("{shop}/plain.html");
    let at = s.person.open(&page);
    let (tab, id) = s.tab_at(&page);
    let popup = s.person.popup(id);
    s.person.set(popup, json!({"consentTimeoutMs": 30000}));

    for choice in ["Allow once", "Always for this site"] {
        let reading = spawn_call(&s.d, &tab, "browser_snapshot", json!({}));
        let says = s.person.prompt(popup, "browser_snapshot");
        assert!(says.contains(&shop), "{says}");
        // The page goes to the bank (a site the person never allowed) meanwhile.
        s.person.eval(
            at,
            &format!(
                "location.href = {}, true",
                json!(format!("{bank}/secret.html"))
            ),
        );
        s.person
            .wait_for(at, "the bank's page", "document.title === 'Bank statement'");
        s.person.answer(popup, choice);
        let out = reading.join().unwrap();
        if let Ok(v) = &out {
            assert!(
                !text_of(v).contains("4417-SECRET"),
                "{choice}: read the bank: {v}"
            );
        }
        failed(out, "PAGE_NAVIGATED", choice);
        // Back to the shop for the next round, as the person does.
        s.person
            .eval(at, &format!("location.href = {}, true", json!(page)));
        s.person
            .wait_for(at, "the shop again", "document.title === 'Plain test page'");
    }
}

#[test]
fn an_answer_binds_to_its_document_in_chromium() {
    an_answer_binds_to_its_document(
        "security::framed_consent::an_answer_binds_to_its_document_in_chromium",
        "chromium",
    );
}

#[test]
fn an_answer_binds_to_its_document_in_firefox() {
    an_answer_binds_to_its_document(
        "security::framed_consent::an_answer_binds_to_its_document_in_firefox",
        "firefox",
    );
}
