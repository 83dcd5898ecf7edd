//! browser-mcpd's settings: flags, each with its environment variable, and the same names as
//! keys of the optional config file (see [`super`] for how the layers combine).

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

    /// Origins allowed to open an extension WebSocket (`*` at the end matches any suffix).
    /// Connections without an Origin header are allowed; web origins never are by default.
    /// An extension other than ours (any Firefox or Safari one too, whose origin does not say
    /// which extension it is) must also prove the token or a pairing before it joins as a
    /// browser; an origin named here without `*` need not.
    #[arg(
        long = "allow-origin",
        env = "BROWSER_MCP_ALLOW_ORIGIN",
        value_delimiter = ',',
        default_values_t = ["chrome-extension://*".to_owned(), "moz-extension://*".to_owned(), "safari-web-extension://*".to_owned()]
    )]
    pub allow_origins: Vec<String>,

    /// A directory whose files `browser_file_upload` may read by path (`paths`); repeat it, or
    /// separate several with `:`. Symlinks are resolved first, and hidden files and directories
    /// inside it (`.ssh`, `.config`…) are never read. An MCP client's own roots count too, for
    /// its calls; `browserctl call` reads the files a person names itself. None by default:
    /// an agent cannot upload a file of yours unless you said where from.
    #[arg(
        long = "upload-root",
        env = "BROWSER_MCP_UPLOAD_ROOT",
        value_delimiter = ':',
        value_name = "DIR"
    )]
    pub upload_roots: Vec<PathBuf>,

    /// A persistent profile (`browser launch --profile NAME`) an MCP agent may launch; repeat
    /// it, or separate several with `,`. A persistent profile holds the person's logins, and a
    /// launched browser asks no consent: none by default (issue 58, item 6).
    #[arg(
        long = "agent-profile",
        env = "BROWSER_MCP_AGENT_PROFILE",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    pub agent_profiles: Vec<String>,

    /// Require every connection on the loopback port to prove the daemon's token (from the
    /// discovery file): presented as `?token=` or `Authorization: Bearer`, or proved in the
    /// trust handshake (which also accepts a pairing). Connections from another user are
    /// refused whatever this says.
    #[arg(long, env = "BROWSER_MCP_REQUIRE_TOKEN")]
    pub require_token: bool,

    /// The user's pairings with browser profiles (`browserctl pair`), shared by all of the
    /// user's daemons [default: $XDG_STATE_HOME/browser-mcp/pairings.json, or
    /// ~/.local/state/browser-mcp/pairings.json].
    #[arg(long, env = "BROWSER_MCP_PAIRING_FILE", value_name = "PATH")]
    pub pairing_file: Option<PathBuf>,

    /// The user's token for this port (`/mcp`'s bearer, agents, the trust handshake), kept
    /// across restarts so that saved MCP client configurations keep working; made at the
    /// first start, changed by `browserctl token rotate` [default:
    /// $XDG_STATE_HOME/browser-mcp/token, or ~/.local/state/browser-mcp/token].
    #[arg(long, env = "BROWSER_MCP_TOKEN_FILE", value_name = "PATH")]
    pub token_file: Option<PathBuf>,

    /// How MCP clients authenticate on /mcp: `bearer` (the daemon's token, from the discovery
    /// file, as `Authorization: Bearer TOKEN`) or `none` (any local process; for experiments).
    #[arg(long, env = "BROWSER_MCP_MCP_AUTH", value_enum, default_value_t = McpAuth::Bearer)]
    pub mcp_auth: McpAuth,

    /// MCP sessions on /mcp live at once; an `initialize` over this is answered 429
    /// LIMIT_EXCEEDED (and counted in `limitsExceeded` of status).
    #[arg(long, env = "BROWSER_MCP_MCP_MAX_SESSIONS", default_value_t = 256)]
    pub mcp_max_sessions: usize,

    /// An MCP session on /mcp with no request in progress and no stream open for this long
    /// is closed; its client gets 404 and starts a new one, as the MCP transport says.
    #[arg(long, env = "BROWSER_MCP_MCP_SESSION_IDLE", default_value = "10m", value_parser = parse_duration)]
    pub mcp_session_idle: Duration,

    /// How long the browsers keep watching their pages after the last request of an agent
    /// (with no event stream or MCP session open). While they watch, our extension's bridge
    /// goes into every page that loads; afterwards a page pays for it only once an agent
    /// needs the page.
    #[arg(long, env = "BROWSER_MCP_AGENT_IDLE", default_value = "10m", value_parser = parse_duration)]
    pub agent_idle: Duration,

    /// Per-attempt timeout of a tool call.
    #[arg(long, env = "BROWSER_MCP_CALL_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub call_timeout: Duration,

    /// How long a call whose browser's connection dropped waits for that browser to come
    /// back (same session, as after a service-worker restart); when it does not, the call
    /// fails at once with NO_BROWSER instead of waiting out its timeout. A retry of a
    /// read-only or idempotent tool goes to the reconnected browser only within this time.
    #[arg(long, env = "BROWSER_MCP_RECONNECT_GRACE", default_value = "1s", value_parser = parse_duration)]
    pub reconnect_grace: Duration,

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

    /// Time a client has to send an HTTP request's head, and again its body, on the extension
    /// port and the control socket (an idle kept-alive connection is closed after it too), and
    /// a new bridge connection to say `connected`.
    #[arg(long, env = "BROWSER_MCP_HANDSHAKE_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub handshake_timeout: Duration,

    /// Largest WebSocket message accepted from an extension, in bytes (larger → close 1009).
    #[arg(long, env = "BROWSER_MCP_MAX_FRAME_BYTES", default_value_t = 16 << 20)]
    pub max_frame_bytes: usize,

    /// Events kept for `events --since` resumption.
    #[arg(long, env = "BROWSER_MCP_EVENT_BUFFER", default_value_t = 4096)]
    pub event_buffer: usize,

    /// Worker threads of the async runtime (1 runs everything on one thread, which avoids
    /// cross-thread wake-ups; 0 uses one per CPU).
    #[arg(long, env = "BROWSER_MCP_THREADS", default_value_t = 1)]
    pub threads: usize,

    /// Interval of the WebSocket ping frames sent to register- and JSON-RPC-dialect peers; a
    /// peer that leaves two pings unanswered is dropped (0 turns pings off).
    #[arg(long, env = "BROWSER_MCP_WS_PING_INTERVAL", default_value = "30s", value_parser = parse_duration)]
    pub ws_ping_interval: Duration,

    /// How long `GET /` waits for a new connection's first message to tell a register-dialect
    /// `hello` from a bridge extension; a peer that says nothing by then is a bridge
    /// extension waiting for `connect`.
    #[arg(long, env = "BROWSER_MCP_SNIFF_WINDOW", default_value = "500ms", value_parser = parse_duration)]
    pub sniff_window: Duration,

    /// Calls one agent (a JSON-RPC agent connection or an MCP session on /mcp) may have in
    /// flight; more are refused with LIMIT_EXCEEDED.
    #[arg(long, env = "BROWSER_MCP_AGENT_MAX_IN_FLIGHT", default_value_t = 16)]
    pub agent_max_in_flight: usize,

    /// Tool calls per second one JSON-RPC agent may start (bursts up to this many; 0 means
    /// no limit); more are refused with LIMIT_EXCEEDED.
    #[arg(long, env = "BROWSER_MCP_AGENT_RATE_LIMIT", default_value_t = 20.0)]
    pub agent_rate_limit: f64,

    /// Let an agent act in a tab another agent opened (click, type, navigate, close it). By
    /// default a tab an MCP session opened is that agent's own: any other agent may read it
    /// (snapshot, console, network, screenshots, tools marked read-only) and is refused
    /// anything else with TAB_OWNED. browserctl, the person's own, is never refused.
    #[arg(long, env = "BROWSER_MCP_SHARE_AGENT_TABS")]
    pub share_agent_tabs: bool,

    /// Calls that may wait for one tab's turn: calls on one tab run in the order they came
    /// (reads side by side, an action alone), calls on different tabs at once. One more is
    /// refused with BUSY and `details.retryAfterMs`.
    #[arg(long, env = "BROWSER_MCP_TAB_QUEUE", default_value_t = 16)]
    pub tab_queue: usize,

    /// Connections the extension port holds at once (WebSockets of every dialect, /register,
    /// /mcp); more are answered 429 LIMIT_EXCEEDED and closed.
    #[arg(long, env = "BROWSER_MCP_MAX_CONNECTIONS", default_value_t = 1024)]
    pub max_connections: usize,

    /// Connections the control socket holds at once (each event stream is one); more are
    /// answered 429 LIMIT_EXCEEDED and closed.
    #[arg(
        long,
        env = "BROWSER_MCP_MAX_CONTROL_CONNECTIONS",
        default_value_t = 4096
    )]
    pub max_control_connections: usize,

    /// Tabs one browser may report; further tabs are refused (LIMIT_EXCEEDED in the log and
    /// in `limitsExceeded` of status).
    #[arg(long, env = "BROWSER_MCP_MAX_TABS_PER_BROWSER", default_value_t = 2000)]
    pub max_tabs_per_browser: usize,

    /// Tools one tab (or one tab-less browser) may offer; a larger set is refused and the old
    /// one kept (a JSON-RPC `tools/register` gets a LIMIT_EXCEEDED error).
    #[arg(long, env = "BROWSER_MCP_MAX_TOOLS_PER_TAB", default_value_t = 500)]
    pub max_tools_per_tab: usize,

    /// Tool calls in flight in the whole daemon; more are refused with LIMIT_EXCEEDED.
    #[arg(long, env = "BROWSER_MCP_MAX_CALLS_IN_FLIGHT", default_value_t = 4096)]
    pub max_calls_in_flight: usize,

    /// Live events queued for one event-stream reader; a reader further behind gets a
    /// `lagged` event and catches up from the ring (`--event-buffer`).
    #[arg(long, env = "BROWSER_MCP_EVENT_STREAM_BUFFER", default_value_t = 1024)]
    pub event_stream_buffer: usize,

    /// Log filter (error, warn, info, debug, trace, or a tracing directive); RUST_LOG, when set,
    /// wins. Reloaded on SIGHUP.
    #[arg(long, env = "BROWSER_MCP_LOG_LEVEL", default_value = "info")]
    pub log_level: String,

    /// Log format on stderr; under systemd the journal is used instead when it is reachable.
    #[arg(long, env = "BROWSER_MCP_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Write the log to this file instead of stderr, starting it afresh (the old one becomes
    /// FILE.1) once it reaches --log-file-max-bytes; for service managers that keep no
    /// journal, such as launchd.
    #[arg(long, env = "BROWSER_MCP_LOG_FILE", value_name = "FILE")]
    pub log_file: Option<PathBuf>,

    /// Size at which --log-file is rotated.
    #[arg(long, env = "BROWSER_MCP_LOG_FILE_MAX_BYTES", default_value_t = 10 << 20)]
    pub log_file_max_bytes: u64,

    /// On SIGTERM/SIGINT, how long calls in flight may take to finish before they fail with
    /// SHUTTING_DOWN.
    #[arg(long, env = "BROWSER_MCP_SHUTDOWN_GRACE", default_value = "10s", value_parser = parse_duration)]
    pub shutdown_grace: Duration,

    /// The browser `browserctl browser launch` starts when it names none: chromium, chrome,
    /// edge, brave or firefox [default: the first of these found on PATH].
    #[arg(long, env = "BROWSER_MCP_LAUNCH_BROWSER", value_name = "BROWSER")]
    pub launch_browser: Option<String>,

    /// The executable of a browser to launch, as KIND=PATH (`chrome=/opt/google/chrome/chrome`);
    /// repeat it, or separate several with `,`. A browser not named here is looked for on
    /// PATH (chromium, chromium-browser; google-chrome…; microsoft-edge…; brave-browser;
    /// firefox-esr, firefox). Nothing is ever downloaded.
    #[arg(
        long = "browser-path",
        env = "BROWSER_MCP_BROWSER_PATH",
        value_delimiter = ',',
        value_name = "KIND=PATH"
    )]
    pub browser_paths: Vec<String>,

    /// One more command-line flag for a launched browser, as KIND=FLAG
    /// (`chromium=--window-size=1280,800`, `firefox=-safe-mode`); repeat it, or separate several
    /// with `;`.
    #[arg(
        long = "browser-flag",
        env = "BROWSER_MCP_BROWSER_FLAG",
        value_delimiter = ';',
        value_name = "KIND=FLAG"
    )]
    pub browser_flags: Vec<String>,

    /// Where named profiles of launched browsers live (`browserctl browser launch --profile
    /// NAME`), one directory each, kept between launches
    /// [default: $XDG_DATA_HOME/browser-mcp/profiles, or ~/.local/share/browser-mcp/profiles].
    #[arg(long, env = "BROWSER_MCP_PROFILES_DIR", value_name = "DIR")]
    pub profiles_dir: Option<PathBuf>,

    /// Where launched browsers' temporary profiles live, with the daemon's record of what it
    /// launched, by which the next start stops what a killed daemon left running
    /// [default: $XDG_STATE_HOME/browser-mcp/managed, or ~/.local/state/browser-mcp/managed].
    #[arg(long, env = "BROWSER_MCP_MANAGED_DIR", value_name = "DIR")]
    pub managed_dir: Option<PathBuf>,

    /// The extension launched browsers load [default: share/browser-mcp/extension beside the
    /// binaries' directory, else the source tree's extension/].
    #[arg(long, env = "BROWSER_MCP_EXTENSION_DIR", value_name = "DIR")]
    pub extension_dir: Option<PathBuf>,

    /// How long a launch waits for the browser's extension to list its first tab.
    #[arg(long, env = "BROWSER_MCP_LAUNCH_TIMEOUT", default_value = "60s", value_parser = parse_duration)]
    pub launch_timeout: Duration,

    /// Closing a launched browser (or stopping the daemon): how long a Chromium has to exit by
    /// itself once its extension closed its tabs (so it writes its cookies), then how long
    /// after SIGTERM its processes have before SIGKILL.
    #[arg(long, env = "BROWSER_MCP_CLOSE_GRACE", default_value = "5s", value_parser = parse_duration)]
    pub close_grace: Duration,

    /// Config file (TOML; keys are the long option names)
    /// [default: $XDG_CONFIG_HOME/browser-mcp/config.toml, if present].
    #[arg(long, env = "BROWSER_MCP_CONFIG")]
    pub config: Option<PathBuf>,

    /// Print each setting in force and where it came from (flag, environment, file, default),
    /// as TOML, and exit.
    #[arg(long)]
    pub print_config: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Authentication on the MCP endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum McpAuth {
    Bearer,
    None,
}

