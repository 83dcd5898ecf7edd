//! The loopback listener for browser extensions and agents: one hyper HTTP/1.1 server on
//! `127.0.0.1:PORT`. Every request passes the [`access`] checks first; then `GET /` and
//! `GET /ws` upgrades become WebSockets handed to their [`dialect`](super::dialect), `POST /register` goes to
//! the register dialect and `/mcp` to [`mcp_http`].
//!
//! The listener owns what only its routes share: the seed-002 registrations and the MCP
//! service.

use super::context::Daemon;
use super::dialect::{bridge, driver, jsonrpc, register};
use super::http::{self, Body};
use super::limits::{self, Admission, Slot};
use super::mcp::http as mcp_http;
use super::trust::refuse::Refusals;
use super::trust::{access, auth};
use crate::error::{Error, ErrorCode};
use crate::protocol::auth as auth_proto;
use crate::protocol::jsonrpc::ConnectParams;
use access::PeerUser;
use auth::Evidence;
use futures_util::StreamExt;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

/// How much a WebSocket connection reads at once. tungstenite's default (128 KiB) is zeroed
/// and kept per connection (132 KiB of RSS each, and a memset of it on every read); our
/// messages are mostly well under 1 KiB, and a larger frame still gets its whole length
/// reserved at once, only read in more pieces (issue 17).
const WS_READ_BUFFER: usize = 16 << 10;

/// What the routes of the port share.
struct Port {
    d: Arc<Daemon>,
    /// Seed-002 registrations (`POST /register`) waiting for or holding a connection.
    instances: Arc<register::Instances>,
    /// The MCP Streamable HTTP service behind `/mcp`, built on first use.
    mcp: OnceLock<mcp_http::Service>,
}

