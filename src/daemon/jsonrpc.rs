//! The seed-003 dialect adapter: JSON-RPC 2.0 over WebSocket, one task per connection.
//!
//! A `clientType=browser` connection is a browser in the registry (dialect `jsonrpc`, its
//! session id the query's `sessionId`) whose tools, set by `tools/register`, hang on the
//! browser itself. The task owns the socket and the table of `tools/call` requests it
//! forwarded; the ids on that side are the daemon's own call ids, unique in the process, so
//! two agents' ids can never collide there.
//!
//! A `clientType=agent` connection is not in the registry: it lists the tools of every browser
//! in its session (any dialect) and calls them through [`calls::call`], so validation,
//! timeouts, retries and typed errors are the same as for browserctl. Each call runs in its
//! own task and answers through the connection's reply queue, so a slow tool never blocks
//! `ping` or other calls. Agents are authenticated before the upgrade (see `check_request`)
//! and limited in calls per second and calls in flight.

use super::conn::{echo_close, next_conn_id, note_stray, Command, ConnHandle, Pending, Waiter};
use super::keepalive::{Beat, Keepalive};
use super::registry::{browser_ref, BrowserKey};
use super::{calls, classify, limits, Daemon, Stats};
use crate::error::{Error, ErrorCode};
use crate::protocol::bridge::{BrowserInfo, ToolFailure};
use crate::protocol::control::CallRequest;
use crate::protocol::jsonrpc::{
    self as rpc, code, method, CallParams, ClientType, ConnectParams, Frame, HelloParams, Incoming,
    Invalid, JoinParams, RegisterParams, RpcError,
};
use futures_util::future::BoxFuture;
use futures_util::{FutureExt, SinkExt, StreamExt};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

pub const DIALECT: &str = "jsonrpc";

const COMMAND_QUEUE: usize = 1024;
const REPLY_QUEUE: usize = 256;
/// The longest `timeout` an agent may ask for.
const MAX_TIMEOUT_MS: f64 = 3_600_000.0;

/// Checks a `GET /ws` request before the upgrade: the query parameters, and for agents a
/// token (whose value the listener has already checked when present). `Err` becomes the
/// HTTP refusal (400 with the reason, or 401).
pub fn check_request(query: Option<&str>, token_presented: bool) -> Result<ConnectParams, Error> {
    let params = rpc::connect_params(|name| super::extension::query_param(query, name))
        .map_err(Error::bad_request)?;
    if params.client_type == ClientType::Agent && !token_presented {
        return Err(Error::new(
            ErrorCode::Unauthorized,
            "agents must present the daemon's token as ?token= or Authorization: Bearer \
             (it is in the discovery file)",
        ));
    }
    Ok(params)
}

// ---- per-agent limits -----------------------------------------------------------------------

/// Calls per second with bursts up to the rate (at least one); a rate of 0 is no limit.
struct TokenBucket {
    rate: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    fn new(rate: f64) -> TokenBucket {
        TokenBucket {
            rate,
            tokens: rate.max(1.0),
            last: Instant::now(),
        }
    }

