//! A hand-off in Chromium (issue 60): the agent asks the person to sign in; the person types
//! through the browser's own input (DevTools `Input.*`, not our tools) and answers in the
//! popup; meanwhile the tab refuses other calls. *I can't*, the timeout and *More time* too; and
//! the same asked by an MCP agent while another agent's call on the tab is refused.

use super::*;
use crate::support::cdp::Page;
use crate::support::common::*;
use crate::support::lanes::{Mcp, Outcome};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A sign-in form at every path but /welcome, which greets whoever signed in.
pub(crate) const SIGN_IN: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head>
<body>
  <form id="form" action="/welcome" method="get">
    <label>User <input id="user" name="user"></label>
    <label>Password <input id="pw" name="pw" type="password"></label>
    <button>Sign in</button>
  </form>
  <script>
    if (location.pathname === '/welcome') {
      const user = new URLSearchParams(location.search).get('user');
      document.title = 'Welcome';
      document.body.textContent = `Signed in as ${user}`;
    }
  </script>
</body></html>"#;

/// The popup's hand-off, once it shows: its reason.
pub(crate) const SHOWN: &str = "document.querySelector('#handoffs .reason')?.textContent";

/// The popup once no hand-off waits (a new one's wait must not find the last one's buttons).
pub(crate) const NONE_SHOWN: &str = "document.getElementById('handoff-section').hidden";

/// Presses one of the hand-off's buttons in the popup (done, cant, extend).
pub(crate) fn press_in_popup(choice: &str) -> String {
    format!("document.querySelector('#handoffs [data-key^=\"{choice}-\"]').click(), true")
}

/// A call on the handed tab fails at once with HANDOFF_IN_PROGRESS (exit 22).
pub(crate) fn refused_meanwhile(d: &TestDaemon, tab_ref: &str) {
    let t = Instant::now();
    let out = d.ctl(&["call", "browser_snapshot", "--tab", tab_ref]);
    assert_eq!(exit_code(&out), 22, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("HANDOFF_IN_PROGRESS"),
        "{}",
        stderr(&out)
    );
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "at once, not after a wait: {:?}",
        t.elapsed()
    );
}

/// `browserctl handoff` on the tab, as a script would ask.
pub(crate) fn handoff_args<'a>(tab_ref: &'a str, timeout: &'a str) -> [&'a str; 8] {
    let reason = "sign in to the test site";
    [
        "handoff",
        "--tab",
        tab_ref,
        "--reason",
        reason,
        "--timeout",
        timeout,
        "--json",
    ]
}

/// Whether the tab is its window's active one, as the extension sees it.
pub(crate) fn active(tab_id: &Value) -> String {
    format!("chrome.tabs.get({tab_id}).then((t) => t.active)")
}

