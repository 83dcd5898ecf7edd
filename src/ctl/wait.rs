//! `browserctl wait --tool NAME [--tab T]` / `wait --tab-url PATTERN`: block until a tool or a
//! tab appears, so a script can start a browser, wait, then call.
//!
//! The event stream is opened before the first look, so nothing that happens in between is
//! missed; every event is a cue to look again.

use super::client::{encode, Client};
use super::listing::Tools;
use super::output::{print, print_json, Stop};
use super::pattern::url_matches;
use crate::error::{Error, ErrorCode};
use crate::paths::parse_duration;
use crate::protocol::control::TabView;
use http_body_util::BodyExt;
use hyper::Method;
use std::time::Duration;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["tool", "tab_url"])))]
pub struct WaitArgs {
    /// Wait until a tool with this name is offered.
    #[arg(long)]
    pub tool: Option<String>,
    /// With --tool: only on this tab (b1:12).
    #[arg(long, requires = "tool")]
    pub tab: Option<String>,
    /// Wait until a tab whose URL matches PATTERN is open (`*` matches anything; without `*`,
    /// a substring).
    #[arg(long, value_name = "PATTERN")]
    pub tab_url: Option<String>,
    /// Give up after this long (exit code 8).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,
}

#[derive(serde::Deserialize)]
struct Tabs {
    tabs: Vec<TabView>,
}

/// What was found: printed refs and the JSON to print with --json.
enum Found {
    Tools(Tools),
    Tabs(Vec<TabView>),
}

async fn look(c: &Client, a: &WaitArgs) -> Result<Option<Found>, Error> {
    if let Some(tool) = &a.tool {
        let mut path = format!("/v1/tools?name={}", encode(tool));
        if let Some(t) = &a.tab {
            path.push_str(&format!("&tab={}", encode(t)));
        }
        return match c.get::<Tools>(&path).await {
            Ok(list) if !list.tools.is_empty() => Ok(Some(Found::Tools(list))),
            Ok(_) => Ok(None),
            // The tab may simply not be there yet.
            Err(e) if matches!(e.code, ErrorCode::TabNotFound | ErrorCode::NoBrowser) => Ok(None),
            Err(e) => Err(e),
        };
    }
    let pattern = a.tab_url.as_deref().unwrap_or_default();
    let tabs: Tabs = c.get("/v1/tabs").await?;
    let hits: Vec<TabView> = tabs
        .tabs
        .into_iter()
        .filter(|t| url_matches(pattern, &t.url))
        .collect();
    Ok((!hits.is_empty()).then_some(Found::Tabs(hits)))
}

pub async fn run(c: &Client, a: WaitArgs, json: bool) -> Result<(), Stop> {
    let found = tokio::time::timeout(a.timeout, async {
        let events = c.send(Method::GET, "/v1/events", None).await?;
        let mut body = events.into_body();
        loop {
            if let Some(found) = look(c, &a).await? {
                return Ok::<_, Error>(found);
            }
            match body.frame().await {
                Some(Ok(_)) => continue,
                Some(Err(e)) => {
                    return Err(Error::new(
                        ErrorCode::DaemonUnavailable,
                        format!("the event stream broke: {e}"),
                    ))
                }
                None => {
                    return Err(Error::new(
                        ErrorCode::DaemonUnavailable,
                        "the daemon closed the event stream",
                    ))
                }
            }
        }
    })
    .await;
    let found = match found {
        Ok(result) => result?,
        Err(_) => {
            let what = match (&a.tool, &a.tab_url) {
                (Some(t), _) => format!("tool `{t}`"),
                (_, Some(p)) => format!("a tab matching `{p}`"),
                _ => "it".to_owned(),
            };
            return Err(Stop::Api(Error::new(
                ErrorCode::MessageTimeout,
                format!("{what} did not appear within {} ms", a.timeout.as_millis()),
            )));
        }
    };
    match found {
        Found::Tools(list) if json => print_json(&list),
        Found::Tabs(tabs) if json => print_json(&serde_json::json!({"tabs": tabs})),
        Found::Tools(list) => {
            let refs: Vec<&str> = list.tools.iter().map(|t| t.tab.as_str()).collect();
            print(&refs.join("\n"))
        }
        Found::Tabs(tabs) => {
            let refs: Vec<&str> = tabs.iter().map(|t| t.tab_ref.as_str()).collect();
            print(&refs.join("\n"))
        }
    }
}