    fn take(&mut self, now: Instant) -> bool {
        if self.rate <= 0.0 || !self.rate.is_finite() {
            return true;
        }
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.rate).min(self.rate.max(1.0));
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// One call in flight for an agent, for as long as it lives.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

// ---- the connection -------------------------------------------------------------------------

enum Role {
    Browser {
        key: BrowserKey,
        pending: Pending,
    },
    Agent {
        in_flight: Arc<AtomicUsize>,
        bucket: TokenBucket,
    },
}

/// What a message gets back: nothing (a notification, a response), a reply now, or a reply
/// when a call finishes.
enum Reply {
    None,
    Now(String),
    Later(BoxFuture<'static, String>),
}

struct Conn<S> {
    ws: WebSocketStream<S>,
    d: Arc<Daemon>,
    params: ConnectParams,
    handle: ConnHandle,
    role: Role,
    replies: mpsc::Sender<String>,
    /// Cancelled when the connection ends: an agent's calls stop waiting.
    gone: CancellationToken,
}

enum Flow {
    Continue,
    Stop,
}

pub async fn run<S>(ws: WebSocketStream<S>, d: Arc<Daemon>, params: ConnectParams)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (tx, mut commands) = mpsc::channel(COMMAND_QUEUE);
    let handle = ConnHandle {
        id: next_conn_id(),
        tx,
    };
    let role = match params.client_type {
        ClientType::Browser => {
            let info = BrowserInfo {
                name: "JSON-RPC browser".into(),
                version: params.version.clone(),
            };
            let (key, displaced) = d.registry().attach(
                DIALECT,
                &params.session_id,
                info,
                handle.clone(),
                crate::time::now_rfc3339(),
            );
            if let Some(old) = displaced {
                let _ = old.tx.try_send(Command::Close {
                    code: 4000,
                    reason: "replaced by a newer browser connection of the same session".into(),
                });
            }
            tracing::info!(browser = %browser_ref(key), session = %params.session_id, "browser connected (JSON-RPC)");
            Role::Browser {
                key,
                pending: Pending::counted(d.stats.pending.clone()),
            }
        }
        ClientType::Agent => {
            tracing::info!(conn = handle.id, session = %params.session_id, "agent connected (JSON-RPC)");
            Role::Agent {
                in_flight: Arc::new(AtomicUsize::new(0)),
                bucket: TokenBucket::new(d.config().agent_rate_limit),
            }
        }
    };
    let (replies, mut reply_rx) = mpsc::channel(REPLY_QUEUE);
    let mut c = Conn {
        ws,
        gone: d.shutdown.child_token(),
        d: d.clone(),
        params,
        handle,
        role,
        replies,
    };
    let welcome = rpc::request(
        None,
        method::WELCOME,
        &json!({
            "sessionId": c.params.session_id,
            "clientType": c.params.client_type,
            "version": rpc::PROTOCOL_VERSION,
            "serverVersion": env!("CARGO_PKG_VERSION"),
        }),
    );
    let mut keepalive = Keepalive::new(d.config().ws_ping_interval);
    let (reason, close_with) = if c.ws.send(Message::text(welcome)).await.is_err() {
        ("could not send welcome", None)
    } else {
        loop {
            let flow = tokio::select! {
                _ = d.shutdown.cancelled() => break ("daemon shutdown", Some((CloseCode::Away, "browser-mcpd is shutting down"))),
                Some(cmd) = commands.recv() => c.command(cmd).await,
                Some(text) = reply_rx.recv() => c.send(text).await,
                beat = keepalive.tick() => match beat {
                    Beat::Ping => c.send_frame(Message::Ping(Default::default())).await,
                    Beat::Dead => break ("no pong to two pings", Some((CloseCode::Away, "no answer to ping"))),
                },
                frame = c.ws.next() => match frame {
                    Some(Ok(Message::Text(text))) => c.text(text.as_str()).await,
                    Some(Ok(Message::Pong(_))) => {
                        keepalive.pong();
                        Flow::Continue
                    }
                    Some(Ok(Message::Binary(_))) => {
                        Stats::bump(&c.d.stats.bad_messages);
                        let e = RpcError::new(code::PARSE_ERROR, "binary frames are not JSON-RPC; send text frames");
                        c.send(rpc::error(&Value::Null, &e)).await
                    }
                    Some(Ok(Message::Close(_))) => {
                        echo_close(&mut c.ws).await;
                        break ("closed by the peer", None);
                    }
                    None => break ("closed by the peer", None),
                    Some(Ok(_)) => Flow::Continue,
                    Some(Err(e)) => {
                        tracing::debug!(conn = c.handle.id, error = %e, "WebSocket error");
                        let size = matches!(e, tokio_tungstenite::tungstenite::Error::Capacity(_));
                        break ("WebSocket error", size.then_some((CloseCode::Size, "message too big")));
                    }
                },
            };
            if let Flow::Stop = flow {
                break ("closed by the daemon", None);
            }
        }
    };
    c.finish(reason);
    if let Some((code, why)) = close_with {
        c.close(code, why).await;
    }
}

impl<S> Conn<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    async fn send(&mut self, text: String) -> Flow {
        self.send_frame(Message::text(text)).await
    }

    async fn send_frame(&mut self, m: Message) -> Flow {
        match self.ws.send(m).await {
            Ok(()) => Flow::Continue,
            Err(_) => Flow::Stop,
        }
    }

