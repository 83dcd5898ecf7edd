//! Seed 003: JSON-RPC 2.0 over WebSocket (`GET /ws?sessionId=…&clientType=browser|agent&version=…`).
//!
//! Browsers provide tools (`hello`, `tools/register`, and they answer `tools/call` requests the
//! daemon forwards); agents consume them (`hello`, `session/join`, `tools/list`,
//! `tools/call`). Both may `ping`. Frames are single messages or batches (JSON arrays).
//!
//! This module checks frames into [`Incoming`] messages and renders responses; what a method
//! does is the daemon's business.

use crate::error::{Error, ErrorCode};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Value};

pub const JSONRPC: &str = "2.0";
/// The protocol version this daemon speaks; a client's major version must match.
pub const PROTOCOL_VERSION: &str = "1.0.0";
pub const SUPPORTED_MAJOR: u64 = 1;

/// The error codes of seed 003.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    pub const CONNECTION_ERROR: i64 = -32000;
}

pub mod method {
    pub const HELLO: &str = "hello";
    pub const PING: &str = "ping";
    pub const WELCOME: &str = "welcome";
    pub const SESSION_JOIN: &str = "session/join";
    pub const TOOLS_REGISTER: &str = "tools/register";
    pub const TOOLS_LIST: &str = "tools/list";
    pub const TOOLS_CALL: &str = "tools/call";
}

// ---- connection parameters ------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientType {
    Browser,
    Agent,
}

impl ClientType {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientType::Browser => "browser",
            ClientType::Agent => "agent",
        }
    }
}

/// The query string of the upgrade, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectParams {
    pub session_id: String,
    pub client_type: ClientType,
    pub version: String,
}

/// A session id: 1–128 characters of letters, digits and `-_.:@`. Ids are compared and
/// logged, so anything exotic is refused rather than escaped.
pub fn valid_session_id(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:@".contains(&b))
}

/// Checks `sessionId`, `clientType` and `version` (default 1.0.0); `get` looks a query
/// parameter up (already percent-decoded). `Err` is the reason to answer with HTTP 400.
pub fn connect_params(get: impl Fn(&str) -> Option<String>) -> Result<ConnectParams, String> {
    let session_id = match get("sessionId") {
        None => return Err("missing query parameter `sessionId`".into()),
        Some(s) if !valid_session_id(&s) => {
            return Err(format!(
                "malformed sessionId `{s}`: use 1-128 letters, digits or -_.:@"
            ))
        }
        Some(s) => s,
    };
    let client_type = match get("clientType").as_deref() {
        None => return Err("missing query parameter `clientType` (browser or agent)".into()),
        Some("browser") => ClientType::Browser,
        Some("agent") => ClientType::Agent,
        Some(other) => {
            return Err(format!(
                "clientType must be `browser` or `agent`, not `{other}`"
            ))
        }
    };
    let version = get("version").unwrap_or_else(|| PROTOCOL_VERSION.to_owned());
    let major = parse_version(&version)
        .ok_or_else(|| format!("malformed version `{version}` (expected MAJOR.MINOR.PATCH)"))?;
    if major != SUPPORTED_MAJOR {
        return Err(format!(
            "unsupported protocol version {version}: this daemon speaks {SUPPORTED_MAJOR}.x ({PROTOCOL_VERSION})"
        ));
    }
    Ok(ConnectParams {
        session_id,
        client_type,
        version,
    })
}

/// The major number of `MAJOR[.MINOR[.PATCH]]`.
fn parse_version(v: &str) -> Option<u64> {
    let parts: Vec<&str> = v.split('.').collect();
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    let mut numbers = parts.iter().map(|p| {
        (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse::<u64>().ok())
            .flatten()
    });
    let major = numbers.next()??;
    numbers.all(|n| n.is_some()).then_some(major)
}

// ---- incoming messages ----------------------------------------------------------------------

/// An error object, as sent and as received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// One of our errors as a JSON-RPC error: a seed-003 code chosen by kind, and our code,
    /// `retryable` and details in `data`.
    pub fn from_error(e: &Error) -> RpcError {
        let mut data = json!({"code": e.code, "retryable": e.retryable});
        if let Some(details) = &e.details {
            data["details"] = details.clone();
        }
        RpcError {
            code: rpc_code(e.code),
            message: e.message.clone(),
            data: Some(data),
        }
    }
}

