//! The short way for the one message that matters for speed: a `tools/call` of a tab tool the
//! client has listed. rmcp's service answers every request through a task of its own, channels
//! to and from its service loop and (on `/mcp`) a session worker and an event stream; for a
//! call that is several hand-overs between threads, and costs more than the call itself
//! (issue 17). Here the transport answers such a call in the task that read it: one parse,
//! the call, one serialized answer.
//!
//! Narrow on purpose, so the answer is the one rmcp's path would give: only a `tools/call`
//! whose message has nothing but `jsonrpc`, `id`, `method` and `params`, whose params have
//! nothing but `name`, `arguments` and an empty `_meta` (no progress token, no task), whose
//! name is in the client's last listing, on a session whose client asked for no log messages.
//! Everything else (a first call before any listing, progress, tasks, the meta tools, bad
//! input and its errors) goes to rmcp as before; so does `browser_file_upload`, whose call
//! first asks the client for its roots (`roots/list`, a request to the client that only rmcp's
//! peer can make and await): taken here, an agent's uploads from its own workspace were
//! refused (issue 58, item 10); and `browser_handoff`, which may ask the client too (an
//! elicitation, issue 60). The call itself is the same code either way
//! ([`Inner::call_listed`]), and so is its answer's shape (rmcp's own types).

use super::backend::Backend;
use super::result::error_result;
use super::server::{Inner, McpServer, ServerSlot};
use super::view::Listed;
use crate::protocol::tool::{FILE_UPLOAD, HANDOFF};
use rmcp::model::{CallToolResponse, JsonObject, RequestId, ServerJsonRpcMessage, ServerResult};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use tokio_util::sync::CancellationToken;

/// One session's short way; cheap to clone (the clones share the calls in flight).
pub struct Shortcut<B: Backend> {
    server: Weak<Inner<B>>,
    /// Calls taken here and neither answered nor cancelled yet, for `notifications/cancelled`.
    in_flight: Arc<Mutex<InFlight>>,
}

#[derive(Default)]
struct InFlight {
    calls: HashMap<RequestId, (u64, CancellationToken)>,
    /// Tells a call from a later one under the same id.
    next: u64,
}

/// How a call taken here ended.
pub enum Answered {
    /// Its answer, one JSON-RPC message.
    Answer(Vec<u8>),
    /// The client cancelled it: no answer, as the spec asks and rmcp's path does.
    Cancelled,
}

impl<B: Backend> Clone for Shortcut<B> {
    fn clone(&self) -> Self {
        Shortcut {
            server: self.server.clone(),
            in_flight: self.in_flight.clone(),
        }
    }
}

/// What the short way makes of one message, read once.
pub enum Taken<B: Backend> {
    /// A call to answer with [`Shortcut::answer`].
    Call(Call<B>),
    /// A `notifications/cancelled` of a call taken here, now cancelled: rmcp need not hear of it.
    Cancel,
    /// Anything else: rmcp's.
    Not,
}

/// A call taken: answer it with [`Shortcut::answer`].
pub struct Call<B: Backend> {
    /// Kept alive until the call ends, though the session's service may end first.
    server: Arc<Inner<B>>,
    id: RequestId,
    generation: u64,
    target: Arc<Listed>,
    args: Box<RawValue>,
    ct: CancellationToken,
}

/// A JSON-RPC message, as far as it takes to tell a short call; an unknown member means
/// it is not one.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Message<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    id: Option<RequestId>,
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    /// Passed on as they came: the call path parses them once, to check them.
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta")]
    meta: Option<JsonObject>,
}

#[derive(Deserialize)]
struct CancelParams {
    #[serde(rename = "requestId")]
    request_id: RequestId,
}

fn message(line: &[u8]) -> Option<Message<'_>> {
    serde_json::from_slice::<Message>(line)
        .ok()
        .filter(|m| m.jsonrpc == "2.0")
}

/// A `tools/call` request with nothing beyond a name, arguments and an empty `_meta`.
fn plain_call<'a>(m: &Message<'a>) -> Option<(RequestId, CallParams<'a>)> {
    if m.method != "tools/call" {
        return None;
    }
    let id = m.id.clone()?;
    let params: CallParams = serde_json::from_str(m.params?.get()).ok()?;
    if params.meta.as_ref().is_some_and(|meta| !meta.is_empty()) {
        return None;
    }
    // An object, as rmcp's type demands (it refuses anything else, in its own words).
    if params.arguments.is_some_and(|a| !a.get().starts_with('{')) {
        return None;
    }
    Some((id, params))
}

impl<B: Backend> Shortcut<B> {
    fn new(server: Weak<Inner<B>>) -> Shortcut<B> {
        Shortcut {
            server,
            in_flight: Arc::default(),
        }
    }

