//! browser-mcpd's settings: flags, each with its environment variable.

use crate::paths::{self, parse_duration};
use clap::Parser;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "browser-mcpd",
    version,
    about = "The browser-mcp daemon: a bridge between browser-tab tools and scripts, pipelines and AI agents",
    long_about = "browser-mcpd accepts browser-extension WebSockets on a loopback port, keeps a live \
registry of browsers, tabs and the tools each tab exposes, routes tool calls to tabs with timeouts \
and retries, and serves a JSON API on a Unix socket for browserctl."
)]
pub struct Config {
    /// Loopback TCP port for browser extensions (0 picks a free port).
    #[arg(long, env = "BROWSER_MCP_PORT", default_value_t = paths::DEFAULT_PORT)]
    pub port: u16,

    /// Address to bind the extension port to; only loopback addresses are accepted.
    #[arg(long, env = "BROWSER_MCP_BIND", default_value = "127.0.0.1")]
    pub bind: IpAddr,

    /// Control socket path [default: $XDG_RUNTIME_DIR/browser-mcp/browser-mcpd.sock].
    #[arg(long, env = paths::SOCKET_ENV)]
    pub socket: Option<PathBuf>,

    /// Directory of the discovery files that extensions watch.
    #[arg(long, env = "BROWSER_MCP_DISCOVERY_DIR", default_value = paths::DEFAULT_DISCOVERY_DIR)]
    pub discovery_dir: PathBuf,

    /// Origins allowed to open an extension WebSocket without the token (`*` at the end
    /// matches any suffix). Connections without an Origin header are allowed; web origins
    /// never are by default. Presenting the token is enough whatever the Origin.
    #[arg(
        long = "allow-origin",
        env = "BROWSER_MCP_ALLOW_ORIGINS",
        value_delimiter = ',',
        default_values_t = ["chrome-extension://*".to_owned(), "moz-extension://*".to_owned(), "safari-web-extension://*".to_owned()]
    )]
    pub allow_origins: Vec<String>,

    /// Require extensions to present the daemon's token (from the discovery file).
    #[arg(long, env = "BROWSER_MCP_REQUIRE_TOKEN")]
    pub require_token: bool,

    /// Per-attempt timeout of a tool call.
    #[arg(long, env = "BROWSER_MCP_CALL_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub call_timeout: Duration,

    /// Retries of a failed call (only for errors that are safe to retry).
    #[arg(long, env = "BROWSER_MCP_RETRIES", default_value_t = 2)]
    pub retries: u32,

    /// First backoff delay between attempts.
    #[arg(long, env = "BROWSER_MCP_BACKOFF_BASE", default_value = "1s", value_parser = parse_duration)]
    pub backoff_base: Duration,

    /// Growth of the backoff delay per attempt: base × multiplier^attempt.
    #[arg(long, env = "BROWSER_MCP_BACKOFF_MULTIPLIER", default_value_t = 2.0)]
    pub backoff_multiplier: f64,

    /// Longest backoff delay.
    #[arg(long, env = "BROWSER_MCP_BACKOFF_MAX", default_value = "5s", value_parser = parse_duration)]
    pub backoff_max: Duration,

    /// Time a new connection has to finish its HTTP handshake and say `connected`.
    #[arg(long, env = "BROWSER_MCP_HANDSHAKE_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub handshake_timeout: Duration,

    /// Largest WebSocket message accepted from an extension, in bytes (larger → close 1009).
    #[arg(long, env = "BROWSER_MCP_MAX_FRAME", default_value_t = 16 << 20)]
    pub max_frame_bytes: usize,

    /// Events kept for `events --since` resumption.
    #[arg(long, env = "BROWSER_MCP_EVENT_BUFFER", default_value_t = 4096)]
    pub event_buffer: usize,

    /// Log filter (error, warn, info, debug, trace, or a tracing directive).
    #[arg(long, env = "LOG_LEVEL", default_value = "info")]
    pub log_level: String,
}

impl Config {
    pub fn socket_path(&self) -> PathBuf {
        self.socket
            .clone()
            .unwrap_or_else(paths::default_socket_path)
    }

    /// Whether an Origin header value may open an extension connection.
    pub fn origin_allowed(&self, origin: &str) -> bool {
        self.allow_origins
            .iter()
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => origin.starts_with(prefix),
                None => origin == pattern,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_origins_take_extensions_and_refuse_pages() {
        let c = Config::parse_from(["browser-mcpd"]);
        assert!(c.origin_allowed("chrome-extension://abcdef"));
        assert!(c.origin_allowed("moz-extension://x"));
        assert!(!c.origin_allowed("http://evil.example"));
        assert!(!c.origin_allowed("https://example.com"));
        assert!(!c.origin_allowed("null"));
        assert_eq!(c.call_timeout, Duration::from_secs(30));
        assert_eq!(c.retries, 2);
    }
}
