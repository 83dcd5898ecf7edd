//! What the two roles of a JSON-RPC connection share with its framing.

use crate::daemon::conn::Request;
use crate::daemon::dialect::driver::Link;
use crate::protocol::jsonrpc::{code, ConnectParams, RpcError};
use futures_util::future::BoxFuture;
use serde_json::value::RawValue;
use serde_json::Value;

pub const DIALECT: &str = "jsonrpc";

/// What a message gets back: nothing (a notification, a response), a reply now, or a reply
/// when a call finishes.
pub enum Reply {
    None,
    Now(String),
    Later(BoxFuture<'static, String>),
}

/// A request (or notification, with a null id) for a role's method.
pub struct Method<'a> {
    /// The connection's parameters (`session/join` changes its session).
    pub conn: &'a mut ConnectParams,
    pub id: &'a Value,
    pub name: &'a str,
    pub params: Option<Value>,
}

/// What one role of a JSON-RPC connection does.
pub trait Role: Send {
    /// A method of this role; `None` when the role has no such method.
    fn method(&mut self, link: &mut Link, m: Method<'_>) -> Option<Reply>;

    /// A response to a request the daemon sent.
    fn response(&mut self, link: &mut Link, id: Value, outcome: Result<Box<RawValue>, RpcError>);

    /// A request for the browser (only browsers have any).
    fn request(&mut self, link: &mut Link, req: Request);

    fn finish(&mut self, link: &mut Link, reason: &str);
}

pub fn invalid_params(message: String) -> RpcError {
    RpcError::new(code::INVALID_PARAMS, format!("invalid params: {message}"))
}
