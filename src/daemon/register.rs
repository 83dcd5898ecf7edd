//! The seed-002 dialect adapter: `POST /register` hands out instance ids, and a WebSocket
//! whose first message is `hello {instanceId}` becomes that instance's connection.
//!
//! An instance has no tabs: its tools are the built-in catalogue
//! ([`crate::protocol::register::catalogue`]) hung on the browser, and a call to a
//! consolidated tool is mapped to the original tool the extension runs. The connection task
//! owns the socket and its pending calls, like the bridge's; in addition it pings the peer
//! and drops it after two unanswered pings. When the connection ends, the instance is
//! unregistered (a new `POST /register` is needed) and its pending calls fail at once.

use super::conn::{next_conn_id, note_stray, Command, ConnHandle, Pending, Waiter};
use super::extension::{error_response, json_response, Body};
use super::keepalive::{Beat, Keepalive};
use super::registry::{browser_ref, BrowserKey};
use super::{classify, limits, Daemon, Stats};
use crate::error::{Error, ErrorCode};
use crate::protocol::register::{
    self, catalogue, ExtensionMessage, RegisterRequest, RegisterResponse, ServerMessage,
};
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

pub const DIALECT: &str = "register";

/// Close codes (private range) for a refused `hello`.
pub const CLOSE_UNKNOWN_INSTANCE: u16 = 4404;
pub const CLOSE_ALREADY_CONNECTED: u16 = 4409;

/// A registration nobody said `hello` for is forgotten after this long.
const UNCLAIMED_TTL: Duration = Duration::from_secs(60);
/// Registrations waiting for their `hello`, at most (a loop of POSTs cannot grow memory).
const MAX_UNCLAIMED: usize = 256;
const MAX_BODY: usize = 64 * 1024;
const COMMAND_QUEUE: usize = 1024;

// ---- registrations --------------------------------------------------------------------------

struct Instance {
    user_agent: String,
    window_id: Option<i64>,
    registered: Instant,
    /// The connection that said `hello` for it.
    conn: Option<u64>,
}

/// The instance ids handed out by `POST /register`. Dialect state, so it lives here and not
/// in the registry; a std Mutex because every use is a few map operations.
#[derive(Default)]
pub struct Instances {
    inner: Mutex<HashMap<String, Instance>>,
}

#[derive(Debug)]
pub struct Claimed {
    pub user_agent: String,
    pub window_id: Option<i64>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    Unknown,
    AlreadyConnected,
}

impl Instances {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Instance>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn register(&self, req: RegisterRequest) -> Result<String, Error> {
        let now = Instant::now();
        let mut map = self.lock();
        map.retain(|_, i| i.conn.is_some() || now.duration_since(i.registered) < UNCLAIMED_TTL);
        if map.values().filter(|i| i.conn.is_none()).count() >= MAX_UNCLAIMED {
            return Err(Error::new(
                ErrorCode::LimitExceeded,
                format!(
                    "{MAX_UNCLAIMED} registrations are waiting for their hello; try again later"
                ),
            ));
        }
        let id = loop {
            let mut random = [0u8; 6];
            getrandom::fill(&mut random).expect("the OS random source works");
            let id = register::instance_id(crate::time::now_ms(), random);
            if !map.contains_key(&id) {
                break id;
            }
        };
        map.insert(
            id.clone(),
            Instance {
                user_agent: req.user_agent,
                window_id: req.window_id,
                registered: now,
                conn: None,
            },
        );
        Ok(id)
    }

    /// A `hello`: the instance must be registered, recently, and not connected already.
    pub fn claim(&self, id: &str, conn: u64) -> Result<Claimed, Refused> {
        let mut map = self.lock();
        let i = map.get_mut(id).ok_or(Refused::Unknown)?;
        if i.conn.is_some() {
            return Err(Refused::AlreadyConnected);
        }
        if i.registered.elapsed() >= UNCLAIMED_TTL {
            map.remove(id);
            return Err(Refused::Unknown);
        }
        i.conn = Some(conn);
        Ok(Claimed {
            user_agent: i.user_agent.clone(),
            window_id: i.window_id,
        })
    }

