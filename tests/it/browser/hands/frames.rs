//! Frames: nested, cross-origin, sandboxed, broken, removed, turned off; refs that carry
//! their frame; element bounds in top-level pixels.

use super::*;
use serde_json::json;
use std::time::{Duration, Instant};

pub(super) fn frames(h: &mut Hands) {
    // Playwright's nested frames: each frame's text in place, indented under its <iframe>.
    h.goto("playwright/frames/nested-frames.html");
    let snap = h.wait_snapshot("the nested frames", |s| {
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
        .filter(|l| frame_text_at(l, "    "))
        .collect();
    assert_eq!(inner.len(), 2, "uno and dos, two levels down:\n{snap}");
    assert!(
        frame_text_at(lines[aframe + 1], "  "),
        "aframe one level down:\n{snap}"
    );
    // An agent looks before it acts: once the snapshot has answered, the acting part follows into
    // each frame it read (worker/frames/frame-channel.js), in Firefox as in Chromium. The pages the
    // agent navigates get both parts ahead, but only in their top frame (kit-ahead.js).
    acting_part_follows_the_look(h, 4);
    // A frameset: frames are frames too.
    h.goto("playwright/frames/frameset.html");
    let snap = h.wait_snapshot("the frameset", |s| {
        s.lines().any(|l| frame_text_at(l, "  "))
    });
    assert!(snap.lines().any(|l| frame_text_at(l, "  ")), "{snap}");

    // Ours: same origin, cross origin with a frame nested in it, sandboxed, broken, removable.
    h.goto("hands-frames.html");
    h.wait("all frames", "window.frames.length === 5 && window.frames[1].frames.length === 1 && document.getElementById('gone').contentDocument?.readyState === 'complete'");
    let snap = h.wait_snapshot("the nested cross-origin frame", |s| {
        s.contains("?nested") && s.contains("Sandboxed button")
    });
    // Chromium reports the failed load; Firefox commits an error page into the frame, which no
    // extension may script, so the reason is that the frame cannot be reached.
    let why = if h.firefox() {
        "cannot reach frame"
    } else {
        "the frame failed to load"
    };
    assert!(
        snap.contains(&format!("] Broken http://127.0.0.1:9/ (not shown: {why}")),
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
    // A new document in a subframe of the driven tab asks while it loads, before any tool has
    // touched it: the manifest gives subframes no isolated world (issue 30), so while a tab is
    // driven the worker registers the dialog half for subframes at document_start.
    let renew = find_ref(&snap, "Renew the same-origin frame").unwrap();
    h.call("browser_click", json!({"ref": renew}));
    let started = Instant::now();
    let snap = h.wait_snapshot("the renewed frame's answer", |s| {
        s.contains("asked at load: no")
    });
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "never hangs:\n{snap}"
    );

    // A frame whose site the person turned off in the extension: named with why, refs refused.
    let other_site = h.origin.replace("127.0.0.1", "localhost");
    h.set_sites(json!({ other_site.clone(): {"mode": "off"} }));
    let snap = h.wait_snapshot("the turned-off frame", |s| s.contains("turned off"));
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
    h.set_sites(json!({}));
    let snap = h.wait_snapshot("the frame back", |s| s.contains("?nested"));

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
    let tab_id = h.browser_tab_id();
    let got = h.o.eval_in_extension(&format!(
        "import('/worker/frames/frames.js').then((m) => m.bounds({tab_id}, {{ref: '{same_button}'}}))"
    ));
    let want = h.eval("(() => { const f = document.getElementById('same'); const r = f.getBoundingClientRect(); const b = f.contentDocument.getElementById('b').getBoundingClientRect(); return [r.x + f.clientLeft + b.x, r.y + f.clientTop + b.y, b.width, b.height]; })()");
    for (i, key) in ["x", "y", "width", "height"].iter().enumerate() {
        let (g, w) = (got[key].as_f64().unwrap(), want[i].as_f64().unwrap());
        assert!((g - w).abs() < 0.5, "bounds.{key}: {g} vs {w} ({got})");
    }
    assert!(got["devicePixelRatio"].as_f64().unwrap() > 0.0, "{got}");
    h.o.close_extension_page();

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

/// Waits until each of the tab's `subframes` holds the DOM tools' acting part as well as the
/// reading part a snapshot put in: what the worker adds after a snapshot's answer, seen from
/// an extension page (the frames' isolated worlds are the extension's).
fn acting_part_follows_the_look(h: &mut Hands, subframes: usize) {
    let tab_id = h.browser_tab_id();
    let names = format!(
        "chrome.scripting.executeScript({{ target: {{ tabId: {tab_id}, allFrames: true }}, \
         func: () => (globalThis.browserMcpDom ? Object.keys(globalThis.browserMcpDom.tools).join(',') : '') }})\
         .then((rs) => rs.filter((r) => r.frameId !== 0).map((r) => r.result ?? ''))"
    );
    let start = Instant::now();
    loop {
        let got = h.o.eval_in_extension(&names);
        let frames: Vec<&str> = got
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let whole = |n: &&str| n.starts_with("snapshot,") && n.split(',').any(|t| t == "click");
        if frames.len() == subframes && frames.iter().all(whole) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the acting part did not follow the snapshot into the {subframes} subframes: {got}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    h.o.close_extension_page();
}

/// Whether `line` is frame.html's text at exactly the indentation `indent` (a frame's depth);
/// a short text in a box of its own carries a ref (`[text f8e1] Hi, I'm frame`).
fn frame_text_at(line: &str, indent: &str) -> bool {
    let Some(rest) = line.strip_prefix(indent) else {
        return false;
    };
    let text = match rest.strip_prefix("[text ") {
        Some(r) => r.split_once("] ").map_or("", |(_, t)| t),
        None => rest,
    };
    text.starts_with("Hi, I'm frame")
}
