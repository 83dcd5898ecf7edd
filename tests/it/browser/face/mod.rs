//! The extension's face as a person sees it: the popup and the options page opened as extension
//! pages, the badge, the site switch, "ask" mode and the native host's status, checked against
//! `browserctl`. In Chromium (chromium_*.rs) the pages are driven over the DevTools protocol
//! with keys and clicks, like a person, and screenshots are kept under
//! target/test-artifacts/extension_face/; in Firefox (firefox.rs) over WebDriver BiDi.
//!
//! Without the browser a test says SKIPPED loudly and passes, except under CI=true, where a
//! missing browser is a failure. `BROWSER_MCP_CHROMIUM` / `BROWSER_MCP_FIREFOX` name others.

mod chromium_ask;
mod chromium_popup;
mod firefox;

use crate::support::cdp::*;
use crate::support::chromium::*;
use crate::support::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The page under test: one WebMCP tool (read-only), a form for the built-ins.
pub(crate) const PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Recipe box</title></head>
<body>
  <h1>Recipe box</h1>
  <label>Ingredient <input id="q"></label> <button id="go">Search</button>
  <script>
    navigator.modelContext.registerTool({
      name: 'search_recipes',
      title: 'Search recipes',
      description: 'Find recipes by ingredient',
      inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
      annotations: { readOnlyHint: true },
      execute: async ({ query }) => {
        console.error(`searched for ${query}`);
        return { content: [{ type: 'text', text: `3 recipes with ${query}` }] };
      },
    });
  </script>
</body></html>"#;

/// target/test-artifacts/extension_face (not committed).
pub(crate) fn artifacts_dir() -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let dir = target.join("test-artifacts").join("extension_face");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Polls `browserctl tabs` until the tab showing `url` has tools that satisfy `ready`.
pub(crate) fn wait_for_tab(
    d: &TestDaemon,
    b: &Browser,
    url: &str,
    ready: impl Fn(&[&str]) -> bool,
) -> Value {
    let start = Instant::now();
    loop {
        let tabs = d.ctl_json(&["tabs"]);
        if let Some(t) = tabs["tabs"].as_array().and_then(|ts| {
            ts.iter()
                .find(|t| t["url"] == url && ready(&tool_names(t)))
                .cloned()
        }) {
            return t;
        }
        if start.elapsed() > BROWSER_WAIT {
            panic!(
                "no tab {url} with its tools after {BROWSER_WAIT:?}: {tabs}\n--- daemon ---\n{}\n--- chromium ---\n{}",
                d.log(),
                b.log_tail()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(crate) fn spawn_ctl(d: &TestDaemon, args: &[&str]) -> std::thread::JoinHandle<Output> {
    let socket = d.socket.clone();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    std::thread::spawn(move || {
        Command::new(CTL)
            .arg("--socket")
            .arg(&socket)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .expect("run browserctl")
    })
}
