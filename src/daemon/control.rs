//! The control API: HTTP/1.1 + JSON on a Unix socket, for browserctl and anything else local.
//!
//! Our own accept loop (UnixListener → TokioIo → hyper `serve_connection`, one task per
//! connection, graceful shutdown). The socket is 0600 in a 0700 directory, and every
//! connection's peer uid is checked before it is served.

use super::extension::{percent_decode, query_param};
use super::limits::{self, ConnSlot};
use super::registry::Published;
use super::{calls, Daemon};
use crate::error::{Error, ErrorBody, ErrorCode};
use crate::protocol::control::{event_kind, CallRequest, OpenTabRequest, Status};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Frame, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::convert::Infallible;
use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{broadcast, mpsc};

type Body = BoxBody<Bytes, Infallible>;

/// Largest request body accepted.
pub const MAX_BODY: usize = 8 << 20;

/// Binds the control socket: creates its directory (0700), replaces a stale socket left by a
/// dead daemon, and refuses to steal the socket of a live one.
pub fn bind(path: &Path) -> io::Result<UnixListener> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        check_socket_dir(dir)?;
    }
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!(
                            "another browser-mcpd is already listening on {} (stop it first, or pass --socket)",
                            path.display()
                        ),
                    ))
                }
                Err(_) => {
                    tracing::info!(path = %path.display(), "removing a stale control socket");
                    fs::remove_file(path)?;
                }
            }
        }
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} exists and is not a socket; refusing to replace it",
                    path.display()
                ),
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let listener = UnixListener::bind(path)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// The socket's directory must not let another user swap our socket for theirs (browserctl
/// would then talk to an impostor): [`crate::trust::check`], which also refuses another
/// user's directory.
pub fn check_socket_dir(dir: &Path) -> io::Result<()> {
    crate::trust::check(dir)
        .map(|_| ())
        .map_err(io::Error::from)
}

pub fn unlink(path: &Path) {
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        let _ = fs::remove_file(path);
    }
}

/// The uid of the process at the other end of a Unix socket.
fn peer_uid(stream: &UnixStream) -> io::Result<u32> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
        let cred = getsockopt(stream, PeerCredentials).map_err(io::Error::from)?;
        Ok(cred.uid())
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let (uid, _gid) = nix::unistd::getpeereid(stream).map_err(io::Error::from)?;
        Ok(uid.as_raw())
    }
}

pub async fn serve(listener: UnixListener, d: Arc<Daemon>) {
    let me = nix::unistd::geteuid().as_raw();
    // Answers to connections over the limit are capped too; beyond, a connection is closed.
    let refusing = Arc::new(std::sync::atomic::AtomicU64::new(0));
    loop {
        let stream = tokio::select! {
            _ = d.draining.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((s, _)) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed on the control socket");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let max = d.config().max_control_connections;
        let slot = match ConnSlot::take(&d.stats.control_connections, max) {
            Ok(slot) => Ok(slot),
            Err(open) => match ConnSlot::take(&refusing, max.max(16)) {
                Ok(refusal) => {
                    let e = super::extension::too_many(open, max, "--max-control-connections");
                    limits::refused(&d.stats, 0, &e);
                    Err((refusal, e))
                }
                Err(_) => {
                    super::Stats::bump(&d.stats.limits_exceeded);
                    continue;
                }
            },
        };
        let allowed = match peer_uid(&stream) {
            Ok(uid) if uid == me || uid == 0 => true,
            Ok(uid) => {
                tracing::warn!(uid, "refused a control connection from another user");
                false
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not read the peer's credentials; refusing");
                false
            }
        };
        let d2 = d.clone();
        let d3 = d.clone();
        let keep_alive = slot.is_ok() && allowed;
        let refusal = slot.as_ref().err().map(|(_, e)| e.clone());
        // A client must send each request's head within this time (a half-sent request, or an
        // idle kept-alive connection, is closed then) and its body within as long again.
        let header_timeout = d.config().handshake_timeout;
        d.tasks.spawn(async move {
            let _slot = slot;
            let d = d3;
            let service = hyper::service::service_fn(move |req| {
                let d = d2.clone();
                let refusal = refusal.clone();
                async move {
                    if !allowed {
                        return Ok::<_, Infallible>(error(Error::new(
                            ErrorCode::Unauthorized,
                            "this daemon belongs to another user",
                        )));
                    }
                    if let Some(e) = refusal {
                        return Ok(error(e));
                    }
                    Ok(handle(req, d).await)
                }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .keep_alive(keep_alive)
                .serve_connection(TokioIo::new(stream), service);
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
                            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), conn).await;
                        }
                    }
                }
            }
        });
    }
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

