//! The upload prompt names the files, never their bytes (issue 58, item 9): an agent's
//! `browser_file_upload` of a 2 MiB file on a site that asks shows the person the file's name,
//! size and type, in the popup (Chromium and Firefox) and in Chromium's notification, and the
//! popup's state stays small; the person allows it and the page gets the whole file.

use super::person::*;
use base64::Engine;
use serde_json::json;

const SIZE: usize = 2 << 20;

fn the_prompt_names_the_file(test: &str, family: &str) {
    let Some(mut s) = Scene::fresh(test, family) else {
        return;
    };
    let page = format!("{}/playwright/input/fileupload.html", s.site.origin());
    let at = s.person.open(&page);
    let (tab, id) = s.tab_at(&page);
    let popup = s.person.popup(id);
    s.person.set(popup, json!({"consentTimeoutMs": 30000}));
    // What Chromium's notification says, as the worker makes it.
    let notes = s.person.chromium().map(|b| {
        let worker = b.worker();
        b.eval(
            &worker,
            "(() => { globalThis.notesSeen = []; const make = chrome.notifications.create.bind(chrome.notifications); \
             chrome.notifications.create = (id, options) => { notesSeen.push(options); return make(id, options); }; return true; })()",
        );
        worker
    });

    let bytes: Vec<u8> = (0..SIZE).map(|i| (i * 7 % 251) as u8).collect();
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let upload = spawn_call(
        &s.d,
        &tab,
        "browser_file_upload",
        json!({"selector": "input[type=file]", "files": [{"name": "holiday.zip", "mimeType": "application/zip", "data": data}]}),
    );
    let says = s.person.prompt(popup, "browser_file_upload");
    for fact in ["holiday.zip", "2.0 MiB", "application/zip"] {
        assert!(says.contains(fact), "the prompt says {fact:?}: {says}");
    }
    assert!(
        says.len() < 600 && !says.contains(&data[..40]),
        "the prompt shows the file, not its bytes ({} characters): {}",
        says.len(),
        &says[..says.len().min(600)]
    );
    // What the popup hears from the worker about the prompt, every time it renders.
    let state = s.person.eval(
        popup,
        &format!("chrome.runtime.sendMessage({{ type: 'face:state', tabId: {id} }}).then((x) => JSON.stringify(x).length)"),
    );
    assert!(
        state.as_u64().unwrap() < 100_000,
        "the popup's state carries the bytes: {state} characters"
    );
    if let Some(worker) = &notes {
        let b = s.person.chromium().unwrap();
        let seen = b.eval(worker, "notesSeen");
        let note = format!("{} {}", seen[0]["title"], seen[0]["message"]);
        for fact in ["holiday.zip", "2.0 MiB"] {
            assert!(
                note.contains(fact),
                "the notification says {fact:?}: {note}"
            );
        }
        assert!(!note.contains(&data[..40]), "{note}");
    }

    s.person.answer(popup, "Allow once");
    let done = upload
        .join()
        .unwrap()
        .unwrap_or_else(|f| panic!("the upload: {} {}\n{}", f.code, f.message, s.logs()));
    assert!(text_of(&done).contains("holiday.zip"), "{done}");
    assert_eq!(
        s.person.eval(
            at,
            "document.querySelector('input[type=file]').files[0].size"
        ),
        json!(SIZE),
        "the page got the whole file"
    );
}

#[test]
fn the_prompt_names_the_file_in_chromium() {
    the_prompt_names_the_file(
        "security::upload_prompt::the_prompt_names_the_file_in_chromium",
        "chromium",
    );
}

#[test]
fn the_prompt_names_the_file_in_firefox() {
    the_prompt_names_the_file(
        "security::upload_prompt::the_prompt_names_the_file_in_firefox",
        "firefox",
    );
}
