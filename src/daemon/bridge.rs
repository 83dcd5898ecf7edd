//! The seed-001 dialect adapter: one task per extension connection.
//!
//! The task owns the WebSocket and the connection's table of pending calls. It turns wire
//! messages into registry updates and answers, and [`Command`]s into wire messages. When it
//! ends, for any reason, the browser leaves the registry and every pending call fails at once.

use super::conn::{next_conn_id, Command, ConnHandle, Match, Pending, Waiter};
use super::registry::{browser_ref, BrowserKey};
use super::{classify, limits, Daemon, Stats};
use crate::error::{Error, ErrorCode};
use crate::protocol::bridge::{self, ExtensionMessage, ServerMessage, TabId};
use crate::protocol::control::event_kind;
use futures_util::{SinkExt, StreamExt};
use serde_json::value::RawValue;
use serde_json::Value;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

pub const DIALECT: &str = "bridge";

/// Queue of commands for one connection. Bounded so a stuck browser pushes back on callers
/// (their send then waits inside their own timeout) instead of growing without limit.
const COMMAND_QUEUE: usize = 1024;

/// Largest `data` of a page event (`tabEvent`); our extension sends well under 2 KiB.
const MAX_PAGE_EVENT_BYTES: usize = 8 * 1024;

struct Conn<S> {
    ws: WebSocketStream<S>,
    d: Arc<Daemon>,
    handle: ConnHandle,
    session: String,
    key: Option<BrowserKey>,
    pending: Pending,
}

enum Flow {
    Continue,
    Stop,
}

/// `first` is the peer's first message if it already sent one (the listener reads it to
/// tell the dialects of `GET /` apart).
pub async fn run<S>(
    ws: WebSocketStream<S>,
    d: Arc<Daemon>,
    origin: Option<String>,
    first: Option<String>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (tx, mut rx) = mpsc::channel(COMMAND_QUEUE);
    let handle = ConnHandle {
        id: next_conn_id(),
        tx,
    };
    let mut c = Conn {
        ws,
        session: format!("session_{}", handle.id),
        d: d.clone(),
        handle,
        key: None,
        pending: Pending::counted(d.stats.pending.clone()),
    };
    tracing::debug!(
        conn = c.handle.id,
        origin = origin.as_deref().unwrap_or("-"),
        "extension connected"
    );
    let hello = ServerMessage::Connect {
        session_id: &c.session,
    }
    .to_json();
    if c.ws.send(Message::text(hello)).await.is_err() {
        return;
    }
    if let Some(text) = first {
        if let Flow::Stop = c.text(&text).await {
            c.finish("closed by the daemon");
            return;
        }
    }
    let handshake = tokio::time::sleep(d.config().handshake_timeout);
    tokio::pin!(handshake);
    let reason = loop {
        let flow = tokio::select! {
            _ = d.shutdown.cancelled() => {
                c.pending.fail_all(ErrorCode::ShuttingDown, "browser-mcpd is shutting down");
                c.close(CloseCode::Away, "browser-mcpd is shutting down").await;
                break "daemon shutdown";
            }
            Some(cmd) = rx.recv() => c.commands(cmd, &mut rx).await,
            frame = c.ws.next() => match frame {
                Some(Ok(Message::Text(text))) => c.text(text.as_str()).await,
                Some(Ok(Message::Binary(_))) => {
                    Stats::bump(&c.d.stats.bad_messages);
                    tracing::warn!(conn = c.handle.id, "ignored a binary frame (the bridge protocol is JSON text)");
                    Flow::Continue
                }
                Some(Ok(Message::Close(_))) => {
                    super::conn::echo_close(&mut c.ws).await;
                    break "closed by the browser";
                }
                None => break "closed by the browser",
                Some(Ok(_)) => Flow::Continue,
                Some(Err(e)) => {
                    tracing::debug!(conn = c.handle.id, error = %e, "WebSocket error");
                    if matches!(e, tokio_tungstenite::tungstenite::Error::Capacity(_)) {
                        c.close(CloseCode::Size, "message too big").await;
                    }
                    break "WebSocket error";
                }
            },
            _ = &mut handshake, if c.key.is_none() => {
                c.close(CloseCode::Policy, "expected a `connected` message").await;
                break "no `connected` message in time";
            }
        };
        if let Flow::Stop = flow {
            break "closed by the daemon";
        }
    };
    c.finish(reason);
}

