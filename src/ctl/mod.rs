//! browserctl: the command-line client of browser-mcpd's control API.
//!
//! A thin client: each command is one or two requests to the daemon's Unix socket, printed as
//! a table for people or JSON (`--json`) for programs. Errors go to stderr as
//! `browserctl: CODE: message` and set an exit code derived from the code.
//!
//! Options live on the commands that use them, so `--help` offers only what a command does
//! something with; `--socket` and `--json` are also taken before the command, and refused
//! there by a command they mean nothing to.

pub mod args;
pub mod browser;
pub mod call;
pub mod client;
pub mod clients;
pub mod completions;
pub mod consent;
pub mod dial_stdio;
pub mod doctor;
pub mod events;
pub mod forward;
pub mod install_host;
pub mod listing;
pub mod mcp;
mod mcp_relay;
mod named_files;
pub mod native_host;
pub mod output;
pub mod pair;
pub mod setup;
pub mod token;
pub mod usage;
pub mod wait;

use crate::error::ErrorCode;
pub use args::SocketArg;
use clap::parser::ValueSource;
use clap::{Parser, Subcommand};
use client::Client;
use output::{Format, JsonOutput, ListOutput, Stop};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
pub use usage::{wants_json, ParseError, UsageError};

pub use output::EXIT_CODES_HELP;

#[derive(Debug, Parser)]
#[command(
    name = "browserctl",
    bin_name = "browserctl",
    version,
    about = "Talk to browser-mcpd: list browsers, tabs and tools, call tools, open and close tabs, follow events",
    after_help = EXIT_CODES_HELP
)]
pub struct Cli {
    /// The daemon's control socket, for every command that talks to the daemon (also
    /// accepted after the command); with --host, typed here, the one on that machine [default:
    /// $XDG_RUNTIME_DIR/browser-mcp/browser-mcpd.sock].
    #[arg(long, env = crate::paths::SOCKET_ENV, value_name = "PATH")]
    pub socket: Option<PathBuf>,

    /// Talk to another machine's daemon through ssh (ssh://[user@]host[:port]), for every
    /// command that talks to the daemon (also accepted after the command).
    #[arg(long, env = crate::client::ssh::HOST_ENV, value_name = "URL")]
    pub host: Option<crate::client::SshTarget>,