pub async fn serve(listener: TcpListener, d: Arc<Daemon>) {
    let port = Arc::new(Port {
        d: d.clone(),
        instances: Arc::default(),
        mcp: OnceLock::new(),
    });
    // Connections over the limit get a short-lived answer (LIMIT_EXCEEDED); those answers are
    // capped too, and beyond both a connection is closed unanswered.
    let refusing = Arc::default();
    let others = Refusals::default();
    loop {
        let (stream, peer) = tokio::select! {
            _ = d.draining.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // EMFILE and friends: back off a moment rather than spin.
                    tracing::warn!(error = %e, "accept failed on the extension port");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        // Whose program this is, asked of the kernel once per connection (issue 21), before
        // the connection may take a slot: another user's is answered and closed at once.
        let who = match stream.local_addr() {
            Ok(local) => PeerUser::of(local, peer),
            Err(e) => PeerUser::Unknown(e.to_string()),
        };
        if let Err(refusal) = access::admit_peer(&who) {
            others.refuse(
                &d.tasks,
                stream,
                refusal.error,
                "refused a connection of another user",
            );
            continue;
        }
        let c = d.config();
        let open = &d.stats.extension_connections;
        let slot = match limits::admit(
            &d.stats,
            open,
            &refusing,
            c.max_connections,
            "max-connections",
        ) {
            Admission::Open(slot) => Ok(Arc::new(slot)),
            Admission::Refuse(slot, e) => Err((slot, e)),
            Admission::Drop => {
                tracing::debug!(%peer, "closed a connection over the limit unanswered");
                continue;
            }
        };
        let port = port.clone();
        let draining = d.draining.clone();
        let keep_alive = slot.is_ok();
        d.tasks.spawn(async move {
            let who = Arc::new(who);
            if let PeerUser::Unknown(why) = &*who {
                tracing::debug!(%peer, "cannot tell whose program this is ({why}); it must prove the token");
            }
            let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
                let port = port.clone();
                let who = who.clone();
                let slot = slot.as_ref().map(Arc::clone).map_err(|(_, e)| e.clone());
                async move {
                    let slot = match slot {
                        Ok(slot) => slot,
                        Err(e) => return Ok::<_, Infallible>(http::error(e)),
                    };
                    // An upgraded WebSocket takes the slot with it.
                    req.extensions_mut().insert(slot);
                    Ok(route(req, port, &who).await)
                }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(c.handshake_timeout)
                .keep_alive(keep_alive)
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            tokio::pin!(conn);
            let r = tokio::select! {
                r = conn.as_mut() => r,
                _ = draining.cancelled() => {
                    // Upgraded WebSockets live on in their own tasks; this ends idle HTTP.
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = r {
                tracing::debug!(%peer, error = %e, "extension HTTP connection ended with an error");
            }
        });
    }
}

async fn route(req: Request<Incoming>, port: Arc<Port>, who: &PeerUser) -> Response<Body> {
    let d = &port.d;
    // Another user's program is refused before anything else, on every route.
    if let Err(refusal) = access::admit_peer(who) {
        tracing::warn!(
            path = req.uri().path(),
            "refused a connection of another user: {}",
            refusal.error.message
        );
        return refusal.response();
    }
    let root = req.method() == Method::GET && req.uri().path() == "/";
    let handshake = root && is_upgrade(&req) && offers_auth(&req);
    let demands = access::Demands {
        peer_unknown: matches!(who, PeerUser::Unknown(_)),
        token_optional: handshake || (root && !is_upgrade(&req)),
        loopback_origins: req.uri().path() == "/mcp",
    };
    if let Err(refusal) = access::admit(&req, &d.config(), &d.token(), demands) {
        // Never the raw query: it may carry the token.
        tracing::warn!(path = req.uri().path(), query = %access::redacted_query(req.uri().query()),
            status = %refusal.status, "refused an extension request");
        return refusal.response();
    }
    match (req.method(), req.uri().path()) {
        (_, "/mcp") => mcp_http::serve(req, d.clone(), &port.mcp).await,
        // Bridge (seed 001) or register (seed 002): told apart by the first message.
        (&Method::GET, "/") if is_upgrade(&req) => {
            upgrade(req, port.clone(), Dialect::Root { handshake })
        }
        (&Method::POST, "/register") => register::handle_register(req, d, &port.instances).await,
        (&Method::GET, "/ws") => {
            let token = access::presented_token(&req).is_some();
            match jsonrpc::check_request(req.uri().query(), token) {
                Ok(params) if is_upgrade(&req) => {
                    upgrade(req, port.clone(), Dialect::JsonRpc(params))
                }
                Ok(_) => http::json(
                    StatusCode::UPGRADE_REQUIRED,
                    &serde_json::json!({"hint": "connect with a WebSocket (seed-003 JSON-RPC)"}),
                ),
                Err(e) => {
                    tracing::warn!(path = "/ws", code = %e.code, "refused a JSON-RPC upgrade: {}", e.message);
                    http::error(e)
                }
            }
        }
        // Who we are, for an extension's port scan; `startedAt` tells one run from the next.
        (&Method::GET, "/") => http::json(
            StatusCode::UPGRADE_REQUIRED,
            &serde_json::json!({"name": "browser-mcpd", "version": env!("CARGO_PKG_VERSION"),
                "startedAt": d.runtime.started_at, "auth": auth_proto::SUBPROTOCOL,
                "hint": "connect with a WebSocket (seed-001 bridge protocol)"}),
        ),
        // The control API is the person's, on the control socket: a token (an agent's, an
        // MCP client's) opens none of it here, the answers to consent prompts least of all
        // (issue 60).
        (_, path) if path == "/v1" || path.starts_with("/v1/") => {
            http::error(Error::new(
                ErrorCode::Unauthorized,
                format!(
                    "{path} is the control API, served only on the daemon's control socket to                      its own user (browserctl); the loopback port and its token do not open it{}",
                    if path.starts_with("/v1/consent") {
                        ": a consent prompt is answered by the person, in the browser or with                          `browserctl consent answer`, never by an agent"
                    } else {
                        ""
                    }
                ),
            ))
        }
        _ => http::error(Error::new(
            ErrorCode::NotFound,
            format!("no route {}", req.uri().path()),
        )),
    }
}

fn is_upgrade(req: &Request<Incoming>) -> bool {
    let has = |name: header::HeaderName, token: &str| {
        req.headers().get_all(name).iter().any(|v| {
            v.to_str()
                .map(|s| s.split(',').any(|p| p.trim().eq_ignore_ascii_case(token)))
                .unwrap_or(false)
        })
    };
    has(header::CONNECTION, "upgrade") && has(header::UPGRADE, "websocket")
}

/// Whether an upgrade offers the trust handshake's subprotocol.
fn offers_auth(req: &Request<Incoming>) -> bool {
    req.headers()
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim() == auth_proto::SUBPROTOCOL)
}

#[derive(Debug, Clone)]
enum Dialect {
    /// `GET /`: seed 001 or seed 002, see [`sniff`]; after the trust handshake when the
    /// upgrade offered it.
    Root {
        handshake: bool,
    },
    JsonRpc(ConnectParams),
}

/// Why [`sniff`] found no first message.
enum NoFirst {
    /// The peer left.
    Gone,
    /// Its first message was over `--max-frame-bytes`.
    TooBig,
}

/// Tells the two dialects of `GET /` apart by the first message: `hello` with an
/// `instanceId` is a seed-002 extension; anything else (`connected`) is a seed-001 bridge
/// extension, and so is a peer that says nothing within the sniff window, because a
/// bridge extension may wait for our `connect` before it speaks.
async fn sniff<S>(ws: &mut WebSocketStream<S>, window: Duration) -> Result<Option<String>, NoFirst>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let deadline = tokio::time::Instant::now() + window;
    loop {
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Err(_) => return Ok(None),
            Ok(Some(Ok(Message::Text(t)))) => return Ok(Some(t.as_str().to_owned())),
            Ok(Some(Ok(
                Message::Binary(_) | Message::Ping(_) | Message::Pong(_) | Message::Frame(_),
            ))) => continue,
            Ok(Some(Err(WsError::Capacity(_)))) => return Err(NoFirst::TooBig),
            Ok(_) => return Err(NoFirst::Gone),
        }
    }
}

