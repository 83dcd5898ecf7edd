//! An agent's own tabs (issue 22) with the real extension in headless Chromium: tabs an MCP
//! client opens with `browserctl_open_tab` go into a tab group named after the client (its
//! `clientInfo.name`), as do the tabs a client is scoped to (`--tab`), and `browserctl mcp
//! --own-tabs` shows the client only the tabs it opened.
//! The browser itself is the oracle: chrome.tabs / chrome.tabGroups, read in an extension page.

use super::rmcp_client::stdio_with;
use crate::browser::faults::Rig;
use crate::support::cdp::Page;
use crate::support::chromium::*;
use crate::support::common::*;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, JsonObject,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::ClientHandler;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::mpsc;

const AGENT: &str = "own-tabs-agent";
const SCOPED: &str = "scoped-agent";
const WAIT: Duration = Duration::from_secs(30);

/// An MCP client with a name, reporting every `tools/list_changed`.
#[derive(Clone)]
struct Agent {
    name: &'static str,
    changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Agent {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(self.name, "1.0"),
        )
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }
}

type Client = RunningService<RoleClient, Agent>;

async fn connect(
    d: &TestDaemon,
    name: &'static str,
    extra: &[&str],
) -> (Client, mpsc::UnboundedReceiver<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (stdio_with(d, extra, Agent { name, changed: tx }).await, rx)
}

async fn call(c: &Client, tool: &str, args: Value) -> Value {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    let r = c
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args as JsonObject))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    serde_json::to_value(r).unwrap()
}

