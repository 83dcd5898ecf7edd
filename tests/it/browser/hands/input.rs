//! Input: dialogs of every kind, file uploads, drag and drop, hover, keys and selects.

use super::*;
use serde_json::json;
use std::time::{Duration, Instant};

pub(super) fn dialogs(h: &mut Hands) {
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
    h.wait(
        "the link to be followed",
        "location.pathname.endsWith('simpleTest.html')",
    );
    // A page that alerts while it loads, reached by a click: the alert is answered too.
    h.goto("selenium/alerts.html");
    h.call(
        "browser_click",
        json!({"selector": "#open-page-with-onload-alert"}),
    );
    h.wait(
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
    // "Leave site?" prompt needs: navigating away or reloading never stops at it.
    for leave in ["navigate", "reload"] {
        h.goto("playwright/beforeunload.html");
        h.o.person_clicks(20.0, 20.0);
        h.wait("user activation", "navigator.userActivation.hasBeenActive");
        leaves_without_asking(h, leave);
    }
    let snap = h.snapshot();
    assert!(snap.contains("beforeunload demo."), "{snap}");

    // The window's handler, which no addEventListener shows: the body's attribute, and the one
    // the page sets in the person's click, in the attribute's place. The page reads back its own.
    for leave in ["navigate", "reload"] {
        h.goto("hands-leave.html");
        h.o.person_clicks(20.0, 20.0);
        h.wait(
            "the page's own handler",
            "typeof window.pageHandler === 'function'",
        );
        assert_eq!(
            h.eval("window.onbeforeunload === window.pageHandler"),
            json!(true)
        );
        leaves_without_asking(h, leave);
    }

    // A listener the page world could not wrap (added through a child frame's addEventListener,
    // after the tab was driven): the guard listener that world adds once told stops it.
    for leave in ["navigate", "reload"] {
        h.goto("hands-leave-frame.html");
        h.o.person_clicks(20.0, 20.0);
        h.wait("the child frame's listener", "window.listening === true");
        leaves_without_asking(h, leave);
    }
}

/// The agent leaves the page (`navigate` to another, or `reload` it) without stopping at its
/// "Leave site?" prompt, which would hold the call until its deadline.
fn leaves_without_asking(h: &mut Hands, leave: &str) {
    let page = h.eval("location.pathname");
    let started = Instant::now();
    if leave == "navigate" {
        h.goto("playwright/empty.html");
    } else {
        h.call("browser_reload", json!({}));
        h.settle();
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{leave} away from {page} took {:?}",
        started.elapsed()
    );
}

pub(super) fn uploads(h: &mut Hands) {
    let dir = upload_dir(h);
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "first file\n").unwrap();
    let data = dir.path().join("data.csv");
    std::fs::write(&data, "a,b\n1,2\n").unwrap();
    let notes = notes.to_str().unwrap();
    let data = data.to_str().unwrap();

    // Playwright's upload form: a path the daemon reads, the events the page listens for, and
    // the form really sends the file.
    h.goto("playwright/input/fileupload.html");
    h.eval("(() => { window.seen = []; const i = document.querySelector('input[type=file]'); i.addEventListener('input', (e) => seen.push('input:' + e.bubbles)); i.addEventListener('change', (e) => seen.push('change:' + e.bubbles)); return true; })()");
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

    // Refusals, each typed and before anything is set. A file outside the upload roots (issue
    // 31), as a page that asks an agent for a key would want, is never read.
    h.goto("playwright/input/fileupload.html");
    let elsewhere = tempfile::Builder::new()
        .prefix("secrets")
        .tempdir()
        .unwrap();
    let key = elsewhere.path().join("id_ed25519");
    std::fs::write(&key, "PRIVATE KEY").unwrap();
    let msg = h.refused(
        "browser_file_upload",
        json!({"selector": "input[type=file]", "paths": [key]}),
        "INVALID_ARGUMENTS",
    );
    assert!(msg.contains("not inside an upload root"), "{msg}");
    assert_eq!(
        h.eval("document.querySelector('input[type=file]').files.length"),
        0
    );
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

pub(super) fn drags(h: &mut Hands) {
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

pub(super) fn hover_keys_select(h: &mut Hands) {
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
