//! A hand-off's second door (issue 60): where the MCP client supports elicitation (a form its
//! person answers in the agent's own window), the request `browser_handoff` shows in the
//! browser is asked there too, and the first answer wins. An answer in the client ends the
//! hand-off in the browser as if given there (the daemon's `endHandoff` with an answer), so
//! the call returns what it would have: the fresh snapshot for *Done*, HANDOFF_DECLINED for
//! *I can't*. Dismissing the client's form leaves the browser's question open.

pub use crate::protocol::tool::HANDOFF;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{Peer, RoleServer};
use serde_json::{json, Value};
use std::future::Future;

tokio::task_local! {
    static CLIENT: Option<Peer<RoleServer>>;
}

/// Runs a call with the client's peer at hand when it can answer a form.
pub async fn with<F: Future>(peer: &Peer<RoleServer>, f: F) -> F::Output {
    let can = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.elicitation.is_some());
    CLIENT.scope(can.then(|| peer.clone()), f).await
}

/// The client of this task's call, when it can answer a form (none outside `with`).
pub fn client() -> Option<Peer<RoleServer>> {
    CLIENT.try_with(Clone::clone).ok().flatten()
}

/// Asks the person in the client; `done` or `cant` once they answer there. Pending for ever
/// when they dismiss it, the client fails it, or nothing can be asked: the browser's question
/// is still open then, and the call ends by it.
pub async fn ask(peer: Peer<RoleServer>, args: &Value, agent: Option<&str>) -> &'static str {
    match answer(&peer, args, agent).await {
        Some(answer) => answer,
        None => std::future::pending().await,
    }
}

async fn answer(
    peer: &Peer<RoleServer>,
    args: &Value,
    agent: Option<&str>,
) -> Option<&'static str> {
    let reason = args["reason"]
        .as_str()
        .unwrap_or("take over in the browser");
    let who = agent.unwrap_or("The agent");
    let message = format!(
        "{who} hands the browser to you: {reason}. The tab is in front in your browser; do it \
         there, then answer here or in the browser's popup."
    );
    let schema = json!({
        "type": "object",
        "properties": {"answer": {
            "type": "string",
            "title": "When you are done",
            "enum": ["done", "cant"],
            "enumNames": ["Done", "I can't"],
        }},
        "required": ["answer"],
    });
    let Value::Object(schema) = schema else {
        return None;
    };
    let requested_schema = ElicitationSchema::from_json_schema(schema).ok()?;
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema,
    };
    let result = match peer.create_elicitation(params).await {
        Ok(r) => r,
        Err(e) => {
            tracing::debug!(error = %e, "the client did not answer the hand-off's form");
            return None;
        }
    };
    match result.action {
        ElicitationAction::Accept => match result.content?.get("answer")?.as_str()? {
            "done" => Some("done"),
            "cant" => Some("cant"),
            _ => None,
        },
        ElicitationAction::Decline => Some("cant"),
        _ => None,
    }
}
