//! The seed-003 dialect: JSON-RPC 2.0 over WebSocket (`GET /ws?sessionId&clientType&version`).
//!
//! Two roles share the framing here (single messages and batches, `ping`, `hello`, the
//! answers to methods of the other role) and differ in what they are:
//! - [`browser`]: `clientType=browser`, a browser in the registry whose tools, set by
//!   `tools/register`, hang on the browser itself; the daemon forwards `tools/call` to it.
//! - [`agent`]: `clientType=agent`, a consumer of the tools of its session's browsers (any
//!   dialect), through the daemon's call path; not in the registry.

mod agent;
mod browser;
mod role;

pub use role::DIALECT;
use role::{invalid_params, Method, Reply, Role};

use super::driver::{Connection, Dialect, Flow, Link};
use crate::daemon::conn::Request;
use crate::daemon::context::Daemon;
use crate::daemon::http;
use crate::error::{Error, ErrorCode};
use crate::protocol::jsonrpc::{
    self as rpc, code, method, ClientType, ConnectParams, Frame, HelloParams, Incoming, Invalid,
    RpcError, Welcome,
};
use futures_util::future::{self, BoxFuture};
use futures_util::FutureExt;
use serde_json::Value;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::WebSocketStream;

/// Checks a `GET /ws` request before the upgrade: the query parameters, and for agents a
/// token (whose value the listener has already checked when present). `Err` becomes the
/// HTTP refusal (400 with the reason, or 401).
pub fn check_request(query: Option<&str>, token_presented: bool) -> Result<ConnectParams, Error> {
    let params =
        rpc::connect_params(|name| http::query_param(query, name)).map_err(Error::bad_request)?;
    if params.client_type == ClientType::Agent && !token_presented {
        return Err(Error::new(
            ErrorCode::Unauthorized,
            "agents must present the daemon's token as ?token= or Authorization: Bearer \
             (it is in the discovery file)",
        ));
    }
    Ok(params)
}

/// Serves a JSON-RPC connection in the role its query string asked for.
pub async fn run<S>(ws: WebSocketStream<S>, d: Arc<Daemon>, params: ConnectParams)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut conn = Connection::new(d);
    let welcome = rpc::request(None, method::WELCOME, &Welcome::new(&params));
    match params.client_type {
        ClientType::Browser => {
            let role = browser::Browser::attach(&mut conn.link, &params);
            conn.link.send(welcome);
            conn.run(ws, Rpc { params, role }, None).await
        }
        ClientType::Agent => {
            let role = agent::Agent::new(&conn.link, &params);
            conn.link.send(welcome);
            conn.run(ws, Rpc { params, role }, None).await
        }
    }
}

/// Methods of some role: the answer to a connection of the other role says so.
const ROLE_METHODS: &[&str] = &[
    method::TOOLS_REGISTER,
    method::SESSION_JOIN,
    method::TOOLS_LIST,
    method::TOOLS_CALL,
];

struct Rpc<R> {
    params: ConnectParams,
    role: R,
}

impl<R: Role> Dialect for Rpc<R> {
    const NAME: &'static str = DIALECT;
    const PINGS: bool = true;

    fn text(&mut self, link: &mut Link, text: &str) -> Flow {
        let frame = match rpc::parse(text) {
            Ok(f) => f,
            Err(e) => {
                link.bad_message(format_args!("a frame that is not JSON: {e}"));
                let e = RpcError::new(code::PARSE_ERROR, format!("parse error: {e}"));
                link.send(rpc::error(&Value::Null, &e));
                return Flow::Continue;
            }
        };
        match frame {
            Frame::Single(item) => match self.message(link, item) {
                Reply::None => {}
                Reply::Now(text) => link.send(text),
                Reply::Later(answer) => link.later(answer.map(Some)),
            },
            Frame::Batch(items) => {
                let replies: Vec<Reply> =
                    items.into_iter().map(|i| self.message(link, i)).collect();
                self.batch(link, replies);
            }
        }
        Flow::Continue
    }

    fn binary(&mut self, link: &mut Link) -> Flow {
        link.bad_message("a binary frame (JSON-RPC is text)");
        let e = RpcError::new(
            code::PARSE_ERROR,
            "binary frames are not JSON-RPC; send text frames",
        );
        link.send(rpc::error(&Value::Null, &e));
        Flow::Continue
    }

    fn request(&mut self, link: &mut Link, req: Request) {
        self.role.request(link, req)
    }

    fn finish(&mut self, link: &mut Link, reason: &str) {
        self.role.finish(link, reason)
    }
}

