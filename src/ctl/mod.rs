//! browserctl: the command-line client of browser-mcpd's control API.
//!
//! A thin client: each command is one or two requests to the daemon's Unix socket, printed as
//! a table for people or JSON (`--json`) for programs. Errors go to stderr as
//! `browserctl: CODE: message` and set an exit code derived from the code.

pub mod call;
pub mod client;
pub mod completions;
pub mod doctor;
pub mod events;
pub mod install_host;
pub mod listing;
pub mod mcp;
pub mod native_host;
pub mod output;
pub mod setup;
pub mod wait;

use crate::error::ErrorCode;
use clap::{CommandFactory, Parser, Subcommand};
use client::Client;
use output::Stop;
use std::path::PathBuf;
use std::process::ExitCode;

pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0   success
  1   internal error (INTERNAL)
  2   usage error, or a request the daemon did not understand (BAD_REQUEST, NOT_FOUND)
  3   the daemon is not running or not reachable (DAEMON_UNAVAILABLE)
  4   no such browser, tab or tool (NO_BROWSER, TAB_NOT_FOUND, TOOL_NOT_FOUND)
  5   the target is ambiguous: name a tab with --tab (AMBIGUOUS_TARGET)
  6   invalid tool arguments (INVALID_ARGUMENTS, PAYLOAD_TOO_LARGE)
  7   the tool ran and reported an error (TOOL_ERROR)
  8   no answer within the timeout (MESSAGE_TIMEOUT)
  9   the browser connection failed (SEND_ERROR, WEBSOCKET_ERROR, MAX_RETRIES_EXCEEDED)
  10  not allowed (UNAUTHORIZED)
  11  the daemon is shutting down (SHUTTING_DOWN)
  12  a limit was hit (LIMIT_EXCEEDED)
  13  the call was cancelled (CANCELLED)";

#[derive(Debug, Parser)]
#[command(
    name = "browserctl",
    version,
    about = "Talk to browser-mcpd: list browsers, tabs and tools, call tools, open and close tabs, follow events",
    after_help = EXIT_CODES_HELP
)]
pub struct Cli {
    /// The daemon's control socket [default: $XDG_RUNTIME_DIR/browser-mcp/browser-mcpd.sock].
    #[arg(long, global = true, env = crate::paths::SOCKET_ENV)]
    pub socket: Option<PathBuf>,

    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The daemon's state: version, port, counts, calls.
    Status,
    /// Connected browsers.
    Browsers,
    /// Open tabs of every connected browser (`*` marks the focused one).
    Tabs {
        /// Only this browser's tabs (b1, or its session id).
        #[arg(long)]
        browser: Option<String>,
    },
    /// Tools offered by tabs.
    Tools {
        /// Only this tab's tools (b1:12, or 12 when unique).
        #[arg(long)]
        tab: Option<String>,
        /// Only this browser's tools.
        #[arg(long)]
        browser: Option<String>,
    },
    /// Call a tool: `browserctl call search --query test`.
    ///
    /// Tool parameters are given as --NAME VALUE and typed from the tool's inputSchema
    /// (numbers, booleans, arrays as repeated flags or JSON, objects as JSON); --args takes
    /// a JSON object (or - to read it from stdin). `browserctl call TOOL --help` shows the
    /// tool's own parameters. Without --tab, the call goes to the focused tab if it has the
    /// tool, else to the only tab that has it.
    #[command(disable_help_flag = true)]
    Call(call::CallArgs),
    /// Open a tab and print it once the browser reports it.
    Open {
        url: String,
        /// Focus the new tab.
        #[arg(long)]
        focus: bool,
        /// The browser to open it in (when several are connected).
        #[arg(long)]
        browser: Option<String>,
    },
    /// Close a tab.
    Close {
        /// The tab: b1:12, or 12 when unique.
        tab: String,
    },
    /// Ask a tab for its tools afresh.
    Discover {
        /// The tab: b1:12, or 12 when unique.
        tab: String,
    },
    /// Follow the event stream (NDJSON, one event a line).
    Events(events::EventsArgs),
    /// Serve the tabs' tools to an AI client over MCP (stdio), or print its config.
    ///
    /// Every tool of the connected tabs becomes an MCP tool (names made unique with the tab,
    /// e.g. search_b1_7), plus browserctl_list_tabs, browserctl_open_tab and
    /// browserctl_close_tab. The scoping flags limit what the client sees.
    Mcp(mcp::McpArgs),
    /// Block until a tool or a tab appears; prints where.
    Wait(wait::WaitArgs),
    /// The browser's native-messaging host (the browser starts it; see install-native-host).
    NativeHost(native_host::NativeHostArgs),
    /// Register `browserctl native-host` with Chromium-family browsers for this user.
    InstallNativeHost(install_host::InstallArgs),
    /// Print a shell completion script: `browserctl completions bash > ~/.local/share/bash-completion/completions/browserctl`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Install (or with --uninstall remove) the systemd user units or the launchd LaunchAgent.
    Setup(setup::SetupArgs),
    /// Check the daemon, its socket and directories, the native host and the extensions; each
    /// check passes (✓) or fails (✗) with a fix. Exits 1 when any check fails.
    Doctor,
}

/// Runs browserctl and returns its exit code.
pub async fn run(cli: Cli) -> ExitCode {
    let socket = cli
        .socket
        .clone()
        .unwrap_or_else(crate::paths::default_socket_path);
    let explicit_socket = cli.socket.is_some();
    let client = Client::new(socket);
    let json = cli.json;
    let result = match cli.command {
        Command::Status => listing::status(&client, json).await,
        Command::Browsers => listing::browsers(&client, json).await,
        Command::Tabs { browser } => listing::tabs(&client, browser.as_deref(), json).await,
        Command::Tools { tab, browser } => {
            listing::tools(&client, tab.as_deref(), browser.as_deref(), json).await
        }
        Command::Call(args) => call::run(&client, args, json, Cli::command)
            .await
            .map_err(|s| s.hint(ErrorCode::AmbiguousTarget, "choose one with --tab")),
        Command::Open {
            url,
            focus,
            browser,
        } => listing::open(&client, url, focus, browser, json)
            .await
            .map_err(|s| s.hint(ErrorCode::AmbiguousTarget, "choose one with --browser")),
        Command::Close { tab } => listing::close(&client, &tab, json).await,
        Command::Discover { tab } => listing::discover(&client, &tab, json).await,
        Command::Events(args) => events::run(&client, args).await,
        Command::Mcp(args) => mcp::run(&client, args, json, explicit_socket).await,
        Command::Wait(args) => wait::run(&client, args, json).await,
        Command::InstallNativeHost(args) => install_host::run(args, json),
        // Talks to the browser over stdio, not to the daemon, and has its own exit.
        Command::NativeHost(args) => return native_host::run(args),
        Command::Completions { shell } => completions::run(shell, Cli::command()),
        Command::Setup(args) => setup::run(args),
        Command::Doctor => match doctor::run(&client, json).await {
            Ok(true) => Ok(()),
            Ok(false) => return ExitCode::FAILURE,
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) | Err(Stop::BrokenPipe) => ExitCode::SUCCESS,
        Err(Stop::Api(e)) => {
            output::print_error(&e, json);
            ExitCode::from(e.code.exit_code())
        }
    }
}

/// The exit code of an error code (for documentation and tests).
pub fn exit_code(code: ErrorCode) -> u8 {
    code.exit_code()
}
