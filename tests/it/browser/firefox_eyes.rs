//! The agent's eyes in headless Firefox ESR, on the pages tests/it/browser/eyes.rs uses in Chromium:
//! console (levels, call sites, uncaught errors, rejections, frames, filters, cursors),
//! network (statuses, failures, filters, request bodies), downloads (a file and a blob, waited
//! for, where they were saved), screenshots (viewport, element by ref and in a frame, JPEG,
//! full page), browser_tabs (list, open, select, close, memory freed) and the page events.
//! What Firefox reports differently is said where it is checked.
//!
//! Without Firefox the test says SKIPPED loudly and passes, except under CI=true.

use crate::browser::drives::{dead_port, find, image, list, png_size, text, DrivesTab};
use crate::support::chromium::*;
use crate::support::common::*;
use crate::support::firefox::*;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::{Duration, Instant};

struct Eyes {
    d: TestDaemon,
    ff: Firefox,
    tab: String,
    downloads: tempfile::TempDir,
    started: Instant,
}

impl DrivesTab for Eyes {
    fn daemon(&self) -> &TestDaemon {
        &self.d
    }

    fn tab(&self) -> &str {
        &self.tab
    }

    fn patience(&self) -> Duration {
        FIREFOX_WAIT
    }

    fn context(&self) -> String {
        let log = self.d.log();
        let lines: Vec<&str> = log.lines().collect();
        format!(
            "--- daemon ---\n{}\n--- firefox ---\n{}",
            lines[lines.len().saturating_sub(30)..].join("\n"),
            self.ff.log_tail()
        )
    }
}

impl Eyes {
    fn step(&self, name: &str) {
        eprintln!("firefox eyes {:>6.1?} {name}", self.started.elapsed());
    }
}

#[test]
fn console_network_downloads_screenshots_and_tabs_in_firefox() {
    let Some(exe) =
        firefox_or_skip("firefox_eyes::console_network_downloads_screenshots_and_tabs_in_firefox")
    else {
        return;
    };
    let _lock = machine_wide_lock();
    let pages = PageServer::pages();
    let d = daemon_in_scan_range(&[]);
    let downloads = tempfile::tempdir().unwrap();
    let options = Options {
        downloads: Some(downloads.path().to_path_buf()),
        ..Options::default()
    };
    let mut ff = Firefox::launch(&exe, &options);
    ff.pair(&d);
    let start = pages.url("eyes-console.html?early");
    ff.show(&start);
    let tab = wait_until(FIREFOX_WAIT, "the tab with the eyes", || {
        let tabs = d.ctl_json(&["tabs"]);
        tabs["tabs"].as_array()?.iter().find_map(|t| {
            (t["url"] == start.as_str() && tool_names(t).contains(&"browser_console_messages"))
                .then(|| t.clone())
        })
    });
    let names = tool_names(&tab);
    for t in [
        "browser_console_messages",
        "browser_network_requests",
        "browser_downloads",
        "browser_screenshot",
        "browser_tabs",
    ] {
        assert!(names.contains(&t), "{t} in {names:?}");
    }
    let eyes = Eyes {
        tab: tab["ref"].as_str().unwrap().to_owned(),
        d,
        ff,
        downloads,
        started: Instant::now(),
    };
    eyes.step("extension connected");
    console(&eyes, &pages);
    network(&eyes, &pages);
    downloads_(&eyes, &pages);
    screenshots(&eyes, &pages);
    tabs_and_memory(&eyes, &pages);
    eyes.step("done");
}

fn console(eyes: &Eyes, pages: &PageServer) {
    let since = eyes.last_seq();
    let page = pages.url("eyes-console.html");
    eyes.navigate(&page);
    let r = eyes.until("the frame's message too", || {
        let r = eyes.call("browser_console_messages", json!({}));
        find(list(&r, "messages"), "text", "from the frame")
            .is_some()
            .then_some(r)
    });
    let m = list(&r, "messages");
    let at = |needle: &str| {
        find(m, "text", needle).unwrap_or_else(|| panic!("no {needle:?} in {}", text(&r)))
    };
    for (needle, level) in [
        ("early debug 1", "debug"),
        ("early log {a: 1, b: [1, 2]}", "log"),
        ("early info", "info"),
        ("early warn", "warn"),
        // Firefox's Error.stack has no "Error: message" line; the capture adds it.
        ("early error Error: bad thing", "error"),
    ] {
        let msg = at(needle);
        assert_eq!(msg["level"], level, "{msg}");
        assert_eq!(msg["source"], "console", "{msg}");
        assert_eq!(msg["url"], page.as_str(), "the calling script: {msg}");
    }
    assert_eq!(at("early debug 1")["line"], 4, "the line that logged it");
    // Worded as in Chromium, though Firefox's ErrorEvent says "TypeError: …".
    let thrown = at("thrown at load");
    assert_eq!(thrown["source"], "exception", "{thrown}");
    assert_eq!(thrown["text"], "Uncaught TypeError: thrown at load");
    assert_eq!(thrown["line"], 12, "{thrown}");
    let rejected = at("nobody caught me");
    assert_eq!(rejected["source"], "rejection", "{rejected}");
    assert!(
        rejected["text"]
            .as_str()
            .unwrap()
            .starts_with("Uncaught (in promise) Error: nobody caught me"),
        "{rejected}"
    );
    assert_eq!(at("from the frame")["level"], "warn");
    let errors = eyes.call("browser_console_messages", json!({"level": "error"}));
    assert_eq!(list(&errors, "messages").len(), 3, "{}", text(&errors));
    let cursor = r["structuredContent"]["cursor"].as_u64().unwrap();
    eyes.call("browser_click", json!({"selector": "#more"}));
    let after = eyes.until("the click's line", || {
        let a = eyes.call("browser_console_messages", json!({ "since": cursor }));
        (!list(&a, "messages").is_empty()).then_some(a)
    });
    assert_eq!(list(&after, "messages")[0]["text"], "clicked 1");

    let nav = eyes.events(&since, "navigated", 1).remove(0);
    assert_eq!(nav["data"]["url"], page.as_str(), "{nav}");
    assert_eq!(nav["data"]["sameDocument"], false);
    let events = eyes.events(&nav["seq"].to_string(), "consoleError", 3);
    assert!(
        events.iter().all(|e| e["data"]["level"] == "error"),
        "{events:?}"
    );
    eyes.step("console");
}

