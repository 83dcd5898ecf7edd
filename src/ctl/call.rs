//! `browserctl call TOOL [--tab T] [--timeout D] [--retries N] [--args JSON|-] [--KEY VALUE…]`
//!
//! browserctl's own options may come before or after TOOL (they are told apart from the
//! tool's parameters by name; after `--` everything is a tool parameter), so the README's
//! `browserctl call search --query test --json | jq .` does what it says.

use super::client::{encode, Client};
use super::output::{note, print, print_json, Stop};
use crate::error::{Error, ErrorCode};
use crate::paths::parse_duration;
use crate::protocol::control::{CallRequest, CallResponse, Flags, ToolView, Tools};
use hyper::Method;
use serde_json::value::RawValue;
use serde_json::Value;
use std::io::Read;

#[derive(Debug, clap::Args)]
pub struct CallArgs {
    /// The tab to call (b1:12, or 12 when unique).
    #[arg(long, add = super::completions::tabs())]
    pub tab: Option<String>,
    /// Only consider this browser's tabs.
    #[arg(long, add = super::completions::browsers())]
    pub browser: Option<String>,
    /// The whole call's time budget, retries and their waits included (500ms, 5s, 1m; a bare
    /// number is seconds); a retry that cannot fit is not tried [default: none beyond the
    /// attempts' own].
    #[arg(long, value_parser = parse_timeout, value_name = "DURATION")]
    pub timeout: Option<std::time::Duration>,
    /// The time one attempt may take [default: the daemon's --call-timeout, 30s].
    #[arg(long, value_parser = parse_timeout, value_name = "DURATION")]
    pub attempt_timeout: Option<std::time::Duration>,
    /// Retries after a failure that is safe to retry [default: the daemon's, 2].
    #[arg(long, value_name = "N")]
    pub retries: Option<u32>,
    /// Retry after a timeout even if the tool is not marked read-only or idempotent.
    #[arg(long)]
    pub retry_on_timeout: bool,
    /// Arguments as a JSON object, or - to read it from stdin.
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// Print the whole answer as JSON: {tab, tool, attempts, elapsedMs, result} (errors as
    /// JSON on stderr).
    #[arg(long)]
    pub json: bool,
    /// Say on stderr which tab answered, after how many attempts and how long.
    #[arg(short = 'v', long)]
    pub verbose: bool,
    #[command(flatten)]
    pub socket: super::args::SocketArg,
    /// Print help (after TOOL: the tool's own parameters).
    #[arg(short = 'h', long)]
    pub help: bool,
    /// The tool's name, from `rest`.
    #[arg(skip)]
    pub tool: String,
    /// The tool's parameters, from `rest`.
    #[arg(skip)]
    pub flags: Flags,
    /// TOOL, then its parameters as --NAME VALUE.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "TOOL [--PARAM VALUE]...",
        add = super::completions::call_words()
    )]
    pub rest: Vec<String>,
}

/// `browserctl handoff --tab T --reason "…" [--timeout D]`: `browser_handoff` on that tab.
#[derive(Debug, clap::Args)]
pub struct HandoffArgs {
    /// The tab to hand to the person (b1:12, or 12 when unique).
    #[arg(long, add = super::completions::tabs())]
    pub tab: String,
    /// What the person should do there, as they will read it ("sign in to your bank").
    #[arg(long)]
    pub reason: String,
    /// How long to wait for the person (at most 1h; they may give more time) [default: 10m].
    #[arg(long, value_parser = parse_timeout, value_name = "DURATION")]
    pub timeout: Option<std::time::Duration>,
    /// Print the whole answer as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub socket: super::args::SocketArg,
}

impl HandoffArgs {
    /// The call it makes.
    pub fn call(self) -> CallArgs {
        let mut args = serde_json::json!({"reason": self.reason});
        if let Some(t) = self.timeout {
            args["timeoutSec"] = serde_json::json!(t.as_secs_f64());
        }
        CallArgs {
            tab: Some(self.tab),
            browser: None,
            timeout: None,
            attempt_timeout: None,
            retries: None,
            retry_on_timeout: false,
            args: Some(args.to_string()),
            json: self.json,
            verbose: false,
            socket: self.socket,
            help: false,
            tool: "browser_handoff".to_owned(),
            flags: Flags::default(),
            rest: Vec::new(),
        }
    }
}

