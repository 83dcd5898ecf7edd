//! The connection driver: the one task loop behind every WebSocket of the loopback port.
//!
//! It owns the socket, the connection's pending calls, the keepalive pings, the close codes
//! and the cleanup; a [`Dialect`] only turns frames into registry updates and answers, and
//! [`Request`]s into frames. Writes are queued on the [`Link`] and go out together, one flush
//! per turn of the loop, so under load many calls share one write.
//!
//! What differs between the dialects is what their seeds ask for, and nothing else:
//! - who keeps the connection alive: seeds 002 and 003 have the server ping (WebSocket pings,
//!   a peer that leaves two unanswered is dropped); seed 001's extension sends its own `ping`
//!   message, which the bridge dialect answers ([`Dialect::PINGS`]);
//! - the handshake: seed 001's browser identifies itself in its first message (`connected`),
//!   so the connection has `--handshake-timeout` to send it ([`Dialect::awaiting`]); seed 002's
//!   `hello` and seed 003's query string are checked before the driver starts;
//! - a binary frame: ignored and counted by the JSON-text protocols, answered with a JSON-RPC
//!   parse error by seed 003 ([`Dialect::binary`]).
//!
//! Close codes: 1001 at shutdown or when pings go unanswered, 1008 when the handshake does not
//! come, 1009 for a message over `--max-frame-bytes`, 4000 for a connection displaced by a
//! newer one of the same session (dialects add their own refusals before the driver starts).
//! When the loop ends, for any reason, the browser leaves the registry and every pending call
//! fails at once: SHUTTING_DOWN at shutdown, WEBSOCKET_ERROR otherwise.

use super::keepalive::{Beat, Keepalive};
use crate::daemon::conn::{next_conn_id, Command, ConnHandle, Match, Pending, Request, Waiter};
use crate::daemon::context::Daemon;
use crate::daemon::limits;
use crate::daemon::registry::{BrowserKey, Initial, Update};
use crate::daemon::stats::Stats;
use crate::error::{Error, ErrorCode};
use crate::protocol::bridge::BrowserInfo;
use futures_util::{SinkExt, StreamExt};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

/// Commands queued for one connection. Bounded so a stuck browser pushes back on callers
/// (their send then waits inside their own timeout) instead of growing without limit.
const COMMAND_QUEUE: usize = 1024;
/// Answers computed by tasks of the connection (an agent's calls), waiting to be written.
const REPLY_QUEUE: usize = 256;
/// Commands written per flush at most, so frames from the peer are read in between.
const BATCH: usize = 64;

/// Whether the connection goes on after a message.
pub enum Flow {
    Continue,
    Stop,
}

/// One WebSocket dialect: its decoding of frames and its encoding of requests.
pub trait Dialect: Send {
    /// The dialect's name, as the registry and `browserctl browsers` show it.
    const NAME: &'static str;
    /// Whether the daemon pings the peer (see the module docs).
    const PINGS: bool;

    /// While the handshake is incomplete, what is awaited ("a `connected` message"); the
    /// connection is closed with 1008 when `--handshake-timeout` passes first.
    fn awaiting(&self) -> Option<&'static str> {
        None
    }

    /// One text frame from the peer.
    fn text(&mut self, link: &mut Link, text: &str) -> Flow;

    /// A binary frame from the peer; these protocols are JSON text.
    fn binary(&mut self, link: &mut Link) -> Flow {
        link.bad_message("a binary frame (this protocol is JSON text)");
        Flow::Continue
    }

    /// A request for the browser: queue its frame with [`Link::ask`], or refuse it.
    fn request(&mut self, link: &mut Link, req: Request) {
        let _ = link;
        req.refuse(Error::bad_request("this connection takes no requests"));
    }

    /// The connection is over; the driver then removes the browser and fails its calls.
    fn finish(&mut self, link: &mut Link, reason: &str) {
        let _ = (link, reason);
    }
}