    async fn close(&mut self, code: CloseCode, reason: &str) {
        let frame = CloseFrame {
            code,
            reason: reason.to_owned().into(),
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), self.ws.close(Some(frame))).await;
    }

    fn finish(&mut self, reason: &str) {
        self.gone.cancel();
        match &mut self.role {
            Role::Browser { key, pending } => {
                self.d.registry().detach(*key, self.handle.id);
                tracing::info!(browser = %browser_ref(*key), reason, "browser disconnected (JSON-RPC)");
                // Calls cut off by our own shutdown say so; the others saw the connection break.
                let code = if self.d.shutdown.is_cancelled() {
                    ErrorCode::ShuttingDown
                } else {
                    ErrorCode::WebsocketError
                };
                pending.fail_all(code, &format!("the browser connection closed ({reason})"));
            }
            Role::Agent { .. } => {
                tracing::info!(conn = self.handle.id, reason, "agent disconnected");
            }
        }
    }

    // ---- daemon → browser -------------------------------------------------------------------

    async fn command(&mut self, cmd: Command) -> Flow {
        let Role::Browser { key, pending } = &mut self.role else {
            return Flow::Continue;
        };
        let key = *key;
        let refuse = |what: &str| {
            Error::bad_request(format!(
                "{what}: browser {} speaks JSON-RPC, which has no tab commands",
                browser_ref(key)
            ))
        };
        match cmd {
            Command::Call {
                id,
                tab,
                tool,
                args,
                reply,
            } => {
                if let Some(tab) = tab {
                    let _ = reply.send(Err(Error::new(
                        ErrorCode::TabNotFound,
                        format!(
                            "browser {} has no tabs (JSON-RPC); there is no tab {tab}",
                            browser_ref(key)
                        ),
                    )));
                    return Flow::Continue;
                }
                let text = rpc::request(
                    Some(&id),
                    method::TOOLS_CALL,
                    &rpc::ForwardedCall {
                        name: &tool,
                        arguments: &args,
                    },
                );
                pending.insert(id.clone(), Waiter::Call(reply));
                if self.ws.send(Message::text(text)).await.is_err() {
                    if let Role::Browser { pending, .. } = &mut self.role {
                        pending.fail_unsent(&id);
                    }
                    return Flow::Stop;
                }
            }
            Command::Discover { reply, .. } => {
                let _ = reply.send(Err(refuse("discoverTools")));
            }
            Command::OpenTab { reply, .. } => {
                let _ = reply.send(Err(refuse("openTab")));
            }
            Command::CloseTab { reply, .. } => {
                let _ = reply.send(Err(refuse("closeTab")));
            }
            Command::Forget { id } => pending.forget(id),
            Command::Close { code, reason } => {
                self.close(CloseCode::from(code), &reason).await;
                return Flow::Stop;
            }
        }
        Flow::Continue
    }

    // ---- peer → daemon ----------------------------------------------------------------------

    async fn text(&mut self, text: &str) -> Flow {
        let frame = match rpc::parse(text) {
            Ok(f) => f,
            Err(e) => {
                Stats::bump(&self.d.stats.bad_messages);
                let e = RpcError::new(code::PARSE_ERROR, format!("parse error: {e}"));
                return self.send(rpc::error(&Value::Null, &e)).await;
            }
        };
        match frame {
            Frame::Single(item) => match self.message(item) {
                Reply::None => Flow::Continue,
                Reply::Now(text) => self.send(text).await,
                Reply::Later(answer) => {
                    self.spawn_reply(answer.map(Some));
                    Flow::Continue
                }
            },
            Frame::Batch(items) => {
                let replies: Vec<Reply> = items.into_iter().map(|i| self.message(i)).collect();
                if replies.iter().all(|r| !matches!(r, Reply::Later(_))) {
                    let now: Vec<String> = replies
                        .into_iter()
                        .filter_map(|r| match r {
                            Reply::Now(t) => Some(t),
                            _ => None,
                        })
                        .collect();
                    // A batch of notifications gets no answer at all (JSON-RPC 2.0 §6).
                    return match now.is_empty() {
                        true => Flow::Continue,
                        false => self.send(rpc::batch(&now)).await,
                    };
                }
                let parts: Vec<BoxFuture<'static, Option<String>>> = replies
                    .into_iter()
                    .map(|r| match r {
                        Reply::None => futures_util::future::ready(None).boxed(),
                        Reply::Now(t) => futures_util::future::ready(Some(t)).boxed(),
                        Reply::Later(f) => f.map(Some).boxed(),
                    })
                    .collect();
                self.spawn_reply(async move {
                    let all: Vec<String> = futures_util::future::join_all(parts)
                        .await
                        .into_iter()
                        .flatten()
                        .collect();
                    Some(rpc::batch(&all))
                });
                Flow::Continue
            }
        }
    }

    /// Runs an answer that takes time in its own task; it comes back through the reply queue.
    /// If the connection ends first, the answer is dropped (and the call stops waiting).
    fn spawn_reply(
        &self,
        answer: impl std::future::Future<Output = Option<String>> + Send + 'static,
    ) {
        let replies = self.replies.clone();
        let gone = self.gone.clone();
        self.d.tasks.spawn(async move {
            tokio::select! {
                text = answer => if let Some(text) = text {
                    let _ = replies.send(text).await;
                },
                _ = gone.cancelled() => {}
            }
        });
    }

    fn message(&mut self, item: Result<Incoming, Invalid>) -> Reply {
        match item {
            Err(invalid) => {
                Stats::bump(&self.d.stats.bad_messages);
                let e = RpcError::new(
                    code::INVALID_REQUEST,
                    format!("invalid request: {}", invalid.message),
                );
                Reply::Now(rpc::error(&invalid.id, &e))
            }
            Ok(Incoming::Response { id, outcome }) => {
                self.response(id, outcome);
                Reply::None
            }
            Ok(Incoming::Request { id, method, params }) => self.method(id, &method, params),
            Ok(Incoming::Notification { method, params }) => {
                // Done, but not answered; a call started this way still runs to its end.
                if let Reply::Later(answer) = self.method(Value::Null, &method, params) {
                    self.spawn_reply(answer.map(|_| None));
                }
                Reply::None
            }
        }
    }

    fn method(&mut self, id: Value, name: &str, params: Option<Value>) -> Reply {
        let client = self.params.client_type;
        let answer = match (name, client) {
            (method::PING, _) => Ok(json!({"pong": true})),
            (method::HELLO, _) => self.hello(params),
            (method::TOOLS_REGISTER, ClientType::Browser) => self.tools_register(params),
            (method::SESSION_JOIN, ClientType::Agent) => self.session_join(params),
            (method::TOOLS_LIST, ClientType::Agent) => Ok(self.tools_list()),
            (method::TOOLS_CALL, ClientType::Agent) => return self.tools_call(id, params),
            (method::TOOLS_REGISTER, ClientType::Agent)
            | (
                method::SESSION_JOIN | method::TOOLS_LIST | method::TOOLS_CALL,
                ClientType::Browser,
            ) => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!(
                    "`{name}` is not a method for clientType={} connections",
                    client.as_str()
                ),
            )),
            _ => Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!("method not found: `{name}`"),
            )),
        };
        Reply::Now(match answer {
            Ok(v) => rpc::result_value(&id, &v),
            Err(e) => rpc::error(&id, &e),
        })
    }

    fn hello(&mut self, params: Option<Value>) -> Result<Value, RpcError> {
        let p: HelloParams = rpc::params(params).map_err(invalid_params)?;
        if let Some(ct) = p.client_type.as_deref() {
            if ct != self.params.client_type.as_str() {
                return Err(invalid_params(format!(
                    "hello says clientType `{ct}` but this connection was opened as `{}`",
                    self.params.client_type.as_str()
                )));
            }
        }
        if let Some(v) = p.version.as_deref() {
            rpc::connect_params(|k| match k {
                "sessionId" => Some(self.params.session_id.clone()),
                "clientType" => Some(self.params.client_type.as_str().into()),
                "version" => Some(v.to_owned()),
                _ => None,
            })
            .map_err(invalid_params)?;
        }
        tracing::debug!(conn = self.handle.id, capabilities = ?p.capabilities, "hello");
        Ok(json!({
            "sessionId": self.params.session_id,
            "clientType": self.params.client_type,
            "version": rpc::PROTOCOL_VERSION,
            "serverVersion": env!("CARGO_PKG_VERSION"),
        }))
    }

    fn tools_register(&mut self, params: Option<Value>) -> Result<Value, RpcError> {
        let Role::Browser { key, .. } = &self.role else {
            return Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                "tools/register is for browsers",
            ));
        };
        let p: RegisterParams = rpc::params(params).map_err(invalid_params)?;
        let mut seen = std::collections::HashSet::new();
        for t in &p.tools {
            if t.name.is_empty() || !seen.insert(t.name.as_str()) {
                return Err(invalid_params(format!(
                    "tool names must be present and unique (`{}`)",
                    t.name
                )));
            }
        }
        let count = p.tools.len();
        let r = self
            .d
            .registry()
            .set_browser_tools(*key, self.handle.id, p.tools);
        if let Err(e) = r {
            limits::refused(&self.d.stats, self.handle.id, &e);
            return Err(RpcError::from_error(&e));
        }
        Ok(json!({"registered": count}))
    }

    fn session_join(&mut self, params: Option<Value>) -> Result<Value, RpcError> {
        let p: JoinParams = rpc::params(params).map_err(invalid_params)?;
        if !rpc::valid_session_id(&p.session_id) {
            return Err(invalid_params(format!(
                "malformed sessionId `{}`: use 1-128 letters, digits or -_.:@",
                p.session_id
            )));
        }
        self.params.session_id = p.session_id;
        let reg = self.d.registry();
        let browsers: Vec<String> = reg
            .session_browsers(&self.params.session_id)
            .into_iter()
            .map(browser_ref)
            .collect();
        let tools = reg.session_tool_views(&self.params.session_id).len();
        Ok(json!({"sessionId": self.params.session_id, "browsers": browsers, "tools": tools}))
    }

    fn tools_list(&self) -> Value {
        let views = self
            .d
            .registry()
            .session_tool_views(&self.params.session_id);
        let tools: Vec<ListedTool> = views.iter().map(ListedTool::from).collect();
        json!({"tools": tools})
    }

    fn tools_call(&mut self, id: Value, params: Option<Value>) -> Reply {
        let refuse = |e: RpcError| Reply::Now(rpc::error(&id, &e));
        let p: CallParams = match rpc::params(params) {
            Ok(p) => p,
            Err(m) => return refuse(invalid_params(m)),
        };
        if p.arguments
            .as_ref()
            .is_some_and(|a| !a.get().trim_start().starts_with('{'))
        {
            return refuse(invalid_params("`arguments` must be an object".into()));
        }
        let timeout_ms = match p.timeout {
            None => None,
            Some(t) if t.is_finite() && t > 0.0 && t <= MAX_TIMEOUT_MS => Some(t.ceil() as u64),
            Some(t) => {
                return refuse(invalid_params(format!(
                    "`timeout` must be a number of milliseconds between 1 and {MAX_TIMEOUT_MS}, not {t}"
                )))
            }
        };
        let Role::Agent { in_flight, bucket } = &mut self.role else {
            return refuse(RpcError::new(
                code::METHOD_NOT_FOUND,
                "tools/call is for agents",
            ));
        };
        let max = self.d.config().agent_max_in_flight;
        if in_flight.load(Ordering::Relaxed) >= max {
            return refuse(RpcError::from_error(
                &Error::new(
                    ErrorCode::LimitExceeded,
                    format!("this agent already has {max} calls in flight; wait for one to finish"),
                )
                .with_details(json!({"limit": "agentMaxInFlight", "max": max})),
            ));
        }
        if !bucket.take(Instant::now()) {
            let rate = self.d.config().agent_rate_limit;
            return refuse(RpcError::from_error(
                &Error::new(
                    ErrorCode::LimitExceeded,
                    format!(
                        "this agent is over its rate limit of {rate} calls per second; slow down"
                    ),
                )
                .with_details(json!({"limit": "agentRateLimit", "perSecond": rate})),
            ));
        }
        in_flight.fetch_add(1, Ordering::Relaxed);
        let slot = Slot(in_flight.clone());
        let d = self.d.clone();
        let session = self.params.session_id.clone();
        Reply::Later(
            async move {
                let _slot = slot;
                match agent_call(&d, &session, p, timeout_ms).await {
                    Ok(result) => rpc::result(&id, &result),
                    Err(e) => rpc::error(&id, &RpcError::from_error(&e)),
                }
            }
            .boxed(),
        )
    }

    /// A browser's answer to a `tools/call` the daemon forwarded.
    fn response(&mut self, id: Value, outcome: Result<Box<RawValue>, RpcError>) {
        let Role::Browser { pending, .. } = &mut self.role else {
            tracing::debug!(conn = self.handle.id, "an agent sent a response; ignored");
            return;
        };
        let id = match id {
            Value::String(s) => Some(s),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        match pending.take(id.as_deref()) {
            Ok(Waiter::Call(reply)) => {
                let _ = reply.send(outcome.map_err(browser_failure));
            }
            Ok(other) => other.fail(Error::internal(
                "the browser answered with an unexpected response",
            )),
            Err(m) => note_stray(&self.d.stats, self.handle.id, m, "response", id.as_deref()),
        }
    }
}

