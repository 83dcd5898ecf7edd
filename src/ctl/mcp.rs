//! `browserctl mcp`: an MCP server on stdin/stdout for AI clients (Claude Desktop and Code,
//! Cursor, the SDKs): the daemon's own MCP server, relayed over one control-socket connection
//! ([`super::mcp_relay`]). `--print-config` prints the snippets to paste into a client's
//! configuration.

use super::mcp_relay::Relay;
use super::output::{print, print_json, Stop};
use crate::client::Client;
use crate::mcp::Scope;
use crate::protocol::control::Status;
use crate::protocol::native::DiscoveryFile;
use serde_json::{json, Value};
use std::path::PathBuf;

#[derive(Debug, Clone, Default, clap::Args)]
pub struct McpArgs {
    /// Expose only this tab's tools (b1:7, or 7 for tab 7 of any browser); repeatable.
    #[arg(long = "tab", value_name = "TAB")]
    pub tabs: Vec<String>,
    /// Expose only tabs whose URL matches (`*` matches anything; without `*`, a substring); repeatable.
    #[arg(long = "url", value_name = "PATTERN")]
    pub urls: Vec<String>,
    /// Expose only this browser's tabs (b1); repeatable.
    #[arg(long = "browser", value_name = "BROWSER")]
    pub browsers: Vec<String>,
    /// Expose only the browser with this session id; repeatable.
    #[arg(long = "session", value_name = "SESSION")]
    pub sessions: Vec<String>,
    /// Expose only the tabs this client opened (with browserctl_open_tab); they are grouped
    /// in the browser under the client's name either way.
    #[arg(long)]
    pub own_tabs: bool,
    /// Print the MCP client configuration (stdio and HTTP) instead of serving.
    #[arg(long)]
    pub print_config: bool,
    /// With --print-config: print it as one JSON document. Errors are JSON on stderr.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub socket: super::args::SocketArg,
}

impl McpArgs {
    pub fn scope(&self) -> Scope {
        Scope {
            tabs: self.tabs.clone(),
            urls: self.urls.clone(),
            browsers: self.browsers.clone(),
            sessions: self.sessions.clone(),
            own_tabs: self.own_tabs,
            opened: Vec::new(),
        }
    }

    /// The scoping flags again, for the printed stdio command line.
    fn flags(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (flag, values) in [
            ("--tab", &self.tabs),
            ("--url", &self.urls),
            ("--browser", &self.browsers),
            ("--session", &self.sessions),
        ] {
            for v in values {
                out.push(flag.to_owned());
                out.push(v.clone());
            }
        }
        if self.own_tabs {
            out.push("--own-tabs".to_owned());
        }
        out
    }
}

fn init_logging() {
    // stdout carries the protocol: logs go to stderr, which MCP clients show or keep.
    let filter = tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

pub async fn run(c: &Client, args: McpArgs, json: bool, explicit_socket: bool) -> Result<(), Stop> {
    if args.print_config {
        return print_config(c, &args, json, explicit_socket).await;
    }
    // Blocks this (the only) runtime thread until the client closes stdin; browserctl's main
    // serves `mcp` without a runtime (`Invocation::run_without_runtime`), so this is for
    // callers of `ctl::run` only.
    serve(c.clone(), &args);
    Ok(())
}

/// Serves the client on stdin and stdout until it closes stdin. Blocking, and needs no async
/// runtime: two plain threads are the shortest path for a message.
pub fn serve(client: Client, args: &McpArgs) {
    init_logging();
    Relay::run(client, args.scope().to_query());
}

/// The token of the daemon behind `status`, read from its discovery file.
fn token_of(status: &Status) -> Option<String> {
    let text = std::fs::read(&status.discovery_file).ok()?;
    serde_json::from_slice::<DiscoveryFile>(&text).ok()?.token
}

async fn print_config(
    c: &Client,
    args: &McpArgs,
    json: bool,
    explicit_socket: bool,
) -> Result<(), Stop> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .unwrap_or_else(|_| PathBuf::from("browserctl"));
    let mut argv = Vec::new();
    if let Some(host) = c.host() {
        argv.push("--host".to_owned());
        argv.push(host.to_string());
    } else if explicit_socket {
        argv.push("--socket".to_owned());
        argv.push(c.socket().display().to_string());
    }
    argv.push("mcp".to_owned());
    argv.extend(args.flags());
    let stdio = json!({"mcpServers": {"browser": {
        "command": exe.display().to_string(),
        "args": argv,
    }}});
    let http = match c.host() {
        // The port is on the other machine's loopback: only the stdio form reaches it.
        Some(host) => Err(format!(
            "the daemon's port is on {host}'s loopback; use the stdio form above"
        )),
        None => match c.status().await {
            Ok(status) => {
                let url = format!("http://127.0.0.1:{}/mcp", status.port);
                let mut server = json!({"type": "http", "url": url});
                if let Some(token) = token_of(&status) {
                    server["headers"] = json!({"Authorization": format!("Bearer {token}")});
                }
                Ok(json!({"mcpServers": {"browser": server}}))
            }
            Err(e) => Err(format!(
                "needs a running browser-mcpd for its port and token ({})",
                e.code
            )),
        },
    };
    if json {
        return print_json(&json!({"stdio": stdio, "http": http.as_ref().ok()}));
    }
    let pretty = |v: &Value| serde_json::to_string_pretty(v).expect("JSON");
    let mut out = format!(
        "# stdio: Claude Desktop (claude_desktop_config.json), Claude Code (.mcp.json), \
         Cursor (.cursor/mcp.json)\n{}\n",
        pretty(&stdio)
    );
    match &http {
        Ok(v) => out.push_str(&format!(
            "\n# Streamable HTTP, for clients that take a URL. The token changes when \
             browser-mcpd restarts.\n{}\n",
            pretty(v)
        )),
        Err(why) => out.push_str(&format!("\n# Streamable HTTP: {why}.\n")),
    }
    print(&out)
}