impl Config {
    /// Takes the settings that only apply at start (see [`super::RESTART_ONLY`])
    /// from the configuration that started the daemon.
    pub fn keep_restart_only(&mut self, started: &Config) {
        self.port = started.port;
        self.bind = started.bind;
        self.socket.clone_from(&started.socket);
        self.discovery_dir.clone_from(&started.discovery_dir);
        self.pairing_file.clone_from(&started.pairing_file);
        self.token_file.clone_from(&started.token_file);
        self.event_buffer = started.event_buffer;
        self.event_stream_buffer = started.event_stream_buffer;
        self.log_format = started.log_format;
        self.log_file.clone_from(&started.log_file);
        self.log_file_max_bytes = started.log_file_max_bytes;
        self.threads = started.threads;
        self.managed_dir.clone_from(&started.managed_dir);
    }

    pub fn pairing_path(&self) -> PathBuf {
        self.pairing_file
            .clone()
            .unwrap_or_else(paths::default_pairing_file)
    }

    pub fn token_path(&self) -> PathBuf {
        self.token_file
            .clone()
            .unwrap_or_else(paths::default_token_file)
    }

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

    /// Whether an allowed origin must also prove the token (or a pairing, in the trust
    /// handshake) before it joins as a browser: an extension that is not ours. Chrome's origin
    /// names the extension, so ours needs nothing more; Firefox's and Safari's name only an
    /// install (`moz-extension://<uuid>`), so every one of them proves; an origin the user
    /// allowed by name (`--allow-origin` without `*`) is trusted as named.
    pub fn origin_needs_proof(&self, origin: &str) -> bool {
        let ours = crate::protocol::native::EXTENSION_ORIGIN.trim_end_matches('/');
        let extension = EXTENSION_SCHEMES.iter().any(|s| origin.starts_with(s));
        extension && origin != ours && !self.allow_origins.iter().any(|named| named == origin)
    }
}

