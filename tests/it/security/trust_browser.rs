//! Trust in a real browser (issue 21): headless Chromium with our extension, the real daemon
//! and an impostor daemon of another uid (nobody) on ports the extension scans: (a) with the
//! native host, (b) with a native host that answers after 4 s, (c) scan only and unpaired,
//! (d) after pairing.

use crate::support::cdp::Browser;
use crate::support::chromium::*;
use crate::support::common::*;
use crate::support::impostor::*;
use serde_json::Value;
use std::net::TcpListener;
use std::time::Duration;

/// Start-up, the native host and page loads on a loaded two-core machine.
const WAIT: Duration = Duration::from_secs(60);

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
/// The real daemon gets the secret page, with its tools, and reads it.
fn the_secret_page_reaches(d: &TestDaemon, url: &str) {
    let tab = wait_until(WAIT, "the secret page on the real daemon", || {
        let tabs = d.ctl_json(&["tabs"]);
        tabs["tabs"]
            .as_array()?
            .iter()
            .find(|t| t["url"] == url && tool_names(t).contains(&"browser_snapshot"))
            .cloned()
    });
    let snap = d.ctl_json(&[
        "call",
        "browser_snapshot",
        "--tab",
        tab["ref"].as_str().unwrap(),
    ]);
    assert!(snap.to_string().contains("account 12345"), "{snap}");
}

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
    let options = b.open(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/options.html"
    ));
    // Chromium's WebCrypto computes the handshake's HMACs as the daemon does.
    assert_eq!(
        b.eval(&options, crate::security::trust::AUTH_SELF_TEST),
        crate::security::trust::auth_vectors(),
        "extension/worker/connection/auth.js in Chromium against src/protocol/auth.rs"
    );
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
    let refused = b.wait_for(
        &options,
        "the impostor shown as refused",
        &format!(
            "[...document.querySelectorAll('#daemons li.state-refused')].map((l) => l.textContent).find((t) => t.includes('127.0.0.1:{}'))",
            impostor_port(&impostor)
        ),
    );
    assert!(
        refused.as_str().is_some_and(
            |t| t.contains(" refused") && t.contains("could not prove it is your browser-mcpd")
        ),
        "in words: {refused}"
    );
    proved_nothing(&impostor, &d, "after pairing");
}

/// The impostor learned nothing though it was asked to prove the pairing, could not relay
/// to the real daemon (another uid), and the real daemon has the one browser.
fn proved_nothing(impostor: &Impostor, d: &TestDaemon, when: &str) {
    let after = impostor.assert_learned_nothing(when);
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

/// (a) With the native host: the extension trusts the daemon the host names (by its token),
/// and an impostor of another uid listening on a scanned port the whole time receives no tab
/// and no result.
#[test]
fn with_the_native_host_an_impostor_on_a_scanned_port_gets_nothing() {
    impostor_beside_the_native_host(
        "trust_browser::with_the_native_host_an_impostor_gets_nothing",
        None,
    );
}

/// (b) The same with a native host that answers only after 4 s: the extension scans meanwhile
/// (it must not stay blind) and so finds the impostor, but a daemon found by the scan is only
/// offered the keys this browser holds for it, and it holds none for the impostor.
#[test]
fn with_a_native_host_answering_after_4_s_an_impostor_on_a_scanned_port_gets_nothing() {
    impostor_beside_the_native_host(
        "trust_browser::with_a_slow_native_host_an_impostor_gets_nothing",
        Some(4),
    );
}

fn impostor_beside_the_native_host(test: &str, host_delay_s: Option<u32>) {
    let Some(exe) = chromium_or_skip(test) else {
        return;
    };
    let Some(()) = other_user_or_skip(test) else {
        return;
    };
    let _lock = machine_wide_lock();
    let pages = PageServer::page("<!doctype html><title>Secret page</title><p>account 12345</p>");
    // The real daemon is on a port the scan never tries and demands its token: only the
    // native host's list can bring the extension to it.
    let d = TestDaemon::builder().args(&["--require-token"]).start();
    assert!(!SCAN_PORTS.contains(&d.port), "port {} is scanned", d.port);
    let impostor = Impostor::daemon(free_scan_port(d.port), None);
    let impostor_at = format!("127.0.0.1:{}", impostor_port(&impostor));
    let profile = tempfile::tempdir().unwrap();
    let out = d.install_host(profile.path());
    if let Some(seconds) = host_delay_s {
        // A loaded machine, played by the host's own wrapper: it starts the host late.
        let written: Value = serde_json::from_slice(&out.stdout).unwrap();
        let wrapper = written["installed"][0]["wrapper"]
            .as_str()
            .unwrap_or_else(|| panic!("the wrapper in {written}"));
        let script = std::fs::read_to_string(wrapper).unwrap();
        assert!(script.contains("\nexec "), "{script}");
        let slow = script.replacen("\nexec ", &format!("\nsleep {seconds}\nexec "), 1);
        std::fs::write(wrapper, slow).unwrap();
    }
    let url = pages.url("secret");
    let mut b = Browser::launch(&exe, profile.path(), &url);

    if host_delay_s.is_some() {
        // The host is still silent when the scan starts: the scan reaches the impostor.
        impostor.wait_for(
            "the scan to reach the impostor while the host is silent",
            |r| r["event"] == "request",
        );
    }
    // The host names the real daemon, which gets the tab and answers a call on it (the
    // person allows agents everywhere: consent is not what this test is about).
    b.allow_everywhere();
    the_secret_page_reaches(&d, &url);

    // The settings page says who is trusted, and why, in words.
    let options = b.open(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/options.html"
    ));
    let shown = b.wait_for(
        &options,
        "the real daemon shown as connected via the native host",
        &format!(
            r#"(() => {{
            const items = [...document.querySelectorAll('#daemons li.daemon')].map((li) => ({{
                text: li.textContent, connected: li.classList.contains('state-connected') }}));
            const real = items.find((i) => i.text.includes('127.0.0.1:{port}'));
            return real?.connected && {{ real: real.text,
                impostor: items.filter((i) => i.text.includes('{impostor_at}')) }};
        }})()"#,
            port = d.port
        ),
    );
    assert!(
        shown["real"]
            .as_str()
            .unwrap()
            .contains("connected · via native host"),
        "{shown}"
    );
    assert!(
        shown["impostor"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["connected"] == false),
        "the impostor is never shown connected: {shown}"
    );

    // The impostor got no socket at all: it has no key of ours to be asked about.
    let types = impostor.assert_learned_nothing("beside the native host");
    assert!(types.is_empty(), "no key to offer, so no socket: {types:?}");
    assert_eq!(d.status()["browsers"], 1);
}

