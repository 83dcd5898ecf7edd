//! Every built-in tool in headless Firefox ESR, on the pages tests/it/browser/hands.rs uses in Chromium
//! (Playwright's and Selenium's own test pages, and ours for frames): the real extension as a
//! temporary add-on, the real daemon, calls over its control socket, and WebDriver BiDi as the
//! oracle that reads what the page recorded. What Firefox does differently is said where it
//! is checked.
//!
//! Without Firefox the test says SKIPPED loudly and passes, except under CI=true.

use crate::browser::hands::{all_text, find_ref};
use crate::daemon::control::raw_request;
use crate::support::bidi::Context;
use crate::support::chromium::*;
use crate::support::common::*;
use crate::support::firefox::*;
use crate::support::site::SiteServer;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A failed call: the extension's own code when the daemon wraps it as TOOL_ERROR.
#[derive(Debug)]
struct Failure {
    code: String,
    message: String,
}

struct Hands {
    d: TestDaemon,
    ff: Firefox,
    page: Context,
    tab: String,
    origin: String,
}

impl Hands {
    fn try_call(&mut self, tool: &str, args: Value) -> Result<Value, Failure> {
        let body = json!({"tool": tool, "tab": self.tab, "args": args, "retries": 0}).to_string();
        let request = format!(
            "POST /v1/call HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let (status, text) = raw_request(&self.d, &request);
        let v: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{tool}: not JSON ({e}), status {status}: {text}"));
        if status == 200 {
            return Ok(v["result"].clone());
        }
        let e = &v["error"];
        Err(Failure {
            code: e["details"]["toolCode"]
                .as_str()
                .or(e["code"].as_str())
                .unwrap_or_default()
                .to_owned(),
            message: e["message"].as_str().unwrap_or_default().to_owned(),
        })
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        match self.try_call(tool, args.clone()) {
            Ok(v) => v,
            Err(f) => panic!(
                "{tool} {args} failed: {f:?}\n--- daemon ---\n{}\n--- firefox ---\n{}",
                last_lines(&self.d.log(), 30),
                self.ff.log_tail()
            ),
        }
    }

    fn refused(&mut self, tool: &str, args: Value, code: &str) -> String {
        match self.try_call(tool, args.clone()) {
            Ok(v) => panic!("{tool} {args} should fail with {code}, gave {v}"),
            Err(f) => {
                assert_eq!(f.code, code, "{tool} {args}: {}", f.message);
                f.message
            }
        }
    }

    fn text(&mut self, tool: &str, args: Value) -> String {
        all_text(&self.call(tool, args))
    }

    fn snapshot(&mut self) -> String {
        self.text("browser_snapshot", json!({}))
    }

    fn goto(&mut self, path: &str) {
        let url = format!("{}/{path}", self.origin);
        let out = self.text("browser_navigate", json!({"url": url}));
        assert!(out.starts_with("Loaded "), "{out}");
        self.settle();
    }

    fn settle(&mut self) {
        let page = self.page.clone();
        self.ff.wait_for(
            &page,
            "the page to finish loading",
            "document.readyState === 'complete'",
        );
    }

    fn eval(&mut self, expr: &str) -> Value {
        let page = self.page.clone();
        self.ff.eval(&page, expr)
    }

    fn wait(&mut self, what: &str, expr: &str) -> Value {
        let page = self.page.clone();
        self.ff.wait_for(&page, what, expr)
    }

    fn ref_of(&mut self, needle: &str) -> String {
        let snap = self.snapshot();
        find_ref(&snap, needle).unwrap_or_else(|| panic!("no line with {needle:?} in\n{snap}"))
    }

    fn wait_snapshot(&mut self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let snap = self.snapshot();
            if ready(&snap) {
                return snap;
            }
            if start.elapsed() > FIREFOX_WAIT {
                panic!("timed out waiting for {what}:\n{snap}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[test]
fn every_built_in_in_firefox() {
    let Some(exe) = firefox_or_skip("firefox_hands::every_built_in_in_firefox") else {
        return;
    };
    let _lock = machine_wide_lock();
    let server = SiteServer::start();
    let d = daemon_in_scan_range(&[]);
    let mut ff = Firefox::launch(&exe, &Options::default());
    ff.pair(&d);
    let start_url = format!("{}/hands-names.html", server.origin());
    let page = ff.show(&start_url);
    let tab = wait_until(FIREFOX_WAIT, "the tab with the built-ins", || {
        let tabs = d.ctl_json(&["tabs"]);
        tabs["tabs"].as_array()?.iter().find_map(|t| {
            (t["url"] == start_url.as_str() && tool_names(t).contains(&"browser_file_upload"))
                .then(|| t["ref"].as_str().unwrap().to_owned())
        })
    });
    let mut h = Hands {
        d,
        ff,
        page,
        tab,
        origin: server.origin(),
    };
    let started = Instant::now();
    let step = |name: &str| eprintln!("firefox hands {:>6.1?} {name}", started.elapsed());

    names(&mut h);
    step("names");
    frames(&mut h);
    step("frames");
    dialogs(&mut h);
    step("dialogs");
    uploads(&mut h);
    step("uploads");
    drags(&mut h);
    step("drag and drop");
    hover_keys_select(&mut h);
    step("hover, keys, select");
    history(&mut h);
    step("history");
    rest(&mut h);
    step("wait_for, screenshot, evaluate, bounded snapshot");
}

/// Names as assistive technology computes them, the same lines as in Chromium.
fn names(h: &mut Hands) {
    let snap = h.snapshot();
    for line in [
        "[textbox e1] E-mail address",
        "[textbox e2] Wrapped label",
        "[combobox e7] Country = \"Norway\" options: Norway | Peru | Japan",
        "[file-chooser e8] Résumé (no file chosen; accepts .pdf,.txt)",
        "[button e10] Submit",
    ] {
        assert!(
            snap.lines().any(|l| l == line),
            "no line {line:?} in\n{snap}"
        );
    }
}

fn frames(h: &mut Hands) {
    // Playwright's nested frames, each frame's text in place.
    h.goto("playwright/frames/nested-frames.html");
    h.wait_snapshot("the nested frames", |s| {
        s.matches("Hi, I'm frame").count() == 3
    });

    // Same origin, cross origin with a frame nested in it, sandboxed, broken.
    h.goto("hands-frames.html");
    h.wait(
        "all frames",
        "window.frames.length === 5 && window.frames[1].frames.length === 1",
    );
    let snap = h.wait_snapshot("the nested cross-origin frame", |s| {
        s.contains("?nested") && s.contains("Sandboxed button")
    });
    let lines: Vec<&str> = snap.lines().collect();
    let cross_at = lines
        .iter()
        .position(|l| l.contains("Cross origin"))
        .unwrap_or_else(|| panic!("{snap}"));
    let frame_button = lines[cross_at..]
        .iter()
        .find_map(|l| find_ref(l, "Frame button"))
        .unwrap_or_else(|| panic!("{snap}"));
    assert!(frame_button.starts_with('f'), "{frame_button}");
    let nested_field = lines[cross_at..]
        .iter()
        .skip_while(|l| !l.contains("Nested"))
        .find(|l| l.contains("Name in frame") && l.trim_start().starts_with('['))
        .and_then(|l| find_ref(l, "Name in frame"))
        .unwrap_or_else(|| panic!("a field in the nested frame:\n{snap}"));

    // Click inside the cross-origin frame; type in the frame nested in it.
    let out = h.text("browser_click", json!({"ref": frame_button}));
    assert!(out.contains("Clicked button \"Frame button\""), "{out}");
    h.wait(
        "the frame's postMessage",
        "document.getElementById('log').textContent.startsWith('clicked ?cross')",
    );
    h.call(
        "browser_type",
        json!({"ref": nested_field, "text": "deep inside"}),
    );
    let snap = h.snapshot();
    assert!(
        snap.contains(&format!(
            "[textbox {nested_field}] Name in frame = \"deep inside\""
        )),
        "{snap}"
    );
    // A confirm() in the cross-origin frame: answered at once and reported.
    let ask = lines[cross_at..]
        .iter()
        .find_map(|l| find_ref(l, "Ask in frame"))
        .unwrap();
    let out = h.text("browser_click", json!({"ref": ask, "dialog": "accept"}));
    assert!(
        out.contains("confirm \"Really, in the frame?\" → accepted by this call's dialog policy"),
        "{out}"
    );
    // Refs from before a navigation are refused.
    let top = find_ref(&snap, "Top button").unwrap();
    h.goto("hands-names.html");
    let msg = h.refused("browser_click", json!({"ref": top}), "ELEMENT_NOT_FOUND");
    assert!(msg.contains("another document"), "{msg}");
}

fn dialogs(h: &mut Hands) {
    h.goto("selenium/alerts.html");
    let out = h.text("browser_click", json!({"selector": "#alert"}));
    assert!(out.contains("Dialog: alert \"cheese\" → closed"), "{out}");
    let out = h.text("browser_click", json!({"selector": "#prompt"}));
    assert!(
        out.contains("prompt \"Enter something\" (default \"\") → dismissed by the default dialog policy (dismiss)"),
        "{out}"
    );
    assert_eq!(h.eval("document.getElementById('text').innerText"), "null");
    // browser_handle_dialog arms an answer for the next dialog only.
    let out = h.text(
        "browser_handle_dialog",
        json!({"accept": true, "promptText": "hello"}),
    );
    assert!(
        out.contains("The next dialog this tab opens will be accepted"),
        "{out}"
    );
    let out = h.text("browser_click", json!({"selector": "#double-prompt"}));
    assert!(
        out.contains(
            "prompt \"First\" (default \"\") → accepted with \"hello\" by browser_handle_dialog"
        ) && out.contains("prompt \"Second\" (default \"\") → dismissed"),
        "{out}"
    );
    assert_eq!(
        h.eval("[document.getElementById('text1').innerText, document.getElementById('text2').innerText]"),
        json!(["hello", "null"])
    );
    // An accepted confirm follows the link.
    let out = h.text(
        "browser_click",
        json!({"selector": "#confirm", "dialog": "accept"}),
    );
    assert!(
        out.contains("confirm \"Are you sure?\" → accepted"),
        "{out}"
    );
    h.wait(
        "the link to be followed",
        "location.pathname.endsWith('simpleTest.html')",
    );

    // Playwright's beforeunload page, after a person's (trusted) click gave it the activation a
    // "Leave page?" prompt needs: navigating away or reloading never stops at it.
    for leave in ["navigate", "reload"] {
        h.goto("playwright/beforeunload.html");
        let page = h.page.clone();
        h.ff.bidi.click_at(&page, 20.0, 20.0).unwrap();
        h.wait("user activation", "navigator.userActivation.hasBeenActive");
        let started = Instant::now();
        if leave == "navigate" {
            h.goto("playwright/empty.html");
        } else {
            h.call("browser_reload", json!({}));
            h.settle();
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{leave} away from a beforeunload page took {:?}",
            started.elapsed()
        );
    }
}

fn uploads(h: &mut Hands) {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "first file\n").unwrap();
    let notes = notes.to_str().unwrap();

    h.goto("playwright/input/fileupload.html");
    h.eval("(() => { window.seen = []; const i = document.querySelector('input[type=file]'); i.addEventListener('input', (e) => seen.push('input:' + e.bubbles)); i.addEventListener('change', (e) => seen.push('change:' + e.bubbles)); return true; })()");
    let file_ref = h.ref_of("[file-chooser");
    let out = h.text(
        "browser_file_upload",
        json!({"ref": file_ref, "paths": [notes]}),
    );
    assert!(out.contains("Set notes.txt (11 bytes)"), "{out}");
    assert_eq!(h.eval("seen"), json!(["input:true", "change:true"]));
    h.call("browser_click", json!({"selector": "input[type=submit]"}));
    h.wait(
        "the upload to be posted",
        "location.pathname === '/upload' && document.readyState === 'complete'",
    );
    let body = h.eval("document.body.innerText");
    assert!(
        body.as_str()
            .unwrap()
            .contains("file1=notes.txt 11 bytes: first file"),
        "the server got the file: {body}"
    );
    // Inline files on a multiple input.
    h.goto("playwright/input/fileupload-multi.html");
    h.call(
        "browser_file_upload",
        json!({"selector": "input[type=file]", "paths": [notes],
               "files": [{"name": "inline.json", "mimeType": "application/json", "data": "eyJvayI6IHRydWV9"}]}),
    );
    assert_eq!(
        h.eval("[...document.querySelector('input').files].map((f) => `${f.name}|${f.type}|${f.size}`)"),
        json!(["inline.json|application/json|12", "notes.txt|text/plain|11"])
    );
    let msg = h.refused(
        "browser_file_upload",
        json!({"selector": "input[type=file]", "paths": [dir.path().join("missing.txt")]}),
        "INVALID_ARGUMENTS",
    );
    assert!(msg.contains("cannot read"), "{msg}");
}

fn drags(h: &mut Hands) {
    h.goto("playwright/drag-n-drop.html");
    let snap = h.snapshot();
    let source = find_ref(&snap, "[draggable").unwrap_or_else(|| panic!("{snap}"));
    let target = find_ref(&snap, "[dropzone").unwrap_or_else(|| panic!("{snap}"));
    let out = h.text(
        "browser_drag",
        json!({"startRef": source, "endRef": target}),
    );
    assert!(out.contains("HTML5 drag and drop: dropped"), "{out}");
    assert_eq!(
        h.eval("document.getElementById('target').contains(document.getElementById('source'))"),
        true
    );
    h.goto("playwright/input/drag-n-drop-manual.html");
    let from = h.ref_of("Drag me");
    let out = h.text(
        "browser_drag",
        json!({"startRef": from, "endSelector": "#to"}),
    );
    assert!(out.contains("with mouse events"), "{out}");
    assert_eq!(
        h.eval("document.getElementById('to').textContent"),
        "Dropped"
    );
}

fn hover_keys_select(h: &mut Hands) {
    h.goto("selenium/mouseOver.html");
    h.call("browser_hover", json!({"selector": "#redbox"}));
    assert_eq!(
        h.eval("document.getElementById('redbox').style.backgroundColor"),
        "red"
    );
    h.goto("playwright/input/keyboard.html");
    h.call("browser_press_key", json!({"key": "Shift+a"}));
    h.call("browser_press_key", json!({"key": "b"}));
    let result = h.eval("result");
    let result = result.as_str().unwrap();
    assert!(
        result.contains("Keydown: A KeyA") && result.contains("[Shift]"),
        "{result}"
    );
    assert_eq!(h.eval("document.querySelector('textarea').value"), "Ab");
    h.call("browser_press_key", json!({"key": "Control+a"}));
    h.call("browser_press_key", json!({"key": "Backspace"}));
    assert_eq!(h.eval("document.querySelector('textarea').value"), "");
    h.goto("selenium/key_logger.html");
    let field = h.ref_of("[textbox");
    h.call("browser_press_key", json!({"ref": field, "key": "x"}));
    let snap = h.snapshot();
    assert!(snap.contains("focus keydown keypress keyup"), "{snap}");
    h.goto("playwright/input/select.html");
    let select = h.ref_of("[combobox");
    h.call("browser_select", json!({"ref": select, "value": "Blue"}));
    assert_eq!(
        h.eval("[result.onInput, result.onChange]"),
        json!([["blue"], ["blue"]])
    );
}

fn history(h: &mut Hands) {
    h.goto("playwright/empty.html");
    h.goto("playwright/historyapi.html");
    h.wait("the page's pushState", "location.hash === '#1'");
    let out = h.text("browser_navigate_back", json!({}));
    assert!(out.contains("historyapi.html"), "same document: {out}");
    let out = h.text("browser_navigate_back", json!({}));
    assert!(out.contains("empty.html"), "{out}");
    // Unlike Chromium, Firefox keeps no `Cache-Control: no-store` page (what the test server
    // sends) in its back/forward cache: going forward loads historyapi.html again, its own
    // pushState makes a new #1 entry, and that drops the later one.
    let out = h.text("browser_navigate_forward", json!({}));
    assert!(out.contains("historyapi.html"), "{out}");
    h.wait("the page's pushState, again", "location.hash === '#1'");
    let msg = h.refused("browser_navigate_forward", json!({}), "NAVIGATION_FAILED");
    assert!(msg.contains("no later page"), "{msg}");
    let out = h.text("browser_reload", json!({}));
    assert!(out.contains("Reloaded"), "{out}");
    // Firefox commits its own error page for a refused connection.
    let msg = h.refused(
        "browser_navigate",
        json!({"url": "http://127.0.0.1:9/nothing"}),
        "NAVIGATION_FAILED",
    );
    assert!(msg.contains("127.0.0.1:9"), "{msg}");
}

fn rest(h: &mut Hands) {
    h.goto("hands-names.html");
    h.call("browser_wait_for", json!({"selector": "#resume"}));
    h.refused(
        "browser_wait_for",
        json!({"text": "never there", "timeout": 300}),
        "WAIT_TIMEOUT",
    );
    let shot = h.call("browser_screenshot", json!({}));
    assert_eq!(shot["content"][0]["mimeType"], "image/png", "{shot}");
    assert!(shot["content"][0]["data"]
        .as_str()
        .is_some_and(|d| d.starts_with("iVBORw0KGgo")));
    // browser_evaluate, once enabled in the options.
    let msg = h.refused(
        "browser_evaluate",
        json!({"expression": "1 + 1"}),
        "TOOL_NOT_FOUND",
    );
    assert!(msg.contains("browser_evaluate is disabled"), "{msg}");
    let options = h.ff.open_extension_page("ui/options.html");
    h.ff.eval(
        &options,
        "chrome.storage.local.set({ evaluateEnabled: true }).then(() => true)",
    );
    h.ff.bidi.close(&options).unwrap();
    let tab = h.tab.clone();
    wait_until(FIREFOX_WAIT, "browser_evaluate to be offered", || {
        let tabs = h.d.ctl_json(&["tabs"]);
        tabs["tabs"]
            .as_array()?
            .iter()
            .find(|t| t["ref"] == tab.as_str())
            .and_then(|t| tool_names(t).contains(&"browser_evaluate").then_some(()))
    });
    let out = h.call(
        "browser_evaluate",
        json!({"expression": "document.title + ' ' + (6 * 7)"}),
    );
    assert!(
        out["structuredContent"]["value"]
            .as_str()
            .is_some_and(|v| v.ends_with(" 42")),
        "{out}"
    );
    // A bounded snapshot of a huge page.
    h.goto("hands-big.html");
    let r = h.call("browser_snapshot", json!({"maxChars": 5000}));
    let snap = all_text(&r);
    assert!(
        snap.chars().count() <= 5000,
        "{} chars",
        snap.chars().count()
    );
    assert_eq!(
        r["structuredContent"]["truncated"], true,
        "{}",
        r["structuredContent"]
    );
}