/// What a dialect uses of its connection: the daemon, the handle the registry holds, the
/// pending calls, the browser once attached, and the queue of frames to write.
pub struct Link {
    pub d: Arc<Daemon>,
    pub handle: ConnHandle,
    pub pending: Pending,
    /// The browser this connection put in the registry, once it did.
    pub key: Option<BrowserKey>,
    /// Frames to write, each with the pending call it carries (failed if it cannot go out).
    outbox: Vec<(Message, Option<String>)>,
    replies: mpsc::Sender<String>,
    /// Cancelled when the connection ends: answers still being computed stop.
    gone: CancellationToken,
}

impl Link {
    pub fn id(&self) -> u64 {
        self.handle.id
    }

    /// Queues a text frame.
    pub fn send(&mut self, text: String) {
        self.outbox.push((Message::text(text), None));
    }

    /// Queues a request's frame; its answer goes to `waiter` under `id`.
    pub fn ask(&mut self, id: String, waiter: Waiter, frame: String) {
        self.pending.insert(id.clone(), waiter);
        self.outbox.push((Message::text(frame), Some(id)));
    }

    /// Puts this connection's browser in the registry with what it brings, closes a
    /// connection it displaces (4000), and returns its key.
    pub fn attach(
        &mut self,
        dialect: &'static str,
        session_id: &str,
        info: BrowserInfo,
        initial: Initial,
    ) -> BrowserKey {
        let a = self
            .d
            .registry
            .attach(dialect, session_id, info, self.handle.clone(), initial);
        self.check(a.refused);
        if let Some(old) = a.displaced {
            let _ = old.tx.try_send(Command::Close {
                code: 4000,
                reason: "replaced by a newer connection of the same session".into(),
            });
        }
        self.key = Some(a.key);
        a.key
    }

    /// Reports a change of this connection's browser to the registry (nothing before it is
    /// attached). A refusal by a limit is counted and logged, and returned.
    pub fn update(&self, u: Update) -> Result<(), Error> {
        let Some(key) = self.key else {
            return Ok(());
        };
        let r = self.d.registry.update(key, self.id(), u);
        if let Err(e) = &r {
            limits::refused(&self.d.stats, self.id(), e);
        }
        r
    }

    /// Runs an answer that takes time in a task of its own; it is written when ready, or
    /// dropped if the connection ends first.
    pub fn later(&self, answer: impl Future<Output = Option<String>> + Send + 'static) {
        let replies = self.replies.clone();
        let gone = self.gone.clone();
        self.d.tasks.spawn(async move {
            tokio::select! {
                text = answer => if let Some(text) = text {
                    let _ = replies.send(text).await;
                },
                _ = gone.cancelled() => {}
            }
        });
    }

    /// Counts and logs an answer that matched no waiting call.
    pub fn stray(&self, m: Match, kind: &str, id: Option<&str>) {
        let (conn, stats) = (self.id(), &self.d.stats);
        match m {
            Match::Late => {
                Stats::bump(&stats.late_responses);
                tracing::warn!(
                    conn,
                    kind,
                    id,
                    "late answer after the call timed out; dropped"
                );
            }
            Match::Unknown => {
                Stats::bump(&stats.unknown_responses);
                tracing::warn!(conn, kind, id, "answer to no known call; dropped");
            }
        }
    }

    /// Counts and logs a registry update refused by a limit.
    pub fn check(&self, r: Result<(), Error>) {
        limits::check(&self.d.stats, self.id(), r);
    }

    /// Counts and logs a message that could not be used.
    pub fn bad_message(&self, what: impl std::fmt::Display) {
        Stats::bump(&self.d.stats.bad_messages);
        tracing::warn!(conn = self.id(), "ignored {what}");
    }

