//! `browserctl events [--type T,…] [--tab T] [--since SEQ] [--count N]`: NDJSON on stdout.
//!
//! How it ends is part of the interface: after `--count` events, exit 0; when the reader of
//! stdout goes away (`browserctl events | head -3`), exit 0 at once, not at the next event;
//! when the daemon stops, a DAEMON_UNAVAILABLE error on stderr that names the last sequence
//! number seen, for `--since`, and exit 3.

use super::client::{encode, Client};
use super::output::Stop;
use crate::error::{Error, ErrorCode};
use crate::protocol::control::{event_kind, Status};
use http_body_util::BodyExt;
use hyper::Method;
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct EventsArgs {
    /// Only these event types (comma-separated): browserConnected, browserDisconnected,
    /// tabCreated, tabUpdated, tabClosed, tabFocused, toolsChanged, and the page events
    /// consoleError, downloadFinished, navigated.
    #[arg(long = "type", value_delimiter = ',', value_name = "TYPE", add = super::completions::event_types())]
    pub types: Vec<String>,
    /// Only events of this tab.
    #[arg(long, add = super::completions::tabs())]
    pub tab: Option<String>,
    /// Only events of this browser.
    #[arg(long, add = super::completions::browsers())]
    pub browser: Option<String>,
    /// Resume after this sequence number (replays retained events; a gap is reported as a
    /// `lagged` event) [default: from now on].
    #[arg(long, value_name = "SEQ")]
    pub since: Option<u64>,
    /// Stop after this many events (`lagged` notices do not count).
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Print errors as JSON on stderr (the events are JSON lines either way).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub socket: super::args::SocketArg,
}

/// Resolves once nobody reads our stdout any more: a pipe whose reader closed, or a socket
/// whose peer hung up, polls as POLLERR/POLLHUP even though we have nothing to write. A
/// terminal or a file never does. A plain thread, since the wait cannot be cancelled; it
/// dies with the process.
fn stdout_closed() -> tokio::sync::oneshot::Receiver<()> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use std::os::fd::AsFd;
        let stdout = std::io::stdout();
        loop {
            let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::empty())];
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {
                    let gone = PollFlags::POLLERR | PollFlags::POLLHUP | PollFlags::POLLNVAL;
                    if fds[0].revents().is_some_and(|r| r.intersects(gone)) {
                        let _ = tx.send(());
                        return;
                    }
                }
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return,
            }
        }
    });
    rx
}

/// What the stream has shown so far.
#[derive(Default)]
struct Progress {
    /// Events that count toward `--count`.
    events: u64,
    /// The highest sequence number seen: `--since` resumes after it.
    last_seq: u64,
    /// A line not yet complete.
    partial: Vec<u8>,
}

impl Progress {
    fn feed(&mut self, data: &[u8]) {
        self.partial.extend_from_slice(data);
        while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            #[derive(serde::Deserialize)]
            struct Head {
                seq: u64,
                #[serde(rename = "type")]
                kind: String,
            }
            if let Ok(head) = serde_json::from_slice::<Head>(&line) {
                self.last_seq = self.last_seq.max(head.seq);
                if head.kind != event_kind::LAGGED {
                    self.events += 1;
                }
            }
        }
    }
}

pub async fn run(c: &Client, a: EventsArgs, _json: bool) -> Result<(), Stop> {
    if a.count == Some(0) {
        return Ok(());
    }
    // Without --since, start from the daemon's current sequence number explicitly, so that
    // it is known for resuming even if no event arrives before the daemon stops.
    let since = match a.since {
        Some(s) => s,
        None => c.get::<Status>("/v1/status").await?.last_event_seq,
    };
    let mut query = vec![format!("since={since}")];
    if !a.types.is_empty() {
        query.push(format!("type={}", encode(&a.types.join(","))));
    }
    if let Some(t) = &a.tab {
        query.push(format!("tab={}", encode(t)));
    }
    if let Some(b) = &a.browser {
        query.push(format!("browser={}", encode(b)));
    }
    if let Some(n) = a.count {
        query.push(format!("count={n}"));
    }
    let path = format!("/v1/events?{}", query.join("&"));
    let resp = c.send(Method::GET, &path, None).await?;
    let mut body = resp.into_body();
    let mut closed = stdout_closed();
    let mut progress = Progress {
        last_seq: since,
        ..Progress::default()
    };
    let mut out = std::io::stdout().lock();
    let broke = loop {
        let frame = tokio::select! {
            frame = body.frame() => frame,
            _ = &mut closed => return Err(Stop::BrokenPipe),
        };
        match frame {
            None => break None,
            Some(Err(e)) => break Some(e.to_string()),
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    out.write_all(data)?;
                    out.flush()?;
                    progress.feed(data);
                }
            }
        }
    };
    if a.count.is_some_and(|n| progress.events >= n) {
        return Ok(());
    }
    let seq = progress.last_seq;
    let how = match broke {
        Some(e) => format!("the event stream broke ({e})"),
        None => "the daemon ended the event stream (it stopped or is restarting)".to_owned(),
    };
    Err(Stop::Api(
        Error::new(
            ErrorCode::DaemonUnavailable,
            format!(
                "{how}; the last event seen was {seq}: resume with `browserctl events --since {seq}`"
            ),
        )
        .with_details(serde_json::json!({"lastSeq": seq, "events": progress.events})),
    ))
}
