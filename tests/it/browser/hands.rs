//! The agent's hands (issue 15) and the bounded snapshot (issue 16), end to end: headless
//! Chromium with our extension, the real daemon, calls over its control socket. The pages are
//! Playwright's and Selenium's own test pages (tests/e2e/corpus, unmodified, with their NOTICE)
//! plus ours for the edge cases (tests/e2e/pages/hands-*.html). A DevTools connection to the
//! same tab is the oracle: it reads what the page recorded, and gives the one trusted click a
//! person would have made (the activation a beforeunload prompt needs).
//!
//! One browser for all cases (browser tests hold a machine-wide lock). The round trip of each
//! action is timed and the p50 table printed (and kept in target/test-artifacts/hands-p50.txt).
//!
//! Without Chromium the test says SKIPPED loudly and passes, except under CI=true.

use crate::daemon::control::raw_request;
use crate::support::cdp::{Browser, Page};
use crate::support::chromium::*;
use crate::support::common::*;
use crate::support::site::SiteServer;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// A failed call: the code a script branches on (the extension's own code when the daemon
/// wraps it as TOOL_ERROR) and the message.
#[derive(Debug)]
struct Failure {
    code: String,
    message: String,
}

struct Hands {
    d: TestDaemon,
    b: Browser,
    page: Page,
    tab: String,
    origin: String,
    /// Round trips per tool, for the p50 table.
    times: BTreeMap<String, Vec<Duration>>,
}

impl Hands {
    /// One call over the control socket, timed.
    fn try_call(&mut self, tool: &str, args: Value) -> Result<Value, Failure> {
        let body = json!({"tool": tool, "tab": self.tab, "args": args, "retries": 0}).to_string();
        let request = format!(
            "POST /v1/call HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let start = Instant::now();
        let (status, text) = raw_request(&self.d, &request);
        let took = start.elapsed();
        let v: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{tool}: not JSON ({e}), status {status}: {text}"));
        if status == 200 {
            self.times.entry(tool.to_owned()).or_default().push(took);
            return Ok(v["result"].clone());
        }
        let e = &v["error"];
        let code = e["details"]["toolCode"]
            .as_str()
            .or(e["code"].as_str())
            .unwrap_or_default()
            .to_owned();
        Err(Failure {
            code,
            message: e["message"].as_str().unwrap_or_default().to_owned(),
        })
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        match self.try_call(tool, args.clone()) {
            Ok(v) => v,
            Err(f) => panic!(
                "{tool} {args} failed: {f:?}\n--- daemon ---\n{}\n--- chromium ---\n{}",
                tail(&self.d.log(), 30),
                self.b.log_tail()
            ),
        }
    }

    /// A call that must fail with `code`; returns the message.
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
        let r = self.call(tool, args);
        all_text(&r)
    }

    fn snapshot(&mut self) -> String {
        self.text("browser_snapshot", json!({}))
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.origin)
    }

    /// browser_navigate, then waits (oracle) until the document is complete.
    fn goto(&mut self, path: &str) {
        let url = self.url(path);
        self.call("browser_navigate", json!({"url": url}));
        self.settle();
    }

    fn settle(&mut self) {
        self.b.wait_for(
            &self.page,
            "the page to finish loading",
            "document.readyState === 'complete'",
        );
    }

    fn eval(&mut self, expr: &str) -> Value {
        self.b.eval(&self.page, expr)
    }

    /// The ref of the snapshot line that contains `needle`.
    fn ref_of(&mut self, needle: &str) -> String {
        let snap = self.snapshot();
        find_ref(&snap, needle).unwrap_or_else(|| panic!("no line with {needle:?} in\n{snap}"))
    }
}

