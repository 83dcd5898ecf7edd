//! `clientType=browser`: a browser in the registry (dialect `jsonrpc`, its session id the
//! query's `sessionId`) whose tools, set by `tools/register`, hang on the browser itself. The
//! daemon forwards `tools/call` to it with its own call ids, unique in the process, so two
//! agents' ids can never collide here.

use super::role::{invalid_params, Method, Reply, Role, DIALECT};
use crate::daemon::conn::{Request, Waiter};
use crate::daemon::dialect::classify;
use crate::daemon::dialect::driver::Link;
use crate::daemon::registry::{BrowserKey, Initial, Update};
use crate::error::{Error, ErrorCode};
use crate::protocol::bridge::{BrowserInfo, ToolFailure};
use crate::protocol::jsonrpc::{
    self as rpc, code, method, ConnectParams, RegisterParams, RpcError,
};
use serde_json::value::RawValue;
use serde_json::{json, Value};

pub struct Browser {
    key: BrowserKey,
}

impl Browser {
    /// The browser joins the registry, without tools until `tools/register`.
    pub fn attach(link: &mut Link, params: &ConnectParams) -> Browser {
        let info = BrowserInfo {
            name: "JSON-RPC browser".into(),
            version: params.version.clone(),
        };
        let key = link.attach(DIALECT, &params.session_id, info, Initial::Nothing);
        tracing::info!(browser = %key, session = %params.session_id, "browser connected (JSON-RPC)");
        Browser { key }
    }

    fn tools_register(
        &mut self,
        link: &mut Link,
        params: Option<Value>,
    ) -> Result<Value, RpcError> {
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
        link.update(Update::BrowserTools(p.tools))
            .map_err(|e| RpcError::from_error(&e))?;
        Ok(json!({"registered": count}))
    }
}

impl Role for Browser {
    fn method(&mut self, link: &mut Link, m: Method<'_>) -> Option<Reply> {
        let answer = match m.name {
            method::TOOLS_REGISTER => self.tools_register(link, m.params),
            _ => return None,
        };
        Some(Reply::Now(match answer {
            Ok(v) => rpc::result_value(m.id, &v),
            Err(e) => rpc::error(m.id, &e),
        }))
    }

    /// A browser's answer to a `tools/call` the daemon forwarded.
    fn response(&mut self, link: &mut Link, id: Value, outcome: Result<Box<RawValue>, RpcError>) {
        let id = match id {
            Value::String(s) => Some(s),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        match link.pending.take(id.as_deref()) {
            Ok(Waiter::Call(reply)) => {
                let _ = reply.send(outcome.map_err(browser_failure));
            }
            Ok(other) => other.fail(Error::internal(
                "the browser answered with an unexpected response",
            )),
            Err(m) => link.stray(m, "response", id.as_deref()),
        }
    }

    fn request(&mut self, link: &mut Link, req: Request) {
        let Some(call) = req.tabless(&self.key.to_string(), "JSON-RPC", "") else {
            return;
        };
        let frame = rpc::request(
            Some(&call.id),
            method::TOOLS_CALL,
            &rpc::ForwardedCall {
                name: &call.tool,
                arguments: &call.args,
            },
        );
        link.ask(call.id, Waiter::Call(call.reply), frame);
    }

    fn finish(&mut self, _link: &mut Link, _reason: &str) {}
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

#[cfg(test)]
mod tests {
    use super::*;

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