    /// Print JSON instead of text, errors included, for every command that takes --json
    /// (also accepted after the command).
    #[arg(long)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The daemon's state: version, port, counts, calls.
    Status {
        #[command(flatten)]
        socket: SocketArg,
        #[command(flatten)]
        out: JsonOutput,
    },
    /// Connected browsers.
    Browsers {
        #[command(flatten)]
        socket: SocketArg,
        #[command(flatten)]
        out: ListOutput,
    },
    /// Open tabs of every connected browser (`*` marks each browser's focused tab).
    Tabs {
        /// Only this browser's tabs (b1, or its session id).
        #[arg(long, add = completions::browsers())]
        browser: Option<String>,
        #[command(flatten)]
        socket: SocketArg,
        #[command(flatten)]
        out: ListOutput,
    },
    /// Tools offered by tabs.
    Tools {
        /// Only this tab's tools (b1:12, or 12 when unique).
        #[arg(long, add = completions::tabs())]
        tab: Option<String>,
        /// Only this browser's tools.
        #[arg(long, add = completions::browsers())]
        browser: Option<String>,
        #[command(flatten)]
        socket: SocketArg,
        #[command(flatten)]
        out: ListOutput,
    },
    /// Call a tool: `browserctl call search --query test`.
    ///
    /// Tool parameters are given as --NAME VALUE and typed from the tool's inputSchema
    /// (numbers, booleans, arrays as repeated flags or JSON, objects as JSON); --args takes
    /// a JSON object (or - to read it from stdin). `browserctl call TOOL --help` shows the
    /// tool's own parameters. browserctl's own options may come before or after TOOL; after
    /// `--`, everything is a tool parameter.
    ///
    /// Without --tab, the call goes to the only tab that offers the tool; when several do,
    /// to the focused one among them if exactly one is focused, else it fails with
    /// AMBIGUOUS_TARGET and lists them. The tab that answered is in the JSON output (`tab`)
    /// and, with -v, on stderr. Ctrl-C cancels the call in the daemon (exit 130).
    #[command(disable_help_flag = true)]
    Call(call::CallArgs),
    /// Hand a tab to the person and wait until they are done (`browser_handoff`).
    ///
    /// The browser brings the tab forward and asks the person, in a notification and its
    /// popup, to do what --reason says (sign in, a 2FA code, a CAPTCHA); the command returns
    /// the tab's snapshot and what changed once they click Done, or fails with
    /// HANDOFF_DECLINED (23), HANDOFF_TIMEOUT (24) or NO_PERSON (25). Meanwhile other calls
    /// on the tab fail with HANDOFF_IN_PROGRESS (22).
    Handoff(call::HandoffArgs),
    /// The consent prompts that wait for you in the browser: list them, answer one.
    ///
    /// Only you (your uid, on this machine or through your own ssh link with --host) can:
    /// an agent's MCP session has no way to. Exit 27 (CONSENT_NOT_FOUND) when no such prompt
    /// waits, 28 (CONSENT_ANSWERED) when it was answered already.
    Consent(consent::ConsentArgs),
    /// Open a tab and print it once the browser reports it.
    Open {
        /// The URL to open.
        url: String,
        /// Focus the new tab.
        #[arg(long)]
        focus: bool,
        /// The browser to open it in (b1); needed when several browsers are connected.
        #[arg(long, add = completions::browsers())]
        browser: Option<String>,
        #[command(flatten)]
        socket: SocketArg,
        #[command(flatten)]
        out: JsonOutput,
    },
    /// Close a tab.
    Close {
        /// The tab: b1:12, or 12 when unique.
        #[arg(add = completions::tabs())]
        tab: String,
        #[command(flatten)]
        socket: SocketArg,
        #[command(flatten)]
        out: JsonOutput,
    },
    /// Ask a tab for its tools afresh and list them.
    Discover {
        /// The tab: b1:12, or 12 when unique.
        #[arg(add = completions::tabs())]
        tab: String,
        #[command(flatten)]
        socket: SocketArg,
        #[command(flatten)]
        out: ListOutput,
    },
    /// Follow the event stream (NDJSON, one event a line).
    ///
    /// Ends after --count events (exit 0), when stdout is closed (exit 0), or when the daemon
    /// stops: then it says so on stderr with the last sequence number seen, for --since, and
    /// exits 3 (DAEMON_UNAVAILABLE).
    Events(events::EventsArgs),
    /// Serve the tabs' tools to an AI client over MCP (stdio), or print its config.
    ///
    /// The client sees each built-in browser_* tool once (its `tab` argument, else the
    /// session's current tab, says where a call goes), the current tab's page tools by name,
    /// and browserctl_list_tabs, _select_tab, _open_tab, _close_tab, _list_tools and
    /// _call_tool, which reach every tab. The scoping flags limit what the client sees.
    Mcp(mcp::McpArgs),
    /// Block until a tool or a tab appears; prints where.
    Wait(wait::WaitArgs),
    /// Browsers the daemon launches and looks after, for pipelines: launch, close, list.
    Browser(browser::BrowserArgs),
    /// Pair a browser with your daemons: prints a one-time code to enter in the extension.
    ///
    /// Without the native-messaging host, the extension finds daemons by scanning ports, and
    /// any local program can answer there; it talks only to a daemon that proves it holds a
    /// key the browser holds too. `browserctl pair` makes that key: enter the code it prints
    /// in the extension's popup (or settings page). The pairing is per browser profile, works
    /// with every daemon of your user and survives restarts. --list shows the pairings,
    /// --revoke ID removes one and disconnects its browser.
    Pair(pair::PairArgs),
    /// The token MCP clients' HTTP configurations carry: it stays the same across daemon
    /// restarts; `browserctl token rotate` replaces it and names the configurations to update.
    Token(token::TokenArgs),
    /// The browser's native-messaging host (the browser starts it; see install-native-host).
    NativeHost(native_host::NativeHostArgs),
    /// Register `browserctl native-host` with this user's browsers (Chromium family, Firefox).
    InstallNativeHost(install_host::InstallArgs),
    /// Print a shell completion script.
    ///
    /// The script asks browserctl for candidates as you type, so tab ids, tool names and
    /// browser ids come from the running daemon (commands and options complete without
    /// one): `browserctl completions bash > ~/.local/share/bash-completion/completions/browserctl`.
    /// --static prints a script that needs no browserctl at completion time (no live values).
    Completions(completions::CompletionsArgs),
    /// Install (or with --uninstall remove) the systemd user units or the launchd LaunchAgent,
    /// and the man pages beside a cargo-installed browserctl (~/.cargo/share/man).
    Setup(setup::SetupArgs),
    /// Check the daemon, its socket and directories, the native host and the extensions; each
    /// check passes (✓) or fails (✗) with a fix. Exits 1 when any check fails.
    Doctor {
        /// Check the native host in this custom user-data directory of a Chromium-family
        /// browser too (one started with --user-data-dir); repeatable.
        #[arg(long = "user-data-dir", value_name = "DIR")]
        user_data_dirs: Vec<PathBuf>,
        #[command(flatten)]
        socket: SocketArg,
        #[command(flatten)]
        out: JsonOutput,
    },
    /// Lend this machine's browser to another one you can ssh to (e.g. a dev box behind NAT).
    #[command(long_about = forward::LONG_HELP)]
    Forward(forward::ForwardArgs),
    /// Plumbing for --host: joins stdin and stdout to this user's control socket.
    #[command(hide = true)]
    DialStdio(dial_stdio::DialStdioArgs),
    /// Plumbing for forward: the far end's directory, and whether the forward is up.
    #[command(hide = true)]
    ForwardEnd(forward::EndArgs),
}

