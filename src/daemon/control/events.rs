//! `GET /v1/events`: NDJSON, one event a line. Each reader has its own task and a bounded
//! queue; a reader too slow to keep up loses events, which it is told of with a `lagged` line
//! (then the missed events still in the ring are replayed), and never slows anyone else.

use super::routes::EventQuery;
use crate::daemon::context::Daemon;
use crate::daemon::http::Body;
use crate::daemon::registry::presence::Hold;
use crate::daemon::registry::{Published, Subscription};
use crate::error::Error;
use crate::protocol::control::{event_kind, Event, Lagged};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Frame;
use hyper::header::{self, HeaderValue};
use hyper::Response;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::{broadcast, mpsc};

/// Which events a reader asked for.
struct Filter {
    kinds: Option<Vec<String>>,
    tab: Option<String>,
    browser: Option<String>,
}

impl Filter {
    fn wants(&self, e: &Published) -> bool {
        self.kinds
            .as_ref()
            .is_none_or(|k| k.iter().any(|k| k == e.kind))
            && self.tab.as_ref().is_none_or(|t| e.tab.as_ref() == Some(t))
            && self.browser.as_ref().is_none_or(|b| e.browser == *b)
    }
}

/// The notice that events `from..=to` are lost to this reader.
fn lagged_line(from: u64, to: u64) -> Bytes {
    let event = Event {
        seq: to,
        kind: event_kind::LAGGED,
        time: crate::time::now_ms(),
        browser: None,
        tab: None,
        data: Some(Lagged {
            from,
            to,
            missed: to + 1 - from,
        }),
    };
    let mut line = serde_json::to_vec(&event).expect("JSON");
    line.push(b'\n');
    Bytes::from(line)
}

pub fn stream(d: &Arc<Daemon>, query: EventQuery) -> Result<Response<Body>, Error> {
    let EventQuery {
        since,
        count,
        kinds,
        tab,
        browser,
    } = query;
    let reg = &d.registry;
    let tab = tab
        .map(|t| reg.parse_tab(&t).map(|t| t.to_string()))
        .transpose()?;
    let browser = browser
        .map(|b| reg.parse_browser(&b).map(|k| k.to_string()))
        .transpose()?;
    let filter = Filter {
        kinds,
        tab,
        browser,
    };
    let subscription = reg.subscribe(since);
    let (tx, body_rx) = mpsc::channel::<Bytes>(256);
    let pump = Pump {
        d: d.clone(),
        filter,
        count,
        last: subscription.last_seq,
        queue: VecDeque::new(),
        tx,
        _present: d.presence.hold(),
    };
    d.tasks.spawn(pump.run(subscription));
    let mut r = Response::new(BodyExt::boxed(ChannelBody(body_rx)));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(r)
}

/// One reader's task: from the registry's events to its response body.
struct Pump {
    d: Arc<Daemon>,
    filter: Filter,
    count: Option<u64>,
    /// The last sequence number seen (sent or filtered out).
    last: u64,
    /// Lines to send, each with whether it counts toward `count` (lagged notices do not).
    queue: VecDeque<(Bytes, bool)>,
    tx: mpsc::Sender<Bytes>,
    /// An agent listens: the browsers watch their pages while the stream is open.
    _present: Hold,
}

impl Pump {
    fn take(&mut self, e: &Published) {
        if e.seq <= self.last {
            return;
        }
        self.last = e.seq;
        if self.filter.wants(e) {
            self.queue.push_back((e.line(), true));
        }
    }

    fn lagged(&mut self, (from, to): (u64, u64)) {
        self.queue.push_back((lagged_line(from, to), false));
        self.last = self.last.max(to);
    }

    async fn run(mut self, s: Subscription) {
        let Subscription {
            mut live,
            backlog,
            gap,
            ..
        } = s;
        if let Some(gap) = gap {
            self.queue.push_back((lagged_line(gap.0, gap.1), false));
        }
        for e in &backlog {
            self.take(e);
        }
        let mut sent = 0u64;
        loop {
            while let Some((line, is_event)) = self.queue.pop_front() {
                if self.tx.send(line).await.is_err() {
                    return;
                }
                if is_event {
                    sent += 1;
                    if self.count.is_some_and(|c| sent >= c) {
                        return;
                    }
                }
            }
            let next = tokio::select! {
                _ = self.d.draining.cancelled() => return,
                _ = self.tx.closed() => return,
                r = live.recv() => r,
            };
            match next {
                Ok(e) => self.take(&e),
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let (missed, gap) = self.d.registry.events_after(self.last);
                    if let Some(gap) = gap {
                        self.lagged(gap);
                    }
                    for e in &missed {
                        self.take(e);
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}

/// A response body fed line by line from a channel.
struct ChannelBody(mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b))))
    }
}
