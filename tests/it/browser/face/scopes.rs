//! Consent that remembers (issue 60), in Chromium and in Firefox on a fresh install, the person
//! answering with the browser's own mouse input: *Reading only, this agent* lets that agent's snapshot through from then on, while
//! its click asks again and another agent's snapshot asks too; the answer is listed in the
//! options page with its agent, scope and date, and taken back there, after which the next
//! snapshot asks; the activity log names every answer.

use super::*;
use crate::support::firefox::*;
use crate::support::harness::{post_request, raw_request_at};
use serde_json::json;

/// Prompts now lapse at once (1.5 s): a call that asks fails, a call let through runs.
fn prompts_lapse<B: Pages>(b: &mut B, page: &B::Page) {
    b.eval(page, "chrome.storage.local.set({ consentTimeoutMs: 1500 })");
}

/// A call that waited for the person, in vain: it failed with USER_CONSENT_TIMEOUT after the
/// prompt's 1.5 s, and did not run.
fn asked_in_vain(out: &Output, what: &str, took: Duration) {
    assert!(!out.status.success(), "{what}: ran without asking");
    assert!(
        stderr(out).contains("USER_CONSENT_TIMEOUT"),
        "{what}: {}",
        stderr(out)
    );
    assert!(took >= Duration::from_millis(1500), "{what}: {took:?}");
}

#[test]
fn a_read_only_answer_for_one_agent_covers_its_reading_alone_in_chromium() {
    let test = "browser::face::scopes::a_read_only_answer_for_one_agent_covers_its_reading_alone_in_chromium";
    let Some(face) = ChromiumFace::fresh(test) else {
        return;
    };
    let ChromiumFace {
        mut b, d, pages, ..
    } = face;
    let url = pages.url("recipes");
    let tab = wait_for_tab(&d, &b, &url, |n| n.contains(&"browser_snapshot"));
    let popup = b.extension_page(&format!("ui/popup.html?tab={}", tab["id"]));
    b.viewport(&popup, 400, 720);
    read_only_for_one_agent(&mut b, &popup, &d, &tab, &pages.origin());
}

#[test]
fn a_read_only_answer_for_one_agent_covers_its_reading_alone_in_firefox() {
    let Some(FirefoxFace {
        mut ff,
        d,
        pages,
        lock: _lock,
    }) = FirefoxFace::fresh(
        "browser::face::scopes::a_read_only_answer_for_one_agent_covers_its_reading_alone_in_firefox",
    )
    else {
        return;
    };
    let url = pages.url("recipes");
    let tab = listed_tab(&d, FIREFOX_WAIT, &url, "browser_snapshot");
    let popup = ff.extension_page(&format!("ui/popup.html?tab={}", tab["id"]));
    read_only_for_one_agent(&mut ff, &popup, &d, &tab, &pages.origin());
}

/// The person's prompt button that reads `label`, clicked, and the prompt gone.
fn answer<B: Pages>(b: &mut B, popup: &B::Page, label: &str) {
    b.person_clicks(
        popup,
        &format!(
            "[...document.querySelectorAll('#pending button')].find((x) => x.textContent === {})",
            json!(label)
        ),
    );
    b.wait_for(
        popup,
        "the answered prompt to leave",
        "document.getElementById('pending-section').hidden",
    );
}

