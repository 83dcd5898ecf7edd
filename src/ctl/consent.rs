//! `browserctl consent list|answer`: the consent prompts that wait for the person, answered
//! from a terminal as a click in the browser's popup would (issue 60). Thin clients of `GET
//! /v1/consent` and `POST /v1/consent/{id}`, which only the control socket serves: the
//! person's own uid, here or through their own ssh link (`--host`), never an agent's MCP
//! session.

use super::client::Client;
use super::output::{print, print_json, print_listing, Column, Format, ListOutput, Stop};
use crate::protocol::consent::{AnswerRequest, AnswerTaken, PromptList, PromptView, CHOICES};
use hyper::Method;

#[derive(Debug, clap::Args)]
pub struct ConsentArgs {
    #[command(subcommand)]
    pub action: Action,
    #[command(flatten)]
    pub globals: super::args::Globals,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// The prompts that wait for your answer: id, agent, site, tool, arguments, age, and the
    /// answers each takes.
    List {
        /// Output format [default: table on a terminal, tsv otherwise].
        #[arg(short = 'o', long = "output", value_enum, value_name = "FORMAT")]
        output: Option<Format>,
        /// Leave out the header row (table, wide and tsv).
        #[arg(long)]
        no_headers: bool,
    },
    /// Answer a waiting prompt, as the same button in the browser's popup would: the call goes
    /// on (or, with deny, fails with USER_DENIED) and the activity log says you answered from
    /// a terminal.
    ///
    /// allow-once: this call. allow-site: every agent on the site, from now on (Always for
    /// this site). allow-agent: this agent on the site, to read and act (Always for this
    /// agent). allow-agent-read, allow-site-read: this agent, or every agent, reading only
    /// (a call that acts takes neither). deny: the call does not run.
    Answer {
        /// The prompt's id, as `browserctl consent list` (or the consentRequested event)
        /// shows it.
        id: String,
        /// Your answer.
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(CHOICES.iter().map(|(t, _)| *t)))]
        choice: String,
    },
}

impl ConsentArgs {
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

pub async fn run(c: &Client, args: ConsentArgs, json: bool) -> Result<(), Stop> {
    match args.action {
        Action::List { output, no_headers } => {
            let list: PromptList = c.get("/v1/consent").await?;
            let out = ListOutput {
                output,
                json,
                no_headers,
            };
            list_prompts(&list.prompts, &out)
        }
        Action::Answer { id, choice } => {
            let path = format!("/v1/consent/{}", crate::client::encode(&id));
            let body = AnswerRequest { choice };
            let taken: AnswerTaken = c.json(Method::POST, &path, Some(&body)).await?;
            if json {
                print_json(&taken)
            } else {
                print(&format!(
                    "{}: {} (tab {})\n",
                    taken.id, taken.choice, taken.tab
                ))
            }
        }
    }
}

/// Seconds, as a person reads an age.
fn secs(ms: u64) -> String {
    format!("{}s", ms / 1000)
}

fn list_prompts(prompts: &[PromptView], out: &ListOutput) -> Result<(), Stop> {
    const COLUMNS: [Column; 9] = [
        Column::new("ID"),
        Column::new("AGENT").clip(24),
        Column::new("SITE").clip(40),
        Column::new("TOOL"),
        Column::new("ARGS").clip(40),
        Column::new("AGE"),
        Column::new("LEFT"),
        Column::new("TAB").wide(),
        Column::new("ANSWERS").wide(),
    ];
    let rows: Vec<Vec<String>> = prompts
        .iter()
        .map(|p| {
            vec![
                p.id.clone(),
                p.agent.clone().unwrap_or_else(|| "-".into()),
                p.site.clone(),
                p.tool.clone(),
                p.args_summary.clone().unwrap_or_else(|| "-".into()),
                secs(p.age_ms),
                p.remaining_ms.map(secs).unwrap_or_else(|| "-".into()),
                p.tab.clone(),
                p.choices.join(","),
            ]
        })
        .collect();
    print_listing(
        "prompts",
        prompts,
        &COLUMNS,
        &rows,
        out.format(),
        !out.no_headers,
        || "no consent prompt waits for an answer".to_owned(),
    )
}