impl Command {
    /// The name as typed.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Status { .. } => "status",
            Command::Browsers { .. } => "browsers",
            Command::Tabs { .. } => "tabs",
            Command::Tools { .. } => "tools",
            Command::Call(_) => "call",
            Command::Handoff(_) => "handoff",
            Command::Consent(_) => "consent",
            Command::Open { .. } => "open",
            Command::Close { .. } => "close",
            Command::Discover { .. } => "discover",
            Command::Events(_) => "events",
            Command::Mcp(_) => "mcp",
            Command::Wait(_) => "wait",
            Command::Browser(_) => "browser",
            Command::Pair(_) => "pair",
            Command::Token(_) => "token",
            Command::NativeHost(_) => "native-host",
            Command::InstallNativeHost(_) => "install-native-host",
            Command::Completions(_) => "completions",
            Command::Setup(_) => "setup",
            Command::Doctor { .. } => "doctor",
            Command::Forward(_) => "forward",
            Command::DialStdio(_) => "dial-stdio",
            Command::ForwardEnd(_) => "forward-end",
        }
    }

    /// The command's own `--socket`; `None` for commands that do not talk to the daemon.
    fn socket_arg(&self) -> Option<SocketArg> {
        match self {
            Command::Browser(a) => Some(a.socket()),
            Command::Consent(a) => Some(a.socket()),
            Command::Status { socket, .. }
            | Command::Browsers { socket, .. }
            | Command::Tabs { socket, .. }
            | Command::Tools { socket, .. }
            | Command::Open { socket, .. }
            | Command::Close { socket, .. }
            | Command::Discover { socket, .. }
            | Command::Doctor { socket, .. } => Some(socket.clone()),
            Command::Call(a) => Some(a.socket.clone()),
            Command::Handoff(a) => Some(a.socket.clone()),
            Command::Events(a) => Some(a.socket.clone()),
            Command::Mcp(a) => Some(a.socket.clone()),
            Command::Wait(a) => Some(a.socket.clone()),
            Command::Pair(a) => Some(a.socket.clone()),
            Command::Token(a) => Some(a.socket.clone()),
            Command::Forward(a) => Some(a.socket.clone()),
            Command::DialStdio(a) => Some(a.socket.clone()),
            Command::ForwardEnd(_)
            | Command::NativeHost(_)
            | Command::InstallNativeHost(_)
            | Command::Completions(_)
            | Command::Setup(_) => None,
        }
    }

    /// The command's own `--json`; `None` for the one command that has none (native-host).
    fn json_arg(&self) -> Option<bool> {
        match self {
            Command::Status { out, .. }
            | Command::Open { out, .. }
            | Command::Close { out, .. }
            | Command::Doctor { out, .. } => Some(out.json),
            Command::Browsers { out, .. }
            | Command::Tabs { out, .. }
            | Command::Tools { out, .. }
            | Command::Discover { out, .. } => Some(out.json || out.output == Some(Format::Json)),
            Command::Call(a) => Some(a.json),
            Command::Handoff(a) => Some(a.json),
            Command::Events(a) => Some(a.json),
            Command::Mcp(a) => Some(a.json),
            Command::Wait(a) => Some(a.json),
            Command::Browser(a) => Some(a.json()),
            Command::Consent(a) => Some(a.json()),
            Command::Pair(a) => Some(a.json),
            Command::Token(a) => Some(a.json),
            Command::InstallNativeHost(a) => Some(a.json),
            Command::Completions(a) => Some(a.json),
            Command::Setup(a) => Some(a.json),
            Command::Forward(a) => Some(a.json),
            Command::NativeHost(_) | Command::DialStdio(_) | Command::ForwardEnd(_) => None,
        }
    }
}

