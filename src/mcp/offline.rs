//! The answers `browserctl mcp` gives while no daemon is there: it started before
//! browser-mcpd, or browser-mcpd went away (restarting, stopped) with requests in flight.
//!
//! The client still gets a whole MCP server: `initialize` and `ping` answered as the daemon
//! would, `tools/list` with the meta tools alone, and every `tools/call` an error result that
//! says why (DAEMON_UNAVAILABLE). Built from the same pieces as [`super::server`], so the
//! server's name, capabilities and meta tools cannot drift apart.

use super::identity::{info, PROTOCOL};
use super::meta;
use super::result::error_result;
use crate::error::Error;
use rmcp::model::{
    ErrorCode, ErrorData, ListToolsResult, ProtocolVersion, RequestId, ServerJsonRpcMessage,
    ServerResult,
};
use serde::Deserialize;

/// What a client's request asks, as far as answering it without a daemon needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Initialize,
    Ping,
    /// `logging/setLevel`: accepted, since `initialize` offers logging. Nothing is logged
    /// without a daemon, and the level is not carried over to the session the relay opens
    /// when one is back (the client's replayed `initialize` starts it at no logging).
    SetLevel,
    ListTools,
    CallTool,
    Other,
}

impl Kind {
    pub fn of(method: &str) -> Kind {
        match method {
            "initialize" => Kind::Initialize,
            "ping" => Kind::Ping,
            "logging/setLevel" => Kind::SetLevel,
            "tools/list" => Kind::ListTools,
            "tools/call" => Kind::CallTool,
            _ => Kind::Other,
        }
    }
}

/// `notifications/tools/list_changed`, one line.
pub const LIST_CHANGED: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n";

/// The answer to a request of `kind` with this `id`, as one line; `version` is the protocol
/// version an `initialize` asked for. `why` is the error every call gets.
pub fn answer(kind: Kind, id: RequestId, version: Option<ProtocolVersion>, why: &Error) -> Vec<u8> {
    let message = match kind {
        Kind::Initialize => {
            let mut init = info();
            let known = ProtocolVersion::known_up_to(&PROTOCOL);
            init.protocol_version = version
                .filter(|v| v.has_initialize() && known.contains(v))
                .unwrap_or(PROTOCOL);
            ServerJsonRpcMessage::response(ServerResult::InitializeResult(init), id)
        }
        Kind::Ping | Kind::SetLevel => ServerJsonRpcMessage::response(ServerResult::empty(()), id),
        Kind::ListTools => ServerJsonRpcMessage::response(
            ServerResult::ListToolsResult(ListToolsResult::with_all_items(meta::tools())),
            id,
        ),
        Kind::CallTool => {
            ServerJsonRpcMessage::response(ServerResult::CallToolResult(error_result(why)), id)
        }
        Kind::Other => error(ErrorCode::METHOD_NOT_FOUND, id, why),
    };
    line(&message)
}

/// A JSON-RPC error answering request `id` with `why` (the relay's answer to everything,
/// `initialize` included, when it found no daemon at start).
pub fn refusal(id: RequestId, why: &Error) -> Vec<u8> {
    line(&error(ErrorCode::INTERNAL_ERROR, id, why))
}

/// A JSON-RPC error with `code`, its message our error's code and words.
fn error(code: ErrorCode, id: RequestId, why: &Error) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(
        ErrorData::new(code, format!("{}: {}", why.code, why.message), None),
        Some(id),
    )
}

/// One message as the line stdio carries.
fn line(message: &ServerJsonRpcMessage) -> Vec<u8> {
    let mut line = serde_json::to_vec(message).expect("MCP messages serialise");
    line.push(b'\n');
    line
}

/// The answer to one line from the client, if it is a request (notifications and answers
/// need none; a line that is no JSON-RPC request is left to whoever reads it next).
pub fn answer_line(line: &[u8], why: &Error) -> Option<Vec<u8>> {
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "protocolVersion")]
        protocol_version: Option<ProtocolVersion>,
    }
    #[derive(Deserialize)]
    struct Request {
        id: RequestId,
        method: String,
        params: Option<Params>,
    }
    let r: Request = serde_json::from_slice(line).ok()?;
    let version = r.params.and_then(|p| p.protocol_version);
    Some(answer(Kind::of(&r.method), r.id, version, why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode as Code;
    use serde_json::{json, Value};

    fn ask(v: Value) -> Value {
        let why = Error::new(Code::DaemonUnavailable, "not running");
        serde_json::from_slice(&answer_line(v.to_string().as_bytes(), &why).unwrap()).unwrap()
    }

    #[test]
    fn without_a_daemon_a_client_is_still_served() {
        let init = ask(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        );
        assert_eq!(init["id"], 1);
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(init["result"]["serverInfo"]["name"], "browser-mcp");
        assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true);
        let future = ask(
            json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
            "protocolVersion": "2099-01-01", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        );
        assert_eq!(future["result"]["protocolVersion"], PROTOCOL.to_string());

        let list = ask(json!({"jsonrpc": "2.0", "id": "l", "method": "tools/list"}));
        assert_eq!(list["id"], "l");
        assert_eq!(
            list["result"]["tools"].as_array().unwrap().len(),
            super::meta::NAMES.len()
        );
        let call = ask(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "search", "arguments": {}}}));
        assert_eq!(call["result"]["isError"], true);
        assert_eq!(
            call["result"]["content"][0]["text"],
            "DAEMON_UNAVAILABLE: not running"
        );
        assert_eq!(
            ask(json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}))["result"],
            json!({})
        );
        let level = ask(
            json!({"jsonrpc": "2.0", "id": 6, "method": "logging/setLevel",
            "params": {"level": "info"}}),
        );
        assert_eq!(level["result"], json!({}), "{level}");
        let other = ask(json!({"jsonrpc": "2.0", "id": 5, "method": "resources/list"}));
        assert_eq!(other["error"]["code"], -32601);

        let why = Error::new(Code::DaemonUnavailable, "x");
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert!(answer_line(note.to_string().as_bytes(), &why).is_none());
        assert!(answer_line(b"not json", &why).is_none());
    }

    #[test]
    fn the_list_changed_line_is_an_mcp_notification() {
        let v: Value = serde_json::from_slice(LIST_CHANGED).unwrap();
        assert_eq!(v["method"], "notifications/tools/list_changed");
        assert!(LIST_CHANGED.ends_with(b"\n"));
    }
}