fn json(status: StatusCode, bytes: Vec<u8>) -> Response<Body> {
    let mut r = Response::new(full(bytes));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn ok(value: &impl serde::Serialize) -> Response<Body> {
    json(StatusCode::OK, serde_json::to_vec(value).expect("JSON"))
}

pub fn error(e: Error) -> Response<Body> {
    let status = StatusCode::from_u16(e.code.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    json(
        status,
        serde_json::to_vec(&ErrorBody { error: e }).expect("JSON"),
    )
}

/// Reads and parses a JSON body: at most [`MAX_BODY`] bytes (PAYLOAD_TOO_LARGE beyond), and
/// within `limit` (a client that stops halfway through its body must not hold the connection).
async fn read_json<T: serde::de::DeserializeOwned>(
    req: Request<Incoming>,
    limit: std::time::Duration,
) -> Result<T, Error> {
    let collect = Limited::new(req.into_body(), MAX_BODY).collect();
    let body = tokio::time::timeout(limit, collect)
        .await
        .map_err(|_| {
            Error::bad_request(format!(
                "the request body did not arrive within {} ms",
                limit.as_millis()
            ))
        })?
        .map_err(|e| {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                Error::new(
                    ErrorCode::PayloadTooLarge,
                    format!("request body over {MAX_BODY} bytes"),
                )
            } else {
                Error::bad_request(format!("could not read the request body: {e}"))
            }
        })?
        .to_bytes();
    parse_body(&body)
}

/// A request body as JSON of the route's type.
pub fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|e| Error::bad_request(format!("invalid JSON body: {e}")))
}

async fn handle(req: Request<Incoming>, d: Arc<Daemon>) -> Response<Body> {
    match route(req, d).await {
        Ok(r) => r,
        Err(e) => error(e),
    }
}

/// What a control request asks for, read from its method, path and query alone: no state and
/// no I/O, so malformed requests are refused before anything else happens (and the parser can
/// be fuzzed on its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Status,
    Browsers,
    Tabs {
        browser: Option<String>,
    },
    OpenTab,
    Tab(String),
    CloseTab {
        tab: String,
        timeout_ms: Option<u64>,
    },
    Discover {
        tab: String,
        timeout_ms: Option<u64>,
    },
    Tools {
        tab: Option<String>,
        browser: Option<String>,
        name: Option<String>,
    },
    Call,
    Cancel(String),
    Events(EventQuery),
}

/// The query of `GET /v1/events`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventQuery {
    pub since: Option<u64>,
    pub count: Option<u64>,
    pub kinds: Option<Vec<String>>,
    pub tab: Option<String>,
    pub browser: Option<String>,
}

/// The longest per-request timeout the API accepts (a day): longer ones are surely mistakes,
/// and deadlines far in the future overflow the clock arithmetic.
pub const MAX_TIMEOUT_MS: u64 = 86_400_000;

fn number(q: &dyn Fn(&str) -> Option<String>, name: &str) -> Result<Option<u64>, Error> {
    q(name)
        .map(|s| {
            s.parse::<u64>()
                .map_err(|_| Error::bad_request(format!("`{name}` must be a number, not `{s}`")))
        })
        .transpose()
}