async fn tool_names(c: &Client) -> Vec<String> {
    let tools = c.list_all_tools().await.expect("tools/list");
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

/// Polls the tool list until `ready` holds; returns the names.
async fn tools_until(c: &Client, what: &str, ready: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let names = tool_names(c).await;
        if ready(&names) {
            return names;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: tools are {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The browser's own view of the tab at `url`: its group's title (null when ungrouped) and id.
fn group_of(rig: &mut Rig, ext: &Page, url: &str) -> Value {
    rig.b.eval(
        ext,
        &format!(
            r#"(async () => {{
                const [t] = await chrome.tabs.query({{ url: {url} }});
                if (!t) return {{ missing: true }};
                if (t.groupId === chrome.tabGroups.TAB_GROUP_ID_NONE) return {{ title: null, id: -1 }};
                const g = await chrome.tabGroups.get(t.groupId);
                return {{ title: g.title, id: g.id }};
            }})()"#,
            url = json!(url)
        ),
    )
}

#[test]
fn an_agents_tabs_are_grouped_under_its_name_and_own_tabs_scopes_it_to_them() {
    let Some(mut rig) = Rig::start("mcp_own_tabs", &[]) else {
        return;
    };
    // The user's own tab, with the same tools as the agent's will have.
    let (_user_page, user_tab) = rig.open("user");
    let user_url = rig.pages.url("user");
    let (agent_url, second_url) = (rig.pages.url("agent"), rig.pages.url("agent2"));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let d = rig.d.take().expect("a daemon");

    let (agent, opened_tab, second_tab) = rt.block_on(async {
        let (agent, mut changed) = connect(&d, AGENT, &["--own-tabs"]).await;
        // Nothing opened yet: the meta tools only (no tab tools, no browser-level tools).
        let before = tool_names(&agent).await;
        assert!(
            before.iter().all(|n| n.starts_with("browserctl_")),
            "{before:?}"
        );
        let tabs = call(&agent, "browserctl_list_tabs", json!({})).await;
        assert_eq!(tabs["structuredContent"]["tabs"], json!([]), "{tabs}");

        let opened = call(&agent, "browserctl_open_tab", json!({"url": agent_url})).await;
        assert_eq!(opened["isError"], json!(false), "{opened}");
        let opened_tab = opened["structuredContent"]["tab"]
            .as_str()
            .unwrap()
            .to_owned();
        // Its tools arrive, and the client is told the list changed.
        let names = tools_until(&agent, "the opened tab's tools", |n| {
            n.iter().any(|n| n == "echo")
        })
        .await;
        tokio::time::timeout(WAIT, changed.recv())
            .await
            .expect("tools/list_changed after the tab opened");
        // Only that tab's tools: one `echo`, unsuffixed, since the user's tab is not in scope.
        assert!(!names.iter().any(|n| n.starts_with("echo_")), "{names:?}");
        let listed = call(&agent, "browserctl_list_tools", json!({})).await;
        let rows = listed["structuredContent"]["tools"].as_array().unwrap();
        assert!(!rows.is_empty());
        assert!(rows.iter().all(|r| r["tab"] == opened_tab), "{listed}");
        let echoed = call(&agent, "echo", json!({"n": 1})).await;
        assert!(echoed.to_string().contains("echo 1 /agent"), "{echoed}");
        // The user's tab is out of reach, by any name.
        let refused = call(
            &agent,
            "browserctl_call_tool",
            json!({"name": "echo", "tab": user_tab, "arguments": {"n": 2}}),
        )
        .await;
        assert_eq!(refused["isError"], json!(true), "{refused}");
        assert!(refused.to_string().contains("TOOL_NOT_FOUND"), "{refused}");
        let closed = call(&agent, "browserctl_close_tab", json!({"tab": user_tab})).await;
        assert!(closed.to_string().contains("TAB_NOT_FOUND"), "{closed}");
        let tabs = call(&agent, "browserctl_list_tabs", json!({})).await;
        let tabs = tabs["structuredContent"]["tabs"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(tabs.len(), 1, "{tabs:?}");
        assert_eq!(tabs[0]["tab"], json!(opened_tab));

        // A second tab joins the same group, and both are the agent's.
        let second = call(&agent, "browserctl_open_tab", json!({"url": second_url})).await;
        let second_tab = second["structuredContent"]["tab"]
            .as_str()
            .unwrap()
            .to_owned();
        let echo_a = format!("echo_{}", opened_tab.replace(':', "_"));
        let echo_b = format!("echo_{}", second_tab.replace(':', "_"));
        tools_until(&agent, "both opened tabs' tools", |n| {
            n.contains(&echo_a) && n.contains(&echo_b)
        })
        .await;

        // A client without --own-tabs reaches every tab, the user's included: the built-ins
        // once, each tab's page tools through the meta tools.
        let (everyone, _) = connect(&d, "another-agent", &[]).await;
        let names = tool_names(&everyone).await;
        assert_eq!(names.iter().filter(|n| *n == "browser_snapshot").count(), 1);
        let rows = call(&everyone, "browserctl_list_tools", json!({})).await;
        let echo_tabs: Vec<&str> = rows["structuredContent"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["tool"] == "echo")
            .filter_map(|r| r["tab"].as_str())
            .collect();
        for tab in [&opened_tab, &second_tab, &user_tab] {
            assert!(echo_tabs.contains(&tab.as_str()), "{tab} in {echo_tabs:?}");
        }
        everyone.cancel().await.unwrap();
        (agent, opened_tab, second_tab)
    });
    assert_ne!(opened_tab, second_tab);

    // The browser shows the agent's tabs in one group titled after it; the user's tab is not
    // grouped.
    let ext = rig.b.open(&format!(
        "chrome-extension://{EXTENSION_ID}/ui/options.html"
    ));
    let first = group_of(&mut rig, &ext, &agent_url);
    let second = group_of(&mut rig, &ext, &second_url);
    let user = group_of(&mut rig, &ext, &user_url);
    assert_eq!(first["title"], json!(AGENT), "{first}");
    assert_eq!(second["id"], first["id"], "{second} vs {first}");
    assert_eq!(user["title"], Value::Null, "{user}");
    assert_eq!(user["id"], json!(-1), "{user}");

    // A client scoped to the user's tab (--tab) puts that tab in its own group once it lists
    // its tools.
    let scoped = rt.block_on(async {
        let (scoped, _) = connect(&d, SCOPED, &["--tab", &user_tab]).await;
        let names = tool_names(&scoped).await;
        assert!(names.iter().any(|n| n == "echo"), "{names:?}");
        scoped
    });
    let user = rig.b.wait_for(
        &ext,
        "the user's tab in the scoped client's group",
        &format!(
            r#"(async () => {{
                const [t] = await chrome.tabs.query({{ url: {url} }});
                return t.groupId !== chrome.tabGroups.TAB_GROUP_ID_NONE && (await chrome.tabGroups.get(t.groupId)).title;
            }})()"#,
            url = json!(user_url)
        ),
    );
    assert_eq!(user, json!(SCOPED));
    // The agent's tabs stay in the agent's group.
    assert_eq!(group_of(&mut rig, &ext, &agent_url), first);

    rt.block_on(async {
        scoped.cancel().await.unwrap();
        agent.cancel().await.unwrap();
    });
    rig.d = Some(d);
}
