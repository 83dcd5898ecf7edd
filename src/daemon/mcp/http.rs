//! MCP over Streamable HTTP at `/mcp` on the loopback port (POST, GET and DELETE, sessions
//! named by `Mcp-Session-Id`), served by rmcp's `StreamableHttpService`.
//!
//! In front of it: the listener's Host/Origin checks (DNS rebinding), then the daemon's
//! token as `Authorization: Bearer` unless `--mcp-auth none`, then the session bounds
//! ([`Sessions`]: `--mcp-max-sessions`, `--mcp-session-idle`). Behind it, each session's
//! [`McpServer`] reads the registry and runs calls in this process (no socket hop).

use super::backend::DaemonBackend;
use super::sessions::{self, Activity, Sessions};
use crate::daemon::context::{quarter_of, Daemon};
use crate::daemon::http::{self, Body};
use crate::daemon::limits;
use crate::daemon::settings::config::McpAuth;
use crate::daemon::trust::access;
use crate::error::{Error, ErrorCode};
use crate::mcp::identity::PROTOCOL;
use crate::mcp::shortcut::{Answered, Taken};
use crate::mcp::{McpServer, Scope};
use http_body_util::BodyExt;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::http::request::Parts;
use hyper::{HeaderMap, Request, Response, StatusCode};
use rmcp::model::ProtocolVersion;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, Weak};
use tokio_util::task::TaskTracker;

/// rmcp's service and the sessions it keeps.
pub struct Service {
    http: StreamableHttpService<McpServer<DaemonBackend>, Sessions>,
    sessions: Arc<Sessions>,
}

fn build(d: &Arc<Daemon>) -> Service {
    // Weak: the service lives in the daemon, so a strong reference would be a cycle. Each
    // session's server holds the daemon only while the session lives.
    let weak: Weak<Daemon> = Arc::downgrade(d);
    let config =
        StreamableHttpServerConfig::default().with_cancellation_token(d.shutdown.child_token());
    let sessions = Arc::new(Sessions::new(d.stats.mcp_sessions.clone()));
    d.tasks.spawn(close_idle(sessions.clone(), weak.clone()));
    let http = StreamableHttpService::new(
        move || {
            let d = weak
                .upgrade()
                .ok_or_else(|| std::io::Error::other("browser-mcpd is shutting down"))?;
            Ok(McpServer::new(DaemonBackend::agent(d), Scope::default()))
        },
        sessions.clone(),
        config,
    );
    Service { http, sessions }
}

/// Closes idle sessions, checking a few times per `--mcp-session-idle`, until the daemon
/// shuts down.
async fn close_idle(sessions: Arc<Sessions>, d: Weak<Daemon>) {
    // Closed sessions free their memory as their tasks wind down, after the close returns:
    // the pages go back to the system one tick later.
    let mut freed = false;
    while let Some((_, idle)) = quarter_of(&d, |c| c.mcp_session_idle).await {
        if std::mem::take(&mut freed) {
            sessions::release_freed_memory();
        }
        let closed = sessions.close_idle(idle).await;
        freed = closed > 0;
        if closed > 0 {
            tracing::debug!(
                closed,
                live = sessions.len(),
                "closed MCP sessions idle for {idle:?}"
            );
        }
    }
}

/// Whether a request body is an `initialize` (the one request that begins a session).
fn is_initialize(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Peek<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
    }
    serde_json::from_slice::<Peek>(body).is_ok_and(|p| p.method == Some("initialize"))
}

const SESSION_HEADER: &str = "mcp-session-id";

/// Largest `/mcp` request body: rmcp's own default, which docs/mcp.md documents.
const MAX_BODY: usize = 4 << 20;