/// Which seed-003 code stands for one of our error codes: the caller's request was wrong
/// (-32602), the way to the browser failed or a limit was hit (-32000), or something broke
/// while running it (-32603).
pub fn rpc_code(c: ErrorCode) -> i64 {
    match c {
        ErrorCode::InvalidArguments
        | ErrorCode::BadRequest
        | ErrorCode::ToolNotFound
        | ErrorCode::TabNotFound
        | ErrorCode::AmbiguousTarget
        | ErrorCode::PayloadTooLarge
        | ErrorCode::RemotePath => code::INVALID_PARAMS,
        ErrorCode::NotFound | ErrorCode::MethodNotAllowed => code::METHOD_NOT_FOUND,
        ErrorCode::NoBrowser
        | ErrorCode::SendError
        | ErrorCode::WebsocketError
        | ErrorCode::MessageTimeout
        | ErrorCode::MaxRetriesExceeded
        | ErrorCode::ShuttingDown
        | ErrorCode::LimitExceeded
        | ErrorCode::Unauthorized
        | ErrorCode::DaemonUnavailable
        | ErrorCode::Cancelled
        | ErrorCode::BrowserNotInstalled
        | ErrorCode::LaunchFailed
        | ErrorCode::TabOwned
        | ErrorCode::Busy
        | ErrorCode::HandoffInProgress
        | ErrorCode::HandoffDeclined
        | ErrorCode::HandoffTimeout
        | ErrorCode::NoPerson
        | ErrorCode::ConsentNotFound
        | ErrorCode::ConsentAnswered => code::CONNECTION_ERROR,
        // The consent codes were TOOL_ERROR's `toolCode` before issue 59: the same answer.
        ErrorCode::ToolError
        | ErrorCode::PageNavigated
        | ErrorCode::ElementCovered
        | ErrorCode::InputCancelled
        | ErrorCode::Internal
        | ErrorCode::UserDenied
        | ErrorCode::UserConsentTimeout => code::INTERNAL_ERROR,
    }
}

/// One checked message of a frame.
#[derive(Debug)]
pub enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    /// An answer to a request the daemon sent (a browser answering `tools/call`).
    Response {
        id: Value,
        outcome: Result<Box<RawValue>, RpcError>,
    },
}

/// A message that is not a valid JSON-RPC 2.0 object: answered with -32600 and the id it
/// carried, if any could be read.
#[derive(Debug, PartialEq)]
pub struct Invalid {
    pub id: Value,
    pub message: String,
}

#[derive(Debug)]
pub enum Frame {
    Single(Result<Incoming, Invalid>),
    /// A non-empty JSON array; an empty one is a single invalid request (JSON-RPC 2.0 §6).
    Batch(Vec<Result<Incoming, Invalid>>),
}

/// Parses a text frame. `Err` is a parse error (-32700, id null).
pub fn parse(text: &str) -> Result<Frame, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(match value {
        Value::Array(items) if items.is_empty() => Frame::Single(Err(Invalid {
            id: Value::Null,
            message: "empty batch".into(),
        })),
        Value::Array(items) => Frame::Batch(items.into_iter().map(check).collect()),
        other => Frame::Single(check(other)),
    })
}

fn check(v: Value) -> Result<Incoming, Invalid> {
    let Value::Object(mut m) = v else {
        return Err(Invalid {
            id: Value::Null,
            message: "a message must be a JSON object".into(),
        });
    };
    let id = m.remove("id");
    let id_ok = matches!(
        id,
        None | Some(Value::Null | Value::String(_) | Value::Number(_))
    );
    let echo = if id_ok {
        id.clone().unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    let invalid = |message: String| Invalid {
        id: echo.clone(),
        message,
    };
    if m.get("jsonrpc") != Some(&Value::String(JSONRPC.into())) {
        return Err(invalid("`jsonrpc` must be \"2.0\"".into()));
    }
    if !id_ok {
        return Err(invalid("`id` must be a string, a number or null".into()));
    }
    match m.remove("method") {
        Some(Value::String(method)) => {
            let params = m.remove("params");
            if matches!(&params, Some(p) if !(p.is_object() || p.is_array() || p.is_null())) {
                return Err(invalid("`params` must be an object or an array".into()));
            }
            let params = params.filter(|p| !p.is_null());
            Ok(match id {
                Some(id) => Incoming::Request { id, method, params },
                None => Incoming::Notification { method, params },
            })
        }
        Some(_) => Err(invalid("`method` must be a string".into())),
        None => {
            let Some(id) = id else {
                return Err(invalid("a message needs a `method` or an `id`".into()));
            };
            let outcome =
                match (m.remove("result"), m.remove("error")) {
                    (Some(result), None) => Ok(serde_json::value::to_raw_value(&result)
                        .map_err(|e| invalid(e.to_string()))?),
                    (None, Some(error)) => Err(serde_json::from_value::<RpcError>(error)
                        .map_err(|e| invalid(format!("malformed `error`: {e}")))?),
                    _ => {
                        return Err(invalid(
                            "a response needs exactly one of `result` and `error`".into(),
                        ))
                    }
                };
            Ok(Incoming::Response { id, outcome })
        }
    }
}

// ---- outgoing messages ----------------------------------------------------------------------

#[derive(Serialize)]
struct Response<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a RpcError>,
}

