//! What an action checks before it acts, and says after it (issue 57), on
//! tests/e2e/pages/hands-actionability.html: an element covered by a banner fails with
//! ELEMENT_COVERED naming the banner and the control that closes it, `force` acts anyway; what is
//! not rendered (a listbox's 0×0 copy of an option, `visibility: hidden`, `inert`, clipped to
//! nothing) gets no ref and is refused saying why, while a checkbox hidden behind its label is
//! clicked through the label; a click whose innermost target is SVG is dispatched, not a crash;
//! an editor that takes `beforeinput` and cancels it makes every change itself, one that does
//! not sees `beforeinput` before the change and `input` after; one line says what followed.

use super::{find_ref, Hands};
use serde_json::{json, Value};

pub(super) fn actionability(h: &mut Hands) {
    h.goto("hands-actionability.html");
    let snap = h.snapshot();
    not_rendered(h, &snap);
    covered(h, &snap);
    svg(h, &snap);
    editors(h, &snap);
    what_followed(h, &snap);
}

/// The snapshot lines that carry a ref and contain `needle`.
fn ref_lines<'a>(snap: &'a str, needle: &str) -> Vec<&'a str> {
    snap.lines()
        .filter(|l| l.trim_start().starts_with('[') && l.contains(needle))
        .collect()
}

fn not_rendered(h: &mut Hands, snap: &str) {
    for hidden in ["Ghost", "Asleep", "Reader only"] {
        assert!(
            ref_lines(snap, hidden).is_empty(),
            "{hidden} has a ref:\n{snap}"
        );
    }
    // Of the two options named Lima, the one a person sees.
    let lima = ref_lines(snap, "Lima");
    assert_eq!(lima.len(), 1, "{snap}");
    let lima = find_ref(lima[0], "Lima").unwrap();
    h.call("browser_click", json!({"ref": lima}));
    assert_eq!(
        h.eval("[seen.city, seen.copy ?? null]"),
        json!(["Lima", null])
    );
    // By selector, refused with the reason (after the wait for it to become actionable).
    let msg = h.refused(
        "browser_click",
        json!({"selector": "#ghost"}),
        "ELEMENT_NOT_INTERACTABLE",
    );
    assert!(
        msg.contains("is not rendered (visibility: hidden)"),
        "{msg}"
    );
    let msg = h.refused(
        "browser_click",
        json!({"selector": "#asleep"}),
        "ELEMENT_NOT_INTERACTABLE",
    );
    assert!(msg.contains("inert"), "{msg}");
    let msg = h.refused(
        "browser_click",
        json!({"selector": "#off"}),
        "ELEMENT_NOT_INTERACTABLE",
    );
    assert!(msg.contains("is disabled"), "{msg}");
    // A checkbox only screen readers see keeps its ref, and is clicked through its label.
    let agree = find_ref(snap, "I agree to the terms").expect(snap);
    assert!(snap.contains(&format!("[checkbox {agree}]")), "{snap}");
    h.call("browser_click", json!({"ref": agree}));
    assert_eq!(h.eval("seen.agree"), true);
}

fn covered(h: &mut Hands, snap: &str) {
    let low = find_ref(snap, "Under the banner").expect(snap);
    let msg = h.refused("browser_click", json!({"ref": low}), "ELEMENT_COVERED");
    assert!(
        msg.contains("is covered by dialog \"Cookies\", which holds button \"Accept\" (")
            && msg.contains("\"force\": true"),
        "{msg}"
    );
    assert_eq!(h.eval("seen.low"), 0, "nothing was clicked");
    // The covered element is the page's business once the agent says so.
    h.call("browser_click", json!({"ref": low, "force": true}));
    assert_eq!(h.eval("seen.low"), 1);
    // The ref the message gave closes the banner; then the click goes through.
    let accept = msg
        .split("button \"Accept\" (")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap()
        .to_owned();
    h.call("browser_click", json!({"ref": accept}));
    assert_eq!(h.eval("seen.accept"), 1);
    h.call("browser_click", json!({"ref": low}));
    assert_eq!(h.eval("seen.low"), 2);
}