/// A parsed command line: the command, with the options given before it merged in.
#[derive(Debug)]
pub struct Invocation {
    pub command: Command,
    /// `--json` anywhere it is taken.
    pub json: bool,
    /// The control socket: the command's `--socket`, else the one before the command, else
    /// $BROWSER_MCP_SOCKET; `None` when none was given.
    pub socket: Option<PathBuf>,
    /// The other machine (`--host`, $BROWSER_MCP_HOST), the same way.
    pub host: Option<crate::client::SshTarget>,
}

/// The clap command of browserctl (for completions, man pages and tests).
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    Cli::command()
}

/// Parses a command line. Options given before the command are refused, as a usage error,
/// by a command they mean nothing to (`browserctl --json native-host`).
pub fn parse(argv: &[OsString]) -> Result<Invocation, ParseError> {
    use clap::FromArgMatches;
    let matches = command()
        .try_get_matches_from(argv)
        .map_err(UsageError::Clap)?;
    let typed_socket = matches.value_source("socket") == Some(ValueSource::CommandLine);
    let typed_host = matches.value_source("host") == Some(ValueSource::CommandLine);
    let mut cli = Cli::from_arg_matches(&matches).map_err(UsageError::Clap)?;
    if let Command::Call(a) = &mut cli.command {
        a.split().map_err(|e| UsageError::Refused(e.message))?;
    }
    let name = cli.command.name();
    let refuse = |flag: &str| {
        UsageError::Refused(format!(
            "`browserctl {name}` does not take {flag}; see `browserctl {name} --help`"
        ))
    };
    let (socket, host, socket_typed) = match cli.command.socket_arg() {
        Some(own) => (
            own.socket.clone().or(cli.socket),
            own.host.clone().or(cli.host),
            own.socket.is_some() || typed_socket,
        ),
        None if typed_socket => return Err(refuse("--socket").into()),
        None if typed_host => return Err(refuse("--host").into()),
        None => (None, None, false),
    };
    // With --host, a socket typed on the command line is the one on that machine; this
    // machine's $BROWSER_MCP_SOCKET means nothing there.
    let socket = match host {
        Some(_) if !socket_typed => None,
        _ => socket,
    };
    let json = match cli.command.json_arg() {
        Some(own) => own || cli.json,
        None if cli.json => return Err(refuse("--json").into()),
        None => false,
    };
    Ok(Invocation {
        command: cli.command,
        json,
        socket,
        host,
    })
}

impl Invocation {
    /// Runs the command if it needs no async runtime (`None` when it does). Serving
    /// `browserctl mcp` is two plain threads for as long as the client stays; a runtime
    /// started for it would only add to the memory it holds all that time (issue 17).
    pub fn run_without_runtime(&self) -> Option<ExitCode> {
        match &self.command {
            Command::Mcp(args) if !args.print_config => Some(
                match self.client().and_then(|client| mcp::serve(client, args)) {
                    Ok(()) => ExitCode::SUCCESS,
                    // Said on stderr as it happened (clients keep a server's stderr).
                    Err(e) => ExitCode::from(e.code.exit_code()),
                },
            ),
            Command::DialStdio(args) => Some(match &self.host {
                Some(_) => fail(&forward::no_host("dial-stdio"), true),
                None => dial_stdio::run(args, self.socket.clone()),
            }),
            _ => None,
        }
    }

