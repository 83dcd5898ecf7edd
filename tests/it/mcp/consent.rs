//! An MCP client on a fresh install, with the real extension in headless Chromium (issue 31):
//! a call on the person's own tab waits for them, in a prompt that names the client (its
//! `clientInfo.name`, which the daemon passes on with the call), and runs once allowed; a tab
//! the client opened itself does not ask.

use super::rmcp_client::stdio_with;
use crate::browser::faults::{Rig, Sites};
use crate::support::chromium::*;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{Peer, RoleClient};
use rmcp::ClientHandler;
use serde_json::{json, Value};

const AGENT: &str = "consent-agent";

#[derive(Clone)]
struct Named;

impl ClientHandler for Named {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(AGENT, "1.0"),
        )
    }
}

async fn call(c: Peer<RoleClient>, tool: &str, args: Value) -> Value {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    let r = c
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    serde_json::to_value(r).unwrap()
}

#[test]
fn an_mcp_client_is_named_in_the_prompt_and_its_own_tabs_do_not_ask() {
    let Some(mut rig) = Rig::with_sites("mcp_consent", &[], Sites::AskFirst) else {
        return;
    };
    let (_person_page, person_tab) = rig.open("person");
    let agent_url = rig.pages.url("agent");
    let id = person_tab.split(':').nth(1).unwrap().to_owned();
    let popup = rig.b.open(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/popup.html?tab={id}"
    ));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let d = rig.d.take().expect("a daemon");
    let client = rt.block_on(stdio_with(&d, &[], Named));

    // On the person's tab: the prompt names the client, the site and the tool.
    let asked = rt.spawn(call(
        client.peer().clone(),
        "browserctl_call_tool",
        json!({"name": "echo", "tab": person_tab, "arguments": {"n": 1}}),
    ));
    let says = rig.b.wait_for(
        &popup,
        "the prompt",
        "(() => { const p = document.querySelector('#pending .prompt'); return p?.querySelector('strong')?.textContent === 'echo' && p.textContent; })()",
    );
    let says = says.as_str().unwrap();
    assert!(
        says.contains(AGENT) && says.contains(&rig.pages.origin()),
        "{says}"
    );
    rig.b.eval(
        &popup,
        "[...document.querySelectorAll('#pending button')].find((x) => x.textContent === 'Allow once').click()",
    );
    let r = rt.block_on(asked).unwrap();
    assert_ne!(r["isError"], json!(true), "{r}");
    assert!(r.to_string().contains("echo 1 /person"), "{r}");

    // Prompts now give up at once; the client's own tab on the same site does not ask.
    rig.b.eval(
        &popup,
        "chrome.storage.local.set({ consentTimeoutMs: 1500 })",
    );
    let r = rt.block_on(async {
        let opened = call(
            client.peer().clone(),
            "browserctl_open_tab",
            json!({"url": agent_url}),
        )
        .await;
        let tab = opened["structuredContent"]["tab"]
            .as_str()
            .unwrap_or_else(|| panic!("{opened}"))
            .to_owned();
        let args = json!({"name": "echo", "tab": tab, "arguments": {"n": 2}});
        // Its page tools come once it has loaded.
        for _ in 0..200 {
            let r = call(client.peer().clone(), "browserctl_call_tool", args.clone()).await;
            if !r.to_string().contains("TOOL_NOT_FOUND") {
                return r;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("no echo on the agent's tab")
    });
    assert_ne!(r["isError"], json!(true), "{r}\n{}", d.log());
    assert!(r.to_string().contains("echo 2 /agent"), "{r}");
    rt.block_on(client.cancel()).unwrap();
}