/// A timeout: a duration of more than zero.
pub fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    let d = parse_duration(s)?;
    if d.is_zero() {
        return Err(format!(
            "`{s}` is no time at all; give more than 0 (500ms, 5s, 1m)"
        ));
    }
    Ok(d)
}

/// browserctl's own options of `call`, which may also follow TOOL.
pub use super::args::CALL_OWN_OPTIONS as OWN_OPTIONS;

/// Pulls browserctl's own options out of what follows TOOL; the rest are tool parameters.
fn split_rest(a: &mut CallArgs) -> Result<(String, Flags), Error> {
    let usage = |m: String| Error::new(ErrorCode::BadRequest, m);
    let mut it = std::mem::take(&mut a.rest).into_iter().peekable();
    let tool = loop {
        match it.next() {
            Some(t) if t == "--help" || t == "-h" => a.help = true,
            Some(t) if t.starts_with('-') && t != "-" => {
                return Err(usage(format!("unexpected {t} before the tool name")))
            }
            Some(t) => break t,
            None if a.help => return Ok((String::new(), Vec::new())),
            None => {
                return Err(usage(
                    "which tool? usage: browserctl call TOOL [--PARAM VALUE]...".into(),
                ))
            }
        }
    };
    let mut flags = Vec::new();
    let mut only_params = false;
    while let Some(token) = it.next() {
        if token == "--" && !only_params {
            only_params = true;
            continue;
        }
        let Some(body) = token.strip_prefix("--") else {
            if !only_params && token == "-h" {
                a.help = true;
                continue;
            }
            if !only_params && token == "-v" {
                a.verbose = true;
                continue;
            }
            return Err(usage(format!(
                "unexpected argument `{token}` (parameters are --NAME VALUE)"
            )));
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (body.to_owned(), None),
        };
        if name.is_empty() {
            return Err(usage(format!("bad parameter `{token}`")));
        }
        let takes_value = only_params
            || OWN_OPTIONS
                .iter()
                .find(|(own, _)| *own == name)
                .is_none_or(|(_, value)| *value);
        let value = match inline {
            Some(v) => Some(v),
            None if takes_value => match it.peek() {
                Some(next) if !next.starts_with("--") => it.next(),
                _ => None,
            },
            None => None,
        };
        if only_params {
            flags.push((name, value));
            continue;
        }
        let need = |v: Option<String>| v.ok_or_else(|| usage(format!("--{name} needs a value")));
        match name.as_str() {
            "help" => a.help = true,
            "json" => a.json = true,
            "verbose" => a.verbose = true,
            "retry-on-timeout" => a.retry_on_timeout = true,
            "tab" => a.tab = Some(need(value)?),
            "browser" => a.browser = Some(need(value)?),
            "args" => a.args = Some(need(value)?),
            "socket" => a.socket.socket = Some(need(value)?.into()),
            "host" => a.socket.host = Some(need(value)?.parse().map_err(usage)?),
            "retries" => {
                let v = need(value)?;
                a.retries = Some(
                    v.parse()
                        .map_err(|_| usage(format!("--retries: `{v}` is not a number")))?,
                )
            }
            "timeout" => {
                let v = need(value)?;
                a.timeout = Some(parse_timeout(&v).map_err(|e| usage(format!("--timeout: {e}")))?)
            }
            "attempt-timeout" => {
                let v = need(value)?;
                a.attempt_timeout =
                    Some(parse_timeout(&v).map_err(|e| usage(format!("--attempt-timeout: {e}")))?)
            }
            _ => flags.push((name, value)),
        }
    }
    Ok((tool, flags))
}

