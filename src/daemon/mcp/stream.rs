//! MCP on the control socket, for `browserctl mcp`: `GET /v1/mcp` with `Upgrade: mcp-stdio`
//! turns the connection into one MCP session in MCP's stdio framing (a JSON-RPC message per
//! line), served by the same [`McpServer`] as `/mcp`. `browserctl mcp` copies the lines
//! between it and its stdin and stdout, so each message is parsed and answered once, here,
//! over one persistent connection (issue 17).
//!
//! In the session, a `tools/call` of a listed tab tool goes the short way ([`Shortcut`]):
//! answered in this connection's task, with the answers that are ready written together.
//! Every other line goes to rmcp's service through an in-memory pipe, unchanged, and its
//! lines come back the same way; lines of both kinds are never cut into each other.
//!
//! The session ends when the client closes its side, and at the daemon's last shutdown stage;
//! while the daemon drains, calls in flight are still answered.

use super::backend::DaemonBackend;
use crate::daemon::context::Daemon;
use crate::daemon::http::{self, Body};
use crate::daemon::trust::via::Via;
use crate::error::Error;
use crate::mcp::shortcut::{Answered, Call, Shortcut, Taken};
use crate::mcp::{McpServer, Scope};
use crate::protocol::control::MCP_UPGRADE;
use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::ServiceExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A control connection's place among `--max-control-connections`, which an MCP session
/// keeps while it lives (the connection's own task ends at the upgrade).
#[derive(Clone)]
pub struct ConnectionSlot {
    _held: Arc<dyn std::any::Any + Send + Sync>,
}

impl ConnectionSlot {
    pub fn new(held: Arc<dyn std::any::Any + Send + Sync>) -> ConnectionSlot {
        ConnectionSlot { _held: held }
    }
}

/// Answers `GET /v1/mcp`: 101 and a session task, or an error answer.
pub fn accept(
    mut req: Request<Incoming>,
    d: Arc<Daemon>,
    scope: Scope,
    via: Via,
) -> Result<Response<Body>, Error> {
    let wants = |name, token| http::lists(req.headers(), name, token);
    if !wants(header::CONNECTION, "upgrade") || !wants(header::UPGRADE, MCP_UPGRADE) {
        return Err(Error::bad_request(format!(
            "/v1/mcp is an upgrade: send `Connection: Upgrade` and `Upgrade: {MCP_UPGRADE}` \
             (browserctl mcp does)"
        )));
    }
    let upgrade = hyper::upgrade::on(&mut req);
    let slot = req.extensions_mut().remove::<ConnectionSlot>();
    let tasks = d.tasks.clone();
    // An agent's session: the browsers watch their pages while it is open (issue 30).
    let present = d.presence.hold();
    tasks.spawn(async move {
        let _slot = slot;
        let _present = present;
        match upgrade.await {
            Ok(io) => session(TokioIo::new(io), d, scope, via).await,
            Err(e) => tracing::debug!(error = %e, "an MCP upgrade on the control socket failed"),
        }
    });
    let mut resp = Response::new(http::full(Vec::new()));
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static(MCP_UPGRADE));
    Ok(resp)
}

/// Bytes waiting for the client, or for rmcp, beyond which the session stops reading more
/// from whoever produces them (so a client that does not read cannot make it grow).
const HIGH: usize = 1 << 20;
/// How long calls in flight may take to finish once the client's input has ended; then they
/// are cancelled. rmcp's service drains as long.
const DRAIN: Duration = Duration::from_secs(5);
/// Read size, from the client and from rmcp.
const READ: usize = 64 << 10;
/// Each in-memory pipe between the session and rmcp.
const PIPE: usize = 256 << 10;
/// A line still without its end at this length is no short call: it streams on to rmcp,
/// which bounds lines its own way.
const SHORT_MAX: usize = 1 << 20;

