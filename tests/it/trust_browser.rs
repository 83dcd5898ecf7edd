//! Trust in a real browser (issue 21): headless Chromium with our extension, the real daemon
//! and an impostor daemon of another uid (nobody) on ports the extension scans.

use crate::browser::*;
use crate::extension_face::Browser;
use crate::impostor::*;
use std::net::TcpListener;

/// A free port in the scan range other than `not`.
fn free_scan_port(not: u16) -> u16 {
    SCAN_PORTS
        .filter(|p| *p != not)
        .find(|p| TcpListener::bind(("127.0.0.1", *p)).is_ok())
        .expect("a free port in the scan range")
}

/// (c) scan only, unpaired: neither daemon hears about the browser; (d) once paired, the
/// real daemon gets the tabs and the impostor (which relays to the real daemon, and is
/// refused there) still gets nothing but key ids and nonces.
#[test]
fn an_impostor_daemon_on_a_scanned_port_learns_nothing_before_or_after_pairing() {
    let Some(exe) = chromium_or_skip("trust_browser::an_impostor_daemon_learns_nothing") else {
        return;
    };
    let Some(()) = other_user_or_skip("trust_browser::an_impostor_daemon_learns_nothing") else {
        return;
    };
    let _lock = machine_wide_lock();
    let pages = PageServer::page("<!doctype html><title>Secret page</title><p>account 12345</p>");
    let d = daemon_in_scan_range(&[]);
    let impostor = Impostor::daemon(free_scan_port(d.port), Some(d.port));
    let profile = tempfile::tempdir().unwrap();
    let mut b = Browser::launch(&exe, profile.path(), &pages.url("secret"));
    let options = b.open(&format!("chrome-extension://{EXTENSION_ID}/options.html"));
    // Both found, neither paired; the real daemon hears nothing either.
    let shown = b.wait_for(
        &options,
        "both daemons shown as found, not paired",
        "(() => { const li = [...document.querySelectorAll('#daemons li.state-unpaired')]; return li.length >= 2 && li.map((l) => l.textContent); })()",
    );
    assert!(
        shown.to_string().contains("found, not paired")
            && shown.to_string().contains("browserctl pair"),
        "{shown}"
    );
    assert_eq!(d.status()["browsers"], 0);
    assert!(
        impostor.reports().iter().any(|r| r["event"] == "request"),
        "the scan reached the impostor"
    );
    let before = impostor.assert_learned_nothing("before pairing");
    assert!(
        before.is_empty(),
        "no key to offer, so no socket: {before:?}"
    );

    // Paired the way a person does: the real daemon gets the tab.
    pair_browser(profile.path(), &d);
    let tabs = d.wait_tabs("the secret page on the real daemon", |tabs| {
        tabs.iter().any(|t| t["title"] == "Secret page")
    });
    assert!(!tabs.is_empty());
    // The extension now offers its pairing to the impostor too, which fails to prove it.
    b.wait_for(
        &options,
        "the impostor shown as refused",
        &format!(
            "[...document.querySelectorAll('#daemons li.state-refused')].some((l) => l.textContent.includes('127.0.0.1:{}'))",
            impostor_port(&impostor)
        ),
    );
    let after = impostor.assert_learned_nothing("after pairing");
    assert!(
        after.contains(&"auth".to_owned()),
        "it was asked to prove the pairing: {after:?}"
    );
    assert!(
        impostor
            .reports()
            .iter()
            .any(|r| r["event"] == "relay" && r["refused"].is_string()),
        "relaying to the real daemon is refused (another uid): {:?}",
        impostor.reports()
    );
    assert_eq!(d.status()["browsers"], 1);
}

fn impostor_port(i: &Impostor) -> u64 {
    i.reports()
        .iter()
        .find(|r| r["event"] == "listening")
        .and_then(|r| r["port"].as_u64())
        .unwrap()
}