fn read_args(spec: &str) -> Result<Box<RawValue>, Error> {
    let text = if spec == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| {
            Error::new(
                ErrorCode::InvalidArguments,
                format!("cannot read stdin: {e}"),
            )
        })?;
        s
    } else {
        spec.to_owned()
    };
    RawValue::from_string(text.trim().to_owned()).map_err(|e| {
        Error::new(
            ErrorCode::InvalidArguments,
            format!("--args is not valid JSON: {e}"),
        )
    })
}

impl CallArgs {
    /// Sorts what follows TOOL into browserctl's options and the tool's parameters; called
    /// once, while the command line is parsed, so that `--json` and `--socket` after TOOL
    /// take effect like anywhere else.
    pub fn split(&mut self) -> Result<(), Error> {
        let (tool, flags) = split_rest(self)?;
        self.tool = tool;
        self.flags = flags;
        Ok(())
    }
}

/// A callId of our own, so that Ctrl-C can cancel the call by name.
fn call_id() -> String {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("browserctl-{}-{hex}", std::process::id())
}

/// `command` is browserctl's whole clap command, for `call --help` without a tool (passed in
/// so that this module need not import its parent).
pub async fn run(
    c: &Client,
    a: CallArgs,
    json: bool,
    command: fn() -> clap::Command,
) -> Result<(), Stop> {
    if a.help {
        return help(c, &a.tool, a.tab.as_deref(), command).await;
    }
    let id = call_id();
    let req = CallRequest {
        tool: a.tool,
        tab: a.tab,
        browser: a.browser,
        args: a.args.as_deref().map(read_args).transpose()?,
        flags: a.flags,
        timeout_ms: a.timeout.map(|t| t.as_millis().max(1) as u64),
        attempt_timeout_ms: a.attempt_timeout.map(|t| t.as_millis().max(1) as u64),
        retries: a.retries,
        retry_on_timeout: a.retry_on_timeout,
        call_id: Some(id.clone()),
        upload_roots: Vec::new(),
        agent: Some("browserctl".to_owned()),
    };
    let req = super::named_files::read(req)?;
    // Subscribed before the call goes out, so that no prompt it raises is missed.
    let prompts = consent_events(c).await;
    let call = c.json::<CallResponse>(Method::POST, "/v1/call", Some(&req));
    // Pinned out here so that Ctrl-C does not drop the request (and hang up) before the
    // cancel below has named the call.
    tokio::pin!(call);
    let resp = tokio::select! {
        resp = &mut call => resp?,
        never = say_prompts(prompts, &id) => match never {},
        _ = tokio::signal::ctrl_c() => {
            // Dropping the request alone would leave the daemon to notice the hang-up; say
            // it, so the tab is told and the call counts as cancelled.
            let cancelled = c.cancel(&id).await;
            note(match cancelled {
                Ok(true) => "interrupted: the call was cancelled",
                _ => "interrupted",
            });
            return Err(Stop::Interrupted);
        }
    };
    if a.verbose {
        note(&format!(
            "{} answered `{}` ({} attempt{}, {} ms)",
            resp.tab,
            resp.tool,
            resp.attempts,
            if resp.attempts == 1 { "" } else { "s" },
            resp.elapsed_ms
        ));
    }
    print_result(&resp, json)
}

/// The daemon's consent events, if it has an event stream for us.
async fn consent_events(c: &Client) -> Option<crate::client::EventStream> {
    use crate::protocol::control::event_kind::{CONSENT_ANSWERED, CONSENT_REQUESTED};
    let filter = crate::client::EventFilter {
        types: vec![CONSENT_REQUESTED.to_owned(), CONSENT_ANSWERED.to_owned()],
        ..Default::default()
    };
    c.events(&filter).await.ok()
}