    /// The connection ended: the instance is unregistered (seed 002's `unregister`).
    pub fn release(&self, id: &str, conn: u64) {
        let mut map = self.lock();
        if map.get(id).is_some_and(|i| i.conn == Some(conn)) {
            map.remove(id);
        }
    }
}

/// `POST /register {userAgent, windowId}` → `{instanceId, port, websocketUrl}`.
pub async fn handle_register(req: Request<Incoming>, d: &Daemon) -> Response<Body> {
    // A client that stops halfway through its body must not hold the connection.
    let limit = d.config().handshake_timeout;
    let collect = Limited::new(req.into_body(), MAX_BODY).collect();
    let Ok(collected) = tokio::time::timeout(limit, collect).await else {
        return error_response(Error::bad_request(format!(
            "the registration did not arrive within {} ms",
            limit.as_millis()
        )));
    };
    let body = match collected {
        Ok(c) => c.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return error_response(Error::new(
                ErrorCode::PayloadTooLarge,
                format!("a registration is at most {MAX_BODY} bytes"),
            ))
        }
        Err(e) => return error_response(Error::bad_request(format!("reading the body: {e}"))),
    };
    // serde would take `[]` for the struct too: the seed's body is an object.
    let object = body.trim_ascii_start().first() == Some(&b'{');
    let parsed: Result<RegisterRequest, String> = match object {
        true => serde_json::from_slice(&body).map_err(|e| e.to_string()),
        false => Err("not an object".into()),
    };
    let parsed = match parsed {
        Ok(r) => r,
        Err(e) => {
            return error_response(Error::bad_request(format!(
                "expected a JSON object {{userAgent, windowId}}: {e}"
            )))
        }
    };
    match d.instances.register(parsed) {
        Ok(instance_id) => {
            tracing::info!(instance = %instance_id, "instance registered");
            json_response(
                StatusCode::OK,
                &RegisterResponse {
                    instance_id,
                    port: d.runtime.port,
                    websocket_url: register::websocket_url(d.runtime.port),
                },
            )
        }
        Err(e) => error_response(e),
    }
}

// ---- the connection -------------------------------------------------------------------------

struct Conn<S> {
    ws: WebSocketStream<S>,
    d: Arc<Daemon>,
    handle: ConnHandle,
    instance_id: String,
    key: BrowserKey,
    pending: Pending,
}

enum Flow {
    Continue,
    Stop,
}