    /// The short way to `server`'s tab tools.
    pub fn of(server: &McpServer<B>) -> Shortcut<B> {
        Shortcut::new(server.inner())
    }

    /// The short way to the tab tools of the server that left itself in `slot`, once it has.
    pub fn of_slot(slot: &ServerSlot<B>) -> Option<Shortcut<B>> {
        slot.get().map(Shortcut::new)
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, InFlight> {
        self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What `line` (one JSON-RPC message) is to the short way, read once: a call it takes, a
    /// cancellation of one it took, or rmcp's.
    pub fn take(&self, line: &[u8]) -> Taken<B> {
        let Some(m) = message(line) else {
            return Taken::Not;
        };
        match &*m.method {
            "tools/call" => self.call(&m).map_or(Taken::Not, Taken::Call),
            "notifications/cancelled" if self.cancel(&m) => Taken::Cancel,
            _ => Taken::Not,
        }
    }

    fn call(&self, m: &Message<'_>) -> Option<Call<B>> {
        let (id, params) = plain_call(m)?;
        let server = self.server.upgrade()?;
        if !server.initialized() || !server.quiet() {
            return None;
        }
        let target = server.listed_tool(&params.name)?;
        if [FILE_UPLOAD, HANDOFF].contains(&target.tool()) {
            return None;
        }
        let ct = CancellationToken::new();
        let generation = {
            let mut in_flight = self.in_flight();
            // A client reusing an id still in flight gets rmcp's answer to that.
            if in_flight.calls.contains_key(&id) {
                return None;
            }
            in_flight.next += 1;
            let generation = in_flight.next;
            in_flight.calls.insert(id.clone(), (generation, ct.clone()));
            generation
        };
        Some(Call {
            server,
            id,
            generation,
            target,
            args: match params.arguments {
                Some(args) => args.to_owned(),
                None => RawValue::from_string("{}".to_owned()).expect("{} is JSON"),
            },
            ct,
        })
    }

    /// Whether a `notifications/cancelled` names a call taken here (then it is cancelled).
    fn cancel(&self, m: &Message<'_>) -> bool {
        if m.id.is_some() {
            return false;
        }
        let Some(p) = m
            .params
            .and_then(|p| serde_json::from_str::<CancelParams>(p.get()).ok())
        else {
            return false;
        };
        match self.in_flight().calls.remove(&p.request_id) {
            Some((_, ct)) => {
                ct.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancels every call in flight (the client is gone).
    pub fn cancel_all(&self) {
        for (_, ct) in self.in_flight().calls.values() {
            ct.cancel();
        }
    }

    /// Runs the call to its end. Drive it to the end: dropped early, the daemon is not told
    /// to cancel the call.
    pub async fn answer(&self, call: Call<B>) -> Answered {
        let Call {
            server,
            id,
            generation,
            target,
            args,
            ct,
        } = call;
        let outcome = server.call_listed(&target, args, &ct).await;
        {
            let mut in_flight = self.in_flight();
            match in_flight.calls.get(&id) {
                Some((g, _)) if *g == generation => drop(in_flight.calls.remove(&id)),
                _ => return Answered::Cancelled,
            }
        }
        let result = outcome.unwrap_or_else(|e| error_result(&e));
        let mut result = ServerResult::from(CallToolResponse::from(result));
        // A session begun with `initialize` is on a revision before 2026-07-28 (see
        // `ServerHandler::negotiate_initialize`), whose results have no `resultType`.
        result.strip_result_type_for_legacy_peer();
        let message = ServerJsonRpcMessage::response(result, id);
        // Our own types, which serialize whole: a failure here is a bug, not input.
        Answered::Answer(serde_json::to_vec(&message).expect("an MCP answer serializes"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(line: &str) -> Option<CallParams<'_>> {
        plain_call(&message(line.as_bytes())?).map(|(_, p)| p)
    }

    #[test]
    fn only_plain_messages_and_call_params_are_read() {
        let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{"q":"x"}}}"#;
        let p = params(call).unwrap();
        assert_eq!(p.name, "search");
        assert_eq!(p.arguments.unwrap().get(), r#"{"q":"x"}"#);
        // Anything rmcp would treat otherwise (or refuse) is not read here.
        for other in [
            r#"{"jsonrpc":"1.0","id":3,"method":"tools/call","params":{"name":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"s"},"extra":1}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"s","task":{}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"s","arguments":[]}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"s"}}"#,
            "not json",
        ] {
            assert!(params(other).is_none(), "{other}");
        }
        let meta = r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"s","_meta":{"progressToken":1}}}"#;
        assert!(params(meta).is_none());
        let empty =
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"s","_meta":{}}}"#;
        assert_eq!(params(empty).unwrap().name, "s");
    }
}