/// One MCP session on an upgraded connection, until the client leaves or the daemon stops.
async fn session(
    io: impl AsyncRead + AsyncWrite + Send + 'static,
    d: Arc<Daemon>,
    scope: Scope,
    via: Via,
) {
    let server = McpServer::new(DaemonBackend::local(d.clone(), via), scope);
    let shortcut = Shortcut::of(&server);
    // Duplex pipes, as their ends tell the other side when they are dropped: when rmcp's
    // service ends, its output reads to its end here.
    let (rmcp_in, mut to_rmcp) = tokio::io::duplex(PIPE);
    let (rmcp_out, mut from_rmcp) = tokio::io::duplex(PIPE);
    let stop = d.shutdown.child_token();
    // Its own: rmcp cancels the token it is given when its service ends.
    let rmcp_stop = stop.child_token();
    d.tasks.spawn(async move {
        match server.serve_with_ct((rmcp_in, rmcp_out), rmcp_stop).await {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            // A client that leaves before `initialize`, or sends something else first.
            Err(e) => {
                tracing::debug!(error = %e, "an MCP session on the control socket did not start")
            }
        }
    });
    let (mut sock_r, mut sock_w) = tokio::io::split(io);
    let mut inbound = Inbound::default();
    // Complete lines for the client; rmcp's output up to its last newline.
    let mut out = Vec::new();
    let mut from_rmcp_buf = Vec::new();
    let mut calls = FuturesUnordered::new();
    // The client may stop sending and still read its answers (a half-closed connection);
    // only a failed write says it is gone.
    let (mut reading, mut writable) = (true, true);
    let (mut rmcp_open, mut rmcp_told) = (true, false);
    // Once the client's input ends, calls in flight have DRAIN to finish (as on rmcp's path).
    let drain = tokio::time::sleep(Duration::MAX);
    tokio::pin!(drain);
    let mut draining = false;
    loop {
        if !reading && !draining {
            draining = true;
            drain.as_mut().reset(tokio::time::Instant::now() + DRAIN);
        }
        if !reading && !rmcp_told && inbound.for_rmcp.is_empty() {
            // Its input ended: rmcp answers what it has and ends.
            let _ = to_rmcp.shutdown().await;
            rmcp_told = true;
        }
        if !reading && !rmcp_open && calls.is_empty() && (out.is_empty() || !writable) {
            break;
        }
        reserve(&mut inbound.buf);
        reserve(&mut from_rmcp_buf);
        tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            () = &mut drain, if draining && !calls.is_empty() => {
                shortcut.cancel_all();
                drain.as_mut().reset(tokio::time::Instant::now() + Duration::from_secs(3600));
            }
            Some(answer) = calls.next(), if !calls.is_empty() => {
                let mut answer: Answered = answer;
                // Every answer ready now goes out in one write.
                loop {
                    if let (Answered::Answer(line), true) = (answer, writable) {
                        out.extend_from_slice(&line);
                        out.push(b'\n');
                    }
                    match calls.next().now_or_never() {
                        Some(Some(next)) => answer = next,
                        _ => break,
                    }
                }
            }
            read = from_rmcp.read_buf(&mut from_rmcp_buf), if rmcp_open && out.len() < HIGH => {
                if !matches!(read, Ok(n) if n > 0) {
                    // rmcp's service ended (its input ended, or the session failed): nothing
                    // more of the client's can be served.
                    rmcp_open = false;
                    reading = false;
                    inbound.for_rmcp.clear();
                }
                if let Some(end) = from_rmcp_buf.iter().rposition(|b| *b == b'\n') {
                    if writable {
                        out.extend(from_rmcp_buf.drain(..=end));
                    } else {
                        from_rmcp_buf.clear();
                    }
                }
            }
            read = sock_r.read_buf(&mut inbound.buf),
                if reading && inbound.for_rmcp.len() < HIGH && out.len() < HIGH =>
            {
                if matches!(read, Ok(n) if n > 0) {
                    inbound.take_lines(&shortcut, |call| calls.push(shortcut.answer(call)));
                } else {
                    reading = false;
                }
            }
            wrote = to_rmcp.write(&inbound.for_rmcp), if !inbound.for_rmcp.is_empty() => {
                match wrote {
                    Ok(n) => drop(inbound.for_rmcp.drain(..n)),
                    Err(_) => inbound.for_rmcp.clear(),
                }
            }
            wrote = sock_w.write(&out), if !out.is_empty() && writable => {
                match wrote {
                    Ok(n) => drop(out.drain(..n)),
                    // The client left: nobody hears the answers; calls in flight are cancelled
                    // in the browser, as on rmcp's path when its transport ends.
                    Err(_) => {
                        writable = false;
                        reading = false;
                        out.clear();
                        shortcut.cancel_all();
                    }
                }
            }
        }
    }
}

/// Room for a good read: `read_buf` on a full `Vec` would read 64 bytes at a time.
fn reserve(buf: &mut Vec<u8>) {
    if buf.capacity() - buf.len() < READ / 4 {
        buf.reserve(READ);
    }
}

/// What the client sent, split into short calls and lines for rmcp.
#[derive(Default)]
struct Inbound {
    buf: Vec<u8>,
    /// Bytes for rmcp's pipe: whole lines, or an over-long line as it streams.
    for_rmcp: Vec<u8>,
    /// Passing an over-long line on to rmcp until its end.
    passing: bool,
}

impl Inbound {
    fn take_lines<B: crate::mcp::Backend>(
        &mut self,
        shortcut: &Shortcut<B>,
        mut call: impl FnMut(Call<B>),
    ) {
        let mut at = 0;
        while at < self.buf.len() {
            let rest = &self.buf[at..];
            let Some(nl) = rest.iter().position(|b| *b == b'\n') else {
                if self.passing || rest.len() > SHORT_MAX {
                    self.for_rmcp.extend_from_slice(rest);
                    self.passing = true;
                    at = self.buf.len();
                }
                break;
            };
            let line = &rest[..nl];
            if self.passing {
                self.passing = false;
                self.for_rmcp.extend_from_slice(&rest[..=nl]);
            } else {
                match shortcut.take(line) {
                    Taken::Call(c) => call(c),
                    Taken::Cancel => {}
                    Taken::Not => self.for_rmcp.extend_from_slice(&rest[..=nl]),
                }
            }
            at += nl + 1;
        }
        self.buf.drain(..at);
    }
}