impl<S> Conn<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    async fn send(&mut self, m: ServerMessage<'_>) -> bool {
        self.ws.send(Message::text(m.to_json())).await.is_ok()
    }

    async fn close(&mut self, code: CloseCode, reason: &str) {
        let frame = CloseFrame {
            code,
            reason: reason.to_owned().into(),
        };
        let _ = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            self.ws.close(Some(frame)),
        )
        .await;
    }

    /// The connection is over: the browser leaves, its waiters learn why.
    fn finish(mut self, reason: &str) {
        if let Some(key) = self.key {
            self.d.registry().detach(key, self.handle.id);
            tracing::info!(browser = %browser_ref(key), reason, "browser disconnected");
        }
        self.pending.fail_all(
            ErrorCode::WebsocketError,
            &format!("the browser connection closed ({reason})"),
        );
    }

    /// Writes a command and whatever else is already queued, then flushes once: under load
    /// many calls share one write.
    async fn commands(&mut self, first: Command, rx: &mut mpsc::Receiver<Command>) -> Flow {
        const BATCH: usize = 64;
        let mut flow = self.command(first).await;
        for _ in 1..BATCH {
            if !matches!(flow, Flow::Continue) {
                break;
            }
            match rx.try_recv() {
                Ok(cmd) => flow = self.command(cmd).await,
                Err(_) => break,
            }
        }
        if self.ws.flush().await.is_err() {
            return Flow::Stop;
        }
        flow
    }

    /// Queues one command's message (the caller flushes).
    async fn command(&mut self, cmd: Command) -> Flow {
        let session = self.session.clone();
        let (id, waiter, message) = match cmd {
            Command::Call {
                id,
                tab,
                tool,
                args,
                reply,
            } => {
                let Some(tab_id) = tab else {
                    let _ = reply.send(Err(Error::new(
                        ErrorCode::TabNotFound,
                        "bridge browsers expose tools per tab; name a tab",
                    )));
                    return Flow::Continue;
                };
                let text = ServerMessage::CallTool {
                    session_id: &session,
                    call_id: &id,
                    tab_id,
                    tool_name: &tool,
                    args: &args,
                }
                .to_json();
                (id, Waiter::Call(reply), text)
            }
            Command::Discover { id, tab, reply } => {
                let text = ServerMessage::DiscoverTools {
                    session_id: &session,
                    call_id: &id,
                    tab_id: tab,
                }
                .to_json();
                (id, Waiter::Discover(reply), text)
            }
            Command::OpenTab {
                id,
                url,
                focus,
                reply,
            } => {
                let text = ServerMessage::OpenTab {
                    session_id: &session,
                    url: &url,
                    focus,
                    request_id: &id,
                }
                .to_json();
                (id, Waiter::Open(reply), text)
            }
            Command::CloseTab { tab, reply } => {
                self.pending.insert_close(tab, reply);
                let text = ServerMessage::CloseTab {
                    session_id: &session,
                    tab_id: tab,
                }
                .to_json();
                let ok = self.ws.feed(Message::text(text)).await.is_ok();
                return if ok { Flow::Continue } else { Flow::Stop };
            }
            Command::Forget { id } => {
                self.pending.forget(id);
                return Flow::Continue;
            }
            Command::Close { code, reason } => {
                self.close(CloseCode::from(code), &reason).await;
                return Flow::Stop;
            }
        };
        self.pending.insert(id.clone(), waiter);
        if self.ws.feed(Message::text(message)).await.is_err() {
            self.pending.fail_unsent(&id);
            return Flow::Stop;
        }
        Flow::Continue
    }

    async fn text(&mut self, text: &str) -> Flow {
        let decoded = match bridge::decode(text) {
            Ok(d) => d,
            Err(e) => {
                Stats::bump(&self.d.stats.bad_messages);
                tracing::warn!(conn = self.handle.id, error = %e, "ignored a bad message from an extension");
                return Flow::Continue;
            }
        };
        if let (Some(theirs), Some(_)) = (&decoded.session_id, self.key) {
            if *theirs != self.session {
                tracing::debug!(conn = self.handle.id, theirs, ours = %self.session, "message names another session");
            }
        }
        let message = decoded.message;
        if let ExtensionMessage::Connected { browser, tabs } = message {
            return self.connected(decoded.session_id, browser, tabs);
        }
        let id = self.handle.id;
        let Some(key) = self.key else {
            match message {
                ExtensionMessage::Ping => return self.pong().await,
                other => {
                    tracing::warn!(conn = id, message = ?std::mem::discriminant(&other), "message before `connected`; ignored");
                    return Flow::Continue;
                }
            }
        };
        match message {
            ExtensionMessage::Connected { .. } => unreachable!("handled above"),
            ExtensionMessage::Disconnected => {
                tracing::info!(browser = %browser_ref(key), "extension says it is disconnecting");
                return Flow::Stop;
            }
            ExtensionMessage::TabCreated { tab, request_id } => {
                let info = tab.clone();
                let r = self
                    .d
                    .registry()
                    .upsert_tab(key, id, tab, request_id.as_deref());
                limits::check(&self.d.stats, id, r);
                match self.pending.take(request_id.as_deref()) {
                    Ok(Waiter::Open(reply)) => {
                        let _ = reply.send(Ok(info));
                    }
                    Ok(other) => fail_mismatch(other, "tabCreated"),
                    Err(_) => {}
                }
            }
            ExtensionMessage::TabUpdated { tab } => {
                let r = self.d.registry().upsert_tab(key, id, tab, None);
                limits::check(&self.d.stats, id, r);
            }
            ExtensionMessage::TabClosed { tab_id } => {
                self.d.registry().tab_closed(key, id, tab_id);
                self.pending.tab_closed(tab_id);
            }
            ExtensionMessage::TabFocused {
                tab_id,
                tools,
                hidden,
            } => {
                let r = self
                    .d
                    .registry()
                    .tab_focused(key, id, tab_id, tools, hidden);
                limits::check(&self.d.stats, id, r);
            }
            ExtensionMessage::ToolsChanged {
                tab_id,
                tools,
                hidden,
            } => {
                let r = self.d.registry().set_tools(key, id, tab_id, tools, hidden);
                limits::check(&self.d.stats, id, r);
            }
            ExtensionMessage::ToolsDiscovered {
                call_id,
                tab_id,
                tools,
                hidden,
                error,
            } => match (self.pending.take(Some(&call_id)), error) {
                (Ok(w), Some(failure)) => w.fail(classify::tool_failure(failure)),
                (Ok(Waiter::Discover(reply)), None) => {
                    if let Some(tab_id) = tab_id {
                        let r = self
                            .d
                            .registry()
                            .set_tools(key, id, tab_id, tools.clone(), hidden);
                        limits::check(&self.d.stats, id, r);
                    }
                    let _ = reply.send(Ok(tools));
                }
                (Ok(other), None) => fail_mismatch(other, "toolsDiscovered"),
                (Err(m), _) => self.stray(m, "toolsDiscovered", Some(&call_id)),
            },
            ExtensionMessage::ToolResult { call_id, outcome } => {
                match self.pending.take(call_id.as_deref()) {
                    Ok(Waiter::Call(reply)) => {
                        let _ = reply.send(outcome.map_err(classify::tool_failure));
                    }
                    Ok(other) => fail_mismatch(other, "toolResult"),
                    Err(m) => self.stray(m, "toolResult", call_id.as_deref()),
                }
            }
            ExtensionMessage::Error {
                request_id,
                failure,
            } => match self.pending.take(request_id.as_deref()) {
                Ok(w) => w.fail(classify::tool_failure(failure)),
                Err(m) => self.stray(m, "error", request_id.as_deref()),
            },
            ExtensionMessage::TabEvent {
                tab_id,
                event,
                data,
            } => self.tab_event(key, tab_id, &event, &data),
            ExtensionMessage::Ping => return self.pong().await,
            ExtensionMessage::Pong => {}
            ExtensionMessage::Unknown { kind } => {
                tracing::info!(browser = %browser_ref(key), kind, "ignored a message of unknown type");
            }
        }
        Flow::Continue
    }

    /// A page event becomes a registry event. The extension keeps its data small; bigger data,
    /// data that is not an object, or an event name we do not know is dropped with a warning.
    fn tab_event(&self, key: BrowserKey, tab_id: TabId, event: &str, data: &RawValue) {
        let Some(kind) = event_kind::page(event) else {
            tracing::info!(browser = %browser_ref(key), event, "ignored a page event of unknown type");
            return;
        };
        let data = match serde_json::from_str::<Value>(data.get()) {
            Ok(v @ Value::Object(_)) if data.get().len() <= MAX_PAGE_EVENT_BYTES => v,
            _ => {
                Stats::bump(&self.d.stats.bad_messages);
                tracing::warn!(
                    browser = %browser_ref(key),
                    event,
                    bytes = data.get().len(),
                    "ignored a page event whose data is not an object of at most {MAX_PAGE_EVENT_BYTES} bytes"
                );
                return;
            }
        };
        self.d
            .registry()
            .tab_event(key, self.handle.id, tab_id, kind, data);
    }

    async fn pong(&mut self) -> Flow {
        match self.send(ServerMessage::Pong).await {
            true => Flow::Continue,
            false => Flow::Stop,
        }
    }

    fn stray(&self, m: Match, kind: &str, id: Option<&str>) {
        let stats = &self.d.stats;
        match m {
            Match::Late => {
                Stats::bump(&stats.late_responses);
                tracing::warn!(
                    conn = self.handle.id,
                    kind,
                    id,
                    "late answer after the call timed out; dropped"
                );
            }
            Match::Unknown => {
                Stats::bump(&stats.unknown_responses);
                tracing::warn!(
                    conn = self.handle.id,
                    kind,
                    id,
                    "answer to no known call; dropped"
                );
            }
        }
    }

    fn connected(
        &mut self,
        session: Option<String>,
        browser: bridge::BrowserInfo,
        tabs: Vec<bridge::TabInfo>,
    ) -> Flow {
        let id = self.handle.id;
        let (displaced, refused) = {
            let mut reg = self.d.registry();
            match self.key {
                Some(key) => {
                    // A resync on a live connection: same browser, fresh snapshot.
                    reg.set_browser_info(key, id, browser);
                    (None, reg.replace_tabs(key, id, tabs))
                }
                None => {
                    if let Some(s) = session.filter(|s| !s.is_empty()) {
                        self.session = s;
                    }
                    let name = format!("{} {}", browser.name, browser.version);
                    let (key, displaced) = reg.attach(
                        DIALECT,
                        &self.session,
                        browser,
                        self.handle.clone(),
                        crate::time::now_rfc3339(),
                    );
                    let refused = reg.replace_tabs(key, id, tabs);
                    self.key = Some(key);
                    tracing::info!(browser = %browser_ref(key), session = %self.session, name = name.trim(), "browser connected");
                    (displaced, refused)
                }
            }
        };
        limits::check(&self.d.stats, id, refused);
        if let Some(old) = displaced {
            let _ = old.tx.try_send(Command::Close {
                code: 4000,
                reason: "replaced by a newer connection of the same session".into(),
            });
        }
        Flow::Continue
    }
}

fn fail_mismatch(w: Waiter, kind: &str) {
    w.fail(Error::internal(format!(
        "the browser answered with an unexpected {kind}"
    )));
}
