//! What the MCP front offers beyond listing and calling (issue 22): `logging/setLevel` and
//! the messages it lets through, driven by rmcp's client over `/mcp` against a real daemon
//! and a scripted extension.
#![allow(deprecated)] // logging: a 2025-11-25 feature, deprecated in rmcp for 2026-07-28

use crate::common::*;
use rmcp::model::{
    CallToolRequestParams, JsonObject, LoggingLevel, LoggingMessageNotificationParam,
    SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::mpsc;

/// What the server sent besides answers, in the order it arrived.
#[derive(Debug)]
pub enum Heard {
    Log(LoggingMessageNotificationParam),
    ToolsChanged,
}

/// An MCP client that reports every notification it hears.
#[derive(Clone)]
pub struct Recorder(mpsc::UnboundedSender<Heard>);

impl ClientHandler for Recorder {
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(Heard::Log(params));
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.0.send(Heard::ToolsChanged);
    }
}

pub type Client = RunningService<RoleClient, Recorder>;

pub async fn client(d: &TestDaemon) -> (Client, mpsc::UnboundedReceiver<Heard>) {
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://127.0.0.1:{}/mcp", d.port))
            .auth_header(d.token.clone());
    let (tx, rx) = mpsc::unbounded_channel();
    let client = Recorder(tx)
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("initialize over HTTP");
    (client, rx)
}

pub fn params(name: &str, a: Value) -> CallToolRequestParams {
    let mut p = CallToolRequestParams::new(name.to_owned());
    p.arguments = match a {
        Value::Object(m) => Some(m),
        _ => Some(JsonObject::new()),
    };
    p
}

/// The next log message heard (other notifications are skipped).
async fn next_log(heard: &mut mpsc::UnboundedReceiver<Heard>) -> LoggingMessageNotificationParam {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match heard.recv().await.expect("client alive") {
                Heard::Log(m) => return m,
                _ => continue,
            }
        }
    })
    .await
    .expect("a log message within 10 s")
}

#[tokio::test(flavor = "multi_thread")]
async fn set_level_chooses_which_log_messages_a_session_hears() {
    let d = TestDaemon::start();
    let _ext = FakeExtension::connect(&d, "s1", vec![tab(7, "Search", vec![search_tool()])]).await;
    d.wait_tabs("one tab", |t| t.len() == 1);
    let (client, mut heard) = client(&d).await;
    let info = client.peer_info().unwrap();
    assert!(
        info.capabilities.logging.is_some(),
        "{:?}",
        info.capabilities
    );

    // Warnings and above: a failed call is reported, with its code.
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Warning))
        .await
        .expect("logging/setLevel");
    let r = client
        .call_tool(params("no_such_tool", json!({})))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let m = next_log(&mut heard).await;
    assert_eq!(m.level, LoggingLevel::Warning);
    assert_eq!(m.logger.as_deref(), Some("browser-mcp"));
    assert_eq!(m.data["event"], "callFailed");
    assert_eq!(m.data["code"], "TOOL_NOT_FOUND");

    // Errors only: the next failure says nothing; then debug: every call is reported. The
    // first message heard after that is the later call's, so the quiet one was not sent.
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Error))
        .await
        .unwrap();
    client
        .call_tool(params("quiet_failure", json!({})))
        .await
        .unwrap();
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Debug))
        .await
        .unwrap();
    client
        .call_tool(params("browserctl_list_tabs", json!({})))
        .await
        .unwrap();
    let m = next_log(&mut heard).await;
    assert_eq!(m.level, LoggingLevel::Debug, "{m:?}");
    assert_eq!(
        (m.data["event"].clone(), m.data["tool"].clone()),
        (json!("call"), json!("browserctl_list_tabs"))
    );
    client.cancel().await.unwrap();
}