fn network(eyes: &Eyes, pages: &PageServer) {
    let page = pages.url(&format!("eyes-network.html?dead={}", dead_port()));
    eyes.navigate(&page);
    eyes.call(
        "browser_wait_for",
        json!({"selector": "#state", "text": "done", "timeout": 20000}),
    );
    let r = eyes.until("the failed request to be reported", || {
        let r = eyes.call("browser_network_requests", json!({}));
        find(list(&r, "requests"), "url", "/refused")
            .is_some_and(|e| e["state"] == "failed")
            .then_some(r)
    });
    let reqs = list(&r, "requests");
    let doc = find(reqs, "url", "eyes-network.html").expect("the page itself");
    assert_eq!(
        (&doc["type"], &doc["status"], &doc["method"]),
        (&json!("main_frame"), &json!(200), &json!("GET"))
    );
    let ok = find(reqs, "url", "eyes-data.json").expect("the fetch");
    assert_eq!(ok["status"], 200, "{ok}");
    assert_eq!(ok["type"], "xmlhttprequest");
    assert_eq!(ok["size"], 21, "Content-Length of eyes-data.json: {ok}");
    let missing = find(reqs, "url", "missing.json").expect("the 404");
    assert_eq!(missing["status"], 404, "{missing}");
    // Firefox names the failure its own way (Chromium: net::ERR_CONNECTION_REFUSED).
    let refused = find(reqs, "url", "/refused").unwrap();
    assert_eq!(refused["error"], "NS_ERROR_CONNECTION_REFUSED", "{refused}");
    assert!(refused["status"].is_null(), "{refused}");
    let count = |args: Value| list(&eyes.call("browser_network_requests", args), "requests").len();
    assert_eq!(count(json!({"status": 404})), 1);
    assert_eq!(count(json!({"status": "failed"})), 1);
    assert_eq!(count(json!({"url": "*/missing.*"})), 1);
    assert_eq!(count(json!({"type": "fetch"})), 3);

    let on = eyes.call("browser_network_requests", json!({"captureBodies": true}));
    assert!(
        text(&on).contains("request bodies are being recorded"),
        "{}",
        text(&on)
    );
    eyes.call("browser_click", json!({"selector": "#post"}));
    let posted = eyes.until("the POST", || {
        let r = eyes.call(
            "browser_network_requests",
            json!({"url": "eyes-data.json", "status": 200}),
        );
        list(&r, "requests")
            .iter()
            .find(|e| e["method"] == "POST" && e["state"] == "done")
            .cloned()
    });
    assert_eq!(posted["requestBody"], "item=leeks&n=2", "{posted}");
    eyes.call("browser_network_requests", json!({"captureBodies": false}));
    eyes.step("network");
}

