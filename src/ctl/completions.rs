//! Shell completion: `browserctl completions SHELL` prints a script that asks browserctl for
//! candidates as the user types (clap_complete's dynamic engine), so tab ids, tool names,
//! tool parameters and browser ids come from the running daemon; commands, options and event
//! types complete without one. `--static` prints a script that never runs browserctl.
//!
//! At completion time the shell runs `BROWSER_MCP_COMPLETE=SHELL browserctl -- WORDS…`;
//! [`complete_from_env`] answers that before anything else happens.

use super::output::{print, print_json, Stop};
use crate::client::Client;
use crate::protocol::control::{Browsers, Tabs, Tools};
use clap_complete::engine::{ArgValueCandidates, ArgValueCompleter, CompletionCandidate};
use clap_complete::env::EnvCompleter;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::time::Duration;

/// The environment variable that turns a run of browserctl into a completion request.
pub const COMPLETE_ENV: &str = "BROWSER_MCP_COMPLETE";

/// How long a completion waits for the daemon: a shell must not hang on a dead socket.
const DAEMON_WAIT: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    #[value(name = "powershell")]
    PowerShell,
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
    /// A script that completes commands, options and fixed values only, and never runs
    /// browserctl while completing.
    #[arg(long = "static")]
    pub static_only: bool,
    /// Print {"shell", "kind", "script"} instead of the bare script.
    #[arg(long)]
    pub json: bool,
}

impl Shell {
    fn aot(self) -> clap_complete::Shell {
        match self {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
            Shell::Elvish => clap_complete::Shell::Elvish,
            Shell::PowerShell => clap_complete::Shell::PowerShell,
        }
    }

    fn dynamic(self) -> &'static dyn EnvCompleter {
        match self {
            Shell::Bash => &clap_complete::env::Bash,
            Shell::Zsh => &clap_complete::env::Zsh,
            Shell::Fish => &clap_complete::env::Fish,
            Shell::Elvish => &clap_complete::env::Elvish,
            Shell::PowerShell => &clap_complete::env::Powershell,
        }
    }
}

/// browserctl's whole clap command (`ctl::command`), passed in by the caller so that this
/// module need not import its parent.
pub type CommandFactory = fn() -> clap::Command;

