//! MCP over Streamable HTTP at `/mcp` on the loopback port (POST, GET and DELETE, sessions
//! named by `Mcp-Session-Id`), served by rmcp's `StreamableHttpService`.
//!
//! In front of it: the listener's Host/Origin checks (DNS rebinding), then the daemon's
//! token as `Authorization: Bearer` unless `--mcp-auth none`. Behind it, each session's
//! [`McpServer`] reads the registry and runs calls in this process (no socket hop).

use super::config::McpAuth;
use super::extension::{admit, constant_time_eq};
use super::{calls, Daemon};
use crate::error::{Error, ErrorBody, ErrorCode};
use crate::mcp::{Backend, McpServer, Scope, Snapshot};
use crate::protocol::control::{event_kind, CallRequest, CallResponse, OpenTabRequest, TabView};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use tokio::sync::{broadcast, mpsc};

pub type Service = StreamableHttpService<McpServer<DaemonBackend>, LocalSessionManager>;
pub type Body = BoxBody<Bytes, Infallible>;

/// The registry and call path of this daemon, as an MCP backend: one per MCP session, with
/// the session's calls in flight counted against `--agent-max-in-flight`.
pub struct DaemonBackend(Arc<Daemon>, Arc<AtomicUsize>);

/// One call in flight of a session.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Backend for DaemonBackend {
    async fn snapshot(&self) -> Result<Snapshot, Error> {
        let reg = self.0.registry();
        Ok(Snapshot {
            browsers: reg.browser_views(),
            tabs: reg.tab_views(None),
            tools: reg.tool_views(None, None, None),
        })
    }

    async fn call(&self, req: CallRequest) -> Result<CallResponse, Error> {
        let max = self.0.config().agent_max_in_flight;
        let slot = Slot(self.1.clone());
        if self.1.fetch_add(1, Ordering::Relaxed) >= max {
            drop(slot);
            let e = Error::new(
                ErrorCode::LimitExceeded,
                format!("this MCP session already has {max} calls in flight (--agent-max-in-flight); wait for one to finish"),
            )
            .with_details(serde_json::json!({"limit": "agentMaxInFlight", "max": max}));
            super::limits::refused(&self.0.stats, 0, &e);
            return Err(e);
        }
        let r = calls::call(&self.0, req).await;
        drop(slot);
        r
    }

    async fn cancel(&self, call_id: &str) -> Result<bool, Error> {
        Ok(self.0.cancels.cancel(call_id))
    }

    async fn open_tab(&self, req: OpenTabRequest) -> Result<TabView, Error> {
        calls::open_tab(&self.0, req).await
    }

    async fn close_tab(&self, tab: &str) -> Result<String, Error> {
        calls::close_tab(&self.0, tab, None).await
    }

    async fn changes(&self) -> Result<mpsc::Receiver<()>, Error> {
        let (mut events, _, _) = self.0.registry().subscribe(None);
        let (tx, rx) = mpsc::channel(1);
        let shutdown = self.0.shutdown.clone();
        tokio::spawn(async move {
            loop {
                let relevant = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tx.closed() => return,
                    e = events.recv() => match e {
                        Ok(e) => event_kind::changes_tools(e.kind),
                        Err(broadcast::error::RecvError::Lagged(_)) => true,
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                };
                // A full channel already holds a signal that covers this event.
                if relevant && matches!(tx.try_send(()), Err(mpsc::error::TrySendError::Closed(_)))
                {
                    return;
                }
            }
        });
        Ok(rx)
    }
}

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
            Ok(McpServer::new(
                DaemonBackend(d, Arc::new(AtomicUsize::new(0))),
                Scope::default(),
            ))
        },
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

fn refusal(e: Error, status: StatusCode) -> Response<Body> {
    let body = serde_json::to_vec(&ErrorBody { error: e }).expect("JSON");
    let mut r = Response::new(Full::new(Bytes::from(body)).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn bearer_ok(req: &Request<Incoming>, d: &Daemon) -> bool {
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| constant_time_eq(t.trim().as_bytes(), d.runtime.token.as_bytes()))
}

/// Serves one request to `/mcp`.
pub async fn serve(req: Request<Incoming>, d: Arc<Daemon>) -> Response<Body> {
    if let Err(refused) = admit(&req, &d) {
        tracing::warn!(status = %refused.status(), "refused an MCP request");
        return (*refused).map(BodyExt::boxed);
    }
    if d.config().mcp_auth == McpAuth::Bearer && !bearer_ok(&req, &d) {
        tracing::warn!("refused an MCP request without the daemon's token");
        let mut r = refusal(
            Error::new(
                ErrorCode::Unauthorized,
                "/mcp needs `Authorization: Bearer TOKEN` with the token from the discovery \
                 file (`browserctl mcp --print-config` prints it)",
            ),
            StatusCode::UNAUTHORIZED,
        );
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"browser-mcp\""),
        );
        return r;
    }
    let ends_session = req.method() == hyper::Method::DELETE;
    let mut resp = d.mcp_http.get_or_init(|| build(&d)).handle(req).await;
    // rmcp confirms a session's end with an empty 202; the Python SDK (and others written
    // from the spec's examples) expect 200 or 204 and warn otherwise. Same meaning, no body.
    if ends_session && resp.status() == StatusCode::ACCEPTED {
        *resp.status_mut() = StatusCode::NO_CONTENT;
    }
    resp
}
