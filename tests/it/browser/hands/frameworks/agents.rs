//! The runners: Playwright MCP over stdio in its own Chromium; ours through `browserctl call`
//! (the CLI) and through `browserctl mcp`, in the browser [`Hands`] drives; ours in a Firefox
//! the daemon launched ([`Managed`]). The page's state is read beside the agent: through the
//! test's own DevTools or BiDi session for ours, through `browser_evaluate` where the browser
//! is the agent's own (Playwright MCP's; the managed Firefox, whose one BiDi session is the
//! daemon's).

use super::super::widgets::Mcp;
use super::super::Hands;
use super::snapshots::Format;
use super::tasks::{Agent, Reply};
use crate::mcp::rmcp_client::{params, text};
use crate::support::common::TestDaemon;
use base64::Engine;
use rmcp::model::CallToolResult;
use rmcp::service::{RoleClient, RunningService};
use serde_json::{json, Value};

/// The text and the images of an MCP result.
fn reply(content: &Value) -> Reply {
    let blocks = content.as_array().cloned().unwrap_or_default();
    let text = blocks
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let images = blocks
        .iter()
        .filter(|b| b["type"] == "image")
        .filter_map(|b| {
            base64::engine::general_purpose::STANDARD
                .decode(b["data"].as_str()?)
                .ok()
        })
        .collect();
    Reply { text, images }
}

pub(super) struct Playwright {
    pub(super) rt: tokio::runtime::Runtime,
    pub(super) client: RunningService<RoleClient, ()>,
    pub(super) origin: String,
}

impl Playwright {
    fn result(&self, tool: &str, args: Value) -> Result<CallToolResult, String> {
        self.rt
            .block_on(self.client.call_tool(params(tool, args)))
            .map_err(|e| format!("MCP: {e}"))
    }
}

impl Agent for Playwright {
    fn format(&self) -> Format {
        Format::Playwright
    }
    fn call(&mut self, tool: &str, args: Value) -> Result<Reply, String> {
        let r = self.result(tool, args)?;
        // Playwright MCP answers a failed action with a result that starts "### Error".
        if r.is_error == Some(true) || text(&r).trim_start().starts_with("### Error") {
            return Err(text(&r).trim().replace('\n', " "));
        }
        Ok(reply(&serde_json::to_value(&r.content).unwrap()))
    }
    fn eval(&mut self, expr: &str) -> Value {
        let r = self.result(
            "browser_evaluate",
            json!({ "function": format!("() => ({expr})") }),
        );
        // "### Result\n<JSON>\n…": the value is the line after the heading.
        r.ok()
            .and_then(|r| {
                let t = text(&r);
                let (_, after) = t.split_once("### Result")?;
                let line = after.lines().find(|l| !l.trim().is_empty())?;
                serde_json::from_str(line.trim()).ok()
            })
            .unwrap_or(Value::Null)
    }
    fn url(&self, page: &str) -> String {
        format!("{}/frameworks/{page}", self.origin)
    }
}

/// Ours through `browserctl call TOOL --tab T --args JSON --json`, as a script calls it.
pub(super) struct Cli<'a>(pub(super) &'a mut Hands);

impl Agent for Cli<'_> {
    fn format(&self) -> Format {
        Format::Ours
    }
    fn call(&mut self, tool: &str, args: Value) -> Result<Reply, String> {
        ctl_call(&self.0.d, &self.0.tab, tool, args)
    }
    fn eval(&mut self, expr: &str) -> Value {
        self.0.eval(expr)
    }
    fn url(&self, page: &str) -> String {
        self.0.url(&format!("frameworks/{page}"))
    }
}

/// `browserctl call TOOL --tab T --args JSON --json`: the reply, or the error's code and
/// message as a script reads them.
fn ctl_call(d: &TestDaemon, tab: &str, tool: &str, args: Value) -> Result<Reply, String> {
    let args = args.to_string();
    let out = d.ctl(&["call", tool, "--tab", tab, "--args", &args, "--json"]);
    if !out.status.success() {
        // With --json, the error as JSON: its code and message are what a script reads.
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(match serde_json::from_str::<Value>(err.trim()) {
            Ok(v) => format!(
                "{}: {}",
                v["error"]["code"].as_str().unwrap_or("?"),
                v["error"]["message"].as_str().unwrap_or("?")
            ),
            Err(_) => err.trim().to_owned(),
        });
    }
    let v: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("browserctl printed no JSON: {e}"))?;
    Ok(reply(&v["result"]["content"]))
}

/// Ours through `browserctl call` in a Firefox the daemon launched, whose trusted input the
/// daemon makes over its WebDriver BiDi session. That session is the browser's only one, so
/// the page's state is read with our own `browser_evaluate` (turned on in the profile before
/// the launch, as the person would in the options page).
pub(super) struct Managed {
    pub(super) d: crate::browser::managed::rig::Managed,
    pub(super) tab: String,
    pub(super) origin: String,
}

impl Agent for Managed {
    fn format(&self) -> Format {
        Format::Ours
    }
    fn call(&mut self, tool: &str, args: Value) -> Result<Reply, String> {
        ctl_call(&self.d, &self.tab, tool, args)
    }
    fn eval(&mut self, expr: &str) -> Value {
        let args = json!({ "expression": expr }).to_string();
        let out = self.d.ctl(&[
            "call",
            "browser_evaluate",
            "--tab",
            &self.tab,
            "--args",
            &args,
            "--json",
        ]);
        serde_json::from_slice::<Value>(&out.stdout)
            .map(|v| v["result"]["structuredContent"]["value"].clone())
            .unwrap_or(Value::Null)
    }
    fn url(&self, page: &str) -> String {
        format!("{}/frameworks/{page}", self.origin)
    }
}

/// Ours through `browserctl mcp`, as an MCP client calls it.
pub(super) struct OverMcp<'a> {
    pub(super) h: &'a mut Hands,
    pub(super) mcp: &'a Mcp,
}

impl Agent for OverMcp<'_> {
    fn format(&self) -> Format {
        Format::Ours
    }
    fn call(&mut self, tool: &str, args: Value) -> Result<Reply, String> {
        match self.mcp.call(tool, &self.h.tab, args) {
            Ok(v) => Ok(reply(&v["content"])),
            Err(f) => Err(format!("{}: {}", f.code, f.message.replace('\n', " "))),
        }
    }
    fn eval(&mut self, expr: &str) -> Value {
        self.h.eval(expr)
    }
    fn url(&self, page: &str) -> String {
        self.h.url(&format!("frameworks/{page}"))
    }
}