    /// The client of the daemon this command talks to: another machine's through ssh
    /// (`--host`, at the socket given or the one it finds there), else the socket given,
    /// else the one found (`paths::client_socket_path`).
    fn client(&self) -> Result<Client, crate::error::Error> {
        match &self.host {
            Some(target) => Client::over_ssh(target.clone(), self.socket.clone()),
            None => Ok(self
                .socket
                .clone()
                .map(Client::new)
                .unwrap_or_else(Client::found)),
        }
    }
}

/// Runs browserctl and returns its exit code.
pub async fn run(inv: Invocation) -> ExitCode {
    let explicit_socket = inv.socket.is_some();
    let json = inv.json;
    let client = match inv.client() {
        Ok(c) => c,
        Err(e) => return fail(&e, json),
    };
    let result = match inv.command {
        Command::Status { .. } => listing::status(&client, json).await,
        Command::Browsers { out, .. } => listing::browsers(&client, &out.with_json(json)).await,
        Command::Tabs { browser, out, .. } => {
            listing::tabs(&client, browser.as_deref(), &out.with_json(json)).await
        }
        Command::Tools {
            tab, browser, out, ..
        } => {
            listing::tools(
                &client,
                tab.as_deref(),
                browser.as_deref(),
                &out.with_json(json),
            )
            .await
        }
        Command::Call(args) => call::run(&client, args, json, command)
            .await
            .map_err(|s| s.hint(ErrorCode::AmbiguousTarget, "choose one with --tab")),
        Command::Handoff(args) => call::run(&client, args.call(), json, command).await,
        Command::Consent(args) => consent::run(&client, args, json).await,
        Command::Open {
            url,
            focus,
            browser,
            ..
        } => listing::open(&client, url, focus, browser, json)
            .await
            .map_err(|s| s.hint(ErrorCode::AmbiguousTarget, "choose one with --browser")),
        Command::Close { tab, .. } => listing::close(&client, &tab, json).await,
        Command::Discover { tab, out, .. } => {
            listing::discover(&client, &tab, &out.with_json(json)).await
        }
        Command::Events(args) => events::run(&client, args, json).await,
        Command::Mcp(args) => mcp::run(&client, args, json, explicit_socket).await,
        Command::Wait(args) => wait::run(&client, args, json).await,
        Command::Browser(args) => browser::run(&client, args, json).await,
        Command::Pair(args) => pair::run(&client, args, json).await,
        Command::Token(args) => token::run(&client, args, json).await,
        Command::InstallNativeHost(args) => install_host::run(args, json),
        // Talks to the browser over stdio, not to the daemon, and has its own exit.
        Command::NativeHost(args) => return native_host::run(args),
        Command::Completions(args) => completions::run(args, json, command),
        Command::Setup(args) => setup::run(args, json),
        Command::Doctor { user_data_dirs, .. } => {
            match doctor::run(&client, json, &user_data_dirs).await {
                Ok(true) => Ok(()),
                Ok(false) => return ExitCode::FAILURE,
                Err(e) => Err(e),
            }
        }
        Command::Forward(args) => forward::run(&client, args, json).await,
        Command::DialStdio(args) => return dial_stdio::run(&args, inv.socket),
        Command::ForwardEnd(args) => return forward::end(&args),
    };
    match result {
        Ok(()) | Err(Stop::BrokenPipe) => ExitCode::SUCCESS,
        Err(Stop::Interrupted) => ExitCode::from(130),
        Err(Stop::Api(e)) => fail(&e, json),
    }
}

fn fail(e: &crate::error::Error, json: bool) -> ExitCode {
    output::print_error(e, json);
    ExitCode::from(e.code.exit_code())
}

