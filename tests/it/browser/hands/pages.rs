//! Whole pages: accessible names, history, waits, screenshots, evaluate, the bounded snapshot
//! of a huge page, `--help`, and the p50 of every action.

use super::*;
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// Names as assistive technology computes them (dom-accessibility-api).
pub(super) fn names(h: &mut Hands) {
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
        "[clickable e13]",
        "[combobox e14] Size = \"Medium\"",
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
    assert!(
        !snap.contains("Nothing found") && !snap.contains("width"),
        "the text of a child not rendered (display: none, <style>) is no name:\n{snap}"
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

pub(super) fn history(h: &mut Hands) {
    h.goto("playwright/empty.html");
    h.goto("playwright/historyapi.html");
    h.wait("the page's pushState", "location.hash === '#1'");
    let out = h.text("browser_navigate_back", json!({}));
    assert!(out.contains("historyapi.html"), "same document: {out}");
    assert_eq!(h.eval("location.hash"), "");
    let out = h.text("browser_navigate_back", json!({}));
    assert!(out.contains("empty.html"), "{out}");
    let out = h.text("browser_navigate_forward", json!({}));
    assert!(out.contains("historyapi.html"), "{out}");
    if h.firefox() {
        // Unlike Chromium, Firefox keeps no `Cache-Control: no-store` page (what the test
        // server sends) in its back/forward cache: going forward loads historyapi.html again,
        // its own pushState makes a new #1 entry, and that drops the later one.
        h.wait("the page's pushState, again", "location.hash === '#1'");
    } else {
        let out = h.text("browser_navigate_forward", json!({}));
        assert!(out.contains("historyapi.html#1"), "{out}");
    }
    let msg = h.refused("browser_navigate_forward", json!({}), "NAVIGATION_FAILED");
    assert!(msg.contains("no later page"), "{msg}");
    let out = h.text("browser_reload", json!({}));
    assert!(out.contains("Reloaded"), "{out}");
    // A refused connection: the browser commits its own error page, the call says why.
    let msg = h.refused(
        "browser_navigate",
        json!({"url": "http://127.0.0.1:9/nothing"}),
        "NAVIGATION_FAILED",
    );
    assert!(msg.contains("127.0.0.1:9"), "{msg}");
    // A snapshot of that error page says so in a person's words, with the page's address, not
    // Chromium's "Frame with ID 0 is showing error page" (issue 59).
    if !h.firefox() {
        let said = match h.try_call("browser_snapshot", json!({})) {
            Ok(v) => all_text(&v),
            Err(f) => format!("{}: {}", f.code, f.message),
        };
        assert!(
            !said.contains("Frame with ID")
                && said.contains("error page")
                && said.contains("127.0.0.1:9"),
            "{said}"
        );
    }
}

/// browser_wait_for, browser_screenshot, and browser_evaluate once the person enables it.
pub(super) fn waits_screenshot_evaluate(h: &mut Hands) {
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
    let msg = h.refused(
        "browser_evaluate",
        json!({"expression": "1 + 1"}),
        "TOOL_NOT_FOUND",
    );
    assert!(msg.contains("browser_evaluate is disabled"), "{msg}");
    h.o.eval_in_extension("chrome.storage.local.set({ evaluateEnabled: true }).then(() => true)");
    h.o.close_extension_page();
    h.wait_for_tool("browser_evaluate");
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
    h.o.eval_in_extension("chrome.storage.local.set({ evaluateEnabled: false }).then(() => true)");
    h.o.close_extension_page();
}

pub(super) fn bounded(h: &mut Hands) {
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
pub(super) fn help(h: &mut Hands) {
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
pub(super) fn timings(h: &mut Hands) {
    h.times.clear();
    // The first action in a frame the agent has only looked at, on five loads of the page: the
    // load brings the DOM tools into the top frame alone (kit-ahead.js), so the frame gets the
    // reading part from the snapshot, and the acting part after its answer. Timed apart after
    // an agent's pause, then a click at once and one after the same pause: on this machine any
    // call after 300 ms of quiet takes 10-15 ms longer than one made right after another, so
    // "paused", not "next", is the one to hold "first" against.
    let mut refs = None;
    for _ in 0..5 {
        h.goto("hands-frames.html");
        let _ = h.wait_snapshot("the frames", |s| s.contains("?nested"));
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
        std::thread::sleep(Duration::from_millis(300));
        timed_as(
            h,
            "browser_click (frame, first)",
            json!({"ref": frame_button}),
        );
        timed_as(
            h,
            "browser_click (frame, next)",
            json!({"ref": frame_button}),
        );
        std::thread::sleep(Duration::from_millis(300));
        timed_as(
            h,
            "browser_click (frame, paused)",
            json!({"ref": frame_button}),
        );
        refs = Some((field, frame_button, top));
    }
    let (field, frame_button, top) = refs.unwrap();
    let dir = upload_dir(h);
    let file = dir.path().join("p50.txt");
    std::fs::write(&file, "x").unwrap();
    for _ in 0..12 {
        h.call("browser_click", json!({"ref": top}));
        timed_as(h, "browser_click (frame)", json!({"ref": frame_button}));
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
    let browser = if h.firefox() { "firefox" } else { "chromium" };
    print_p50(h, &format!("hands-p50-{browser}.txt"));
}

/// A browser_click whose round trip counts under `key`, not the tool's name.
fn timed_as(h: &mut Hands, key: &str, args: Value) {
    h.call("browser_click", args);
    let took = h.times.get_mut("browser_click").unwrap().pop().unwrap();
    h.times.entry(key.to_owned()).or_default().push(took);
}

/// The p50 table of every tool called so far, on stderr and in target/test-artifacts/`file`.
pub(super) fn print_p50(h: &Hands, file: &str) {
    let mut table = format!(
        "hands: p50 per action in {} (round trip, ms)\n",
        if h.firefox() { "Firefox" } else { "Chromium" }
    );
    for (tool, times) in &h.times {
        let mut ms: Vec<f64> = times.iter().map(|t| t.as_secs_f64() * 1000.0).collect();
        ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
        table += &format!(
            "  {tool:<28} p50 {:>7.1}  min {:>7.1}  max {:>7.1}  n={}\n",
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
    let _ = std::fs::write(artifacts.join(file), table);
}
