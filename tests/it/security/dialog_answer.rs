//! A dialog answer is for the frame that opens the dialog (issue 58, item 8): the text an agent
//! arms with `browser_handle_dialog` (a PIN, a name) for the page's own prompt never reaches a
//! cross-origin frame in it, even one that opens prompts all the time to catch it
//! (tests/e2e/pages/sec-dialog-thief.html, an advert inside sec-dialog-top.html). Chromium and
//! Firefox, the real extension.

use super::person::*;
use serde_json::json;

fn the_armed_answer_goes_to_the_page_alone(test: &str, family: &str) {
    let Some(mut s) = Scene::fresh(test, family) else {
        return;
    };
    let shop = s.site.origin();
    let page = format!("{shop}/sec-dialog-top.html");
    let at = s.person.open(&page);
    let (tab, id) = s.tab_at(&page);
    let popup = s.person.popup(id);
    s.person
        .set(popup, json!({"sites": {&shop: {"mode": "allow"}}}));

    // The agent reads the page: the tab is driven, and the advert starts asking (each of its
    // prompts dismissed by the default policy).
    ok(&s, &tab, "browser_snapshot", json!({}));
    s.person
        .wait_for(at, "the advert to ask", "window.stolen.length >= 5");

    // The agent arms the answer for the PIN prompt it is about to open; the advert keeps asking
    // for a while before the agent gets there.
    let out = text_of(&ok(
        &s,
        &tab,
        "browser_handle_dialog",
        json!({"accept": true, "promptText": "4417"}),
    ));
    assert!(out.contains("will be accepted"), "{out}");
    s.person.wait_for(
        at,
        "the advert to ask twenty times more",
        "(() => { window.mark ??= window.stolen.length; return window.stolen.length >= window.mark + 20; })()",
    );
    let clicked = text_of(&ok(&s, &tab, "browser_click", json!({"selector": "#pin"})));

    let stolen = s.person.eval(at, "window.stolen");
    assert!(
        !stolen.as_array().unwrap().contains(&json!("4417")),
        "the advert read the armed answer: {stolen}"
    );
    assert_eq!(
        s.person
            .eval(at, "document.getElementById('answer').textContent"),
        json!("4417"),
        "the page's own prompt got it: {clicked}"
    );
    assert!(
        clicked.contains("prompt \"Your PIN?\"")
            && clicked.contains("accepted with \"4417\" by browser_handle_dialog"),
        "{clicked}"
    );
}

#[test]
fn the_armed_answer_goes_to_the_page_alone_in_chromium() {
    the_armed_answer_goes_to_the_page_alone(
        "security::dialog_answer::the_armed_answer_goes_to_the_page_alone_in_chromium",
        "chromium",
    );
}

#[test]
fn the_armed_answer_goes_to_the_page_alone_in_firefox() {
    the_armed_answer_goes_to_the_page_alone(
        "security::dialog_answer::the_armed_answer_goes_to_the_page_alone_in_firefox",
        "firefox",
    );
}