impl<R: Role> Rpc<R> {
    /// The answers to a batch go out as one batch, when the last is ready (JSON-RPC 2.0 §6);
    /// a batch of notifications gets no answer at all.
    fn batch(&mut self, link: &mut Link, replies: Vec<Reply>) {
        if replies.iter().all(|r| !matches!(r, Reply::Later(_))) {
            let now: Vec<String> = replies
                .into_iter()
                .filter_map(|r| match r {
                    Reply::Now(t) => Some(t),
                    _ => None,
                })
                .collect();
            if !now.is_empty() {
                link.send(rpc::batch(&now));
            }
            return;
        }
        let parts: Vec<BoxFuture<'static, Option<String>>> = replies
            .into_iter()
            .map(|r| match r {
                Reply::None => future::ready(None).boxed(),
                Reply::Now(t) => future::ready(Some(t)).boxed(),
                Reply::Later(f) => f.map(Some).boxed(),
            })
            .collect();
        link.later(async move {
            let all: Vec<String> = future::join_all(parts)
                .await
                .into_iter()
                .flatten()
                .collect();
            Some(rpc::batch(&all))
        });
    }

    fn message(&mut self, link: &mut Link, item: Result<Incoming, Invalid>) -> Reply {
        match item {
            Err(invalid) => {
                link.bad_message(format_args!("an invalid request: {}", invalid.message));
                let e = RpcError::new(
                    code::INVALID_REQUEST,
                    format!("invalid request: {}", invalid.message),
                );
                Reply::Now(rpc::error(&invalid.id, &e))
            }
            Ok(Incoming::Response { id, outcome }) => {
                self.role.response(link, id, outcome);
                Reply::None
            }
            Ok(Incoming::Request { id, method, params }) => self.method(link, id, &method, params),
            Ok(Incoming::Notification { method, params }) => {
                // Done, but not answered; a call started this way still runs to its end.
                if let Reply::Later(answer) = self.method(link, Value::Null, &method, params) {
                    link.later(answer.map(|_| None));
                }
                Reply::None
            }
        }
    }

    fn method(&mut self, link: &mut Link, id: Value, name: &str, params: Option<Value>) -> Reply {
        let answer = match name {
            method::PING => Ok(serde_json::json!({"pong": true})),
            method::HELLO => self.hello(link, params),
            _ => match self.role.method(
                link,
                Method {
                    conn: &mut self.params,
                    id: &id,
                    name,
                    params,
                },
            ) {
                Some(reply) => return reply,
                None if ROLE_METHODS.contains(&name) => Err(RpcError::new(
                    code::METHOD_NOT_FOUND,
                    format!(
                        "`{name}` is not a method for clientType={} connections",
                        self.params.client_type.as_str()
                    ),
                )),
                None => Err(RpcError::new(
                    code::METHOD_NOT_FOUND,
                    format!("method not found: `{name}`"),
                )),
            },
        };
        Reply::Now(match answer {
            Ok(v) => rpc::result_value(&id, &v),
            Err(e) => rpc::error(&id, &e),
        })
    }

    fn hello(&mut self, link: &Link, params: Option<Value>) -> Result<Value, RpcError> {
        let p: HelloParams = rpc::params(params).map_err(invalid_params)?;
        let ours = self.params.client_type.as_str();
        if let Some(ct) = p.client_type.as_deref() {
            if ct != ours {
                return Err(invalid_params(format!(
                    "hello says clientType `{ct}` but this connection was opened as `{ours}`"
                )));
            }
        }
        if let Some(v) = p.version.as_deref() {
            rpc::connect_params(|k| match k {
                "sessionId" => Some(self.params.session_id.clone()),
                "clientType" => Some(ours.into()),
                "version" => Some(v.to_owned()),
                _ => None,
            })
            .map_err(invalid_params)?;
        }
        tracing::debug!(conn = link.id(), capabilities = ?p.capabilities, "hello");
        Ok(serde_json::to_value(Welcome::new(&self.params)).expect("JSON"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_need_a_token_and_parameters_are_checked_first() {
        let e = check_request(Some("sessionId=s&clientType=agent"), false).unwrap_err();
        assert_eq!(e.code, ErrorCode::Unauthorized);
        assert!(check_request(Some("sessionId=s&clientType=agent"), true).is_ok());
        assert!(check_request(Some("sessionId=s&clientType=browser"), false).is_ok());
        let e = check_request(Some("clientType=agent"), true).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadRequest);
    }
}