/// The story of the module's comment, on `tab` (a tab of `site` the person has not allowed)
/// with its popup open.
fn read_only_for_one_agent<B: Pages>(
    b: &mut B,
    popup: &B::Page,
    d: &TestDaemon,
    tab: &Value,
    site: &str,
) {
    let tab_ref = tab["ref"].as_str().unwrap().to_owned();
    b.wait_for(
        popup,
        "the popup",
        "document.getElementById('site').textContent.startsWith('http')",
    );

    // A snapshot asks; a click's prompt would not offer reading only, a snapshot's does.
    let call = spawn_ctl(d, &["call", "browser_snapshot", "--tab", &tab_ref]);
    b.wait_for(
        popup,
        "the snapshot's prompt",
        "document.querySelector('#pending .prompt strong')?.textContent === 'browser_snapshot'",
    );
    let offered = b.eval(
        popup,
        "[...document.querySelectorAll('#pending button')].map((x) => x.textContent)",
    );
    assert_eq!(
        offered,
        json!([
            "Allow once",
            "Always for this agent",
            "Always for this site",
            "Reading only, this agent",
            "Reading only, every agent",
            "Deny"
        ]),
        "a read's answers"
    );
    answer(b, popup, "Reading only, this agent");
    let out = call.join().unwrap();
    assert!(out.status.success(), "allowed: {}", stderr(&out));

    // From now on the same agent reads without a word, even with prompts lapsing at once.
    prompts_lapse(b, popup);
    let out = d.ctl(&["call", "browser_snapshot", "--tab", &tab_ref]);
    assert!(out.status.success(), "remembered: {}", stderr(&out));
    assert!(stdout(&out).contains("Recipe box"), "{}", stdout(&out));

    // A click is not reading: it asks.
    let t = Instant::now();
    let out = d.ctl(&[
        "call",
        "browser_click",
        "--tab",
        &tab_ref,
        "--selector",
        "#go",
    ]);
    asked_in_vain(&out, "a click under a read-only answer", t.elapsed());

    // Another agent is not this agent: its snapshot asks.
    let body = json!({"tool": "browser_snapshot", "tab": tab_ref, "args": {}, "retries": 0,
        "agent": "another-agent"});
    let t = Instant::now();
    let (status, text) = raw_request_at(&d.socket, &post_request("/v1/call", &body));
    let took = t.elapsed();
    assert_ne!(status, 200, "another agent ran without asking: {text}");
    assert!(text.contains("USER_CONSENT_TIMEOUT"), "{text}");
    assert!(took >= Duration::from_millis(1500), "{took:?}");

    // The options page lists the answer: who, what, since when; the person takes it back.
    let options = b.extension_page("ui/options.html");
    let listed = b.wait_for(
        &options,
        "the remembered answer",
        "(() => { const rows = [...document.querySelectorAll('#grants tr')].map((tr) => [...tr.cells].slice(0, 4).map((c) => c.textContent)); return rows.length === 1 && rows[0]; })()",
    );
    assert_eq!(listed[0], site, "{listed}");
    assert_eq!(listed[1], "browserctl", "{listed}");
    assert!(
        listed[2].as_str().unwrap().starts_with("read only"),
        "{listed}"
    );
    assert!(!listed[3].as_str().unwrap().is_empty(), "{listed}");
    b.person_clicks(&options, "document.querySelector('#grants button')");
    b.wait_for(
        &options,
        "the answer taken back",
        "document.getElementById('grants-empty').hidden === false",
    );
    let stored = b.eval(
        &options,
        "chrome.storage.local.get('grants').then((s) => s.grants)",
    );
    assert_eq!(stored, json!([]), "taken back for good");

    // Taken back: the next snapshot asks again.
    let t = Instant::now();
    let out = d.ctl(&["call", "browser_snapshot", "--tab", &tab_ref]);
    asked_in_vain(
        &out,
        "a snapshot after the answer was taken back",
        t.elapsed(),
    );

    // Every answer is in the activity log, in the person's words, newest first.
    let answers = b.wait_for(
        &options,
        "the answers in the activity log",
        "(() => { const rows = [...document.querySelectorAll('#activity tr')].map((tr) => [tr.cells[2].textContent, tr.cells[6].textContent, tr.cells[7].textContent]); return rows.length >= 5 && rows[0][2] !== '—' && rows.slice(0, 5); })()",
    );
    assert_eq!(
        answers,
        json!([
            ["browser_snapshot", "browserctl", "no answer"],
            ["browser_snapshot", "another-agent", "no answer"],
            ["browser_click", "browserctl", "no answer"],
            ["browser_snapshot", "browserctl", "remembered answer"],
            ["browser_snapshot", "browserctl", "reading, this agent"]
        ]),
        "what a person reads"
    );
}