/// The exit code of an error code (for documentation and tests).
pub fn exit_code(code: ErrorCode) -> u8 {
    code.exit_code()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fewest words each command needs to parse.
    const MINIMAL: &[(&str, &[&str])] = &[
        ("status", &[]),
        ("browsers", &[]),
        ("tabs", &[]),
        ("tools", &[]),
        ("call", &["search"]),
        ("handoff", &["--tab", "b1:7", "--reason", "sign in"]),
        ("consent", &["list"]),
        ("open", &["https://example.com"]),
        ("close", &["b1:1"]),
        ("discover", &["b1:1"]),
        ("events", &[]),
        ("mcp", &[]),
        ("wait", &["--tool", "x"]),
        ("browser", &["list"]),
        ("pair", &[]),
        ("token", &["rotate"]),
        ("native-host", &[]),
        ("install-native-host", &[]),
        ("completions", &["bash"]),
        ("setup", &[]),
        ("doctor", &[]),
        ("forward", &["ssh://devbox"]),
        ("dial-stdio", &[]),
        ("forward-end", &[]),
    ];

    fn parse_words(words: &[&str]) -> Result<Invocation, ParseError> {
        let argv: Vec<OsString> = std::iter::once("browserctl")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect();
        parse(&argv)
    }

    /// `--json` and `--socket` work in every position `--help` shows them, and a command
    /// whose help does not show them refuses them rather than ignoring them.
    #[test]
    fn global_flags_work_wherever_help_shows_them() {
        let mut cmd = command();
        cmd.build();
        let names: Vec<&str> = cmd
            .get_subcommands()
            .map(|s| s.get_name())
            .filter(|n| *n != "help")
            .collect();
        let covered: Vec<&str> = MINIMAL.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, covered, "every command has its minimal words here");
        for (name, rest) in MINIMAL {
            let sub = cmd.find_subcommand(name).unwrap();
            let offers = |flag: &str| {
                sub.get_arguments()
                    .any(|a| a.get_long() == Some(flag) && !a.is_hide_set())
            };
            for (flag, value) in [
                ("json", None),
                ("socket", Some("/s.sock")),
                ("host", Some("ssh://h")),
            ] {
                let mut before = vec![format!("--{flag}")];
                before.extend(value.map(str::to_owned));
                let mut words: Vec<&str> = before.iter().map(String::as_str).collect();
                words.push(name);
                words.extend_from_slice(rest);
                let first = parse_words(&words);
                let mut words: Vec<&str> = vec![name];
                words.extend_from_slice(rest);
                words.extend(before.iter().map(String::as_str));
                let after = parse_words(&words);
                if offers(flag) {
                    for (where_, inv) in [("before", first), ("after", after)] {
                        let inv =
                            inv.unwrap_or_else(|e| panic!("{name}: --{flag} {where_}: {e:?}"));
                        match flag {
                            "json" => assert!(inv.json, "{name}: --json {where_}"),
                            "host" => assert_eq!(
                                inv.host.map(|h| h.to_string()).as_deref(),
                                Some("ssh://h"),
                                "{name}: --host {where_}"
                            ),
                            _ => assert_eq!(
                                inv.socket.as_deref(),
                                Some(std::path::Path::new("/s.sock")),
                                "{name}: --socket {where_}"
                            ),
                        }
                    }
                } else {
                    assert!(first.is_err(), "{name} does not offer --{flag} yet took it");
                }
            }
        }
    }

    #[test]
    fn every_argument_says_what_it_is() {
        let mut cmd = command();
        cmd.build();
        let mut missing = Vec::new();
        for sub in std::iter::once(&cmd).chain(cmd.get_subcommands()) {
            for a in sub.get_arguments() {
                if !a.is_hide_set() && a.get_help().is_none() && a.get_long_help().is_none() {
                    missing.push(format!("{} {}", sub.get_name(), a.get_id()));
                }
            }
            assert!(
                sub.get_about().is_some() || sub.get_name() == "help",
                "{} has no description",
                sub.get_name()
            );
        }
        assert!(missing.is_empty(), "arguments without help: {missing:?}");
    }

    #[test]
    fn json_is_found_in_words_that_did_not_parse() {
        let w = |s: &[&str]| {
            let argv: Vec<OsString> = std::iter::once("browserctl")
                .chain(s.iter().copied())
                .map(OsString::from)
                .collect();
            wants_json(&argv)
        };
        assert!(w(&["tabs", "--bogus", "--json"]));
        assert!(w(&["tabs", "-o", "json", "--bogus"]));
        assert!(!w(&["call", "x", "--", "--json"]));
        assert!(!w(&["tabs", "-o", "tsv"]));
    }
}