fn svg(h: &mut Hands, snap: &str) {
    // The icon's centre is its <path>, which has no click(): the event goes there and bubbles.
    let star = find_ref(snap, "Star it").expect(snap);
    h.call("browser_click", json!({"ref": star}));
    assert_eq!(h.eval("seen.icon"), json!(["path"]));
    // An <svg> that is a button itself has its line.
    let bin = find_ref(snap, "Bin it").expect(snap);
    h.call("browser_click", json!({"ref": bin}));
    assert_eq!(h.eval("seen.svg"), 1);
}

fn editors(h: &mut Hands, snap: &str) {
    // The editor takes every beforeinput and renders its own model: nothing else changes the
    // text, and no input follows a cancelled beforeinput.
    let model = find_ref(snap, "Model editor").expect(snap);
    h.call("browser_type", json!({"ref": model, "text": "Hello"}));
    h.call("browser_press_key", json!({"key": "Backspace"}));
    h.call("browser_press_key", json!({"key": "Enter"}));
    assert_eq!(
        h.eval("[seen.model, document.getElementById('model').textContent, seen.modelRanges > 0, seen.modelInput ?? null]"),
        json!(["Hell¶", "Hell¶", true, null])
    );
    // An editor that lets the browser edit sees beforeinput before the change, input after.
    let plain = find_ref(snap, "Plain editor").expect(snap);
    h.call("browser_type", json!({"ref": plain, "text": "Hi"}));
    let seen = h.eval("seen.plain");
    assert_eq!(
        seen,
        json!(["beforeinput:insertText:", "input:insertText:Hi"]),
        "{seen}"
    );
    // Keys come a task apart, as a person's do: the page's work after one is done before the next.
    let later = find_ref(snap, "Later editor").expect(snap);
    h.call(
        "browser_type",
        json!({"ref": later, "text": "abc", "slowly": true}),
    );
    assert_eq!(
        h.eval("[seen.early ?? 0, document.getElementById('later').textContent]"),
        json!([0, "abc"])
    );
}

fn what_followed(h: &mut Hands, snap: &str) {
    let text = |r: &Value| super::all_text(r);
    let pay = find_ref(snap, "[button").expect(snap);
    let out = text(&h.call("browser_click", json!({"ref": pay})));
    assert!(
        out.starts_with("Clicked button \"Pay\"") && !out.contains("Then:"),
        "nothing followed: {out}"
    );
    let next = find_ref(snap, "Next field").expect(snap);
    let out = text(&h.call("browser_click", json!({"ref": next})));
    assert!(
        out.contains("\nThen: focus moved to textbox \"After\" ("),
        "{out}"
    );
    // The page's next task has run by the time the result is written (with trusted input,
    // Chromium renders a frame first: the result waits for it).
    let posted = find_ref(snap, "Focus in a task").expect(snap);
    let out = text(&h.call("browser_click", json!({"ref": posted})));
    assert!(
        out.contains("\nThen: focus moved to textbox \"Posted\" ("),
        "{out}"
    );
    let push = find_ref(snap, "Change the address").expect(snap);
    let out = text(&h.call("browser_click", json!({"ref": push})));
    assert!(
        out.contains("\nThen: the address changed to ")
            && out.contains("/hands-actionability.html#pushed"),
        "{out}"
    );
    let away = find_ref(snap, "Go to the names page").expect(snap);
    let out = text(&h.call("browser_click", json!({"ref": away})));
    assert!(
        out.contains("\nThen: the page is loading ") && out.contains("/hands-names.html"),
        "{out}"
    );
    h.settle();
}

/// The same with the browser's own input (issue 57): trusted input lands where the checks
/// looked, refuses what they refuse, and its results say what followed too.
#[test]
fn actionability_with_trusted_input() {
    super::in_chromium_with(
        "browser::hands::actionability::actionability_with_trusted_input",
        "hands-names.html",
        true,
        |mut h, _| {
            let r = h.call("browser_press_key", json!({"key": "Shift"}));
            assert_eq!(r["structuredContent"]["input"], "trusted", "{r}");
            actionability(&mut h);
        },
    );
}