/// A success response, as text.
pub fn result(id: &Value, result: &RawValue) -> String {
    serde_json::to_string(&Response {
        jsonrpc: JSONRPC,
        id,
        result: Some(result),
        error: None,
    })
    .expect("JSON")
}

pub fn result_value(id: &Value, value: &impl Serialize) -> String {
    result(id, &serde_json::value::to_raw_value(value).expect("JSON"))
}

/// An error response, as text.
pub fn error(id: &Value, error: &RpcError) -> String {
    serde_json::to_string(&Response {
        jsonrpc: JSONRPC,
        id,
        result: None,
        error: Some(error),
    })
    .expect("JSON")
}

/// Several responses as one batch response.
pub fn batch(responses: &[String]) -> String {
    format!("[{}]", responses.join(","))
}

#[derive(Serialize)]
struct Request<'a, P: Serialize> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    method: &'a str,
    params: P,
}

/// A request (with an id) or a notification (without), as text.
pub fn request(id: Option<&str>, method: &str, params: &impl Serialize) -> String {
    serde_json::to_string(&Request {
        jsonrpc: JSONRPC,
        id,
        method,
        params,
    })
    .expect("JSON")
}

/// The `welcome` notification the daemon sends on connect, and its answer to `hello`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Welcome<'a> {
    pub session_id: &'a str,
    pub client_type: ClientType,
    pub version: &'a str,
    pub server_version: &'a str,
}

impl<'a> Welcome<'a> {
    pub fn new(params: &'a ConnectParams) -> Welcome<'a> {
        Welcome {
            session_id: &params.session_id,
            client_type: params.client_type,
            version: PROTOCOL_VERSION,
            server_version: env!("CARGO_PKG_VERSION"),
        }
    }
}

/// The params of a `tools/call` the daemon forwards to a browser.
#[derive(Serialize)]
pub struct ForwardedCall<'a> {
    pub name: &'a str,
    pub arguments: &'a RawValue,
}

// ---- method params --------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloParams {
    #[serde(default)]
    pub client_type: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub capabilities: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JoinParams {
    pub session_id: String,
}

#[derive(Debug, Deserialize)]
pub struct RegisterParams {
    pub tools: Vec<super::Tool>,
}

/// `tools/call` from an agent: `timeout` is in milliseconds. `target` is ours (additive): a
/// tab or browser reference from `tools/list`, for when several offer the same tool.
#[derive(Debug, Deserialize)]
pub struct CallParams {
    pub name: String,
    #[serde(default)]
    pub arguments: Option<Box<RawValue>>,
    #[serde(default)]
    pub timeout: Option<f64>,
    #[serde(default)]
    pub target: Option<String>,
}