/// The schemes of browser-extension origins.
const EXTENSION_SCHEMES: [&str; 3] = [
    "chrome-extension://",
    "moz-extension://",
    "safari-web-extension://",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every setting's environment variable is BROWSER_MCP_ and its flag's name, so nobody
    /// has to look one up (issue 18).
    #[test]
    fn environment_variables_follow_the_flags() {
        use clap::CommandFactory;
        for arg in Config::command().get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if ["print-config", "help", "version"].contains(&long) {
                continue;
            }
            let want = format!("BROWSER_MCP_{}", long.to_uppercase().replace('-', "_"));
            let got = arg.get_env().map(|e| e.to_string_lossy().into_owned());
            assert_eq!(got.as_deref(), Some(want.as_str()), "--{long}");
        }
    }

    #[test]
    fn default_origins_take_extensions_and_refuse_pages() {
        let c = Config::parse_from(["browser-mcpd"]);
        assert!(c.origin_allowed("chrome-extension://abcdef"));
        // Allowed, but only with proof: another extension, or any Firefox one.
        assert!(c.origin_needs_proof("chrome-extension://abcdef"));
        assert!(c.origin_needs_proof("moz-extension://0b9e3f52-8f4c-4a4e-9d35-3f8c0e4a1b2c"));
        assert!(!c.origin_needs_proof("chrome-extension://jldadifenendlhihnlmegbljijfhnffa"));
        assert!(!c.origin_needs_proof("http://localhost:3000"));
        assert!(c.origin_allowed("moz-extension://x"));
        assert!(!c.origin_allowed("http://evil.example"));
        assert!(!c.origin_allowed("https://example.com"));
        assert!(!c.origin_allowed("null"));
        assert_eq!(c.call_timeout, Duration::from_secs(30));
        assert_eq!(c.retries, 2);
    }
}
