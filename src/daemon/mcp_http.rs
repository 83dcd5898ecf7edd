//! MCP over Streamable HTTP at `/mcp` on the loopback port (POST, GET and DELETE, sessions
//! named by `Mcp-Session-Id`), served by rmcp's `StreamableHttpService`.
//!
//! In front of it: the listener's Host/Origin checks (DNS rebinding), then the daemon's
//! token as `Authorization: Bearer` unless `--mcp-auth none`. Behind it, each session's
//! [`McpServer`] reads the registry and runs calls in this process (no socket hop).

use super::access;
use super::config::McpAuth;
use super::context::Daemon;
use super::http::{self, Body};
use super::mcp_backend::DaemonBackend;
use crate::error::{Error, ErrorCode};
use crate::mcp::{McpServer, Scope};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::{Arc, OnceLock, Weak};

pub type Service = StreamableHttpService<McpServer<DaemonBackend>, LocalSessionManager>;

fn build(d: &Arc<Daemon>) -> Service {
    // Weak: the service lives in the daemon, so a strong reference would be a cycle. Each
    // session's server holds the daemon only while the session lives.
    let weak: Weak<Daemon> = Arc::downgrade(d);
    let config =
        StreamableHttpServerConfig::default().with_cancellation_token(d.shutdown.child_token());
    StreamableHttpService::new(
        move || {
            let d = weak
                .upgrade()
                .ok_or_else(|| std::io::Error::other("browser-mcpd is shutting down"))?;
            Ok(McpServer::new(DaemonBackend::agent(d), Scope::default()))
        },
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// Serves one request to `/mcp` (the listener has checked Host, Origin and a presented
/// token already); `service` is built on first use.
pub async fn serve(
    req: Request<Incoming>,
    d: Arc<Daemon>,
    service: &OnceLock<Service>,
) -> Response<Body> {
    let token_ok = access::bearer(&req).is_some_and(|t| access::tokens_match(t, &d.runtime.token));
    if d.config().mcp_auth == McpAuth::Bearer && !token_ok {
        tracing::warn!("refused an MCP request without the daemon's token");
        let mut r = http::json(
            StatusCode::UNAUTHORIZED,
            &crate::error::ErrorBody {
                error: Error::new(
                    ErrorCode::Unauthorized,
                    "/mcp needs `Authorization: Bearer TOKEN` with the token from the discovery \
                     file (`browserctl mcp --print-config` prints it)",
                ),
            },
        );
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"browser-mcp\""),
        );
        return r;
    }
    let ends_session = req.method() == hyper::Method::DELETE;
    let mut resp = service
        .get_or_init(|| build(&d))
        .handle(req)
        .await
        .map(BodyExt::boxed);
    // rmcp confirms a session's end with an empty 202; the Python SDK (and others written
    // from the spec's examples) expect 200 or 204 and warn otherwise. Same meaning, no body.
    if ends_session && resp.status() == StatusCode::ACCEPTED {
        *resp.status_mut() = StatusCode::NO_CONTENT;
    }
    resp
}
