//! The driver interface of the browser scenarios: a tab of a real browser (Chromium or
//! Firefox) with our extension, driven through `browserctl` as an agent drives it, and what
//! to show when a step fails. A scenario written against [`DrivesTab`] runs in both browsers;
//! each browser's test implements it once (browser/eyes/chromium.rs, browser/eyes/firefox.rs).

use crate::support::common::*;
use base64::Engine;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// A browser's tab driven through `browserctl`, with what to show when a step fails: the
/// eyes tests of Chromium and Firefox share these steps and differ only in their browser.
pub trait DrivesTab {
    fn daemon(&self) -> &TestDaemon;
    fn tab(&self) -> &str;
    /// How long [`DrivesTab::until`] waits.
    fn patience(&self) -> Duration;
    fn firefox(&self) -> bool;
    /// Where the browser saves downloads without asking.
    fn downloads(&self) -> &Path;
    /// Prints how far the scenario got, and when.
    fn step(&self, name: &str);
    /// The daemon's and the browser's log tails, for a failure message.
    fn context(&self) -> String;

    /// A tool's result (MCP CallToolResult) on `tab`; the call must succeed.
    fn call_on(&self, tab: &str, tool: &str, args: Value) -> Value {
        ctl_call(self.daemon(), tab, tool, &args)
            .unwrap_or_else(|e| panic!("{tool} {args} failed: {e}\n{}", self.context()))
    }

    fn call(&self, tool: &str, args: Value) -> Value {
        self.call_on(self.tab(), tool, args)
    }

    fn navigate(&self, page: &str) {
        self.call("browser_navigate", json!({ "url": page }));
    }

    /// Asks again (every 200 ms) until `check` accepts the answer.
    fn until<T>(&self, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(v) = check() {
                return v;
            }
            if start.elapsed() > self.patience() {
                panic!("timed out waiting for {what}\n{}", self.context());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn last_seq(&self) -> String {
        self.daemon().ctl_json(&["status"])["lastEventSeq"].to_string()
    }

    /// The next `count` events of `types` on our tab after `since`.
    fn events(&self, since: &str, types: &str, count: usize) -> Vec<Value> {
        let out = self.daemon().ctl(&[
            "events",
            "--since",
            since,
            "--type",
            types,
            "--tab",
            self.tab(),
            "--count",
            &count.to_string(),
        ]);
        assert!(out.status.success(), "events: {}", stderr(&out));
        stdout(&out)
            .lines()
            .map(|l| serde_json::from_str(l).expect("NDJSON"))
            .collect()
    }
}

/// `browserctl call TOOL --tab TAB --args ARGS`: the tool's result (MCP CallToolResult), or
/// browserctl's complaint.
pub fn ctl_call(d: &TestDaemon, tab: &str, tool: &str, args: &Value) -> Result<Value, String> {
    let out = d.ctl(&[
        "--json",
        "call",
        tool,
        "--tab",
        tab,
        "--timeout",
        "60s",
        "--args",
        &args.to_string(),
    ]);
    if !out.status.success() {
        return Err(stderr(&out));
    }
    let answer: Value = serde_json::from_slice(&out.stdout).expect("JSON answer");
    Ok(answer["result"].clone())
}

pub fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

pub fn list<'a>(result: &'a Value, key: &str) -> &'a [Value] {
    result["structuredContent"][key]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

pub fn find<'a>(items: &'a [Value], key: &str, needle: &str) -> Option<&'a Value> {
    items
        .iter()
        .find(|m| m[key].as_str().is_some_and(|s| s.contains(needle)))
}

/// The image of a screenshot result: (mime type, bytes).
pub fn image(result: &Value) -> (String, Vec<u8>) {
    let block = result["content"]
        .as_array()
        .and_then(|c| c.iter().find(|b| b["type"] == "image"))
        .unwrap_or_else(|| panic!("no image block in {}", text(result)));
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(block["data"].as_str().unwrap())
        .expect("base64 image");
    (block["mimeType"].as_str().unwrap().to_owned(), bytes)
}

/// Width and height from a PNG's IHDR chunk.
pub fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&png[16..20]), be(&png[20..24]))
}

/// A loopback port nobody listens on (bound, then let go).
pub fn dead_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}