/// Serves one request to `/mcp` (the listener has checked Host, Origin and a presented
/// token already); `service` is built on first use.
pub async fn serve(
    req: Request<Incoming>,
    d: Arc<Daemon>,
    service: &OnceLock<Service>,
) -> Response<Body> {
    let token_ok = access::bearer(&req).is_some_and(|t| access::tokens_match(t, &d.token()));
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
    // An agent's request: the browsers watch their pages from now on (issue 30), while its
    // answer streams, and while its session lives (below). One that ends its session asks
    // nothing of the pages: it only keeps them watched while it is answered.
    let present = if ends_session {
        d.presence.hold()
    } else {
        d.presence.attend(&d.registry).await
    };
    let front = service.get_or_init(|| build(&d));
    let config = d.config();
    let (parts, body) = req.into_parts();
    // Whole (bounded as rmcp bounds it, and in time), so that an `initialize` can be told
    // from other requests before rmcp sees it.
    let body = match http::read_body(Request::new(body), MAX_BODY, config.handshake_timeout).await {
        Ok(body) => body,
        Err(e) => return http::error(e),
    };
    let session = parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok());
    // A session's request keeps it from being idle for as long as its answer streams.
    let activity = session.and_then(|id| front.sessions.activity(id));
    if let Some(resp) = shortcut(&parts, &body, activity.as_ref(), &d).await {
        return resp;
    }
    let begins = parts.method == hyper::Method::POST && session.is_none() && is_initialize(&body);
    let slot = match begins.then(|| front.sessions.reserve(config.mcp_max_sessions)) {
        Some(Err(live)) => {
            let max = config.mcp_max_sessions;
            let e = limits::exceeded(
                "mcp-max-sessions",
                max,
                format!(
                    "{live} MCP sessions are live, the most allowed (--mcp-max-sessions {max}); \
                     end one (DELETE /mcp) or wait for idle ones to expire (--mcp-session-idle {}s)",
                    config.mcp_session_idle.as_secs()
                ),
            );
            limits::refused(&d.stats, 0, &e);
            return http::error(e);
        }
        Some(Ok(slot)) => Some(slot),
        None => None,
    };
    let unprimed = super::priming::unwanted(&parts, &body);
    let req = Request::from_parts(parts, Full::new(body));
    let mut resp = front.http.handle(req).await.map(|body| {
        body.map_frame(move |frame| {
            let _busy = (&activity, &present);
            match frame.into_data() {
                Ok(data) if unprimed => hyper::body::Frame::data(super::priming::strip(data)),
                Ok(data) => hyper::body::Frame::data(data),
                Err(frame) => frame,
            }
        })
        .boxed()
    });
    if let Some(slot) = slot {
        match resp
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            Some(id) => {
                let present = d.presence.hold();
                front.sessions.adopt(id.into(), slot, present).await
            }
            // Refused, or answered without a session (a stateless revision): nothing lives on.
            None => drop(slot),
        }
    }
    // rmcp confirms a session's end with an empty 202; the Python SDK (and others written
    // from the spec's examples) expect 200 or 204 and warn otherwise. Same meaning, no body.
    if ends_session && resp.status() == StatusCode::ACCEPTED {
        *resp.status_mut() = StatusCode::NO_CONTENT;
    }
    resp
}

/// A session's call of a listed tab tool, answered past rmcp's session machinery (see
/// [`crate::mcp::shortcut`]) as one `application/json` answer, which a client that accepts
/// event streams must also accept. `None`: rmcp serves the request, with its checks and errors.
async fn shortcut(
    parts: &Parts,
    body: &[u8],
    activity: Option<&Activity>,
    d: &Arc<Daemon>,
) -> Option<Response<Body>> {
    let shortcut = activity?.shortcut.as_ref()?;
    if parts.method != hyper::Method::POST || !plain_post(&parts.headers) {
        return None;
    }
    let call = match shortcut.take(body) {
        Taken::Call(call) => call,
        Taken::Cancel => {
            let mut r = Response::new(http::full(Vec::new()));
            *r.status_mut() = StatusCode::ACCEPTED;
            return Some(r);
        }
        Taken::Not => return None,
    };
    // The call runs to its end even if the client leaves, as a session's calls do on rmcp's
    // path (a dropped connection is no cancellation in Streamable HTTP).
    let runner = shortcut.clone();
    let answer = finish_if_dropped(async move { runner.answer(call).await }, &d.tasks).await;
    let (content_type, body) = match answer {
        Answered::Answer(answer) => ("application/json", answer),
        // rmcp's path ends the request's event stream without an answer.
        Answered::Cancelled => ("text/event-stream", Vec::new()),
    };
    let mut r = Response::new(http::full(body));
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    Some(r)
}

/// Whether a POST is one whose checks rmcp would pass without a word: it accepts both
/// answer types, sends JSON, names a revision with sessions (or none), and has none of the
/// 2026-07-28 standard headers, which rmcp checks against the body.
fn plain_post(headers: &HeaderMap) -> bool {
    let json = "application/json";
    let accepts_both = http::lists(headers, header::ACCEPT, json)
        && http::lists(headers, header::ACCEPT, "text/event-stream");
    let sends_json = http::lists(headers, header::CONTENT_TYPE, json);
    let version_ok = match headers.get("mcp-protocol-version") {
        None => true,
        Some(v) => ProtocolVersion::known_up_to(&PROTOCOL)
            .iter()
            .any(|known| v.to_str().is_ok_and(|v| v == known.as_str())),
    };
    let standard_headers = headers.keys().any(|k| {
        let k = k.as_str();
        k.starts_with("mcp-") && k != SESSION_HEADER && k != "mcp-protocol-version"
    });
    accepts_both && sends_json && version_ok && !standard_headers
}

/// Runs `work` in this task; if this task drops it before it ends (the request's client
/// left), the rest of it runs as a task of the daemon. Cheaper than a task of its own for
/// every call, which would cost a hand-over between threads each time.
async fn finish_if_dropped<T: Send + 'static>(
    work: impl Future<Output = T> + Send + 'static,
    tasks: &TaskTracker,
) -> T {
    type Work<T> = Pin<Box<dyn Future<Output = T> + Send>>;
    struct Detach<T: Send + 'static> {
        work: Option<Work<T>>,
        tasks: TaskTracker,
    }
    impl<T: Send + 'static> Drop for Detach<T> {
        fn drop(&mut self) {
            if let Some(work) = self.work.take() {
                self.tasks.spawn(async move {
                    work.await;
                });
            }
        }
    }
    let mut detach = Detach {
        work: Some(Box::pin(work)),
        tasks: tasks.clone(),
    };
    let out = detach.work.as_mut().expect("work until it ends").await;
    detach.work = None;
    out
}
