//! A hand-off asked in the agent's own client too (issue 60): an MCP client that can answer a
//! form (elicitation) gets the same request the browser shows, and the first answer wins. Here
//! the person signs in in the browser and answers *Done* in the client: the call returns the
//! signed-in snapshot and the popup's request is gone; then *I can't* in the client ends the
//! next one with HANDOFF_DECLINED. Real Chromium, real `browserctl mcp`, rmcp's client.

use super::chromium_handoff::{signs_in, SignIn, NONE_SHOWN, SHOWN};
use super::*;
use crate::mcp::rmcp_client::stdio_with;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, Implementation,
};
use rmcp::service::{RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};
use serde_json::json;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// A client whose person answers the form when the test says what (`done` or `cant`); the
/// messages it was shown are kept.
#[derive(Clone)]
struct Person {
    answers: Arc<tokio::sync::Mutex<mpsc::Receiver<&'static str>>>,
    shown: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        caps.elicitation = Some(ElicitationCapability::new());
        ClientConfig::new(caps, Implementation::new("form-agent", "1.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.shown.lock().unwrap().push(message.clone());
        }
        let answer = self.answers.lock().await.recv().await.unwrap_or("cant");
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "answer": answer })))
    }
}

#[test]
fn the_person_answers_in_the_agents_client_and_the_first_answer_wins() {
    let test = "browser::face::handoff_elicit::the_person_answers_in_the_agents_client_and_the_first_answer_wins";
    let Some(s) = SignIn::start(test, &[]) else {
        return;
    };
    let SignIn {
        face: ChromiumFace { mut b, d, .. },
        tab_ref,
        page,
        popup,
        ..
    } = s;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (say, hear) = mpsc::channel(2);
    let person = Person {
        answers: Arc::new(tokio::sync::Mutex::new(hear)),
        shown: Arc::default(),
    };
    let client = rt.block_on(stdio_with(&d, &[], person.clone()));
    let handoff = |reason: &str| {
        let peer = client.peer().clone();
        let args = json!({"tab": tab_ref, "reason": reason});
        rt.spawn(async move {
            let serde_json::Value::Object(args) = args else {
                unreachable!()
            };
            let r = peer
                .call_tool(CallToolRequestParams::new("browser_handoff").with_arguments(args))
                .await
                .expect("an answer");
            serde_json::to_value(r).unwrap()
        })
    };

    // Asked in both places; the person signs in in the browser and answers in the client.
    let call = handoff("sign in, please");
    b.wait_for(&popup, "the hand-off in the popup", SHOWN);
    wait_until(Duration::from_secs(20), "the form in the client", || {
        person.shown.lock().unwrap().first().cloned()
    });
    let shown = person.shown.lock().unwrap()[0].clone();
    assert!(
        shown.contains("form-agent") && shown.contains("sign in, please"),
        "{shown}"
    );
    signs_in(&mut b, &page);
    rt.block_on(say.send("done")).unwrap();
    let done = rt.block_on(call).unwrap();
    assert_ne!(done["isError"], true, "{done}");
    let text = done.to_string();
    assert!(
        text.contains("Signed in as alice") && text.contains("Welcome"),
        "the signed-in snapshot: {text}"
    );
    b.wait_for(&popup, "the request gone from the popup", NONE_SHOWN);

    // I can't, in the client: the call says so with its own code.
    let call = handoff("type the code from your phone");
    b.wait_for(&popup, "the second hand-off in the popup", SHOWN);
    rt.block_on(say.send("cant")).unwrap();
    let cant = rt.block_on(call).unwrap();
    assert_eq!(cant["isError"], true, "{cant}");
    assert!(cant.to_string().contains("HANDOFF_DECLINED"), "{cant}");
    b.wait_for(&popup, "the second request gone", NONE_SHOWN);
    rt.block_on(client.cancel()).ok();
}