fn timeout_param(q: &dyn Fn(&str) -> Option<String>) -> Result<Option<u64>, Error> {
    match number(q, "timeoutMs")? {
        Some(t) if t == 0 || t > MAX_TIMEOUT_MS => Err(Error::bad_request(format!(
            "`timeoutMs` must be between 1 and {MAX_TIMEOUT_MS}"
        ))),
        t => Ok(t),
    }
}

/// Parses a request line into a [`Route`]; unknown routes are NOT_FOUND, known routes with
/// the wrong method METHOD_NOT_ALLOWED, malformed parameters BAD_REQUEST.
pub fn parse_route(method: &Method, path: &str, query: Option<&str>) -> Result<Route, Error> {
    let q = |name: &str| query_param(query, name);
    let segments: Vec<String> = path
        .trim_matches('/')
        .split('/')
        .map(percent_decode)
        .collect();
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    let not_allowed = || {
        Err(Error::new(
            ErrorCode::MethodNotAllowed,
            format!("{method} is not allowed on {path}"),
        ))
    };
    match (method, segs.as_slice()) {
        (&Method::GET, ["v1", "status"]) => Ok(Route::Status),
        (&Method::GET, ["v1", "browsers"]) => Ok(Route::Browsers),
        (&Method::GET, ["v1", "tabs"]) => Ok(Route::Tabs {
            browser: q("browser"),
        }),
        (&Method::POST, ["v1", "tabs"]) => Ok(Route::OpenTab),
        (&Method::GET, ["v1", "tabs", tab]) => Ok(Route::Tab((*tab).to_owned())),
        (&Method::DELETE, ["v1", "tabs", tab]) => Ok(Route::CloseTab {
            tab: (*tab).to_owned(),
            timeout_ms: timeout_param(&q)?,
        }),
        (&Method::POST, ["v1", "tabs", tab, "discover"]) => Ok(Route::Discover {
            tab: (*tab).to_owned(),
            timeout_ms: timeout_param(&q)?,
        }),
        (&Method::GET, ["v1", "tools"]) => Ok(Route::Tools {
            tab: q("tab"),
            browser: q("browser"),
            name: q("name"),
        }),
        (&Method::POST, ["v1", "call"]) => Ok(Route::Call),
        (&Method::DELETE, ["v1", "calls", id]) => Ok(Route::Cancel((*id).to_owned())),
        (&Method::GET, ["v1", "events"]) => {
            let kinds = q("type").map(|t| t.split(',').map(str::to_owned).collect::<Vec<_>>());
            if let Some(bad) = kinds
                .iter()
                .flatten()
                .find(|k| !event_kind::ALL.contains(&k.as_str()))
            {
                return Err(Error::bad_request(format!(
                    "unknown event type `{bad}`; known: {}",
                    event_kind::ALL.join(", ")
                )));
            }
            Ok(Route::Events(EventQuery {
                since: number(&q, "since")?,
                count: number(&q, "count")?,
                kinds,
                tab: q("tab"),
                browser: q("browser"),
            }))
        }
        (_, ["v1", "calls", _]) => not_allowed(),
        (_, ["v1", "status" | "browsers" | "tools" | "call" | "events"])
        | (_, ["v1", "tabs", ..]) => not_allowed(),
        _ => Err(Error::new(
            ErrorCode::NotFound,
            format!("no route {method} {path}"),
        )),
    }
}

