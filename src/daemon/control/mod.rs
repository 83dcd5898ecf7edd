//! The control API: HTTP/1.1 + JSON on a Unix socket, for browserctl and anything else local.
//!
//! Our own accept loop (UnixListener → TokioIo → hyper `serve_connection`, one task per
//! connection, graceful shutdown): [`socket`] keeps the socket private and checks each peer's
//! uid, [`routes`] parses requests, [`handlers`] answers them and [`events`] streams events.
//! A new request of the API goes into [`routes`] and [`handlers`], its shapes into
//! `crate::protocol::control`. May import what is below it in `daemon/mod.rs`'s order, `mcp/`
//! on down (`GET /v1/mcp` is handed to `mcp/stream.rs`).

mod conn;
mod events;
mod handlers;
pub mod routes;
mod socket;

pub use socket::{bind, SocketFile};

use super::context::Daemon;
use super::http;
use super::limits::{self, Admission};
use super::mcp::stream::ConnectionSlot;
use super::trust::refuse::Refusals;
use super::trust::via::Via;
use crate::error::{Error, ErrorCode};
use conn::ControlConn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::UnixListener;

/// Serves one of the daemon's Unix sockets: the control socket (`Via::Local`) or the relay
/// socket (`Via::Relay`, see [`Via`]), each request marked with the socket it came by.
pub async fn serve(listener: UnixListener, d: Arc<Daemon>, via: Via) {
    let me = nix::unistd::geteuid().as_raw();
    // Answers to connections over the limit are capped too; beyond, a connection is closed.
    let refusing = Arc::default();
    let others = Refusals::default();
    loop {
        let stream = tokio::select! {
            _ = d.draining.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((s, _)) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed on the control socket");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Whose program this is, before the connection may take a slot: another user's is
        // answered and closed at once (issue 35, item 6).
        let refused = match socket::peer_uid(&stream) {
            Ok(uid) if uid == me || uid == 0 => None,
            Ok(uid) => Some(format!(
                "browser-mcpd serves only its own user (uid {me}); a program of another user \
                 (uid {uid}) may not use its control socket"
            )),
            Err(e) => Some(format!(
                "could not read the credentials of the program on the other end ({e}); refused"
            )),
        };
        if let Some(why) = refused {
            let e = Error::new(ErrorCode::Unauthorized, why);
            others.refuse(&d.tasks, stream, e, "refused a control connection");
            continue;
        }
        let max = d.config().max_control_connections;
        let open = &d.stats.control_connections;
        let slot = match limits::admit(&d.stats, open, &refusing, max, "max-control-connections") {
            Admission::Open(slot) => Ok(slot),
            Admission::Refuse(slot, e) => Err((slot, e)),
            Admission::Drop => continue,
        };
        let stream = match ControlConn::new(stream) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "could not watch a control connection; closed it");
                continue;
            }
        };
        let d2 = d.clone();
        let d3 = d.clone();
        let keep_alive = slot.is_ok();
        let refusal = slot.as_ref().err().map(|(_, e)| e.clone());
        // Shared with an MCP session the connection may turn into, which outlives the task.
        let slot = Arc::new(slot);
        let held = ConnectionSlot::new(slot.clone());
        // A client must send each request's head within this time (a half-sent request, or an
        // idle kept-alive connection, is closed then) and its body within as long again.
        let header_timeout = d.config().handshake_timeout;
        d.tasks.spawn(async move {
            let _slot = slot;
            let d = d3;
            let service = hyper::service::service_fn(move |mut req: hyper::Request<_>| {
                let d = d2.clone();
                let refusal = refusal.clone();
                req.extensions_mut().insert(held.clone());
                req.extensions_mut().insert(via);
                async move {
                    if let Some(e) = refusal {
                        return Ok::<_, Infallible>(http::error(e));
                    }
                    Ok(handlers::handle(req, d).await)
                }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .keep_alive(keep_alive)
                .serve_connection(TokioIo::new(stream), service)
                // `GET /v1/mcp` hands the connection to an MCP session.
                .with_upgrades();
            tokio::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "control connection ended with an error");
                    }
                }
                _ = d.draining.cancelled() => {
                    // A request in progress (a call in flight) is answered, then the
                    // connection closes; at the last stage that answer is SHUTTING_DOWN.
                    conn.as_mut().graceful_shutdown();
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        _ = d.shutdown.cancelled() => {
                            let _ = tokio::time::timeout(Duration::from_secs(1), conn).await;
                        }
                    }
                }
            }
        });
    }
}