    fn finish(&mut self, dialect: &str, reason: &str) {
        self.gone.cancel();
        if let Some(key) = self.key {
            self.d.registry.detach(key, self.id());
            tracing::info!(browser = %key, dialect, reason, "browser disconnected");
        }
        // Calls cut off by our own shutdown say so; the others saw the connection break.
        let code = match self.d.shutdown.is_cancelled() {
            true => ErrorCode::ShuttingDown,
            false => ErrorCode::WebsocketError,
        };
        self.pending
            .fail_all(code, &format!("the browser connection closed ({reason})"));
    }
}

/// A new connection: its [`Link`] for the handshake, then [`Connection::run`].
pub struct Connection {
    pub link: Link,
    commands: mpsc::Receiver<Command>,
    replies: mpsc::Receiver<String>,
    /// Fires when the pairing this connection proved is revoked (issue 21): closed with 1008.
    revoked: CancellationToken,
}

impl Connection {
    pub fn new(d: Arc<Daemon>) -> Connection {
        let (tx, commands) = mpsc::channel(COMMAND_QUEUE);
        let (reply_tx, replies) = mpsc::channel(REPLY_QUEUE);
        let link = Link {
            pending: Pending::counted(d.stats.pending.clone()),
            gone: d.shutdown.child_token(),
            handle: ConnHandle {
                id: next_conn_id(),
                tx,
            },
            key: None,
            outbox: Vec::new(),
            replies: reply_tx,
            d,
        };
        Connection {
            link,
            commands,
            replies,
            revoked: CancellationToken::new(),
        }
    }

    /// Closes the connection (1008) when `revoked` fires: the pairing it proved was revoked.
    pub fn revoked_by(mut self, revoked: CancellationToken) -> Connection {
        self.revoked = revoked;
        self
    }

    /// Serves the connection until it ends. What the handshake queued goes out first; then
    /// `first`, the peer's first message if the listener already read it.
    pub async fn run<S, D>(self, mut ws: WebSocketStream<S>, mut dialect: D, first: Option<String>)
    where
        S: AsyncRead + AsyncWrite + Unpin,
        D: Dialect,
    {
        let Connection {
            mut link,
            mut commands,
            mut replies,
            revoked,
        } = self;
        let d = link.d.clone();
        let mut close_with: Option<(CloseCode, String)> = None;
        let reason: String = 'run: {
            if write(&mut ws, &mut link).await.is_err() {
                break 'run "could not send the greeting".into();
            }
            if let Some(text) = first {
                let flow = dialect.text(&mut link, &text);
                if write(&mut ws, &mut link).await.is_err() {
                    break 'run "could not write to the peer".into();
                }
                if let Flow::Stop = flow {
                    break 'run "closed by the daemon".into();
                }
            }
            let ping_every = match D::PINGS {
                true => d.config().ws_ping_interval,
                false => Duration::ZERO,
            };
            let mut keepalive = Keepalive::new(ping_every);
            let handshake = tokio::time::sleep(d.config().handshake_timeout);
            tokio::pin!(handshake);
            loop {
                let flow = tokio::select! {
                    _ = d.shutdown.cancelled() => {
                        close_with = Some((CloseCode::Away, "browser-mcpd is shutting down".into()));
                        break 'run "daemon shutdown".into();
                    }
                    _ = revoked.cancelled() => {
                        close_with = Some((CloseCode::Policy, "pairing revoked".into()));
                        break 'run "its pairing was revoked".into();
                    }
                    Some(cmd) = commands.recv() => {
                        let mut flow = command(&mut dialect, &mut link, cmd, &mut close_with);
                        for _ in 1..BATCH {
                            let Flow::Continue = flow else { break };
                            match commands.try_recv() {
                                Ok(cmd) => flow = command(&mut dialect, &mut link, cmd, &mut close_with),
                                Err(_) => break,
                            }
                        }
                        flow
                    }
                    Some(text) = replies.recv() => {
                        link.send(text);
                        Flow::Continue
                    }
                    beat = keepalive.tick() => match beat {
                        Beat::Ping => {
                            link.outbox.push((Message::Ping(Default::default()), None));
                            Flow::Continue
                        }
                        Beat::Dead => {
                            close_with = Some((CloseCode::Away, "no answer to ping".into()));
                            break 'run "no pong to two pings".into();
                        }
                    },
                    frame = ws.next() => match frame {
                        Some(Ok(Message::Text(text))) => dialect.text(&mut link, text.as_str()),
                        Some(Ok(Message::Binary(_))) => dialect.binary(&mut link),
                        Some(Ok(Message::Pong(_))) => {
                            keepalive.pong();
                            Flow::Continue
                        }
                        Some(Ok(Message::Close(_))) => {
                            echo_close(&mut ws).await;
                            break 'run "closed by the peer".into();
                        }
                        None => break 'run "closed by the peer".into(),
                        Some(Ok(_)) => Flow::Continue,
                        Some(Err(e)) => {
                            tracing::debug!(conn = link.id(), error = %e, "WebSocket error");
                            if matches!(e, WsError::Capacity(_)) {
                                close_with = Some((CloseCode::Size, "message too big".into()));
                            }
                            break 'run "WebSocket error".into();
                        }
                    },
                    _ = &mut handshake, if dialect.awaiting().is_some() => {
                        let what = dialect.awaiting().unwrap_or_default();
                        close_with = Some((CloseCode::Policy, format!("expected {what}")));
                        break 'run format!("timed out waiting for {what}");
                    }
                };
                if write(&mut ws, &mut link).await.is_err() {
                    break 'run "could not write to the peer".into();
                }
                if let Flow::Stop = flow {
                    break 'run "closed by the daemon".into();
                }
            }
        };
        dialect.finish(&mut link, &reason);
        // The waiters learn first: a dead peer may take a while to accept a close frame.
        link.finish(D::NAME, &reason);
        if let Some((code, why)) = close_with {
            close(&mut ws, code, &why).await;
        }
    }
}

