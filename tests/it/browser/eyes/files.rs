//! What the page gives back as files: downloads (a file and a blob, waited for, where they
//! were saved) and screenshots (viewport, element by ref and in a frame, JPEG, full page, over
//! MCP).

use crate::browser::drives::*;
use crate::support::chromium::*;
use crate::support::common::*;
use serde_json::json;
use std::path::PathBuf;
use std::process::Stdio;

pub(super) fn downloads<E: DrivesTab>(eyes: &E, pages: &PageServer) {
    let since = eyes.last_seq();
    eyes.navigate(&pages.url("eyes-download.html"));
    let none = eyes.call("browser_downloads", json!({}));
    assert!(list(&none, "downloads").is_empty(), "{}", text(&none));
    eyes.call("browser_click", json!({"selector": "#dl"}));
    let r = eyes.call("browser_downloads", json!({"wait": true, "timeout": 30000}));
    let dl = &list(&r, "downloads")[0];
    assert_eq!(dl["state"], "complete", "{}", text(&r));
    // What the agent's clicks download goes into a folder of its own, where the browser lets
    // an extension say so (Chromium; Firefox saves it with the person's downloads).
    let dir = if eyes.firefox() {
        eyes.downloads().to_path_buf()
    } else {
        eyes.downloads().join("browser-mcp")
    };
    let saved = PathBuf::from(dl["filename"].as_str().unwrap());
    assert_eq!(saved, dir.join("report.csv"), "{dl}");
    let content = std::fs::read(&saved).expect("the downloaded file");
    assert_eq!(content, b"name,amount\nalpha,1\nbeta,2\n");
    // Firefox now and then calls a small download complete with no byte count at all (no
    // bytesReceived, totalBytes or fileSize); then the size is said to be unknown, not 0.
    if eyes.firefox() && dl.get("bytes").is_none() {
        assert!(
            text(&r).contains("size not reported by the browser"),
            "{}",
            text(&r)
        );
    } else {
        assert_eq!(dl["bytes"], content.len(), "{dl}");
    }
    assert_eq!(dl["url"], pages.url("eyes-data.csv").as_str());
    assert!(text(&r).contains("finished"), "{}", text(&r));

    // A blob download ("Export"), waited for by cursor.
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
        std::fs::read(dir.join("export.csv")).expect("the export"),
        b"x,y\n1,2\n"
    );
    let all = eyes.call("browser_downloads", json!({}));
    assert_eq!(list(&all, "downloads").len(), 2, "{}", text(&all));

    let events = eyes.events(&since, "downloadFinished", 2);
    assert_eq!(events[0]["data"]["filename"], saved.to_str().unwrap());
    assert_eq!(events[1]["data"]["state"], "complete");
    eyes.step("downloads");
}

pub(super) fn screenshots<E: DrivesTab>(eyes: &E, pages: &PageServer) {
    eyes.navigate(&pages.url("eyes-shot.html"));
    let view = eyes.call("browser_screenshot", json!({}));
    let (mime, png) = image(&view);
    assert_eq!(mime, "image/png");
    let (vw, vh) = png_size(&png);
    assert!(vw > 300 && vh > 300, "{vw}×{vh}");

    // An element by its ref from the snapshot: exactly its box.
    let snap = eyes.call("browser_snapshot", json!({}));
    let box_ref = list(&snap, "elements")
        .iter()
        .find(|e| e["name"] == "Box")
        .and_then(|e| e["ref"].as_str())
        .unwrap_or_else(|| panic!("no Box in {}", text(&snap)))
        .to_owned();
    let shot = eyes.call("browser_screenshot", json!({ "ref": box_ref }));
    let (mime, png) = image(&shot);
    assert_eq!(mime, "image/png");
    assert_eq!(png_size(&png), (200, 120), "{}", text(&shot));
    let jpeg = eyes.call(
        "browser_screenshot",
        json!({"selector": "#box", "format": "jpeg", "quality": 50}),
    );
    let (mime, bytes) = image(&jpeg);
    assert_eq!(mime, "image/jpeg");
    assert_eq!(&bytes[..3], b"\xff\xd8\xff", "a JPEG");

    // An element inside a frame, by its frame-qualified ref.
    let inner_ref = list(&snap, "elements")
        .iter()
        .find(|e| e["name"] == "Inner")
        .and_then(|e| e["ref"].as_str())
        .unwrap_or_else(|| panic!("no Inner in {}", text(&snap)))
        .to_owned();
    assert!(inner_ref.starts_with('f'), "a frame ref: {inner_ref}");
    let shot = eyes.call("browser_screenshot", json!({ "ref": inner_ref }));
    let (_, png) = image(&shot);
    assert_eq!(png_size(&png), (150, 80), "{}", text(&shot));

    // The full page: 900 + 120 + 200 + 900 CSS pixels tall, at the viewport's width.
    let full = eyes.call("browser_screenshot", json!({"fullPage": true}));
    let (_, png) = image(&full);
    assert_eq!(png_size(&png), (vw, 2120), "{}", text(&full));
    // Firefox captures the whole document at once; Chromium stitches screenfuls unless the
    // person granted the debugger permission (fast_shots.rs).
    let how = if eyes.firefox() {
        "in one capture."
    } else {
        " captures."
    };
    assert!(text(&full).contains(how), "{how}: {}", text(&full));

    // Through MCP (`browserctl mcp`): an image content block.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (mime, bytes) = rt.block_on(mcp_element_shot(eyes.daemon(), eyes.tab()));
    assert_eq!(mime, "image/png");
    assert_eq!(png_size(&bytes), (200, 120));

    // Wrong arguments are refused with a reason.
    let out = eyes.daemon().ctl(&[
        "call",
        "browser_screenshot",
        "--tab",
        eyes.tab(),
        "--args",
        r##"{"selector": "#box", "fullPage": true}"##,
    ]);
    assert_eq!(exit_code(&out), 6, "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("INVALID_ARGUMENTS: give an element (ref or selector) or fullPage, not both"),
        "{}",
        stderr(&out)
    );
    eyes.step("screenshots");
}

async fn mcp_element_shot(d: &TestDaemon, tab: &str) -> (String, Vec<u8>) {
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    use rmcp::ServiceExt;
    let socket = d.socket.clone();
    let tab = tab.to_owned();
    let cmd = tokio::process::Command::new(CTL).configure(|c| {
        c.arg("--socket")
            .arg(&socket)
            .arg("mcp")
            .arg("--tab")
            .arg(&tab);
    });
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn browserctl mcp");
    let client = ().serve(transport).await.expect("MCP initialize");
    let args = json!({"selector": "#box"}).as_object().cloned();
    let mut params = CallToolRequestParams::new("browser_screenshot");
    params.arguments = args;
    let result = client.call_tool(params).await.expect("tools/call");
    let _ = client.cancel().await;
    let value = serde_json::to_value(&result).unwrap();
    image(&value)
}
