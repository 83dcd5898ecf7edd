//! `browserctl events [--type T,…] [--tab T] [--since SEQ] [--count N]`: NDJSON on stdout.

use super::client::{encode, Client};
use super::output::Stop;
use crate::error::{Error, ErrorCode};
use http_body_util::BodyExt;
use hyper::Method;
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct EventsArgs {
    /// Only these event types (comma-separated): browserConnected, browserDisconnected,
    /// tabCreated, tabUpdated, tabClosed, tabFocused, toolsChanged, and the page events
    /// consoleError, downloadFinished, navigated.
    #[arg(long = "type", value_delimiter = ',')]
    pub types: Vec<String>,
    /// Only events of this tab.
    #[arg(long)]
    pub tab: Option<String>,
    /// Only events of this browser.
    #[arg(long)]
    pub browser: Option<String>,
    /// Resume after this sequence number (replays retained events; a gap is reported as a
    /// `lagged` event).
    #[arg(long)]
    pub since: Option<u64>,
    /// Stop after this many events.
    #[arg(long)]
    pub count: Option<u64>,
}

pub async fn run(c: &Client, a: EventsArgs) -> Result<(), Stop> {
    let mut query = Vec::new();
    if !a.types.is_empty() {
        query.push(format!("type={}", encode(&a.types.join(","))));
    }
    if let Some(t) = &a.tab {
        query.push(format!("tab={}", encode(t)));
    }
    if let Some(b) = &a.browser {
        query.push(format!("browser={}", encode(b)));
    }
    if let Some(s) = a.since {
        query.push(format!("since={s}"));
    }
    if let Some(n) = a.count {
        if n == 0 {
            return Ok(());
        }
        query.push(format!("count={n}"));
    }
    let path = format!(
        "/v1/events{}{}",
        if query.is_empty() { "" } else { "?" },
        query.join("&")
    );
    let resp = c.send(Method::GET, &path, None).await?;
    let mut body = resp.into_body();
    let mut out = std::io::stdout().lock();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            Error::new(
                ErrorCode::DaemonUnavailable,
                format!("the event stream broke: {e}"),
            )
        })?;
        if let Some(data) = frame.data_ref() {
            out.write_all(data)?;
            out.flush()?;
        }
    }
    Ok(())
}