/// (c) and (d) in Firefox: the same extension, so the same promise. Unpaired, neither daemon
/// hears about the browser; once paired, the real daemon gets the tab and the impostor (which
/// relays to the real daemon, and is refused there) only key ids and nonces.
#[test]
fn in_firefox_an_impostor_daemon_on_a_scanned_port_learns_nothing_before_or_after_pairing() {
    let test = "trust_browser::in_firefox_an_impostor_daemon_learns_nothing";
    let Some(exe) = crate::support::firefox::firefox_or_skip(test) else {
        return;
    };
    let Some(()) = other_user_or_skip(test) else {
        return;
    };
    let _lock = machine_wide_lock();
    let pages = PageServer::page("<!doctype html><title>Secret page</title><p>account 12345</p>");
    let d = daemon_in_scan_range(&[]);
    let impostor = Impostor::daemon(free_scan_port(d.port), Some(d.port));
    let impostor_at = format!("127.0.0.1:{}", impostor_port(&impostor));
    let mut ff = crate::support::firefox::Firefox::launch(
        &exe,
        &crate::support::firefox::Options::default(),
    );
    let url = pages.url("secret");
    ff.show(&url);
    let options = ff.open_extension_page("ui/options.html");
    let shown = ff.wait_for(
        &options,
        "both daemons shown as found, not paired",
        &format!(
            r#"(() => {{
            const li = [...document.querySelectorAll('#daemons li.state-unpaired')].map((l) => l.textContent);
            return li.some((t) => t.includes('127.0.0.1:{port}')) && li.some((t) => t.includes('{impostor_at}')) && li;
        }})()"#,
            port = d.port
        ),
    );
    assert!(
        shown.to_string().contains("found, not paired")
            && shown.to_string().contains("browserctl pair"),
        "{shown}"
    );
    assert_eq!(d.status()["browsers"], 0);
    let before = impostor.assert_learned_nothing("Firefox, before pairing");
    assert!(
        before.is_empty(),
        "no key to offer, so no socket: {before:?}"
    );

    // Paired the way a person does: the real daemon gets the tab.
    ff.pair(&d);
    ff.allow_everywhere();
    the_secret_page_reaches(&d, &url);
    // The extension offers its pairing to the impostor too, which fails to prove it.
    let refused = ff.wait_for(
        &options,
        "the impostor shown as refused",
        &format!(
            "[...document.querySelectorAll('#daemons li.state-refused')].map((l) => l.textContent).find((t) => t.includes('{impostor_at}'))"
        ),
    );
    assert!(
        refused.as_str().is_some_and(
            |t| t.contains(" refused") && t.contains("could not prove it is your browser-mcpd")
        ),
        "in words: {refused}"
    );
    let paired = ff.wait_for(
        &options,
        "the real daemon shown as connected",
        &format!(
            "[...document.querySelectorAll('#daemons li.state-connected')].filter((li) => li.textContent.includes('127.0.0.1:{}')).map((li) => li.querySelector('.state').textContent.trim())[0]",
            d.port
        ),
    );
    assert_eq!(paired, "connected · paired");
    proved_nothing(&impostor, &d, "Firefox, after pairing");
}
