//! The loopback listener for browser extensions: one hyper HTTP/1.1 server on
//! `127.0.0.1:PORT` whose upgrades become WebSockets, each handed to its dialect adapter.
//!
//! Every request is checked first: the `Host` must be a loopback name (a page on another
//! origin cannot reach us through DNS rebinding) and an `Origin`, when present, must be in
//! the allowed set (extension origins by default; web pages never).

use super::Daemon;
use crate::error::{Error, ErrorBody, ErrorCode};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;

pub type Body = Full<Bytes>;

pub async fn serve(listener: TcpListener, d: Arc<Daemon>) {
    loop {
        let (stream, peer) = tokio::select! {
            _ = d.draining.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // EMFILE and friends: back off a moment rather than spin.
                    tracing::warn!(error = %e, "accept failed on the extension port");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let d2 = d.clone();
        let handshake = d.config().handshake_timeout;
        let draining = d.draining.clone();
        d.tasks.spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                let d = d2.clone();
                async move {
                    if req.uri().path() == "/mcp" {
                        return Ok::<_, Infallible>(super::mcp_http::serve(req, d).await);
                    }
                    Ok(route(req, d).await.map(http_body_util::BodyExt::boxed))
                }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(handshake)
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

pub fn json_response(status: StatusCode, body: &impl serde::Serialize) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(
        serde_json::to_vec(body).expect("JSON"),
    )));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

pub fn error_response(e: Error) -> Response<Body> {
    let status = StatusCode::from_u16(e.code.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    json_response(status, &ErrorBody { error: e })
}

fn forbidden(message: String) -> Response<Body> {
    let mut r = error_response(Error::new(ErrorCode::Unauthorized, message));
    *r.status_mut() = StatusCode::FORBIDDEN;
    r
}

/// `localhost`, `127.x.y.z`, `[::1]`, optionally with a port.
pub fn loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The value of one query parameter, percent-decoded.
pub fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (percent_decode(k) == name).then(|| percent_decode(v))
    })
}

