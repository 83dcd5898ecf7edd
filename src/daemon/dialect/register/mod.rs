//! The seed-002 dialect: `POST /register` hands out instance ids, and a WebSocket whose first
//! message is `hello {instanceId}` becomes that instance's connection.
//!
//! An instance has no tabs: its tools are the built-in catalogue
//! ([`crate::protocol::register::catalogue`]) hung on the browser, and a call to a
//! consolidated tool is mapped to the original tool the extension runs. When the connection
//! ends, the instance is unregistered (a new `POST /register` is needed).

mod instances;

pub use instances::Instances;
use instances::Refused;

use super::classify;
use super::driver::{self, Connection, Dialect, Flow, Link};
use crate::daemon::conn::{Request, Waiter};
use crate::daemon::context::Daemon;
use crate::daemon::http::{self, Body};
use crate::daemon::registry::Initial;
use crate::error::{Error, ErrorCode};
use crate::protocol::register::{
    self, catalogue, ExtensionMessage, RegisterRequest, RegisterResponse, ServerMessage,
};
use futures_util::SinkExt;
use hyper::body::Incoming;
use hyper::{Request as HttpRequest, Response};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

pub const DIALECT: &str = "register";

/// Close codes (private range) for a refused `hello`.
pub const CLOSE_UNKNOWN_INSTANCE: u16 = 4404;
pub const CLOSE_ALREADY_CONNECTED: u16 = 4409;

const MAX_BODY: usize = 64 * 1024;

/// `POST /register {userAgent, windowId}` → `{instanceId, port, websocketUrl}`.
pub async fn handle_register(
    req: HttpRequest<Incoming>,
    d: &Daemon,
    instances: &Instances,
) -> Response<Body> {
    let body = match http::read_body(req, MAX_BODY, d.config().handshake_timeout).await {
        Ok(b) => b,
        Err(e) => return http::error(e),
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
            return http::error(Error::bad_request(format!(
                "expected a JSON object {{userAgent, windowId}}: {e}"
            )))
        }
    };
    match instances.register(parsed) {
        Ok(instance_id) => {
            tracing::info!(instance = %instance_id, "instance registered");
            http::ok(&RegisterResponse {
                instance_id,
                port: d.runtime.port,
                websocket_url: register::websocket_url(d.runtime.port),
            })
        }
        Err(e) => http::error(e),
    }
}

struct Registered {
    instance_id: String,
    instances: Arc<Instances>,
}

/// Serves a connection whose first message, `hello`, is `first`.
pub async fn run<S>(
    mut ws: WebSocketStream<S>,
    d: Arc<Daemon>,
    instances: Arc<Instances>,
    first: String,
    revoked: CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let instance_id = match register::decode(&first) {
        Ok(ExtensionMessage::Hello { instance_id }) => instance_id,
        _ => {
            driver::close(&mut ws, CloseCode::Policy, "expected `hello {instanceId}`").await;
            return;
        }
    };
    let mut conn = Connection::new(d).revoked_by(revoked);
    let claimed = match instances.claim(&instance_id, conn.link.id()) {
        Ok(c) => c,
        Err(refused) => return refuse(ws, &instance_id, refused).await,
    };
    let info = register::browser_info(&claimed.user_agent);
    let tools = Initial::Tools(catalogue().tools().to_vec());
    let key = conn.link.attach(DIALECT, &instance_id, info, tools);
    tracing::info!(browser = %key, instance = %instance_id,
        window = ?claimed.window_id, "browser connected (register dialect)");
    conn.link.send(
        ServerMessage::Welcome {
            instance_id: &instance_id,
            server_version: env!("CARGO_PKG_VERSION"),
        }
        .to_json(),
    );
    let dialect = Registered {
        instance_id,
        instances,
    };
    conn.run(ws, dialect, None).await;
}

/// A `hello` for an instance that is not registered or already connected: an `error`
/// message, then a close with its own code.
async fn refuse<S>(mut ws: WebSocketStream<S>, instance_id: &str, refused: Refused)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
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
    driver::close(&mut ws, CloseCode::from(close_code), &message).await;
}

impl Dialect for Registered {
    const NAME: &'static str = DIALECT;
    const PINGS: bool = true;

    fn text(&mut self, link: &mut Link, text: &str) -> Flow {
        let message = match register::decode(text) {
            Ok(m) => m,
            Err(e) => {
                link.bad_message(format_args!("a bad message from an extension: {e}"));
                return Flow::Continue;
            }
        };
        let (id, outcome, kind) = match message {
            ExtensionMessage::ToolResult { id, result } => (id, Ok(result), "tool_result"),
            ExtensionMessage::ToolError { id, error } => {
                (id, Err(classify::tool_failure(error)), "tool_error")
            }
            ExtensionMessage::Hello { .. } => {
                tracing::debug!(conn = link.id(), "a repeated hello; ignored");
                return Flow::Continue;
            }
            ExtensionMessage::Unknown { kind } => {
                tracing::info!(instance = %self.instance_id, kind, "ignored a message of unknown type");
                return Flow::Continue;
            }
        };
        match link.pending.take(id.as_deref()) {
            Ok(Waiter::Call(reply)) => {
                let _ = reply.send(outcome);
            }
            Ok(other) => other.fail(Error::internal(format!(
                "the browser answered with an unexpected {kind}"
            ))),
            Err(m) => link.stray(m, kind, id.as_deref()),
        }
        Flow::Continue
    }

    fn request(&mut self, link: &mut Link, req: Request) {
        let browser = link.key.map(|k| k.to_string()).unwrap_or_default();
        let instead = "; use its browser_tab tool";
        let Some(call) = req.tabless(&browser, "the register dialect", instead) else {
            return;
        };
        match catalogue().map(&call.tool, &call.args) {
            Ok(mapped) => {
                let frame = ServerMessage::ToolCall {
                    id: &call.id,
                    name: &mapped.name,
                    args: &mapped.args,
                }
                .to_json();
                link.ask(call.id, Waiter::Call(call.reply), frame);
            }
            Err(message) => {
                let _ = call
                    .reply
                    .send(Err(Error::new(ErrorCode::InvalidArguments, message)));
            }
        }
    }

    /// The instance is unregistered (seed 002's `unregister`).
    fn finish(&mut self, link: &mut Link, _reason: &str) {
        self.instances.release(&self.instance_id, link.id());
    }
}