/// Serves a connection whose first message, `hello`, is `first`.
pub async fn run<S>(mut ws: WebSocketStream<S>, d: Arc<Daemon>, first: String)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let instance_id = match register::decode(&first) {
        Ok(ExtensionMessage::Hello { instance_id }) => instance_id,
        _ => {
            close(&mut ws, CloseCode::Policy, "expected `hello {instanceId}`").await;
            return;
        }
    };
    let (tx, mut rx) = mpsc::channel(COMMAND_QUEUE);
    let handle = ConnHandle {
        id: next_conn_id(),
        tx,
    };
    let claimed = match d.instances.claim(&instance_id, handle.id) {
        Ok(c) => c,
        Err(refused) => {
            let (code, close_code, message) = match refused {
                Refused::Unknown => (
                    "UNKNOWN_INSTANCE",
                    CLOSE_UNKNOWN_INSTANCE,
                    format!("instance {instance_id} is not registered (POST /register first)"),
                ),
                Refused::AlreadyConnected => (
                    "ALREADY_CONNECTED",
                    CLOSE_ALREADY_CONNECTED,
                    format!("instance {instance_id} is already connected"),
                ),
            };
            tracing::warn!(instance = %instance_id, code, "refused a hello");
            let text = ServerMessage::Error {
                error: register::ErrorBody {
                    code,
                    message: &message,
                },
            }
            .to_json();
            let _ = ws.send(Message::text(text)).await;
            close(&mut ws, CloseCode::from(close_code), &message).await;
            return;
        }
    };
    let info = register::browser_info(&claimed.user_agent);
    let (key, displaced) = {
        let mut reg = d.registry();
        let (key, displaced) = reg.attach(
            DIALECT,
            &instance_id,
            info,
            handle.clone(),
            crate::time::now_rfc3339(),
        );
        let r = reg.set_browser_tools(key, handle.id, catalogue().tools().to_vec());
        limits::check(&d.stats, handle.id, r);
        (key, displaced)
    };
    if let Some(old) = displaced {
        let _ = old.tx.try_send(Command::Close {
            code: 4000,
            reason: "replaced by a newer connection of the same instance".into(),
        });
    }
    tracing::info!(browser = %browser_ref(key), instance = %instance_id,
        window = ?claimed.window_id, "browser connected (register dialect)");
    let mut c = Conn {
        ws,
        d: d.clone(),
        handle,
        instance_id,
        key,
        pending: Pending::counted(d.stats.pending.clone()),
    };
    let welcome = ServerMessage::Welcome {
        instance_id: &c.instance_id,
        server_version: env!("CARGO_PKG_VERSION"),
    }
    .to_json();
    if c.ws.send(Message::text(welcome)).await.is_err() {
        c.finish("could not send welcome");
        return;
    }
    let mut keepalive = Keepalive::new(d.config().ws_ping_interval);
    let (reason, close_with) = loop {
        let flow = tokio::select! {
            _ = d.shutdown.cancelled() => break ("daemon shutdown", Some((CloseCode::Away, "browser-mcpd is shutting down"))),
            Some(cmd) = rx.recv() => c.command(cmd).await,
            beat = keepalive.tick() => match beat {
                Beat::Ping => match c.ws.send(Message::Ping(Default::default())).await {
                    Ok(()) => Flow::Continue,
                    Err(_) => Flow::Stop,
                },
                Beat::Dead => break ("no pong to two pings", Some((CloseCode::Away, "no answer to ping"))),
            },
            frame = c.ws.next() => match frame {
                Some(Ok(Message::Text(text))) => c.text(text.as_str()),
                Some(Ok(Message::Pong(_))) => {
                    keepalive.pong();
                    Flow::Continue
                }
                Some(Ok(Message::Binary(_))) => {
                    Stats::bump(&c.d.stats.bad_messages);
                    tracing::warn!(conn = c.handle.id, "ignored a binary frame (this protocol is JSON text)");
                    Flow::Continue
                }
                Some(Ok(Message::Close(_))) => {
                    super::conn::echo_close(&mut c.ws).await;
                    break ("closed by the browser", None);
                }
                None => break ("closed by the browser", None),
                Some(Ok(_)) => Flow::Continue,
                Some(Err(e)) => {
                    tracing::debug!(conn = c.handle.id, error = %e, "WebSocket error");
                    let size = matches!(e, tokio_tungstenite::tungstenite::Error::Capacity(_));
                    break ("WebSocket error", size.then_some((CloseCode::Size, "message too big")));
                }
            },
        };
        if let Flow::Stop = flow {
            break ("closed by the daemon", None);
        }
    };
    // Fail the waiters first: a dead peer may take a while to accept a close frame.
    c.finish(reason);
    if let Some((code, why)) = close_with {
        close(&mut c.ws, code, why).await;
    }
}

async fn close<S: AsyncRead + AsyncWrite + Unpin>(
    ws: &mut WebSocketStream<S>,
    code: CloseCode,
    reason: &str,
) {
    let frame = CloseFrame {
        code,
        reason: reason.to_owned().into(),
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), ws.close(Some(frame))).await;
}