/// Says on stderr when the call `id` waits for the person's answer in the browser (issue 59:
/// a call used to wait in silence for a prompt the terminal never mentioned), and how it
/// ended. Never returns: the call's answer ends the wait.
async fn say_prompts(
    events: Option<crate::client::EventStream>,
    id: &str,
) -> std::convert::Infallible {
    use crate::protocol::control::event_kind::CONSENT_REQUESTED;
    if let Some(mut events) = events {
        while let Some(Ok(e)) = events.next_event().await {
            let data = e.data.unwrap_or_default();
            if data["callId"] != id {
                continue;
            }
            let text = |k: &str| data[k].as_str().unwrap_or_default().to_owned();
            if e.kind == CONSENT_REQUESTED {
                let wait = data["timeoutMs"]
                    .as_u64()
                    .map(|ms| format!(" (it waits {} s, then the call fails)", ms.div_ceil(1000)))
                    .unwrap_or_default();
                note(&format!(
                    "waiting for your answer in the browser: allow `{}` on {}{}? Answer the \
                     browser-mcp prompt (notification or toolbar popup){wait}",
                    text("tool"),
                    text("site"),
                    e.tab
                        .as_deref()
                        .map(|t| format!(" (tab {t})"))
                        .unwrap_or_default(),
                ));
            } else if text("outcome") == "allowed" {
                note("allowed in the browser; the call runs");
            }
        }
    }
    std::future::pending().await
}

/// Prints a tool's result: text content as text, anything else as JSON; with --json the
/// whole answer, which names the tab that answered. An MCP result with `isError: true` is
/// the tool's failure and exits like TOOL_ERROR (with --json, after printing the answer).
fn print_result(resp: &CallResponse, json: bool) -> Result<(), Stop> {
    let value: Value = serde_json::from_str(resp.result.get()).unwrap_or(Value::Null);
    let texts = value
        .get("content")
        .and_then(Value::as_array)
        .and_then(|parts| {
            parts
                .iter()
                .map(|p| (p["type"] == "text").then(|| p["text"].as_str()).flatten())
                .collect::<Option<Vec<&str>>>()
        });
    let is_error = value.get("isError").and_then(Value::as_bool) == Some(true);
    let tool_error = || {
        let message = texts
            .as_ref()
            .map(|t| t.join("\n"))
            .unwrap_or_else(|| value.to_string());
        Stop::Api(
            Error::new(ErrorCode::ToolError, message)
                .with_details(serde_json::json!({"tab": resp.tab})),
        )
    };
    if json {
        print_json(resp)?;
        return if is_error { Err(tool_error()) } else { Ok(()) };
    }
    if is_error {
        return Err(tool_error());
    }
    match (&value, &texts) {
        (Value::String(s), _) => print(s),
        (_, Some(texts)) if !texts.is_empty() => print(&texts.join("\n")),
        _ => print_json(&value),
    }
}

/// `browserctl call TOOL --help`: the tool's description and parameters, from the live tab.
async fn help(
    c: &Client,
    tool: &str,
    tab: Option<&str>,
    command: fn() -> clap::Command,
) -> Result<(), Stop> {
    if tool.is_empty() {
        let mut cmd = command();
        cmd.build();
        let text = cmd
            .find_subcommand_mut("call")
            .map(|s| s.render_long_help().to_string())
            .unwrap_or_default();
        return print(&text);
    }
    let mut path = format!("/v1/tools?name={}", encode(tool));
    if let Some(t) = tab {
        path.push_str(&format!("&tab={}", encode(t)));
    }
    let list: Tools = c.get(&path).await?;
    let Some(first) = list.tools.first() else {
        return Err(Stop::Api(Error::new(
            ErrorCode::ToolNotFound,
            format!("no connected tab offers `{tool}`"),
        )));
    };
    print(&tool_help(first, &list.tools))
}