/// The script for a shell. The dynamic one runs `browserctl` from PATH as the user types.
pub fn script(shell: Shell, static_only: bool, command: CommandFactory) -> String {
    let mut out = Vec::new();
    if static_only {
        clap_complete::generate(shell.aot(), &mut command(), "browserctl", &mut out);
    } else {
        let _ = shell.dynamic().write_registration(
            COMPLETE_ENV,
            "browserctl",
            "browserctl",
            "browserctl",
            &mut out,
        );
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn run(a: CompletionsArgs, json: bool, command: CommandFactory) -> Result<(), Stop> {
    let text = script(a.shell, a.static_only, command);
    if json {
        return print_json(&serde_json::json!({
            "shell": a.shell.dynamic().name(),
            "kind": if a.static_only { "static" } else { "dynamic" },
            "script": text,
        }));
    }
    print(&text)
}

/// Answers a completion request when the shell made one (see the module doc) and exits;
/// returns at once otherwise.
pub fn complete_from_env(command: CommandFactory) {
    clap_complete::CompleteEnv::with_factory(command)
        .var(COMPLETE_ENV)
        .bin("browserctl")
        .completer("browserctl")
        .complete();
}

/// The words of the command line being completed: what follows `--` in our own arguments.
fn words() -> Vec<String> {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match args.iter().position(|a| a == "--") {
        Some(i) => args[i + 1..].to_vec(),
        None => Vec::new(),
    }
}

/// The socket the command line being completed names, else the usual one.
fn socket() -> PathBuf {
    let words = words();
    let given = words.iter().enumerate().find_map(|(i, w)| {
        w.strip_prefix("--socket=").map(str::to_owned).or_else(|| {
            (w == "--socket")
                .then(|| words.get(i + 1).cloned())
                .flatten()
        })
    });
    given
        .map(PathBuf::from)
        .or_else(|| std::env::var_os(crate::paths::SOCKET_ENV).map(PathBuf::from))
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(crate::paths::client_socket_path)
}

/// `GET path` on the daemon, or `None` when it does not answer quickly.
fn fetch<T: serde::de::DeserializeOwned>(path: &str) -> Option<T> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let client = Client::new(socket());
    rt.block_on(async { tokio::time::timeout(DAEMON_WAIT, client.get::<T>(path)).await })
        .ok()?
        .ok()
}

fn matching(current: &OsStr, all: Vec<(String, String)>) -> Vec<CompletionCandidate> {
    let current = current.to_string_lossy();
    all.into_iter()
        .filter(|(value, _)| value.starts_with(current.as_ref()))
        .map(|(value, help)| CompletionCandidate::new(value).help(Some(help.into())))
        .collect()
}

fn browser_candidates(current: &OsStr) -> Vec<CompletionCandidate> {
    let list = fetch::<Browsers>("/v1/browsers").map_or(Vec::new(), |b| b.browsers);
    matching(
        current,
        list.into_iter()
            .map(|b| {
                let help = format!("{} {} ({} tabs)", b.name, b.version, b.tabs);
                (b.id, help)
            })
            .collect(),
    )
}

fn tab_candidates(current: &OsStr) -> Vec<CompletionCandidate> {
    let list = fetch::<Tabs>("/v1/tabs").map_or(Vec::new(), |t| t.tabs);
    matching(
        current,
        list.into_iter()
            .map(|t| {
                let help = format!("{} — {}", t.title, t.url);
                (t.tab_ref, help)
            })
            .collect(),
    )
}

/// Live browser ids for `--browser`.
pub fn browsers() -> ArgValueCompleter {
    ArgValueCompleter::new(browser_candidates)
}

/// Live tab ids for `--tab` and the commands that take a tab.
pub fn tabs() -> ArgValueCompleter {
    ArgValueCompleter::new(tab_candidates)
}

/// The event types of `events --type`.
pub fn event_types() -> ArgValueCandidates {
    ArgValueCandidates::new(|| {
        crate::protocol::control::event_kind::ALL
            .iter()
            .map(|k| CompletionCandidate::new(*k))
            .collect()
    })
}

/// What follows `browserctl call`: first the tool's name, then its parameters (from its
/// inputSchema) and browserctl's own options.
pub fn call_words() -> ArgValueCompleter {
    ArgValueCompleter::new(call_candidates)
}

fn call_candidates(current: &OsStr) -> Vec<CompletionCandidate> {
    let words = words();
    let Some(start) = words.iter().position(|w| w == "call") else {
        return Vec::new();
    };
    // The words typed after `call`, the one being completed left out.
    let before: Vec<&String> = words[start + 1..words.len().saturating_sub(1)]
        .iter()
        .collect();
    let mut tool: Option<&str> = None;
    let mut i = 0;
    while i < before.len() {
        let w = before[i].as_str();
        if let Some(name) = w.strip_prefix("--") {
            let own = super::args::CALL_OWN_OPTIONS
                .iter()
                .find(|(o, _)| *o == name)
                .is_some_and(|(_, takes)| *takes);
            if own || tool.is_some() {
                i += 1; // its value
            }
        } else if tool.is_none() && !w.starts_with('-') {
            tool = Some(w);
        }
        i += 1;
    }
    let tools = fetch::<Tools>("/v1/tools").map_or(Vec::new(), |t| t.tools);
    let Some(tool) = tool else {
        if current.to_string_lossy().starts_with('-') {
            return Vec::new();
        }
        let mut names: Vec<(String, String)> = tools
            .into_iter()
            .map(|t| (t.name, t.description.unwrap_or_default()))
            .collect();
        names.sort();
        names.dedup_by(|a, b| a.0 == b.0);
        return matching(current, names);
    };
    let mut options: Vec<(String, String)> = Vec::new();
    if let Some(t) = tools.iter().find(|t| t.name == tool) {
        let schema: serde_json::Value =
            serde_json::from_str(t.input_schema.get()).unwrap_or_default();
        if let Some(props) = schema["properties"].as_object() {
            for (name, p) in props {
                let help = p["description"].as_str().unwrap_or("").to_owned();
                options.push((format!("--{name}"), help));
            }
        }
    }
    for (name, _) in super::args::CALL_OWN_OPTIONS {
        options.push((format!("--{name}"), "browserctl's own option".to_owned()));
    }
    matching(current, options)
}

/// For tests: the candidates for a command line, as the engine computes them.
pub fn candidates(words: &[&str], index: usize, command: CommandFactory) -> Vec<String> {
    let args: Vec<OsString> = words.iter().map(OsString::from).collect();
    clap_complete::engine::complete(&mut command(), args, index, None)
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.get_value().to_string_lossy().into_owned())
        .collect()
}
