//! MCP on the control socket, for `browserctl mcp`: `GET /v1/mcp` with `Upgrade: mcp-stdio`
//! turns the connection into one MCP session in MCP's stdio framing (a JSON-RPC message per
//! line), served by the same [`McpServer`] as `/mcp`. `browserctl mcp` copies the lines
//! between it and its stdin and stdout, so each message is parsed and answered once, here,
//! over one persistent connection (issue 17).
//!
//! The session ends when the client closes its side, and at the daemon's last shutdown stage;
//! while the daemon drains, calls in flight are still answered.

use super::context::Daemon;
use super::http::{self, Body};
use super::mcp_backend::DaemonBackend;
use crate::error::Error;
use crate::mcp::{McpServer, Scope};
use crate::protocol::control::MCP_UPGRADE;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::ServiceExt;
use std::sync::Arc;

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
) -> Result<Response<Body>, Error> {
    let wants = |name: header::HeaderName, token: &str| {
        req.headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    if !wants(header::CONNECTION, "upgrade") || !wants(header::UPGRADE, MCP_UPGRADE) {
        return Err(Error::bad_request(format!(
            "/v1/mcp is an upgrade: send `Connection: Upgrade` and `Upgrade: {MCP_UPGRADE}` \
             (browserctl mcp does)"
        )));
    }
    let upgrade = hyper::upgrade::on(&mut req);
    let slot = req.extensions_mut().remove::<ConnectionSlot>();
    let tasks = d.tasks.clone();
    tasks.spawn(async move {
        let _slot = slot;
        let io = match upgrade.await {
            Ok(io) => TokioIo::new(io),
            Err(e) => {
                tracing::debug!(error = %e, "an MCP upgrade on the control socket failed");
                return;
            }
        };
        let (read, write) = tokio::io::split(io);
        let server = McpServer::new(DaemonBackend::local(d.clone()), scope);
        match server
            .serve_with_ct((read, write), d.shutdown.child_token())
            .await
        {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            // A client that leaves before `initialize`, or sends something else first.
            Err(e) => {
                tracing::debug!(error = %e, "an MCP session on the control socket did not start")
            }
        }
    });
    let mut resp = Response::new(http::full(Vec::new()));
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = resp.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static(MCP_UPGRADE));
    Ok(resp)
}