fn downloads_(eyes: &Eyes, pages: &PageServer) {
    let since = eyes.last_seq();
    eyes.navigate(&pages.url("eyes-download.html"));
    let none = eyes.call("browser_downloads", json!({}));
    assert!(list(&none, "downloads").is_empty(), "{}", text(&none));
    eyes.call("browser_click", json!({"selector": "#dl"}));
    let r = eyes.call("browser_downloads", json!({"wait": true, "timeout": 30000}));
    let dl = &list(&r, "downloads")[0];
    assert_eq!(dl["state"], "complete", "{}", text(&r));
    let saved = PathBuf::from(dl["filename"].as_str().unwrap());
    assert_eq!(saved, eyes.downloads.path().join("report.csv"), "{dl}");
    let content = std::fs::read(&saved).expect("the downloaded file");
    assert_eq!(content, b"name,amount\nalpha,1\nbeta,2\n");
    assert_eq!(dl["url"], pages.url("eyes-data.csv").as_str());

    let cursor = r["structuredContent"]["cursor"].as_u64().unwrap();
    eyes.call("browser_click", json!({"selector": "#blob"}));
    let r = eyes.call(
        "browser_downloads",
        json!({"wait": true, "since": cursor, "timeout": 30000}),
    );
    let blob = &list(&r, "downloads")[0];
    assert_eq!(blob["state"], "complete", "{blob}");
    assert!(blob["url"].as_str().unwrap().starts_with("blob:"), "{blob}");
    assert_eq!(
        std::fs::read(eyes.downloads.path().join("export.csv")).expect("the export"),
        b"x,y\n1,2\n"
    );
    let events = eyes.events(&since, "downloadFinished", 2);
    assert_eq!(events[0]["data"]["filename"], saved.to_str().unwrap());
    assert_eq!(events[1]["data"]["state"], "complete");
    eyes.step("downloads");
}

fn screenshots(eyes: &Eyes, pages: &PageServer) {
    eyes.navigate(&pages.url("eyes-shot.html"));
    let view = eyes.call("browser_screenshot", json!({}));
    let (mime, png) = image(&view);
    assert_eq!(mime, "image/png");
    let (vw, vh) = png_size(&png);
    assert!(vw > 300 && vh > 300, "{vw}×{vh}");
    let snap = eyes.call("browser_snapshot", json!({}));
    let ref_named = |name: &str| {
        list(&snap, "elements")
            .iter()
            .find(|e| e["name"] == name)
            .and_then(|e| e["ref"].as_str())
            .unwrap_or_else(|| panic!("no {name} in {}", text(&snap)))
            .to_owned()
    };
    let shot = eyes.call("browser_screenshot", json!({ "ref": ref_named("Box") }));
    assert_eq!(png_size(&image(&shot).1), (200, 120), "{}", text(&shot));
    let jpeg = eyes.call(
        "browser_screenshot",
        json!({"selector": "#box", "format": "jpeg", "quality": 50}),
    );
    let (mime, bytes) = image(&jpeg);
    assert_eq!(mime, "image/jpeg");
    assert_eq!(&bytes[..3], b"\xff\xd8\xff", "a JPEG");
    let inner = ref_named("Inner");
    assert!(inner.starts_with('f'), "a frame ref: {inner}");
    let shot = eyes.call("browser_screenshot", json!({ "ref": inner }));
    assert_eq!(png_size(&image(&shot).1), (150, 80), "{}", text(&shot));
    let full = eyes.call("browser_screenshot", json!({"fullPage": true}));
    assert_eq!(png_size(&image(&full).1), (vw, 2120), "{}", text(&full));
    eyes.step("screenshots");
}

fn tabs_and_memory(eyes: &Eyes, pages: &PageServer) {
    let held = |r: &Value| -> Vec<i64> {
        r["structuredContent"]["held"]["tabIds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect()
    };
    let r = eyes.call("browser_tabs", json!({}));
    let me = list(&r, "tabs")
        .iter()
        .find(|t| t["current"] == true)
        .unwrap_or_else(|| panic!("this tab in {}", text(&r)))
        .clone();
    let my_id = me["id"].as_i64().unwrap();
    let opened = eyes.call(
        "browser_tabs",
        json!({"action": "open", "url": pages.url("eyes-console.html"), "background": true}),
    );
    let other = opened["structuredContent"]["tab"]["id"].as_i64().unwrap();
    let other_ref = format!("{}:{other}", eyes.tab.split(':').next().unwrap());
    eyes.until("the new tab's console", || {
        let out = eyes.d.ctl(&[
            "--json",
            "call",
            "browser_console_messages",
            "--tab",
            &other_ref,
        ]);
        let v: Value = serde_json::from_slice::<Value>(&out.stdout).ok()?["result"].clone();
        (list(&v, "messages").len() == 8).then_some(())
    });
    eyes.call(
        "browser_tabs",
        json!({"action": "select", "tabId": other_ref}),
    );
    let r = eyes.call("browser_tabs", json!({}));
    let active = |id: i64| {
        list(&r, "tabs")
            .iter()
            .any(|t| t["id"] == id && t["active"] == true)
    };
    assert!(active(other) && !active(my_id), "{}", text(&r));
    eyes.call("browser_tabs", json!({"action": "select", "tabId": my_id}));
    eyes.call("browser_tabs", json!({"action": "close", "tabId": other}));
    let r = eyes.until("the closed tab's logs to be freed", || {
        let r = eyes.call("browser_tabs", json!({}));
        (!held(&r).contains(&other)).then_some(r)
    });
    assert!(
        !list(&r, "tabs").iter().any(|t| t["id"] == other),
        "{}",
        text(&r)
    );
    assert!(held(&r).contains(&my_id));
    eyes.step("tabs and memory");
}