pub fn all_text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// "[button f12e3] Name" → "f12e3", for the first line containing `needle`.
pub fn find_ref(snapshot: &str, needle: &str) -> Option<String> {
    let line = snapshot.lines().find(|l| l.contains(needle))?;
    let inner = line.trim_start().strip_prefix('[')?.split(']').next()?;
    Some(inner.split(' ').nth(1)?.to_owned())
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[test]
fn hands_and_bounded_snapshots_on_pages_written_by_others() {
    let Some(exe) =
        chromium_or_skip("hands::hands_and_bounded_snapshots_on_pages_written_by_others")
    else {
        return;
    };
    let _lock = machine_wide_lock();
    let server = SiteServer::start();
    let d = daemon_in_scan_range(&[]);
    let profile = tempfile::tempdir().unwrap();
    let start_url = format!("{}/hands-names.html", server.origin());
    let mut b = Browser::launch(&exe, profile.path(), "about:blank");
    // Found by the scan, trusted once paired (issue 21).
    pair_browser(profile.path(), &d);
    let page = b.open(&start_url);
    let tab = wait_until(
        Duration::from_secs(60),
        "the tab with the built-ins",
        || {
            let tabs = d.ctl_json(&["tabs"]);
            tabs["tabs"].as_array()?.iter().find_map(|t| {
                (t["url"] == start_url.as_str() && tool_names(t).contains(&"browser_file_upload"))
                    .then(|| t["ref"].as_str().unwrap().to_owned())
            })
        },
    );
    let mut h = Hands {
        d,
        b,
        page,
        tab,
        origin: server.origin(),
        times: BTreeMap::new(),
    };
    let started = Instant::now();
    let step = |name: &str| eprintln!("hands {:>6.1?} {name}", started.elapsed());

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
    bounded(&mut h);
    step("bounded snapshot");
    help(&mut h);
    timings(&mut h);
    step("timings");
}

/// Names as assistive technology computes them (dom-accessibility-api).
fn names(h: &mut Hands) {
    let snap = h.snapshot();
    for line in [
        "[textbox e1] E-mail address",
        "[textbox e2] Wrapped label",
        "[textbox e3] Search the site",
        "[textbox e4] Billing name",
        "[textbox e5] Phone number",
        "[textbox e6] Your city",
        "[combobox e7] Country = \"Norway\" options: Norway | Peru | Japan",
        "[file-chooser e8] Résumé (no file chosen; accepts .pdf,.txt)",
        "[file-chooser e9] Choose Files (no file chosen; multiple)",
        "[button e10] Submit",
        "[button e11] Reset",
        "[button e12] Close dialog",
    ] {
        assert!(
            snap.lines().any(|l| l == line),
            "no line {line:?} in\n{snap}"
        );
    }
    assert_eq!(
        snap.matches("Wrapped label").count(),
        1,
        "a wrapping label's text is the control's name, not a line of its own:\n{snap}"
    );
    // Playwright's order form: every field named by its <label>, selects too.
    h.goto("playwright/evals/fill-form.html");
    let snap = h.snapshot();
    for line in [
        "[combobox e1] Product Type *",
        "[combobox e2] Color *",
        "[textbox e3] Full Name *",
    ] {
        assert!(
            snap.lines().any(|l| l.starts_with(line)),
            "no line starting {line:?} in\n{snap}"
        );
    }
}

fn frames(h: &mut Hands) {
    // Playwright's nested frames: each frame's text in place, indented under its <iframe>.
    h.goto("playwright/frames/nested-frames.html");
    let snap = wait_snapshot(h, "the nested frames", |s| {
        s.matches("Hi, I'm frame").count() == 3
    });
    let lines: Vec<&str> = snap.lines().collect();
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in\n{snap}"))
    };
    let (two, aframe) = (at("[iframe e1] 2frames"), at("] aframe"));
    assert!(two < aframe, "{snap}");
    let inner: Vec<&&str> = lines[two..aframe]
        .iter()
        .filter(|l| l.starts_with("    Hi, I'm frame"))
        .collect();
    assert_eq!(inner.len(), 2, "uno and dos, two levels down:\n{snap}");
    assert!(
        lines[aframe + 1].starts_with("  Hi, I'm frame"),
        "aframe one level down:\n{snap}"
    );
    // A frameset: frames are frames too.
    h.goto("playwright/frames/frameset.html");
    let snap = wait_snapshot(h, "the frameset", |s| s.contains("  Hi, I'm frame"));
    assert!(snap.contains("  Hi, I'm frame"), "{snap}");

    // Ours: same origin, cross origin with a frame nested in it, sandboxed, broken, removable.
    h.goto("hands-frames.html");
    h.b.wait_for(&h.page, "all frames", "window.frames.length === 5 && window.frames[1].frames.length === 1 && document.getElementById('gone').contentDocument?.readyState === 'complete'");
    let snap = wait_snapshot(h, "the nested cross-origin frame", |s| {
        s.contains("?nested") && s.contains("Sandboxed button")
    });
    assert!(
        snap.contains("] Broken http://127.0.0.1:9/ (not shown: the frame failed to load"),
        "an unreachable frame is named with why:\n{snap}"
    );
    let cross = find_ref(&snap, "Cross origin").unwrap();
    let lines: Vec<&str> = snap.lines().collect();
    let cross_at = lines
        .iter()
        .position(|l| l.contains("Cross origin"))
        .unwrap();
    let frame_button = lines[cross_at..]
        .iter()
        .find(|l| l.contains("Frame button"))
        .and_then(|l| find_ref(l, "Frame button"))
        .unwrap();
    assert!(
        frame_button.starts_with('f'),
        "refs inside a frame carry the frame: {frame_button} ({cross})"
    );
    let nested_field = lines[cross_at..]
        .iter()
        .skip_while(|l| !l.contains("Nested"))
        .find(|l| l.contains("Name in frame") && l.trim_start().starts_with('['))
        .and_then(|l| find_ref(l, "Name in frame"))
        .unwrap_or_else(|| panic!("a field in the nested frame:\n{snap}"));
    let all_refs: Vec<String> = snap
        .lines()
        .filter_map(|l| find_ref(l, "["))
        .filter(|r| r.contains('e'))
        .collect();
    let unique: std::collections::HashSet<&String> = all_refs.iter().collect();
    assert_eq!(
        unique.len(),
        all_refs.len(),
        "refs are unique across frames: {all_refs:?}"
    );

    // Actions by ref inside the cross-origin frame and in the frame nested in it.
    let out = h.text("browser_click", json!({"ref": frame_button}));
    assert!(out.contains("Clicked button \"Frame button\""), "{out}");
    h.b.wait_for(
        &h.page,
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
    // A confirm() in the cross-origin frame: answered at once, reported, and the page saw it.
    let ask = lines[cross_at..]
        .iter()
        .find_map(|l| find_ref(l, "Ask in frame"))
        .unwrap();
    let started = Instant::now();
    let out = h.text("browser_click", json!({"ref": ask}));
    assert!(started.elapsed() < Duration::from_secs(10), "never hangs");
    assert!(
        out.contains("confirm \"Really, in the frame?\" → dismissed by the default dialog policy"),
        "{out}"
    );
    let out = h.text("browser_click", json!({"ref": ask, "dialog": "accept"}));
    assert!(
        out.contains("→ accepted by this call's dialog policy"),
        "{out}"
    );
    let snap = h.snapshot();
    assert!(snap.contains("  yes"), "the page got true:\n{snap}");

    // A frame whose site the person turned off in the extension: named with why, refs refused.
    let other_site = h.origin.replace("127.0.0.1", "localhost");
    let options = h.b.open(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/options.html"
    ));
    let set_sites = |b: &mut Browser, sites: Value| {
        b.eval(
            &options,
            &format!("chrome.storage.local.set({{sites: {sites}}}).then(() => true)"),
        )
    };
    set_sites(&mut h.b, json!({ other_site.clone(): {"mode": "off"} }));
    let snap = wait_snapshot(h, "the turned-off frame", |s| s.contains("turned off"));
    assert!(
        snap.contains(&format!(
            "] Cross origin {other_site}/hands-frame-child.html?cross&nest=1 (not shown: browser-mcp is turned off for {other_site})"
        )),
        "{snap}"
    );
    assert!(!snap.contains("?nested"), "nor what is inside it: {snap}");
    let msg = h.refused(
        "browser_click",
        json!({"ref": frame_button}),
        "SITE_DISABLED",
    );
    assert!(msg.contains("turned off"), "{msg}");
    set_sites(&mut h.b, json!({}));
    let snap = wait_snapshot(h, "the frame back", |s| s.contains("?nested"));

    // Element bounds in top-level viewport pixels, for a ref in a frame (what an element
    // screenshot crops to): frames.js from an extension page, against the oracle's geometry.
    let same_button = {
        let lines: Vec<&str> = snap.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.contains("Same origin"))
            .unwrap();
        lines[at..]
            .iter()
            .find_map(|l| find_ref(l, "Frame button"))
            .unwrap()
    };
    let tab_id: i64 = h.tab.split(':').nth(1).unwrap().parse().unwrap();
    let got = h.b.eval(
        &options,
        &format!(
            "import('/worker/frames.js').then((m) => m.bounds({tab_id}, {{ref: '{same_button}'}}))"
        ),
    );
    let want = h.eval("(() => { const f = document.getElementById('same'); const r = f.getBoundingClientRect(); const b = f.contentDocument.getElementById('b').getBoundingClientRect(); return [r.x + f.clientLeft + b.x, r.y + f.clientTop + b.y, b.width, b.height]; })()");
    for (i, key) in ["x", "y", "width", "height"].iter().enumerate() {
        let (g, w) = (got[key].as_f64().unwrap(), want[i].as_f64().unwrap());
        assert!((g - w).abs() < 0.5, "bounds.{key}: {g} vs {w} ({got})");
    }
    assert!(got["devicePixelRatio"].as_f64().unwrap() > 0.0, "{got}");
    let _ = h.b.try_eval(&options, "window.close()");
    h.b.send(Some(&h.page.session), "Page.bringToFront", json!({}));

    // A frame removed from the page: its refs are refused with a typed error.
    let gone_button = {
        let at = lines.iter().position(|l| l.contains("Soon gone")).unwrap();
        lines[at..]
            .iter()
            .find_map(|l| find_ref(l, "Frame button"))
            .unwrap()
    };
    h.call("browser_click", json!({"selector": "#remove"}));
    let msg = h.refused(
        "browser_click",
        json!({"ref": gone_button}),
        "ELEMENT_NOT_FOUND",
    );
    assert!(msg.contains("take a new browser_snapshot"), "{msg}");
    // Not a ref at all.
    h.refused("browser_click", json!({"ref": "x12"}), "INVALID_ARGUMENTS");
    // A ref from the page before a navigation.
    let top = find_ref(&snap, "Top button").unwrap();
    h.goto("hands-names.html");
    let msg = h.refused("browser_click", json!({"ref": top}), "ELEMENT_NOT_FOUND");
    assert!(msg.contains("another document"), "{msg}");
}

