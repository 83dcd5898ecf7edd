//! The event stream as a `Stream` of [`Event`]s.

use super::transport::{encode, Client};
use crate::error::{Error, ErrorCode};
use crate::protocol::control::Event;
use bytes::Bytes;
use futures_util::{Stream, TryStreamExt};
use http_body_util::BodyExt;
use hyper::Method;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::io::StreamReader;

/// The longest event line read; a longer one is skipped with an error (the stream goes on).
const MAX_LINE: usize = 16 << 20;

type Body = Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send + Sync>>;

/// Which events [`Client::events`] follows; the default follows all, from now on.
///
/// ```
/// use browser_mcp::client::EventFilter;
/// // Tabs opening and closing, replaying what is retained after sequence number 41.
/// let filter = EventFilter {
///     types: vec!["tabCreated".into(), "tabClosed".into()],
///     since: Some(41),
///     ..Default::default()
/// };
/// assert_eq!(filter.count, None);
/// ```
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// Only these types (`tabCreated`, `toolsChanged`, …); empty means all.
    pub types: Vec<String>,
    pub tab: Option<String>,
    pub browser: Option<String>,
    /// Replay retained events after this sequence number first.
    pub since: Option<u64>,
    /// End the stream after this many events.
    pub count: Option<u64>,
}

impl EventFilter {
    fn query(&self) -> String {
        let mut pairs = Vec::new();
        if !self.types.is_empty() {
            pairs.push(format!("type={}", encode(&self.types.join(","))));
        }
        if let Some(t) = &self.tab {
            pairs.push(format!("tab={}", encode(t)));
        }
        if let Some(b) = &self.browser {
            pairs.push(format!("browser={}", encode(b)));
        }
        if let Some(s) = self.since {
            pairs.push(format!("since={s}"));
        }
        if let Some(c) = self.count {
            pairs.push(format!("count={c}"));
        }
        if pairs.is_empty() {
            String::new()
        } else {
            format!("?{}", pairs.join("&"))
        }
    }
}

/// Events as they happen, one per NDJSON line of `GET /v1/events`. A reader that fell behind
/// receives an event of type `lagged` whose data says which sequence numbers it missed.
/// [`Client::events`] shows it used as a `Stream`; [`EventStream::next_event`] without one.
pub struct EventStream {
    lines: FramedRead<StreamReader<Body, Bytes>, LinesCodec>,
}

impl Client {
    /// Follows the daemon's events.
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// use browser_mcp::client::EventFilter;
    /// use futures_util::StreamExt;
    /// let filter = EventFilter { types: vec!["tabCreated".into()], ..Default::default() };
    /// let mut events = client.events(&filter).await?;
    /// while let Some(event) = events.next().await {
    ///     let event = event?;
    ///     println!("{} {} {:?}", event.seq, event.kind, event.tab);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn events(&self, filter: &EventFilter) -> Result<EventStream, Error> {
        let resp = self
            .send(Method::GET, &format!("/v1/events{}", filter.query()), None)
            .await?;
        let body: Body = Box::pin(
            resp.into_body()
                .into_data_stream()
                .map_err(io::Error::other),
        );
        Ok(EventStream {
            lines: FramedRead::new(
                StreamReader::new(body),
                LinesCodec::new_with_max_length(MAX_LINE),
            ),
        })
    }
}

impl EventStream {
    /// The next event (the same as `StreamExt::next`, without importing the trait); `None`
    /// when the stream ends (after `count` events, or when the daemon stops).
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// let filter = browser_mcp::client::EventFilter { count: Some(1), ..Default::default() };
    /// let mut events = client.events(&filter).await?;
    /// if let Some(event) = events.next_event().await {
    ///     println!("{:?}", event?);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn next_event(&mut self) -> Option<Result<Event, Error>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }
}

fn parse(line: &[u8]) -> Result<Event, Error> {
    serde_json::from_slice(line)
        .map_err(|e| Error::internal(format!("unexpected event from the daemon: {e}")))
}

impl Stream for EventStream {
    type Item = Result<Event, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            return match Pin::new(&mut self.lines).poll_next(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Ready(Some(Ok(line))) if line.trim().is_empty() => continue,
                Poll::Ready(Some(Ok(line))) => Poll::Ready(Some(parse(line.as_bytes()))),
                Poll::Ready(Some(Err(LinesCodecError::Io(e)))) => {
                    Poll::Ready(Some(Err(Error::new(
                        ErrorCode::DaemonUnavailable,
                        format!("the event stream broke: {e}"),
                    ))))
                }
                Poll::Ready(Some(Err(LinesCodecError::MaxLineLengthExceeded))) => {
                    Poll::Ready(Some(Err(Error::internal(format!(
                        "an event from the daemon is over {MAX_LINE} bytes; skipped"
                    )))))
                }
            };
        }
    }
}
