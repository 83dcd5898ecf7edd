//! `browserctl browser launch|close|list`: browsers the daemon launches and looks after, for
//! pipelines with nobody at the screen (issue 32). The daemon starts the browser with our
//! extension, connected to it by construction; these are thin clients of
//! `POST /v1/browsers`, `DELETE /v1/browsers/{ref}` and `GET /v1/browsers`.

use super::client::Client;
use super::output::{note, print, print_json, print_listing, Column, Format, ListOutput, Stop};
use crate::paths::parse_duration;
use crate::protocol::control::Browsers;
use crate::protocol::managed::{InputChoice, LaunchRequest, ManagedView, RestartPolicy, KINDS};
use hyper::Method;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct BrowserArgs {
    #[command(subcommand)]
    pub action: Action,
    #[command(flatten)]
    pub globals: super::args::Globals,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Restart {
    /// Report an exit (event browserExited, state exited) and leave it.
    Never,
    /// Report an exit and start the browser again on the same profile (up to 5 times).
    OnFailure,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Input {
    /// The browser's own input, as a person's mouse and keyboard make it.
    Trusted,
    /// The extension's DOM events alone.
    Synthetic,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Start a browser with the extension, connected to this daemon, and print its browser
    /// ref (b3) once its first tab is listed.
    ///
    /// No scan, no pairing, no person: the daemon installs its native host into the profile
    /// it creates. Headless when the daemon has no display (a service, CI), else headed;
    /// --headless or --headed decide. The daemon stops it with `browser close`, when it
    /// stops itself, or at its next start if it was killed.
    Launch {
        /// chromium, chrome, edge, brave or firefox, as installed on this machine (never
        /// downloaded) [default: the daemon's launch-browser, else the first one found].
        #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(KINDS))]
        browser: Option<String>,
        /// No window, whether or not there is a display.
        #[arg(long, conflicts_with = "headed")]
        headless: bool,
        /// A window, even where the daemon would go headless.
        #[arg(long)]
        headed: bool,
        /// A persistent profile, kept under the daemon's profiles-dir
        /// ($XDG_DATA_HOME/browser-mcp/profiles/NAME): log in once headed, reuse it headless.
        /// Without it the profile is temporary and removed when the browser closes.
        #[arg(long, value_name = "NAME")]
        profile: Option<String>,
        /// The page to open [default: about:blank]. An http(s) page opens once the extension is
        /// up, in a tab of its own (the start-up tab closes), so it is the agent's from its first line.
        #[arg(long)]
        url: Option<String>,
        /// What the daemon does when the browser exits by itself.
        #[arg(long, value_enum, default_value_t = Restart::Never)]
        restart: Restart,
        /// How long to wait for the first tab [default: the daemon's launch-timeout, 60s].
        #[arg(long, value_parser = parse_duration)]
        timeout: Option<Duration>,
        /// The input the agent's clicks and keys make: the browser's own (trusted), or the
        /// extension's DOM events alone (synthetic: in Firefox no WebDriver BiDi, so pages see
        /// navigator.webdriver false).
        #[arg(long, value_enum, default_value_t = Input::Trusted)]
        input: Input,
    },
    /// Close a browser the daemon launched: SIGTERM, SIGKILL after a grace; a temporary
    /// profile is removed. The user's own browsers are never closed.
    Close {
        /// Its browser ref (b3) or session id.
        #[arg(add = super::completions::browsers())]
        browser: String,
    },
    /// The browsers the daemon launched, running or not, with their state.
    List {
        /// Output format [default: table on a terminal, tsv otherwise].
        #[arg(short = 'o', long = "output", value_enum, value_name = "FORMAT")]
        output: Option<Format>,
        /// Leave out the header row (table, wide and tsv).
        #[arg(long)]
        no_headers: bool,
    },
}

impl BrowserArgs {
    pub fn socket(&self) -> super::args::SocketArg {
        self.globals.socket()
    }

    pub fn json(&self) -> bool {
        self.globals.json
            || matches!(
                self.action,
                Action::List {
                    output: Some(Format::Json),
                    ..
                }
            )
    }
}

pub async fn run(c: &Client, args: BrowserArgs, json: bool) -> Result<(), Stop> {
    match args.action {
        Action::Launch {
            browser,
            headless,
            headed,
            profile,
            url,
            restart,
            timeout,
            input,
            ..
        } => {
            let req = LaunchRequest {
                browser,
                headless: match (headless, headed) {
                    (true, _) => Some(true),
                    (_, true) => Some(false),
                    _ => None,
                },
                profile,
                url,
                restart: match restart {
                    Restart::Never => RestartPolicy::Never,
                    Restart::OnFailure => RestartPolicy::OnFailure,
                },
                timeout_ms: timeout.map(|t| t.as_millis() as u64),
                input: match input {
                    Input::Trusted => InputChoice::Trusted,
                    Input::Synthetic => InputChoice::Synthetic,
                },
            };
            let v: ManagedView = tokio::select! {
                v = c.json(Method::POST, "/v1/browsers", Some(&req)) => v?,
                _ = tokio::signal::ctrl_c() => return Err(Stop::Interrupted),
            };
            if json {
                return print_json(&v);
            }
            note(&format!(
                "{}: {} ({}{}, {} profile{}), first tab {}",
                v.browser,
                v.kind,
                if v.headless { "headless" } else { "headed" },
                if v.input.is_trusted() {
                    ""
                } else {
                    ", synthetic input"
                },
                if v.profile.is_some() {
                    "persistent"
                } else {
                    "temporary"
                },
                v.profile
                    .as_deref()
                    .map(|p| format!(" {p}"))
                    .unwrap_or_default(),
                v.tab.as_deref().unwrap_or("-")
            ));
            print(&format!("{}\n", v.browser))
        }
        Action::Close { browser, .. } => {
            let path = format!("/v1/browsers/{}", crate::client::encode(&browser));
            let v: ManagedView = c.json(Method::DELETE, &path, None::<&()>).await?;
            if json {
                print_json(&v)
            } else {
                print(&format!("{}\n", v.browser))
            }
        }
        Action::List { output, no_headers } => {
            let list: Browsers = c.get("/v1/browsers").await?;
            let out = ListOutput {
                output,
                json,
                no_headers,
            };
            list_managed(&list.managed, &out)
        }
    }
}

fn list_managed(managed: &[ManagedView], out: &ListOutput) -> Result<(), Stop> {
    const COLUMNS: [Column; 7] = [
        Column::new("ID"),
        Column::new("KIND"),
        Column::new("STATE"),
        Column::new("PID"),
        Column::new("MODE"),
        Column::new("PROFILE").clip(24),
        Column::new("EXIT"),
    ];
    let rows: Vec<Vec<String>> = managed
        .iter()
        .map(|m| {
            vec![
                m.browser.clone(),
                m.kind.clone(),
                m.state.clone(),
                m.pid.map(|p| p.to_string()).unwrap_or_else(|| "-".into()),
                if m.headless { "headless" } else { "headed" }.into(),
                m.profile.clone().unwrap_or_else(|| "(temporary)".into()),
                m.exit.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    print_listing(
        "managed",
        managed,
        &COLUMNS,
        &rows,
        out.format(),
        !out.no_headers,
        || {
            "no browser launched by this daemon; start one with `browserctl browser launch`"
                .to_owned()
        },
    )
}
