//! `browserctl browser launch --input synthetic` (issue 57): a launched browser whose hands
//! make the extension's DOM events alone, as a person's browser that did not grant trusted
//! input. Firefox then starts without its Remote Agent: no WebDriver BiDi port in the profile,
//! and its pages see `navigator.webdriver` false. The results say `input: synthetic` with no
//! reason after it: that was the launch's choice, no news to the agent. The same launches
//! without the flag make trusted input (the managed tests check that), and the list says which.

use super::rig::{daemon, launch, Kind};
use crate::browser::drives::*;
use crate::support::chromium::PageServer;
use crate::support::common::*;
use serde_json::{json, Value};
use std::time::Duration;

const PAGE: &str = r#"<!doctype html><title>which input</title>
<button id="b" style="position:absolute;left:20px;top:20px;width:120px;height:40px">Go</button>
<p id="log" style="position:absolute;left:20px;top:120px">seen:</p>
<script>
const log = (s) => { document.getElementById('log').textContent += ' ' + s; };
document.getElementById('b').addEventListener('click', (e) => log(`click:${e.isTrusted}`));
log(`webdriver:${navigator.webdriver}`);
</script>"#;

fn synthetic_launch(kind: Kind) {
    let test = format!(
        "browser::managed::input_choice::{}_launched_for_synthetic_input",
        kind.name()
    );
    let Some(exe) = kind.exe(&test) else {
        return;
    };
    let d = daemon(tempfile::tempdir().unwrap(), kind, &exe);
    let pages = PageServer::page(PAGE);
    let url = pages.url("a.html");
    let v = launch(&d, kind, &["--url", &url, "--input", "synthetic"]);
    assert_eq!(v["input"], "synthetic", "{v}");
    let tab = v["tab"].as_str().unwrap().to_owned();
    let profile = std::path::PathBuf::from(v["profileDir"].as_str().unwrap());

    let r = ctl_call(&d, &tab, "browser_click", &json!({"selector": "#b"})).unwrap();
    assert_eq!(r["structuredContent"]["input"], "synthetic", "{r}");
    assert!(r["structuredContent"]["inputNote"].is_null(), "{r}");
    let t = text(&r);
    assert!(t.contains("(input: synthetic)"), "{t}");
    let line = wait_until(Duration::from_secs(10), "the click on the page", || {
        let r = ctl_call(&d, &tab, "browser_snapshot", &json!({})).ok()?;
        let line = text(&r).lines().find(|l| l.contains("seen:"))?.to_owned();
        line.contains("click:").then_some(line)
    });
    assert!(line.contains("click:false"), "{line}");
    if kind == Kind::Firefox {
        assert!(line.contains("webdriver:false"), "{line}");
        assert!(
            !profile.join("WebDriverBiDiServer.json").exists(),
            "Firefox opened a BiDi port"
        );
    }
    let list: Value = d.ctl_json(&["browser", "list"]);
    assert_eq!(list["managed"][0]["input"], "synthetic", "{list}");
}

#[test]
fn chromium_launched_for_synthetic_input() {
    synthetic_launch(Kind::Chromium);
}

#[test]
fn firefox_launched_for_synthetic_input() {
    synthetic_launch(Kind::Firefox);
}