/// Reads a method's params into `T`; absent params read as `{}`. `Err` is the -32602
/// message.
pub fn params<T: serde::de::DeserializeOwned>(params: Option<Value>) -> Result<T, String> {
    serde_json::from_value(params.unwrap_or_else(|| json!({}))).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Result<Incoming, Invalid> {
        match parse(text).unwrap() {
            Frame::Single(m) => m,
            Frame::Batch(_) => panic!("batch"),
        }
    }

    #[test]
    fn connect_params_are_checked() {
        let q = |pairs: &'static [(&'static str, &'static str)]| {
            connect_params(move |k| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            })
        };
        let ok = q(&[("sessionId", "my-session"), ("clientType", "agent")]).unwrap();
        assert_eq!(ok.client_type, ClientType::Agent);
        assert_eq!(ok.version, "1.0.0");
        assert!(q(&[("clientType", "agent")])
            .unwrap_err()
            .contains("sessionId"));
        assert!(q(&[("sessionId", "a b"), ("clientType", "agent")])
            .unwrap_err()
            .contains("malformed"));
        assert!(q(&[("sessionId", "s"), ("clientType", "robot")])
            .unwrap_err()
            .contains("robot"));
        assert!(q(&[("sessionId", "s")]).unwrap_err().contains("clientType"));
        assert!(q(&[
            ("sessionId", "s"),
            ("clientType", "browser"),
            ("version", "2.0.0")
        ])
        .unwrap_err()
        .contains("unsupported"));
        for bad in ["x", "1..0", "", "1.0.0.0", "-1"] {
            let r = connect_params(|k| match k {
                "sessionId" => Some("s".into()),
                "clientType" => Some("browser".into()),
                "version" => Some(bad.into()),
                _ => None,
            });
            assert!(r.unwrap_err().contains("malformed"), "{bad}");
        }
        assert!(q(&[
            ("sessionId", "s"),
            ("clientType", "browser"),
            ("version", "1.2")
        ])
        .is_ok());
    }

    #[test]
    fn messages_are_classified() {
        assert!(matches!(
            one(r#"{"jsonrpc":"2.0","id":"2","method":"ping"}"#).unwrap(),
            Incoming::Request { method, params: None, .. } if method == "ping"
        ));
        assert!(matches!(
            one(r#"{"jsonrpc":"2.0","method":"tools/list","params":{}}"#).unwrap(),
            Incoming::Notification { .. }
        ));
        match one(r#"{"jsonrpc":"2.0","id":"call_1","result":{"content":[],"isError":false}}"#)
            .unwrap()
        {
            Incoming::Response { id, outcome } => {
                assert_eq!(id, json!("call_1"));
                assert_eq!(outcome.unwrap().get(), r#"{"content":[],"isError":false}"#);
            }
            other => panic!("{other:?}"),
        }
        match one(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}"#).unwrap() {
            Incoming::Response { outcome, .. } => assert_eq!(outcome.unwrap_err().code, -32601),
            other => panic!("{other:?}"),
        }
        assert!(parse("{").is_err());
        for (bad, id) in [
            (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, json!(1)),
            (r#"{"id":1,"method":"ping"}"#, json!(1)),
            (
                r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#,
                Value::Null,
            ),
            (r#"{"jsonrpc":"2.0","id":3,"method":5}"#, json!(3)),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"x","params":5}"#,
                json!(3),
            ),
            (r#"{"jsonrpc":"2.0"}"#, Value::Null),
            (r#"{"jsonrpc":"2.0","id":4}"#, json!(4)),
            ("5", Value::Null),
        ] {
            assert_eq!(one(bad).unwrap_err().id, id, "{bad}");
        }
        match parse("[]").unwrap() {
            Frame::Single(Err(e)) => assert_eq!(e.id, Value::Null),
            other => panic!("{other:?}"),
        }
        match parse(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}, 1]"#).unwrap() {
            Frame::Batch(items) => {
                assert!(items[0].is_ok());
                assert!(items[1].is_err());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn responses_render_as_jsonrpc() {
        let v: Value =
            serde_json::from_str(&result_value(&json!("2"), &json!({"pong": true}))).unwrap();
        assert_eq!(
            v,
            json!({"jsonrpc": "2.0", "id": "2", "result": {"pong": true}})
        );
        let e = RpcError::from_error(
            &Error::new(ErrorCode::ToolNotFound, "no tool `x`")
                .with_details(json!({"available": []})),
        );
        let v: Value = serde_json::from_str(&error(&json!(6), &e)).unwrap();
        assert_eq!(
            v,
            json!({"jsonrpc": "2.0", "id": 6, "error": {"code": -32602, "message": "no tool `x`",
                "data": {"code": "TOOL_NOT_FOUND", "retryable": false, "details": {"available": []}}}})
        );
        let args = serde_json::value::to_raw_value(&json!({"selector": ".submit-btn"})).unwrap();
        let v: Value = serde_json::from_str(&request(
            Some("call_9"),
            method::TOOLS_CALL,
            &ForwardedCall {
                name: "browser_click",
                arguments: &args,
            },
        ))
        .unwrap();
        assert_eq!(
            v,
            json!({"jsonrpc": "2.0", "id": "call_9", "method": "tools/call",
                "params": {"name": "browser_click", "arguments": {"selector": ".submit-btn"}}})
        );
        assert_eq!(batch(&["1".into(), "2".into()]), "[1,2]");
        for &c in ErrorCode::ALL {
            assert!(
                [-32602, -32601, -32000, -32603].contains(&rpc_code(c)),
                "{c}"
            );
        }
    }
}
