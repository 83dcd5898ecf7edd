//! A hand-off in Firefox (issue 60; chromium_handoff.rs is the Chromium counterpart): the
//! person signs in with the keyboard (WebDriver BiDi `input.performActions`, not our tools),
//! answers *Done* in the popup, and the agent gets the signed-in page; meanwhile the tab
//! refuses other calls; *I can't* fails the call.

use super::chromium_handoff::{
    handoff_args, press_in_popup, refused_meanwhile, signed_in, NONE_SHOWN, SHOWN, SIGN_IN,
};
use super::spawn_ctl;
use crate::support::chromium::*;
use crate::support::common::*;
use crate::support::firefox::*;

#[test]
fn the_person_signs_in_and_the_agent_goes_on() {
    let test = "browser::face::firefox_handoff::the_person_signs_in_and_the_agent_goes_on";
    let Some(exe) = firefox_or_skip(test) else {
        return;
    };
    let _lock = machine_wide_lock();
    let pages = PageServer::page(SIGN_IN);
    let d = daemon_in_scan_range(&["--call-timeout", "2s"]);
    let mut ff = Firefox::launch(&exe, &Options::default());
    ff.pair(&d);
    ff.allow_everywhere();
    let url = pages.url("recipes");
    let page = ff.show(&url);
    let tab = listed_tab(&d, FIREFOX_WAIT, &url, "browser_handoff");
    let tab_ref = tab["ref"].as_str().unwrap().to_owned();
    let popup = ff.open_extension_page(&format!("ui/popup.html?tab={}", tab["id"]));

    let call = spawn_ctl(&d, &handoff_args(&tab_ref, "5m"));
    let reason = ff.wait_for(&popup, "the hand-off in the popup", SHOWN);
    assert_eq!(reason, "sign in to the test site");
    let active = format!("chrome.tabs.get({}).then((t) => t.active)", tab["id"]);
    assert_eq!(ff.eval(&popup, &active), true, "the tab brought forward");
    refused_meanwhile(&d, &tab_ref);

    ff.eval(&page, "document.getElementById('user').focus(), true");
    ff.bidi.type_text(&page, "alice").unwrap();
    ff.eval(&page, "document.getElementById('pw').focus(), true");
    ff.bidi.type_text(&page, "secret\n").unwrap();
    ff.wait_for(&page, "the signed-in page", "document.title === 'Welcome'");
    ff.eval(&popup, &press_in_popup("done"));
    signed_in(&call.join().unwrap(), &url);
    ff.wait_for(&popup, "the hand-off gone from the popup", NONE_SHOWN);

    let call = spawn_ctl(&d, &handoff_args(&tab_ref, "5m"));
    ff.wait_for(&popup, "the second hand-off", SHOWN);
    ff.eval(&popup, &press_in_popup("cant"));
    fails(&call.join().unwrap(), 23, "HANDOFF_DECLINED");
}