pub fn tool_help(view: &ToolView, all: &[ToolView]) -> String {
    let t = &view.tool();
    let mut out = format!(
        "Usage: browserctl call {} [--tab TAB] [OPTIONS] [--PARAM VALUE]...\n",
        t.name
    );
    if let Some(title) = &t.title {
        out.push_str(&format!("\n{title}\n"));
    }
    if let Some(d) = &t.description {
        out.push_str(&format!("\n{d}\n"));
    }
    let tabs: Vec<&str> = all.iter().map(|v| v.tab.as_str()).collect();
    out.push_str(&format!("\nOffered by: {}\n", tabs.join(", ")));
    if let Some(a) = t.annotations.as_ref().and_then(Value::as_object) {
        let hints: Vec<String> = a.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if !hints.is_empty() {
            out.push_str(&format!("Annotations: {}\n", hints.join(", ")));
        }
    }
    let schema = t.input_schema_value();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    out.push_str("\nParameters:\n");
    match schema["properties"].as_object() {
        Some(props) if !props.is_empty() => {
            let rows: Vec<(String, String)> = props
                .iter()
                .map(|(name, p)| {
                    let ty = match &p["type"] {
                        Value::String(s) => s.clone(),
                        Value::Array(a) => a
                            .iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join("|"),
                        _ => "json".to_owned(),
                    };
                    let ty = match (ty.as_str(), p["items"]["type"].as_str()) {
                        ("array", Some(item)) => format!("{item}, repeatable"),
                        _ => ty,
                    };
                    let mut text = String::new();
                    if required.contains(&name.as_str()) {
                        text.push_str("(required) ");
                    }
                    if let Some(d) = p["description"].as_str() {
                        text.push_str(d);
                    }
                    if let Some(e) = p["enum"].as_array() {
                        let vals: Vec<String> = e
                            .iter()
                            .map(|v| v.as_str().map_or(v.to_string(), str::to_owned))
                            .collect();
                        text.push_str(&format!(" [one of: {}]", vals.join(", ")));
                    }
                    if !p["default"].is_null() {
                        text.push_str(&format!(" [default: {}]", p["default"]));
                    }
                    (format!("--{name} <{ty}>"), text.trim().to_owned())
                })
                .collect();
            let width = rows.iter().map(|(f, _)| f.len()).max().unwrap_or(0);
            for (flag, text) in rows {
                out.push_str(&format!("  {flag:width$}  {text}\n"));
            }
        }
        _ => out.push_str("  (none)\n"),
    }
    out.push_str(
        "\nOptions (see `browserctl call --help`):\n  --tab TAB  --browser B  --timeout D  --attempt-timeout D  --retries N\n  --retry-on-timeout  --args JSON|-  --json  -v  --socket PATH  --host URL\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(argv: &[&str]) -> (CallArgs, String, Vec<(String, Option<String>)>) {
        let cli = crate::ctl::Cli::try_parse_from(argv).unwrap();
        let crate::ctl::Command::Call(mut a) = cli.command else {
            panic!()
        };
        a.split().unwrap();
        let (tool, flags) = (a.tool.clone(), a.flags.clone());
        (a, tool, flags)
    }

    #[test]
    fn own_options_and_tool_parameters_are_told_apart() {
        let (a, tool, flags) = parse(&[
            "browserctl",
            "call",
            "search",
            "--query",
            "test",
            "--tab",
            "b1:2",
            "--exact",
            "--limit=5",
            "--timeout",
            "2s",
            "--offset",
            "-3",
        ]);
        assert_eq!(tool, "search");
        assert_eq!(a.tab.as_deref(), Some("b1:2"));
        assert_eq!(a.timeout, Some(std::time::Duration::from_secs(2)));
        assert_eq!(
            flags,
            vec![
                ("query".into(), Some("test".into())),
                ("exact".into(), None),
                ("limit".into(), Some("5".into())),
                ("offset".into(), Some("-3".into())),
            ]
        );
        let (a, tool, flags) =
            parse(&["browserctl", "call", "--tab", "3", "x", "--", "--tab", "t"]);
        assert_eq!((a.tab.as_deref(), tool.as_str()), (Some("3"), "x"));
        assert_eq!(flags, vec![("tab".into(), Some("t".into()))]);
        let (a, tool, _) = parse(&["browserctl", "call", "search", "--help"]);
        assert!(a.help);
        assert_eq!(tool, "search");
    }
}