/// The trust handshake, first thing on a socket that offered it; `None` when it failed (the
/// socket is closed then).
async fn prove<S>(ws: &mut WebSocketStream<S>, d: &Daemon, timeout: Duration) -> Option<Evidence>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let first = match sniff(ws, timeout).await {
        Ok(Some(first)) => first,
        Ok(None) => {
            driver::close(ws, CloseCode::Policy, "expected the trust handshake (auth)").await;
            return None;
        }
        Err(_) => return None,
    };
    let token = d.token();
    let keys = auth::Keys {
        token: &token,
        pairings: &d.pairings,
        port: d.runtime.port,
    };
    auth::handshake(ws, &first, &keys, timeout).await.ok()
}

fn upgrade(mut req: Request<Incoming>, port: Arc<Port>, dialect: Dialect) -> Response<Body> {
    let Some(key) = req.headers().get(header::SEC_WEBSOCKET_KEY).cloned() else {
        return http::error(Error::bad_request("missing Sec-WebSocket-Key"));
    };
    if req
        .headers()
        .get(header::SEC_WEBSOCKET_VERSION)
        .map(|v| v.as_bytes())
        != Some(b"13")
    {
        return http::error(Error::bad_request(
            "unsupported Sec-WebSocket-Version (need 13)",
        ));
    }
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let dialect_shown = dialect.clone();
    let on_upgrade = hyper::upgrade::on(&mut req);
    let slot = req.extensions_mut().remove::<Arc<Slot>>();
    let tasks = port.d.tasks.clone();
    tasks.spawn(async move {
        let _slot = slot;
        let upgraded = match on_upgrade.await {
            Ok(u) => u,
            Err(e) => {
                tracing::debug!(error = %e, "WebSocket upgrade failed");
                return;
            }
        };
        let d = port.d.clone();
        let c = d.config();
        let mut config = WebSocketConfig::default();
        config.max_message_size = Some(c.max_frame_bytes);
        config.max_frame_size = Some(c.max_frame_bytes);
        config.read_buffer_size = WS_READ_BUFFER;
        let mut ws =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config))
                .await;
        match dialect {
            Dialect::Root { handshake } => {
                // A connection that proved a pairing is closed when the pairing is revoked.
                let mut _live = None;
                let mut revoked = CancellationToken::new();
                if handshake {
                    let Some(evidence) = prove(&mut ws, &d, c.handshake_timeout).await else {
                        return;
                    };
                    if let Evidence::Pairing(id) | Evidence::Paired(id) = &evidence {
                        let guard = d.pairings.connected(id);
                        revoked = guard.revoked();
                        _live = Some(guard);
                    }
                }
                match sniff(&mut ws, c.sniff_window).await {
                    Ok(Some(first)) if crate::protocol::register::is_hello(&first) => {
                        register::run(ws, d, port.instances.clone(), first, revoked).await
                    }
                    Ok(first) => bridge::run(ws, d, origin, first, revoked).await,
                    Err(NoFirst::Gone) => {
                        tracing::debug!("a WebSocket closed before its first message")
                    }
                    Err(NoFirst::TooBig) => {
                        tracing::warn!("a first message over --max-frame-bytes; closing with 1009");
                        driver::close(&mut ws, CloseCode::Size, "message too big").await;
                    }
                }
            }
            Dialect::JsonRpc(params) => jsonrpc::run(ws, d, params).await,
        }
    });
    let mut r = Response::new(http::full(bytes::Bytes::new()));
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    if let Dialect::Root { handshake: true } = dialect_shown {
        h.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static(auth_proto::SUBPROTOCOL),
        );
    }
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(v) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    r
}