pub fn percent_decode(s: &str) -> String {
    fn hex(b: u8) -> Option<u8> {
        (b as char).to_digit(16).map(|d| d as u8)
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Checks Host, Origin and token; `Err` is the refusal to send.
pub(super) fn admit(req: &Request<Incoming>, d: &Daemon) -> Result<(), Box<Response<Body>>> {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !loopback_host(host) {
        return Err(Box::new(forbidden(format!(
            "Host `{host}` is not a loopback name; browser-mcpd only answers to localhost"
        ))));
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("<invalid>");
        if !d.config().origin_allowed(origin) {
            return Err(Box::new(forbidden(format!(
                "Origin `{origin}` may not connect to browser-mcpd"
            ))));
        }
    }
    match presented_token(req) {
        Some(t) if !constant_time_eq(t.as_bytes(), d.runtime.token.as_bytes()) => Err(Box::new(
            error_response(Error::new(ErrorCode::Unauthorized, "wrong token")),
        )),
        None if d.config().require_token => Err(Box::new(error_response(Error::new(
            ErrorCode::Unauthorized,
            "this daemon requires a token (see the discovery file)",
        )))),
        _ => Ok(()),
    }
}

/// The token a request presents, as `?token=` or `Authorization: Bearer`.
fn presented_token(req: &Request<Incoming>) -> Option<String> {
    query_param(req.uri().query(), "token").or_else(|| {
        req.headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_owned)
    })
}

pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn route(req: Request<Incoming>, d: Arc<Daemon>) -> Response<Body> {
    if let Err(refusal) = admit(&req, &d) {
        tracing::warn!(uri = %req.uri(), status = %refusal.status(), "refused an extension request");
        return *refusal;
    }
    match (req.method(), req.uri().path()) {
        // Bridge (seed 001) or register (seed 002): told apart by the first message.
        (&hyper::Method::GET, "/") if is_upgrade(&req) => upgrade(req, d, Dialect::Root),
        (&hyper::Method::POST, "/register") => super::register::handle_register(req, &d).await,
        (&hyper::Method::GET, "/ws") => {
            let token = presented_token(&req).is_some();
            match super::jsonrpc::check_request(req.uri().query(), token) {
                Ok(params) if is_upgrade(&req) => upgrade(req, d, Dialect::JsonRpc(params)),
                Ok(_) => json_response(
                    StatusCode::UPGRADE_REQUIRED,
                    &serde_json::json!({"hint": "connect with a WebSocket (seed-003 JSON-RPC)"}),
                ),
                Err(e) => {
                    tracing::warn!(path = "/ws", code = %e.code, "refused a JSON-RPC upgrade: {}", e.message);
                    error_response(e)
                }
            }
        }
        (&hyper::Method::GET, "/") => json_response(
            StatusCode::UPGRADE_REQUIRED,
            &serde_json::json!({"name": "browser-mcpd", "version": env!("CARGO_PKG_VERSION"),
                "hint": "connect with a WebSocket (seed-001 bridge protocol)"}),
        ),
        _ => error_response(Error::new(
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

#[derive(Debug, Clone)]
enum Dialect {
    /// `GET /`: seed 001 or seed 002, see [`sniff`].
    Root,
    JsonRpc(crate::protocol::jsonrpc::ConnectParams),
}

/// Tells the two dialects of `GET /` apart by the first message: `hello` with an
/// `instanceId` is a seed-002 extension; anything else (`connected`) is a seed-001 bridge
/// extension, and so is a peer that says nothing within the sniff window, because a
/// bridge extension may wait for our `connect` before it speaks. `Err` means the peer left.
async fn sniff<S>(
    ws: &mut WebSocketStream<S>,
    window: std::time::Duration,
) -> Result<Option<String>, ()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    let deadline = tokio::time::Instant::now() + window;
    loop {
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Err(_) => return Ok(None),
            Ok(Some(Ok(Message::Text(t)))) => return Ok(Some(t.as_str().to_owned())),
            Ok(Some(Ok(
                Message::Binary(_) | Message::Ping(_) | Message::Pong(_) | Message::Frame(_),
            ))) => continue,
            Ok(_) => return Err(()),
        }
    }
}

fn upgrade(mut req: Request<Incoming>, d: Arc<Daemon>, dialect: Dialect) -> Response<Body> {
    let Some(key) = req.headers().get(header::SEC_WEBSOCKET_KEY).cloned() else {
        return error_response(Error::bad_request("missing Sec-WebSocket-Key"));
    };
    if req
        .headers()
        .get(header::SEC_WEBSOCKET_VERSION)
        .map(|v| v.as_bytes())
        != Some(b"13")
    {
        return error_response(Error::bad_request(
            "unsupported Sec-WebSocket-Version (need 13)",
        ));
    }
    let origin = req
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let on_upgrade = hyper::upgrade::on(&mut req);
    let d2 = d.clone();
    d.tasks.spawn(async move {
        let upgraded = match on_upgrade.await {
            Ok(u) => u,
            Err(e) => {
                tracing::debug!(error = %e, "WebSocket upgrade failed");
                return;
            }
        };
        let mut config = WebSocketConfig::default();
        let max_frame = d2.config().max_frame_bytes;
        config.max_message_size = Some(max_frame);
        config.max_frame_size = Some(max_frame);
        let mut ws =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config))
                .await;
        match dialect {
            Dialect::Root => match sniff(&mut ws, d2.config().sniff_window).await {
                Ok(Some(first)) if crate::protocol::register::is_hello(&first) => {
                    super::register::run(ws, d2, first).await
                }
                Ok(first) => super::bridge::run(ws, d2, origin, first).await,
                Err(()) => tracing::debug!("a WebSocket closed before its first message"),
            },
            Dialect::JsonRpc(params) => super::jsonrpc::run(ws, d2, params).await,
        }
    });
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(v) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        for ok in [
            "localhost",
            "localhost:8765",
            "127.0.0.1:1",
            "127.1.2.3",
            "[::1]:80",
            "[::1]",
            "LOCALHOST",
        ] {
            assert!(loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8765",
            "",
            "10.0.0.1",
            "localhost.evil.example",
            "[::2]:1",
        ] {
            assert!(!loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn query() {
        assert_eq!(
            query_param(Some("a=1&token=x%2By&b"), "token").as_deref(),
            Some("x+y")
        );
        assert_eq!(query_param(Some("b"), "b").as_deref(), Some(""));
        assert_eq!(query_param(None, "b"), None);
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }
}