/// Snapshots until `ready` holds (frames load on their own time).
fn wait_snapshot(h: &mut Hands, what: &str, ready: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let snap = h.snapshot();
        if ready(&snap) {
            return snap;
        }
        if start.elapsed() > Duration::from_secs(30) {
            panic!("timed out waiting for {what}:\n{snap}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn dialogs(h: &mut Hands) {
    // Selenium's alerts page: every kind, answered at once, reported, seen by the page.
    h.goto("selenium/alerts.html");
    let out = h.text("browser_click", json!({"selector": "#alert"}));
    assert!(out.contains("Dialog: alert \"cheese\" → closed"), "{out}");
    let out = h.text("browser_click", json!({"selector": "#prompt"}));
    assert!(
        out.contains("prompt \"Enter something\" (default \"\") → dismissed by the default dialog policy (dismiss)"),
        "{out}"
    );
    assert_eq!(h.eval("document.getElementById('text').innerText"), "null");
    let out = h.text(
        "browser_click",
        json!({"selector": "#prompt-with-default", "dialog": "accept"}),
    );
    assert!(
        out.contains("accepted with \"This is a default value\" by this call's dialog policy"),
        "{out}"
    );
    assert_eq!(
        h.eval("document.getElementById('text').innerText"),
        "This is a default value"
    );
    // An armed answer takes the next dialog only.
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
    h.refused(
        "browser_handle_dialog",
        json!({"accept": "yes"}),
        "INVALID_ARGUMENTS",
    );
    h.refused(
        "browser_click",
        json!({"selector": "#alert", "dialog": "maybe"}),
        "INVALID_ARGUMENTS",
    );
    // A dismissed confirm keeps the page; an accepted one follows the link.
    h.call("browser_click", json!({"selector": "#confirm"}));
    assert!(h
        .eval("location.pathname")
        .as_str()
        .unwrap()
        .ends_with("alerts.html"));
    let out = h.text(
        "browser_click",
        json!({"selector": "#confirm", "dialog": "accept"}),
    );
    assert!(
        out.contains("confirm \"Are you sure?\" → accepted"),
        "{out}"
    );
    h.b.wait_for(
        &h.page,
        "the link to be followed",
        "location.pathname.endsWith('simpleTest.html')",
    );
    // A page that alerts while it loads, reached by a click: the alert is answered too.
    h.goto("selenium/alerts.html");
    h.call(
        "browser_click",
        json!({"selector": "#open-page-with-onload-alert"}),
    );
    h.b.wait_for(
        &h.page,
        "the page with the onload alert",
        "location.pathname.endsWith('pageWithOnLoad.html') && document.readyState === 'complete'",
    );
    let snap = h.snapshot();
    assert!(
        snap.contains("Page with onload event handler")
            && snap.contains("Dialog: alert \"onload\" → closed"),
        "the load-time alert is reported with the next result:\n{snap}"
    );

    // Playwright's beforeunload page, after a person's (trusted) click gave it the activation a
    // "Leave site?" prompt needs: navigating away still never stops at it.
    h.goto("playwright/beforeunload.html");
    trusted_click(h, 20.0, 20.0);
    let started = Instant::now();
    h.goto("playwright/empty.html");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "navigating away from a beforeunload page took {:?}",
        started.elapsed()
    );
    h.goto("playwright/beforeunload.html");
    trusted_click(h, 20.0, 20.0);
    h.call("browser_reload", json!({}));
    let snap = h.snapshot();
    assert!(snap.contains("beforeunload demo."), "{snap}");
}

/// A click as a person makes it (DevTools input is trusted): the oracle's, not the agent's.
fn trusted_click(h: &mut Hands, x: f64, y: f64) {
    for kind in ["mousePressed", "mouseReleased"] {
        h.b.send(
            Some(&h.page.session),
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
        );
    }
    h.b.wait_for(
        &h.page,
        "user activation",
        "navigator.userActivation.hasBeenActive",
    );
}

fn uploads(h: &mut Hands) {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "first file\n").unwrap();
    let data = dir.path().join("data.csv");
    std::fs::write(&data, "a,b\n1,2\n").unwrap();
    let notes = notes.to_str().unwrap();
    let data = data.to_str().unwrap();

    // Playwright's upload form: a path the daemon reads, the events the page listens for, and
    // the form really sends the file.
    h.goto("playwright/input/fileupload.html");
    h.eval("window.seen = []; const i = document.querySelector('input[type=file]'); i.addEventListener('input', (e) => seen.push('input:' + e.bubbles)); i.addEventListener('change', (e) => seen.push('change:' + e.bubbles)); true");
    let file_ref = h.ref_of("[file-chooser");
    let out = h.text(
        "browser_file_upload",
        json!({"ref": file_ref, "paths": [notes]}),
    );
    assert!(out.contains("Set notes.txt (11 bytes)"), "{out}");
    assert_eq!(h.eval("seen"), json!(["input:true", "change:true"]));
    let snap = h.snapshot();
    assert!(
        snap.contains(&format!(
            "[file-chooser {file_ref}] Choose File (files: notes.txt)"
        )),
        "{snap}"
    );
    h.call("browser_click", json!({"selector": "input[type=submit]"}));
    h.b.wait_for(
        &h.page,
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

    // Several files (paths and inline) on a multiple input.
    h.goto("playwright/input/fileupload-multi.html");
    let out = h.text(
        "browser_file_upload",
        json!({"selector": "input[type=file]", "paths": [notes, data],
               "files": [{"name": "inline.json", "mimeType": "application/json", "data": "eyJvayI6IHRydWV9"}]}),
    );
    assert!(out.contains("inline.json"), "{out}");
    assert_eq!(
        h.eval("[...document.querySelector('input').files].map((f) => `${f.name}|${f.type}|${f.size}`)"),
        json!(["inline.json|application/json|12", "notes.txt|text/plain|11", "data.csv|text/csv|8"])
    );

    // Refusals, each typed and before anything is set.
    h.goto("playwright/input/fileupload.html");
    let missing = dir.path().join("missing.txt");
    let msg = h.refused(
        "browser_file_upload",
        json!({"selector": "input[type=file]", "paths": [missing]}),
        "INVALID_ARGUMENTS",
    );
    assert!(msg.contains("cannot read"), "{msg}");
    h.refused(
        "browser_file_upload",
        json!({"selector": "input[type=file]", "paths": [dir.path()]}),
        "INVALID_ARGUMENTS",
    );
    let msg = h.refused(
        "browser_file_upload",
        json!({"selector": "input[type=file]", "paths": [notes, data]}),
        "INVALID_ARGUMENTS",
    );
    assert!(msg.contains("takes one file, not 2"), "{msg}");
    h.refused(
        "browser_file_upload",
        json!({"selector": "input[type=submit]", "paths": [notes]}),
        "ELEMENT_NOT_INTERACTABLE",
    );
    h.goto("hands-names.html");
    let msg = h.refused(
        "browser_file_upload",
        json!({"selector": "#resume", "files": [{"name": "photo.png", "mimeType": "image/png", "data": "AAAA"}]}),
        "INVALID_ARGUMENTS",
    );
    assert!(
        msg.contains("accepts .pdf,.txt; photo.png (image/png) does not match"),
        "{msg}"
    );
    assert_eq!(h.eval("document.getElementById('resume').files.length"), 0);
    h.call(
        "browser_file_upload",
        json!({"selector": "#resume", "paths": [notes]}),
    );
}

fn drags(h: &mut Hands) {
    // Playwright's HTML5 drag and drop: the draggable paragraph and the drop zone have refs.
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
    // A drag onto nothing, or across frames, is refused.
    h.refused(
        "browser_drag",
        json!({"startRef": source, "endRef": "e999"}),
        "ELEMENT_NOT_FOUND",
    );
    h.refused(
        "browser_drag",
        json!({"startRef": source}),
        "INVALID_ARGUMENTS",
    );
    h.refused(
        "browser_drag",
        json!({"startRef": source, "endRef": "f99e1"}),
        "INVALID_ARGUMENTS",
    );
    // Playwright's hand-made dragging (mouse events only): the source gets a ref by its cursor.
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
    // Selenium's mouse-over page: onmouseover turns the box red.
    h.goto("selenium/mouseOver.html");
    h.call("browser_hover", json!({"selector": "#redbox"}));
    assert_eq!(
        h.eval("document.getElementById('redbox').style.backgroundColor"),
        "red"
    );
    // Playwright's keyboard page logs every event with its modifiers.
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
    assert_eq!(
        h.eval("(() => { const t = document.querySelector('textarea'); return [t.selectionStart, t.selectionEnd]; })()"),
        json!([0, 2])
    );
    h.call("browser_press_key", json!({"key": "Backspace"}));
    assert_eq!(h.eval("document.querySelector('textarea').value"), "");
    h.refused(
        "browser_press_key",
        json!({"key": "Hyper+a"}),
        "INVALID_ARGUMENTS",
    );
    // Selenium's key logger: focus by ref, then the events in order.
    h.goto("selenium/key_logger.html");
    let field = h.ref_of("[textbox");
    h.call("browser_press_key", json!({"ref": field, "key": "x"}));
    let snap = h.snapshot();
    assert!(snap.contains("focus keydown keypress keyup"), "{snap}");
    // Playwright's select page: by visible label, with the events it listens for.
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
    h.b.wait_for(&h.page, "the page's pushState", "location.hash === '#1'");
    let out = h.text("browser_navigate_back", json!({}));
    assert!(out.contains("historyapi.html"), "same document: {out}");
    assert_eq!(h.eval("location.hash"), "");
    let out = h.text("browser_navigate_back", json!({}));
    assert!(out.contains("empty.html"), "{out}");
    let out = h.text("browser_navigate_forward", json!({}));
    assert!(out.contains("historyapi.html"), "{out}");
    let out = h.text("browser_navigate_forward", json!({}));
    assert!(out.contains("historyapi.html#1"), "{out}");
    let msg = h.refused("browser_navigate_forward", json!({}), "NAVIGATION_FAILED");
    assert!(msg.contains("no later page"), "{msg}");
    let out = h.text("browser_reload", json!({}));
    assert!(out.contains("Reloaded"), "{out}");
}

fn bounded(h: &mut Hands) {
    h.goto("hands-big.html");
    assert_eq!(h.eval("document.querySelectorAll('#list *').length"), 50000);
    let started = Instant::now();
    let r = h.call("browser_snapshot", json!({}));
    let took = started.elapsed();
    let snap = all_text(&r);
    let _ = std::io::stderr().write_all(
        format!(
            "hands: snapshot of 50,000 elements: {} characters in {took:?}\n",
            snap.len()
        )
        .as_bytes(),
    );
    let marker = snap.lines().last().unwrap();
    assert!(
        snap.chars().count() <= 20_000,
        "the whole text, marker included, within the default budget: {}",
        snap.chars().count()
    );
    assert!(marker.starts_with("… truncated: "), "{marker}");
    assert!(
        marker.contains("more elements not shown (budget 20000 characters)"),
        "{marker}"
    );
    assert_eq!(r["structuredContent"]["truncated"], true);
    let more = r["structuredContent"]["moreElements"].as_u64().unwrap();
    let shown = r["structuredContent"]["elements"].as_array().unwrap().len() as u64;
    assert_eq!(
        shown + more,
        30_001,
        "every interactive element is shown or counted"
    );
    // The marker names the late form as a scope; asking for it shows what was cut.
    let form = marker
        .split("[form ")
        .nth(1)
        .and_then(|s| s.split(']').next())
        .unwrap_or_else(|| panic!("a form to scope to in {marker}"))
        .to_owned();
    let scoped = h.text("browser_snapshot", json!({"ref": form}));
    assert!(
        scoped.contains("[textbox") && scoped.contains("Late field"),
        "{scoped}"
    );
    assert!(!scoped.contains("truncated"), "{scoped}");
    let scoped = h.text(
        "browser_snapshot",
        json!({"selector": "#list > div:nth-child(9000)"}),
    );
    assert!(
        scoped.contains("buy 8999") && !scoped.contains("buy 8998"),
        "{scoped}"
    );
    let small = h.text(
        "browser_snapshot",
        json!({"interactiveOnly": true, "maxChars": 2000}),
    );
    assert!(small.chars().count() <= 2000, "{}", small.len());
    assert!(!small.contains("Item 3"), "interactive only: {small}");
    h.refused(
        "browser_snapshot",
        json!({"maxChars": 10}),
        "INVALID_ARGUMENTS",
    );
}

/// `browserctl call TOOL --help` shows the new tools' parameters.
fn help(h: &mut Hands) {
    for (tool, params) in [
        ("browser_file_upload", &["--paths", "--files", "--ref"][..]),
        ("browser_drag", &["--startRef", "--endRef"][..]),
        ("browser_handle_dialog", &["--accept", "--promptText"][..]),
        (
            "browser_snapshot",
            &["--maxChars", "--interactiveOnly", "--selector"][..],
        ),
    ] {
        let out = h.d.ctl(&["call", tool, "--help", "--tab", &h.tab]);
        let text = stdout(&out);
        for p in params {
            assert!(text.contains(p), "{tool} --help lacks {p}:\n{text}");
        }
    }
}

/// Each action a dozen times on one small page; the p50 of the round trips (control socket →
/// daemon → extension → page → back).
fn timings(h: &mut Hands) {
    h.times.clear();
    h.goto("hands-frames.html");
    let _ = wait_snapshot(h, "the frames", |s| s.contains("?nested"));
    let snap = h.snapshot();
    let field = find_ref(&snap, "[textbox f").unwrap();
    let lines: Vec<&str> = snap.lines().collect();
    let frame_field_at = lines
        .iter()
        .position(|l| l.contains(&format!("[textbox {field}]")))
        .unwrap();
    let frame_button = lines[frame_field_at..]
        .iter()
        .find_map(|l| find_ref(l, "Frame button"))
        .unwrap();
    let top = find_ref(&snap, "Top button").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p50.txt");
    std::fs::write(&file, "x").unwrap();
    for _ in 0..12 {
        h.call("browser_click", json!({"ref": top}));
        h.call("browser_click", json!({"ref": frame_button}));
        h.call("browser_hover", json!({"ref": top}));
        h.call("browser_type", json!({"ref": field, "text": "typing"}));
        h.call("browser_press_key", json!({"key": "Tab"}));
        h.call("browser_snapshot", json!({}));
    }
    h.goto("hands-names.html");
    for _ in 0..12 {
        h.call(
            "browser_select",
            json!({"selector": "#country", "value": "Peru"}),
        );
        h.call(
            "browser_file_upload",
            json!({"selector": "#resume", "paths": [file]}),
        );
    }
    h.goto("playwright/drag-n-drop.html");
    for _ in 0..12 {
        h.call(
            "browser_drag",
            json!({"startSelector": "#source", "endSelector": "#target"}),
        );
    }
    // The frame-button clicks count under their own name.
    let mut table = String::from("hands: p50 per action (control socket round trip, ms)\n");
    for (tool, times) in &h.times {
        let mut ms: Vec<f64> = times.iter().map(|t| t.as_secs_f64() * 1000.0).collect();
        ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
        table += &format!(
            "  {tool:<22} p50 {:>7.1}  min {:>7.1}  max {:>7.1}  n={}\n",
            ms[ms.len() / 2],
            ms[0],
            ms[ms.len() - 1],
            ms.len()
        );
    }
    let _ = std::io::stderr().write_all(table.as_bytes());
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("test-artifacts");
    let _ = std::fs::create_dir_all(&artifacts);
    let _ = std::fs::write(artifacts.join("hands-p50.txt"), table);
}