async fn route(req: Request<Incoming>, d: Arc<Daemon>) -> Result<Response<Body>, Error> {
    let route = parse_route(req.method(), req.uri().path(), req.uri().query())?;
    let body_timeout = d.config().handshake_timeout;
    match route {
        Route::Status => Ok(ok(&status(&d))),
        Route::Browsers => Ok(ok(&json!({"browsers": d.registry().browser_views()}))),
        Route::Tabs { browser } => {
            let reg = d.registry();
            let browser = browser.map(|b| reg.parse_browser(&b)).transpose()?;
            Ok(ok(&json!({"tabs": reg.tab_views(browser)})))
        }
        Route::OpenTab => {
            let body: OpenTabRequest = read_json(req, body_timeout).await?;
            if body.url.is_empty() {
                return Err(Error::bad_request("`url` is required"));
            }
            Ok(ok(&calls::open_tab(&d, body).await?))
        }
        Route::Tab(tab) => {
            let reg = d.registry();
            let target = reg.parse_tab(&tab)?;
            reg.tab_view(target)
                .map(|v| ok(&v))
                .ok_or_else(|| Error::new(ErrorCode::TabNotFound, format!("`{tab}` is not a tab")))
        }
        Route::CloseTab { tab, timeout_ms } => {
            let closed = calls::close_tab(&d, &tab, timeout_ms).await?;
            Ok(ok(&json!({"closed": closed})))
        }
        Route::Discover { tab, timeout_ms } => {
            Ok(ok(&calls::discover(&d, &tab, timeout_ms).await?))
        }
        Route::Tools { tab, browser, name } => {
            let reg = d.registry();
            let target = tab.map(|t| reg.parse_tab(&t)).transpose()?;
            let browser = browser.map(|b| reg.parse_browser(&b)).transpose()?;
            Ok(ok(
                &json!({"tools": reg.tool_views(target, browser, name.as_deref())}),
            ))
        }
        Route::Call => {
            let body: CallRequest = read_json(req, body_timeout).await?;
            if body.tool.is_empty() {
                return Err(Error::bad_request("`tool` is required"));
            }
            Ok(ok(&calls::call(&d, body).await?))
        }
        Route::Cancel(id) => match d.cancels.cancel(&id) {
            true => Ok(ok(&json!({"cancelled": id}))),
            false => Err(Error::new(
                ErrorCode::NotFound,
                format!("no call with callId `{id}` is in flight"),
            )),
        },
        Route::Events(query) => events(&d, query),
    }
}

fn status(d: &Daemon) -> Status {
    let (browsers, tabs, tools, last_event_seq) = {
        let reg = d.registry();
        let (b, t, tl) = reg.counts();
        (b, t, tl, reg.last_seq())
    };
    let s = &d.stats;
    let r = &d.runtime;
    Status {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        pid: std::process::id(),
        port: r.port,
        socket: r.socket.display().to_string(),
        discovery_file: r.discovery_file.display().to_string(),
        started_at: r.started_at.clone(),
        uptime_ms: r.started.elapsed().as_millis() as u64,
        browsers,
        tabs,
        tools,
        calls_in_flight: s.calls_in_flight.load(Ordering::Relaxed),
        pending_calls: s.pending.load(Ordering::Relaxed),
        calls_total: s.calls_total.load(Ordering::Relaxed),
        calls_failed: s.calls_failed.load(Ordering::Relaxed),
        calls_cancelled: s.calls_cancelled.load(Ordering::Relaxed),
        late_responses: s.late_responses.load(Ordering::Relaxed),
        unknown_responses: s.unknown_responses.load(Ordering::Relaxed),
        bad_messages: s.bad_messages.load(Ordering::Relaxed),
        last_event_seq,
        extension_connections: s.extension_connections.load(Ordering::Relaxed),
        control_connections: s.control_connections.load(Ordering::Relaxed),
        // Every task of the runtime, tracked or not: a leak of any kind shows here.
        tasks: tokio::runtime::Handle::try_current()
            .map(|h| h.metrics().num_alive_tasks() as u64)
            .unwrap_or(0),
        limits_exceeded: s.limits_exceeded.load(Ordering::Relaxed),
    }
}

/// Which events a reader asked for.
struct Filter {
    kinds: Option<Vec<String>>,
    tab: Option<String>,
    browser: Option<String>,
}

