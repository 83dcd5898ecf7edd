//! `browserctl mcp`: an MCP server on stdin/stdout for AI clients (Claude Desktop and Code,
//! Cursor, the SDKs): the daemon's own MCP server, relayed over one control-socket connection
//! ([`super::mcp_relay`]). `--print-config` prints the snippets to paste into a client's
//! configuration.

use super::clients::{Agent, Server, Transport};
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
    /// With --print-config: in this client's own format (its command, or the file it reads).
    #[arg(long, value_enum, value_name = "CLIENT", requires = "print_config")]
    pub client: Option<super::clients::Agent>,
    /// With --print-config: only this transport's configuration, nothing around it (for
    /// scripts: `sh -c "$(browserctl mcp --print-config --client gemini --transport stdio)"`).
    #[arg(long, value_enum, requires = "print_config")]
    pub transport: Option<super::clients::Transport>,
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
    Ok(serve(c.clone(), &args)?)
}

/// Serves the client on stdin and stdout until it closes stdin; `Err` when no daemon could
/// be reached at start (the client's `initialize` was answered with it). Blocking, and needs
/// no async runtime: two plain threads are the shortest path for a message.
pub fn serve(client: Client, args: &McpArgs) -> Result<(), crate::error::Error> {
    init_logging();
    Relay::run(client, args.scope().to_query())
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
    let exe = exe.display().to_string();
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
        "command": exe,
        "args": argv,
    }}});
    let http = match c.host() {
        // The port is on the other machine's loopback: only the stdio form reaches it.
        Some(host) => Err(format!(
            "the daemon's port is on {host}'s loopback; use the stdio form"
        )),
        None => match c.status().await {
            Ok(status) => match token_of(&status) {
                Some(token) => Ok((format!("http://127.0.0.1:{}/mcp", status.port), token)),
                None => Err("the daemon's discovery file gives no token".to_owned()),
            },
            Err(e) => Err(format!(
                "needs a running browser-mcpd for its port and token ({})",
                e.code
            )),
        },
    };
    let server = Server {
        name: "browser",
        command: &exe,
        args: &argv,
        http: http.as_ref().ok().map(|(u, t)| (u.as_str(), t.as_str())),
    };
    if let Some(agent) = args.client {
        return print_client(agent, &server, args.transport, http.as_ref().err(), json);
    }
    let http = http.map(|(url, token)| {
        json!({"mcpServers": {"browser": {
            "type": "http", "url": url,
            "headers": {"Authorization": format!("Bearer {token}")}}}})
    });
    match (args.transport, json) {
        (_, true) => return print_json(&json!({"stdio": stdio, "http": http.as_ref().ok()})),
        (Some(Transport::Stdio), _) => return print(&pretty(&stdio)),
        (Some(Transport::Http), _) => {
            return match http {
                Ok(v) => print(&pretty(&v)),
                Err(why) => Err(no_http(&why)),
            }
        }
        (None, false) => {}
    }
    let mut out = format!(
        "# stdio: Claude Desktop (claude_desktop_config.json), a project's .mcp.json (Claude \
         Code), Cursor (.cursor/mcp.json)\n{}\n",
        pretty(&stdio)
    );
    match &http {
        Ok(v) => out.push_str(&format!(
            "\n# Streamable HTTP, for clients that take a URL. The token stays the same across \
             restarts until `browserctl token rotate`.\n{}\n",
            pretty(v)
        )),
        Err(why) => out.push_str(&format!("\n# Streamable HTTP: {why}.\n")),
    }
    out.push_str(
        "\n# In a client's own format: --client claude-code|codex|gemini|cursor|vscode|inspector\n",
    );
    print(&out)
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).expect("JSON")
}

fn no_http(why: &str) -> Stop {
    Stop::Api(crate::error::Error::new(
        crate::error::ErrorCode::DaemonUnavailable,
        format!("no Streamable HTTP configuration: {why}"),
    ))
}

/// One client's configuration: both transports with a comment each, or one alone.
fn print_client(
    agent: Agent,
    server: &Server,
    only: Option<Transport>,
    no_http_why: Option<&String>,
    json: bool,
) -> Result<(), Stop> {
    let stdio = agent.config(server, Transport::Stdio);
    let http = agent.config(server, Transport::Http);
    if json {
        return print_json(&json!({
            "client": agent.name(),
            "stdio": stdio,
            "http": http,
        }));
    }
    match only {
        Some(Transport::Stdio) => return print(stdio.as_deref().unwrap_or_default()),
        Some(Transport::Http) => {
            return match http {
                Some(text) => print(&text),
                None => Err(no_http(no_http_why.map_or("", String::as_str))),
            }
        }
        None => {}
    }
    let mut out = format!(
        "# {}, stdio: {}\n{}\n",
        agent.name(),
        agent.where_to(Transport::Stdio),
        stdio.unwrap_or_default()
    );
    match (http, no_http_why) {
        (Some(text), _) => out.push_str(&format!(
            "\n# {}, Streamable HTTP: {}. The token stays the same across restarts until \
             `browserctl token rotate`.\n{text}\n",
            agent.name(),
            agent.where_to(Transport::Http)
        )),
        (None, why) => out.push_str(&format!(
            "\n# {}, Streamable HTTP: {}.\n",
            agent.name(),
            why.map_or("not available", String::as_str)
        )),
    }
    print(&out)
}