impl<S> Conn<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    /// The browser leaves, the instance is unregistered, and every waiter learns why.
    fn finish(&mut self, reason: &str) {
        self.d.registry().detach(self.key, self.handle.id);
        self.d.instances.release(&self.instance_id, self.handle.id);
        tracing::info!(browser = %browser_ref(self.key), instance = %self.instance_id, reason, "browser disconnected");
        // Calls cut off by our own shutdown say so; the others saw the connection break.
        let code = if self.d.shutdown.is_cancelled() {
            ErrorCode::ShuttingDown
        } else {
            ErrorCode::WebsocketError
        };
        self.pending
            .fail_all(code, &format!("the browser connection closed ({reason})"));
    }

    async fn command(&mut self, cmd: Command) -> Flow {
        let refuse = |what: &str| {
            Error::bad_request(format!(
                "{what}: browser {} speaks the register dialect, which has no tab commands; use its browser_tab tool",
                browser_ref(self.key)
            ))
        };
        match cmd {
            Command::Call {
                id,
                tab,
                tool,
                args,
                reply,
            } => {
                if let Some(tab) = tab {
                    let _ = reply.send(Err(Error::new(
                        ErrorCode::TabNotFound,
                        format!(
                            "browser {} has no tabs (register dialect); there is no tab {tab}",
                            browser_ref(self.key)
                        ),
                    )));
                    return Flow::Continue;
                }
                let mapped = match catalogue().map(&tool, &args) {
                    Ok(m) => m,
                    Err(message) => {
                        let _ = reply.send(Err(Error::new(ErrorCode::InvalidArguments, message)));
                        return Flow::Continue;
                    }
                };
                let text = ServerMessage::ToolCall {
                    id: &id,
                    name: &mapped.name,
                    args: &mapped.args,
                }
                .to_json();
                self.pending.insert(id.clone(), Waiter::Call(reply));
                if self.ws.send(Message::text(text)).await.is_err() {
                    self.pending.fail_unsent(&id);
                    return Flow::Stop;
                }
            }
            Command::Discover { reply, .. } => {
                let _ = reply.send(Err(refuse("discoverTools")));
            }
            Command::OpenTab { reply, .. } => {
                let _ = reply.send(Err(refuse("openTab")));
            }
            Command::CloseTab { reply, .. } => {
                let _ = reply.send(Err(refuse("closeTab")));
            }
            Command::Forget { id } => self.pending.forget(id),
            Command::Close { code, reason } => {
                close(&mut self.ws, CloseCode::from(code), &reason).await;
                return Flow::Stop;
            }
        }
        Flow::Continue
    }

    fn text(&mut self, text: &str) -> Flow {
        let message = match register::decode(text) {
            Ok(m) => m,
            Err(e) => {
                Stats::bump(&self.d.stats.bad_messages);
                tracing::warn!(conn = self.handle.id, error = %e, "ignored a bad message from an extension");
                return Flow::Continue;
            }
        };
        let (id, outcome, kind) = match message {
            ExtensionMessage::ToolResult { id, result } => (id, Ok(result), "tool_result"),
            ExtensionMessage::ToolError { id, error } => {
                (id, Err(classify::tool_failure(error)), "tool_error")
            }
            ExtensionMessage::Hello { .. } => {
                tracing::debug!(conn = self.handle.id, "a repeated hello; ignored");
                return Flow::Continue;
            }
            ExtensionMessage::Unknown { kind } => {
                tracing::info!(browser = %browser_ref(self.key), kind, "ignored a message of unknown type");
                return Flow::Continue;
            }
        };
        match self.pending.take(id.as_deref()) {
            Ok(Waiter::Call(reply)) => {
                let _ = reply.send(outcome);
            }
            Ok(other) => other.fail(Error::internal(format!(
                "the browser answered with an unexpected {kind}"
            ))),
            Err(m) => note_stray(&self.d.stats, self.handle.id, m, kind, id.as_deref()),
        }
        Flow::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_is_claimed_once_and_released_by_its_connection() {
        let i = Instances::default();
        let id = i.register(RegisterRequest::default()).unwrap();
        assert!(id.starts_with("inst_"));
        assert_eq!(i.claim("inst_0_nope00", 1).unwrap_err(), Refused::Unknown);
        i.claim(&id, 1).unwrap();
        assert_eq!(i.claim(&id, 2).unwrap_err(), Refused::AlreadyConnected);
        i.release(&id, 2);
        assert_eq!(i.claim(&id, 3).unwrap_err(), Refused::AlreadyConnected);
        i.release(&id, 1);
        assert_eq!(i.claim(&id, 3).unwrap_err(), Refused::Unknown);
    }

    #[test]
    fn unclaimed_registrations_are_bounded() {
        let i = Instances::default();
        for _ in 0..MAX_UNCLAIMED {
            i.register(RegisterRequest::default()).unwrap();
        }
        let e = i.register(RegisterRequest::default()).unwrap_err();
        assert_eq!(e.code, ErrorCode::LimitExceeded);
    }
}