fn command<D: Dialect>(
    dialect: &mut D,
    link: &mut Link,
    cmd: Command,
    close_with: &mut Option<(CloseCode, String)>,
) -> Flow {
    match cmd {
        Command::Request(req) => {
            dialect.request(link, req);
            Flow::Continue
        }
        Command::Forget { id } => {
            link.pending.forget(id);
            Flow::Continue
        }
        Command::Close { code, reason } => {
            *close_with = Some((CloseCode::from(code), reason));
            Flow::Stop
        }
    }
}

/// Writes the queued frames with one flush. A request whose frame could not be written
/// fails as never sent (SEND_ERROR); the connection's other waiters fail when it ends.
async fn write<S>(ws: &mut WebSocketStream<S>, link: &mut Link) -> Result<(), WsError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if link.outbox.is_empty() {
        return Ok(());
    }
    // Taken and put back emptied, so its capacity serves the next turn.
    let mut outbox = std::mem::take(&mut link.outbox);
    let mut queued = outbox.drain(..);
    while let Some((frame, id)) = queued.next() {
        if let Err(e) = ws.feed(frame).await {
            for id in id.into_iter().chain(queued.filter_map(|(_, id)| id)) {
                link.pending.fail_unsent(&id);
            }
            return Err(e);
        }
    }
    drop(queued);
    link.outbox = outbox;
    ws.flush().await
}

/// Sends a close frame, giving the peer a second to take it.
pub async fn close<S>(ws: &mut WebSocketStream<S>, code: CloseCode, reason: &str)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let frame = CloseFrame {
        code,
        reason: reason.to_owned().into(),
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), ws.close(Some(frame))).await;
}

/// Answers a peer's close frame before its connection is dropped. tungstenite queues the echo
/// RFC 6455 §5.5.1 asks for when it reads the frame but sends it only on the next write or
/// flush; without one the peer sees the connection end uncleanly (close code 1006).
async fn echo_close<S>(ws: &mut WebSocketStream<S>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let _ = tokio::time::timeout(Duration::from_secs(1), ws.flush()).await;
}