/// An agent's `tools/call`, through the daemon's call path, to a browser of its session.
async fn agent_call(
    d: &Daemon,
    session: &str,
    p: CallParams,
    timeout_ms: Option<u64>,
) -> Result<Box<RawValue>, Error> {
    let target = d
        .registry()
        .resolve_in_session(session, &p.name, p.target.as_deref())?;
    let req = CallRequest {
        tool: p.name,
        tab: Some(target.display()),
        args: p.arguments,
        timeout_ms,
        ..CallRequest::default()
    };
    Ok(calls::call(d, req).await?.result)
}

fn invalid_params(message: String) -> RpcError {
    RpcError::new(code::INVALID_PARAMS, format!("invalid params: {message}"))
}

/// A browser's JSON-RPC error for a forwarded call, as one of our errors.
fn browser_failure(e: RpcError) -> Error {
    let details = e.data.clone();
    let err = match e.code {
        code::INVALID_PARAMS => Error::new(ErrorCode::InvalidArguments, e.message),
        code::METHOD_NOT_FOUND => Error::new(ErrorCode::ToolNotFound, e.message),
        other => {
            // A code of ours in data (e.g. ELEMENT_NOT_FOUND) says more than the number.
            let named = e
                .data
                .as_ref()
                .and_then(|d| d.get("code"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            classify::tool_failure(ToolFailure {
                code: Some(named.unwrap_or_else(|| other.to_string())),
                message: e.message,
            })
        }
    };
    match (err.details.clone(), details) {
        (Some(Value::Object(mut mine)), Some(theirs)) => {
            mine.insert("data".into(), theirs);
            Error {
                details: Some(Value::Object(mine)),
                ..err
            }
        }
        (None, Some(theirs)) => err.with_details(json!({"data": theirs})),
        _ => err,
    }
}

/// A tool as `tools/list` shows it to an agent: the MCP tool, plus where it lives (`target`,
/// to pass back in `tools/call` when several browsers or tabs offer the same name).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListedTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a Value>,
    target: &'a str,
    browser: &'a str,
}

impl<'a> From<&'a crate::protocol::control::ToolView> for ListedTool<'a> {
    fn from(v: &'a crate::protocol::control::ToolView) -> ListedTool<'a> {
        ListedTool {
            name: &v.name,
            title: v.title.as_deref(),
            description: v.description.as_deref(),
            input_schema: &v.input_schema,
            output_schema: v.output_schema.as_deref(),
            annotations: v.annotations.as_ref(),
            target: &v.tab,
            browser: &v.browser,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_allows_a_burst_then_refills() {
        let start = Instant::now();
        let mut b = TokenBucket::new(3.0);
        b.last = start;
        assert!(b.take(start) && b.take(start) && b.take(start));
        assert!(!b.take(start));
        assert!(b.take(start + Duration::from_millis(400)));
        assert!(!b.take(start + Duration::from_millis(400)));
        let mut free = TokenBucket::new(0.0);
        assert!((0..1000).all(|_| free.take(start)));
    }

    #[test]
    fn agents_need_a_token_and_parameters_are_checked_first() {
        let e = check_request(Some("sessionId=s&clientType=agent"), false).unwrap_err();
        assert_eq!(e.code, ErrorCode::Unauthorized);
        assert!(check_request(Some("sessionId=s&clientType=agent"), true).is_ok());
        assert!(check_request(Some("sessionId=s&clientType=browser"), false).is_ok());
        let e = check_request(Some("clientType=agent"), true).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest);
    }

    #[test]
    fn browser_errors_become_ours() {
        let e = browser_failure(RpcError::new(code::INVALID_PARAMS, "bad selector"));
        assert_eq!(e.code, ErrorCode::InvalidArguments);
        let e = browser_failure(RpcError {
            code: code::INTERNAL_ERROR,
            message: "No element matches".into(),
            data: Some(json!({"code": "ELEMENT_NOT_FOUND"})),
        });
        assert_eq!(e.code, ErrorCode::ToolError);
        assert!(!e.retryable);
        assert_eq!(e.details.unwrap()["toolCode"], "ELEMENT_NOT_FOUND");
    }
}
