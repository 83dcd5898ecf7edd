//! Trusted input in a Firefox the daemon launched (issue 57): the daemon holds the browser's
//! one WebDriver BiDi session and performs the extension's input through it, so a page that
//! acts only on `isTrusted` events takes the hands' clicks (double and right too), hover, typing,
//! keys and drags, and every result says `input: trusted`. Another local program cannot drive
//! the browser through the same port: its `session.new` is refused.
//!
//! The oracle is the page's own text, read with `browser_snapshot`: the test cannot open a
//! session of its own with this browser, by design.

use super::tail;
use crate::browser::drives::*;
use crate::browser::managed::rig::{daemon, launch, Kind};
use crate::support::chromium::PageServer;
use crate::support::common::*;
use serde_json::{json, Value};
use std::time::Duration;

const TEST: &str = "browser::hands::managed_firefox::a_managed_firefox_gives_trusted_input";
const PAGE: &str = r#"<!doctype html><title>trusted only</title>
<button id="b" style="position:absolute;left:20px;top:20px;width:120px;height:40px">Accept</button>
<input id="t" aria-label="Name" style="position:absolute;left:20px;top:100px">
<div id="spot" style="position:absolute;left:300px;top:200px;width:100px;height:100px;background:#c00"></div>
<p id="log" style="position:absolute;left:20px;top:420px">seen:</p>
<script>
// Acts only on trusted events, as anti-bot and consent widgets do; says so of any other.
const log = (s) => { document.getElementById('log').textContent += ' ' + s; };
const only = (f) => (e) => (e.isTrusted ? f(e) : log(`untrusted-${e.type}`));
for (const t of ['click', 'contextmenu', 'dblclick'])
  document.addEventListener(t, only((e) => log(`${t}:${e.target.id}:${e.button}`)));
document.addEventListener('keydown', only((e) => e.key === 'Enter' && log('keydown:Enter')));
document.addEventListener('beforeinput', only((e) => log(`beforeinput:${e.inputType}:${e.data}`)));
document.getElementById('b').addEventListener('mouseover', only(() => log('over:b')));
let from = null;
spot.addEventListener('pointerdown', only((e) => { from = e.clientX; }));
document.addEventListener('pointerup', only((e) => { if (from !== null) log(`dragged:${Math.round(e.clientX - from)}`); from = null; }));
log(`webdriver:${navigator.webdriver}`);
</script>"#;

fn call(d: &TestDaemon, tab: &str, tool: &str, args: Value) -> String {
    let r = ctl_call(d, tab, tool, &args)
        .unwrap_or_else(|e| panic!("{tool} {args}: {e}\n{}", tail(&d.log(), 30)));
    assert_eq!(
        r["structuredContent"]["input"],
        "trusted",
        "{tool}: {r}\n{}",
        tail(&d.log(), 30)
    );
    let t = text(&r);
    assert!(t.contains("(input: trusted)"), "{tool}: {t}");
    t
}

/// The page's log line, once it holds `wanted`.
fn seen(d: &TestDaemon, tab: &str, wanted: &str) -> String {
    wait_until(Duration::from_secs(10), wanted, || {
        let r = ctl_call(d, tab, "browser_snapshot", &json!({})).ok()?;
        let snap = text(&r);
        let line = snap.lines().find(|l| l.contains("seen:"))?.to_owned();
        line.contains(wanted).then_some(line)
    })
}

#[test]
fn a_managed_firefox_gives_trusted_input() {
    let Some(exe) = Kind::Firefox.exe(TEST) else {
        return;
    };
    let d = daemon(tempfile::tempdir().unwrap(), Kind::Firefox, &exe);
    let pages = PageServer::page(PAGE);
    let url = pages.url("a.html");
    let v = launch(
        &d,
        Kind::Firefox,
        &["--url", &url, "--restart", "on-failure"],
    );
    let tab = v["tab"].as_str().unwrap().to_owned();
    seen(&d, &tab, "webdriver:");

    // Another program on the machine finds the port in the profile (the profile is the user's,
    // but say it got the port) and cannot start a session: the daemon holds the only one.
    let profile = std::path::PathBuf::from(v["profileDir"].as_str().unwrap());
    let server: Value = serde_json::from_slice(
        &std::fs::read(profile.join("WebDriverBiDiServer.json")).expect("the BiDi server file"),
    )
    .unwrap();
    let endpoint = format!("ws://127.0.0.1:{}", server["ws_port"]);
    match crate::support::bidi::Bidi::connect(&endpoint, Duration::from_secs(10)) {
        Ok(_) => panic!("another program started a BiDi session with the daemon's browser"),
        Err(e) => assert!(e.contains("Maximum number of active sessions"), "{e}"),
    }

    call(&d, &tab, "browser_click", json!({"selector": "#b"}));
    seen(&d, &tab, "click:b:0");
    let t = call(
        &d,
        &tab,
        "browser_click",
        json!({"x": 350, "y": 250, "button": "right"}),
    );
    assert!(t.contains("with the right button"), "{t}");
    seen(&d, &tab, "contextmenu:spot:2");
    call(
        &d,
        &tab,
        "browser_click",
        json!({"x": 350, "y": 250, "doubleClick": true}),
    );
    seen(&d, &tab, "dblclick:spot:0");
    call(&d, &tab, "browser_hover", json!({"selector": "#b"}));
    seen(&d, &tab, "over:b");
    call(
        &d,
        &tab,
        "browser_type",
        json!({"selector": "#t", "text": "hé"}),
    );
    seen(
        &d,
        &tab,
        "beforeinput:insertText:h beforeinput:insertText:é",
    );
    call(
        &d,
        &tab,
        "browser_press_key",
        json!({"selector": "#t", "key": "Enter"}),
    );
    seen(&d, &tab, "keydown:Enter");
    call(
        &d,
        &tab,
        "browser_drag",
        json!({"startX": 320, "startY": 220, "endX": 420, "endY": 220}),
    );
    let line = seen(&d, &tab, "dragged:100");
    assert!(!line.contains("untrusted"), "{line}");
    let snap = text(&ctl_call(&d, &tab, "browser_snapshot", &json!({})).unwrap());
    assert!(
        snap.contains("hé"),
        "the field holds the typed text: {snap}"
    );
    eprintln!("{TEST}: the page saw {line}");

    // A crash and a restart: the new start has a session of its own (found at its own port,
    // not at the one the last start wrote into the profile), and the page trusted input again.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(v["pid"].as_u64().unwrap() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let patience = Duration::from_secs(60);
    let tab = wait_until(patience, "the page's tab after a restart", || {
        let tabs = d.ctl_json(&["tabs"]);
        let t = tabs["tabs"].as_array()?.iter().find(|t| t["url"] == url)?;
        let r = t["ref"].as_str()?.to_owned();
        (r != tab).then_some(r)
    });
    // The session comes a moment after the extension is back: until then, synthetic, said.
    let start = std::time::Instant::now();
    loop {
        let r = ctl_call(&d, &tab, "browser_hover", &json!({"selector": "#t"}));
        if r.as_ref()
            .is_ok_and(|r| r["structuredContent"]["input"] == "trusted")
        {
            break;
        }
        assert!(
            start.elapsed() < patience,
            "no trusted input after the restart: {r:?}\n{}",
            tail(&d.log(), 40)
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    call(&d, &tab, "browser_click", json!({"selector": "#b"}));
    seen(&d, &tab, "click:b:0");
}