/// What a finished hand-off returned: the signed-in page and what changed.
pub(crate) fn signed_in(out: &std::process::Output, url: &str) {
    assert_eq!(exit_code(out), 0, "{}", stderr(out));
    let v: Value = serde_json::from_str(&stdout(out)).unwrap();
    let s = &v["result"]["structuredContent"];
    assert_eq!(s["answer"], "done", "{v}");
    assert_eq!(s["before"], json!({"url": url, "title": "Sign in"}), "{v}");
    assert_eq!(s["after"]["title"], "Welcome", "{v}");
    assert!(
        s["after"]["url"]
            .as_str()
            .unwrap()
            .contains("/welcome?user=alice"),
        "{v}"
    );
    assert_eq!(s["changed"], json!({"url": true, "title": true}), "{v}");
    let text: String = v["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect();
    assert!(text.contains("Title: \"Sign in\" → \"Welcome\""), "{text}");
    assert!(
        text.contains("Signed in as alice"),
        "the fresh snapshot: {text}"
    );
}

/// Chromium at the sign-in page, the daemon started with `args`: the page's tab (listed, and
/// attached for the person's input) and the popup opened on it.
pub(crate) struct SignIn {
    pub(crate) face: ChromiumFace,
    pub(crate) url: String,
    pub(crate) tab: Value,
    pub(crate) tab_ref: String,
    pub(crate) page: Page,
    pub(crate) popup: Page,
}

impl SignIn {
    pub(crate) fn start(test: &str, args: &[&str]) -> Option<SignIn> {
        let mut face = ChromiumFace::showing_with(test, SIGN_IN, args)?;
        let url = face.pages.url("recipes");
        let tab = wait_for_tab(&face.d, &face.b, &url, |n| n.contains(&"browser_handoff"));
        let tab_ref = tab["ref"].as_str().unwrap().to_owned();
        let page = face.b.attach(&url);
        let popup = face.b.open(&popup_url(&tab));
        face.b.viewport(&popup, 400, 600);
        Some(SignIn {
            face,
            url,
            tab,
            tab_ref,
            page,
            popup,
        })
    }
}

/// The person signs in as alice, typing through the browser's own input (DevTools
/// `Input.insertText`, then Enter), and the page greets them.
pub(crate) fn signs_in(b: &mut Browser, page: &Page) {
    b.focus(page, "user");
    b.send(
        Some(&page.session),
        "Input.insertText",
        json!({"text": "alice"}),
    );
    b.press(page, "Enter");
    b.wait_for(page, "the signed-in page", "document.title === 'Welcome'");
}

fn popup_url(tab: &Value) -> String {
    format!(
        "chrome-extension://{EXTENSION_ID}/ui/popup.html?tab={}",
        tab["id"]
    )
}

#[test]
fn the_person_signs_in_and_the_agent_goes_on() {
    let test = "browser::face::chromium_handoff::the_person_signs_in_and_the_agent_goes_on";
    // Calls give up after 2 s: a hand-off is not a call the browser answers, and outlives that.
    let Some(s) = SignIn::start(test, &["--call-timeout", "2s"]) else {
        return;
    };
    let SignIn {
        face: ChromiumFace { mut b, d, .. },
        url,
        tab,
        tab_ref,
        page,
        popup,
    } = s;

    assert_eq!(
        b.eval(&popup, &active(&tab["id"])),
        false,
        "the popup's tab is in front"
    );
    let call = spawn_ctl(&d, &handoff_args(&tab_ref, "5m"));
    let reason = b.wait_for(&popup, "the hand-off in the popup", SHOWN);
    assert_eq!(reason, "sign in to the test site");
    let who = b.eval(
        &popup,
        "document.querySelector('#handoffs .agent-name').textContent",
    );
    assert_eq!(who, "browserctl", "the popup names who asks");
    // The worker shows the popup's list and the notification independently: either may be first.
    let notes = b.wait_for(
        &popup,
        "the hand-off's notification",
        "chrome.notifications.getAll().then((all) => Object.keys(all).length ? Object.keys(all) : null)",
    );
    assert!(
        notes.as_array().is_some_and(
            |n| n.len() == 1 && n[0].as_str().unwrap().starts_with("browser-mcp-handoff-")
        ),
        "{notes}"
    );
    // Brought forward, although the popup's tab was opened after it.
    assert_eq!(
        b.eval(&popup, &active(&tab["id"])),
        true,
        "the tab brought forward"
    );
    b.screenshot(&popup, &artifacts_dir().join("popup-handoff.png"));
    refused_meanwhile(&d, &tab_ref);

    // The person signs in, with the browser's own input.
    b.focus(&page, "user");
    b.send(
        Some(&page.session),
        "Input.insertText",
        json!({"text": "alice"}),
    );
    b.focus(&page, "pw");
    b.send(
        Some(&page.session),
        "Input.insertText",
        json!({"text": "secret"}),
    );
    b.press(&page, "Enter");
    b.wait_for(&page, "the signed-in page", "document.title === 'Welcome'");
    b.eval(&popup, &press_in_popup("done"));
    signed_in(&call.join().unwrap(), &url);
    b.wait_for(&popup, "the hand-off gone from the popup", NONE_SHOWN);
    // The tab takes calls again.
    let out = d.ctl(&["call", "browser_snapshot", "--tab", &tab_ref]);
    assert_eq!(exit_code(&out), 0, "{}", stderr(&out));

    // I can't.
    let call = spawn_ctl(&d, &handoff_args(&tab_ref, "5m"));
    b.wait_for(&popup, "the second hand-off", SHOWN);
    b.eval(&popup, &press_in_popup("cant"));
    let out = call.join().unwrap();
    assert_eq!(exit_code(&out), 23, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("HANDOFF_DECLINED"),
        "{}",
        stderr(&out)
    );
    b.wait_for(&popup, "the declined hand-off gone", NONE_SHOWN);

    // Nobody answers: the timeout, once, not retried.
    let t = Instant::now();
    let out = d.ctl(&handoff_args(&tab_ref, "2s"));
    assert_eq!(exit_code(&out), 24, "{}", stderr(&out));
    assert!(stderr(&out).contains("HANDOFF_TIMEOUT"), "{}", stderr(&out));
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    b.wait_for(&popup, "the timed-out hand-off gone", NONE_SHOWN);

    // The agent goes away (Ctrl-C): the hand-off leaves the person's screen, and the tab takes
    // calls again.
    let child = d.ctl_spawn(&handoff_args(&tab_ref, "5m"));
    b.wait_for(&popup, "the hand-off of the agent that leaves", SHOWN);
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(exit_code(&out), 130, "{}", stderr(&out));
    b.wait_for(&popup, "the abandoned hand-off gone", NONE_SHOWN);
    let out = d.ctl(&["call", "browser_snapshot", "--tab", &tab_ref]);
    assert_eq!(exit_code(&out), 0, "{}", stderr(&out));

    // More time: a 3 s hand-off the person extends outlives its 3 s, and the daemon's 2 s
    // call timeout, in one attempt.
    let call = spawn_ctl(&d, &handoff_args(&tab_ref, "3s"));
    b.wait_for(&popup, "the fourth hand-off", SHOWN);
    b.eval(&popup, &press_in_popup("extend"));
    b.wait_for(
        &popup,
        "ten more minutes",
        "document.querySelector('#handoffs .countdown')?.textContent.endsWith('min left')",
    );
    std::thread::sleep(Duration::from_secs(4));
    b.eval(&popup, &press_in_popup("done"));
    let out = call.join().unwrap();
    assert_eq!(exit_code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["attempts"], 1, "{v}");
    assert!(v["elapsedMs"].as_u64().unwrap() > 4000, "{v}");
}

#[test]
fn an_mcp_agent_hands_off_and_another_agent_is_refused_meanwhile() {
    let test = "browser::face::chromium_handoff::an_mcp_agent_hands_off_and_another_agent_is_refused_meanwhile";
    let Some(s) = SignIn::start(test, &[]) else {
        return;
    };
    let SignIn {
        face: ChromiumFace { mut b, d, .. },
        tab_ref,
        page,
        popup,
        ..
    } = s;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let connect = |name| Mcp::connect(std::path::Path::new(CTL), &d.socket, name);
    let (mut a, mut other) =
        rt.block_on(async { (connect("agent-a").await, connect("agent-b").await) });
    let args = json!({"tab": tab_ref, "reason": "sign in, please"});
    let handoff = rt.spawn(async move {
        let limit = Duration::from_secs(120);
        let done = a
            .call_hearing_progress("browser_handoff", args, limit)
            .await;
        (done, a.progress)
    });

    b.wait_for(&popup, "agent-a's hand-off in the popup", SHOWN);
    let who = b.eval(
        &popup,
        "document.querySelector('#handoffs .agent-name').textContent",
    );
    assert_eq!(who, "agent-a", "the popup names the agent");
    let refused = rt.block_on(other.call("browser_snapshot", json!({"tab": tab_ref})));
    let Outcome::Failed(why) = refused else {
        panic!("agent-b's read during the hand-off: {refused:?}")
    };
    assert!(why.contains("HANDOFF_IN_PROGRESS"), "{why}");

    signs_in(&mut b, &page);
    // Two seconds of waiting, said to the client while it waits.
    std::thread::sleep(Duration::from_secs(2));
    b.eval(&popup, &press_in_popup("done"));
    let (done, progress) = rt.block_on(handoff).unwrap();
    assert!(
        progress.len() >= 2
            && progress
                .iter()
                .all(|p| p.starts_with("waiting for the person")),
        "{progress:?}"
    );
    let Outcome::Answered(text, at) = done else {
        panic!("agent-a's hand-off: {done:?}")
    };
    assert_eq!(at, tab_ref);
    assert!(
        text.contains("Title: \"Sign in\" → \"Welcome\"") && text.contains("Signed in as alice"),
        "{text}"
    );
    let read = rt.block_on(other.call("browser_snapshot", json!({"tab": tab_ref})));
    assert!(
        matches!(read, Outcome::Answered(..)),
        "after the hand-off: {read:?}"
    );
}

/// An MV3 worker idle for 30 s is stopped, and with it whatever it waits for: a hand-off that
/// waits longer still ends with the person's answer, over the same connection.
#[test]
fn a_hand_off_outlives_an_idle_workers_30_s() {
    let test = "browser::face::chromium_handoff::a_hand_off_outlives_an_idle_workers_30_s";
    let Some(s) = SignIn::start(test, &[]) else {
        return;
    };
    let SignIn {
        face: ChromiumFace { mut b, d, .. },
        tab,
        tab_ref,
        popup,
        ..
    } = s;
    let connected = d.ctl_json(&["browsers"])["browsers"][0].clone();
    let call = spawn_ctl(&d, &handoff_args(&tab_ref, "5m"));
    b.wait_for(&popup, "the hand-off in the popup", SHOWN);
    // The popup asks the worker nothing meanwhile: closed, and opened again to answer.
    b.close_page(&popup);
    std::thread::sleep(Duration::from_secs(35));
    let popup = b.open(&popup_url(&tab));
    b.wait_for(&popup, "the hand-off still waiting", SHOWN);
    b.eval(&popup, &press_in_popup("done"));
    let out = call.join().unwrap();
    assert_eq!(exit_code(&out), 0, "{}", stderr(&out));
    let now = d.ctl_json(&["browsers"])["browsers"][0].clone();
    assert_eq!(now, connected, "the same connection throughout");
}