impl Filter {
    fn wants(&self, e: &Published) -> bool {
        self.kinds
            .as_ref()
            .is_none_or(|k| k.iter().any(|k| k == e.kind))
            && self.tab.as_ref().is_none_or(|t| e.tab.as_ref() == Some(t))
            && self
                .browser
                .as_ref()
                .is_none_or(|b| e.browser.as_ref() == Some(b))
    }
}

fn lagged_line(from: u64, to: u64) -> Bytes {
    let event = crate::protocol::control::Event {
        seq: to,
        kind: event_kind::LAGGED.to_owned(),
        time: crate::time::now_ms(),
        browser: None,
        tab: None,
        data: Some(json!({"from": from, "to": to, "missed": to + 1 - from})),
    };
    let mut line = serde_json::to_vec(&event).expect("JSON");
    line.push(b'\n');
    Bytes::from(line)
}

/// `GET /v1/events`: NDJSON, one event a line. Each reader has its own task and a bounded
/// queue; a reader too slow to keep up loses events, which it is told of with a `lagged` line
/// (then the missed events still in the ring are replayed), and never slows anyone else.
fn events(d: &Arc<Daemon>, query: EventQuery) -> Result<Response<Body>, Error> {
    let EventQuery {
        since,
        count,
        kinds,
        tab,
        browser,
    } = query;
    let reg = d.registry();
    let tab = tab
        .map(|t| reg.parse_tab(&t).map(|t| t.display()))
        .transpose()?;
    let browser = browser
        .map(|b| reg.parse_browser(&b).map(super::registry::browser_ref))
        .transpose()?;
    let filter = Filter {
        kinds,
        tab,
        browser,
    };
    let (rx, backlog, gap) = reg.subscribe(since);
    let start_seq = since.unwrap_or_else(|| reg.last_seq());
    drop(reg);

    let (tx, body_rx) = mpsc::channel::<Bytes>(256);
    let d2 = d.clone();
    d.tasks.spawn(async move {
        pump(d2, rx, backlog, gap, start_seq, filter, count, tx).await;
    });
    let mut r = Response::new(BodyExt::boxed(ChannelBody(body_rx)));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(r)
}

#[allow(clippy::too_many_arguments)]
async fn pump(
    d: Arc<Daemon>,
    mut rx: broadcast::Receiver<Arc<Published>>,
    backlog: Vec<Arc<Published>>,
    gap: Option<(u64, u64)>,
    mut last: u64,
    filter: Filter,
    count: Option<u64>,
    tx: mpsc::Sender<Bytes>,
) {
    let mut sent = 0u64;
    // (line, whether it counts toward `count`: lagged notices do not)
    let mut queue: std::collections::VecDeque<(Bytes, bool)> = Default::default();
    if let Some((from, to)) = gap {
        queue.push_back((lagged_line(from, to), false));
    }
    let take =
        |e: &Published, queue: &mut std::collections::VecDeque<(Bytes, bool)>, last: &mut u64| {
            if e.seq <= *last {
                return;
            }
            *last = e.seq;
            if filter.wants(e) {
                queue.push_back((e.line.clone(), true));
            }
        };
    for e in &backlog {
        take(e, &mut queue, &mut last);
    }
    loop {
        while let Some((line, is_event)) = queue.pop_front() {
            if tx.send(line).await.is_err() {
                return;
            }
            if is_event {
                sent += 1;
                if count.is_some_and(|c| sent >= c) {
                    return;
                }
            }
        }
        let next = tokio::select! {
            _ = d.draining.cancelled() => return,
            _ = tx.closed() => return,
            r = rx.recv() => r,
        };
        match next {
            Ok(e) => take(&e, &mut queue, &mut last),
            Err(broadcast::error::RecvError::Lagged(_)) => {
                let (missed, gap) = d.registry().events_after(last);
                if let Some((from, to)) = gap {
                    queue.push_back((lagged_line(from, to), false));
                    last = to;
                }
                for e in &missed {
                    take(e, &mut queue, &mut last);
                }
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// A response body fed line by line from a channel.
struct ChannelBody(mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b))))
    }
}
