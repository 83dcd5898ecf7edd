//! `browserctl wait --tool NAME [--tab T]` / `wait --tab-url PATTERN`: block until a tool or a
//! tab appears, so a script can start a browser, wait, then call.
//! The waiting itself is the library client's (`Client::wait_for_tool`, `wait_for_tab`).

use super::client::Client;
use super::output::{print, print_json, Stop};
use std::time::Duration;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["tool", "tab_url"])))]
pub struct WaitArgs {
    /// Wait until a tool with this name is offered.
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// With --tool: only on this tab (b1:12).
    #[arg(long, requires = "tool", add = super::completions::tabs())]
    pub tab: Option<String>,
    /// Wait until a tab whose URL matches PATTERN is open (`*` matches anything; without `*`,
    /// a substring).
    #[arg(long, value_name = "PATTERN")]
    pub tab_url: Option<String>,
    /// Give up after this long (exit code 8).
    #[arg(long, default_value = "30s", value_parser = super::call::parse_timeout, value_name = "DURATION")]
    pub timeout: Duration,
    /// Print JSON: {"tools": [...]} or {"tabs": [...]}.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub socket: super::args::SocketArg,
}

pub async fn run(c: &Client, a: WaitArgs, json: bool) -> Result<(), Stop> {
    if let Some(tool) = &a.tool {
        let tools = c.wait_for_tool(tool, a.tab.as_deref(), a.timeout).await?;
        if json {
            return print_json(&serde_json::json!({ "tools": tools }));
        }
        let refs: Vec<&str> = tools.iter().map(|t| t.tab.as_str()).collect();
        return print(&refs.join("\n"));
    }
    let pattern = a.tab_url.as_deref().unwrap_or_default();
    let tabs = c.wait_for_tab(pattern, a.timeout).await?;
    if json {
        return print_json(&serde_json::json!({ "tabs": tabs }));
    }
    let refs: Vec<&str> = tabs.iter().map(|t| t.tab_ref.as_str()).collect();
    print(&refs.join("\n"))
}
