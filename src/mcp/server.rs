//! The MCP server (an rmcp `ServerHandler`): `tools/list`, `tools/call`, three meta tools,
//! cancellation, and `notifications/tools/list_changed`.

use super::expose::{expose, Exposed, Scope, Snapshot};
use crate::error::{Error, ErrorCode};
use crate::protocol::control::{CallRequest, CallResponse, OpenTabRequest, TabView};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer};
use rmcp::ErrorData;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

/// What the MCP server needs from the daemon: the control API for `browserctl mcp`, the
/// registry itself inside the daemon.
pub trait Backend: Send + Sync + 'static {
    /// Browsers, tabs and tools, as one consistent-enough picture.
    fn snapshot(&self) -> impl Future<Output = Result<Snapshot, Error>> + Send;
    /// A tool call through the daemon's call path (validation, timeouts, retries).
    fn call(&self, req: CallRequest) -> impl Future<Output = Result<CallResponse, Error>> + Send;
    /// Cancels the call with this `callId`; false when the daemon has no such call (yet).
    fn cancel(&self, call_id: &str) -> impl Future<Output = Result<bool, Error>> + Send;
    fn open_tab(&self, req: OpenTabRequest) -> impl Future<Output = Result<TabView, Error>> + Send;
    fn close_tab(&self, tab: &str) -> impl Future<Output = Result<String, Error>> + Send;
    /// A signal each time browsers, tabs or tools may have changed (coalesced: one pending
    /// signal stands for any number of events). Ends when the source goes away.
    fn changes(&self) -> impl Future<Output = Result<mpsc::Receiver<()>, Error>> + Send;
    /// Runs a task of the server (its `list_changed` watcher) among the backend's own, so a
    /// daemon waits for it at shutdown like for any other of its tasks. The default, plain
    /// `tokio::spawn`, is for `browserctl mcp`, whose tasks end with its process.
    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        tokio::spawn(task);
    }
}

pub const LIST_TABS: &str = "browserctl_list_tabs";
pub const OPEN_TAB: &str = "browserctl_open_tab";
pub const CLOSE_TAB: &str = "browserctl_close_tab";
const META_TOOLS: &[&str] = &[LIST_TABS, OPEN_TAB, CLOSE_TAB];

/// The newest protocol revision with the `initialize` handshake and sessions. Later ones
/// drop sessions, and with them the stream that carries `list_changed` to our clients.
pub const PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// How long a cancelled call may take to confirm before we answer anyway.
const CANCEL_CONFIRM: Duration = Duration::from_secs(5);

/// One MCP session's server. Dropping it (the session ended) stops its `list_changed` watcher.
pub struct McpServer<B: Backend> {
    inner: Arc<Inner<B>>,
    _stop: DropGuard,
}

struct Inner<B> {
    backend: B,
    scope: Scope,
    stop: CancellationToken,
    /// What the client last listed: names → tools, and a fingerprint of the whole list.
    listed: Mutex<Listed>,
    watching: AtomicBool,
}

#[derive(Default)]
struct Listed {
    by_name: HashMap<String, Exposed>,
    fingerprint: Option<u64>,
    notified: Option<u64>,
}

impl<B: Backend> McpServer<B> {
    pub fn new(backend: B, scope: Scope) -> McpServer<B> {
        let stop = CancellationToken::new();
        McpServer {
            inner: Arc::new(Inner {
                backend,
                scope,
                stop: stop.clone(),
                listed: Mutex::new(Listed::default()),
                watching: AtomicBool::new(false),
            }),
            _stop: stop.drop_guard(),
        }
    }
}

fn lock(m: &Mutex<Listed>) -> std::sync::MutexGuard<'_, Listed> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Call ids unique across every `browserctl mcp` process and the daemon's own sessions.
fn next_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    // getpid is a system call; the pid does not change.
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    format!(
        "mcp-{}-{}",
        PID.get_or_init(std::process::id),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn schema(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => unreachable!("meta tool schemas are objects"),
    }
}

/// The three meta tools, first in every listing (and all there is without a daemon).
pub fn meta_tools() -> Vec<Tool> {
    let list = Tool::new(
        LIST_TABS,
        "List the browser tabs this server exposes: tab id, title, URL, whether it is focused, \
         and the names of the tools each tab offers here.",
        schema(json!({"type": "object", "properties": {}})),
    )
    .with_title("List browser tabs")
    .with_annotations(
        ToolAnnotations::new()
            .read_only(true)
            .idempotent(true)
            .open_world(false),
    );
    let open = Tool::new(
        OPEN_TAB,
        "Open a URL in a new browser tab and return the tab once the browser reports it. \
         The page's tools appear in the tool list when the page offers them.",
        schema(json!({"type": "object", "properties": {
            "url": {"type": "string", "description": "The URL to open"},
            "focus": {"type": "boolean", "description": "Bring the new tab to the front", "default": false},
            "browser": {"type": "string", "description": "Browser id (b1) when several are connected"}
        }, "required": ["url"]})),
    )
    .with_title("Open a browser tab")
    .with_annotations(ToolAnnotations::new().read_only(false).destructive(false).open_world(true));
    let close = Tool::new(
        CLOSE_TAB,
        "Close a browser tab by its id (b1:7, as browserctl_list_tabs shows it).",
        schema(json!({"type": "object", "properties": {
            "tab": {"type": "string", "description": "The tab id, e.g. b1:7"}
        }, "required": ["tab"]})),
    )
    .with_title("Close a browser tab")
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(true)
            .idempotent(true),
    );
    vec![list, open, close]
}

/// Our error as a tool result the model can read: `CODE: message`, then the details.
pub fn error_result(e: &Error) -> CallToolResult {
    let mut content = vec![ContentBlock::text(format!("{}: {}", e.code, e.message))];
    if let Some(details) = &e.details {
        content.push(ContentBlock::text(format!("details: {details}")));
    }
    CallToolResult::error(content)
}

/// A tab's answer as an MCP result. A result that already is one (`content`, `isError`,
/// `structuredContent`) passes through; text becomes a text block; other JSON becomes its
/// text, and an object is also given as `structuredContent`.
pub fn tool_result(result: &RawValue) -> CallToolResult {
    let Ok(value) = serde_json::from_str::<Value>(result.get()) else {
        // Valid JSON (it arrived as such) that is too deep to parse here: pass it on as
        // text rather than lose it.
        return CallToolResult::success(vec![ContentBlock::text(result.get())]);
    };
    if value.get("content").is_some_and(Value::is_array) {
        if let Ok(r) = serde_json::from_value::<CallToolResult>(value.clone()) {
            return r;
        }
    }
    match value {
        Value::Null => CallToolResult::success(vec![]),
        Value::String(s) => CallToolResult::success(vec![ContentBlock::text(s)]),
        Value::Object(_) => {
            let mut r = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
            r.structured_content = Some(value);
            r
        }
        other => CallToolResult::success(vec![ContentBlock::text(other.to_string())]),
    }
}

/// The `_meta` key that names the tab that answered a call.
pub const TAB_META: &str = "dev.browsermcp/tab";

/// Names the tab that answered in the result's `_meta`, as every call result does.
fn answered_by(mut r: CallToolResult, tab: &str) -> CallToolResult {
    let mut meta = r.meta.take().unwrap_or_default();
    meta.0
        .insert(TAB_META.to_owned(), Value::String(tab.to_owned()));
    r.meta = Some(meta);
    r
}

fn fingerprint(tools: &[Tool]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(tools)
        .unwrap_or_default()
        .hash(&mut h);
    h.finish()
}

fn arg_str<'a>(args: &'a JsonObject, name: &str) -> Result<Option<&'a str>, Error> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Error::new(
            ErrorCode::InvalidArguments,
            format!("`{name}` must be a string"),
        )),
    }
}

impl<B: Backend> Inner<B> {
    /// The current tool list (meta tools first) and the exposure behind it.
    async fn current(&self) -> Result<(Vec<Tool>, Vec<Exposed>, Snapshot), Error> {
        let snapshot = self.backend.snapshot().await?;
        let exposed = expose(&snapshot, &self.scope, META_TOOLS);
        let mut tools = meta_tools();
        tools.extend(exposed.iter().map(|e| e.to_mcp(&snapshot.browsers)));
        Ok((tools, exposed, snapshot))
    }

    async fn list(&self) -> Result<Vec<Tool>, Error> {
        let (tools, exposed) = match self.current().await {
            Ok((tools, exposed, _)) => (tools, exposed),
            // No daemon yet (a client started before it): offer the meta tools, whose calls
            // say what is wrong, and announce the tab tools once the daemon is there.
            Err(e) if e.code == ErrorCode::DaemonUnavailable => {
                tracing::warn!("{e}");
                (meta_tools(), Vec::new())
            }
            Err(e) => return Err(e),
        };
        let mut listed = lock(&self.listed);
        listed.by_name = exposed.into_iter().map(|e| (e.name.clone(), e)).collect();
        listed.fingerprint = Some(fingerprint(&tools));
        Ok(tools)
    }

    /// The tool behind a name, as (its name in the page, its target): from the client's last
    /// listing (names mean what the client was shown), else from a fresh look for a client
    /// that calls without listing. Only the two strings are copied, per call.
    async fn lookup(&self, name: &str) -> Result<(String, String), Error> {
        if let Some(e) = lock(&self.listed).by_name.get(name) {
            return Ok((e.view.name.clone(), e.target.clone()));
        }
        let (_, exposed, _) = self.current().await?;
        exposed
            .into_iter()
            .find(|e| e.name == name)
            .map(|e| (e.view.name, e.target))
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::ToolNotFound,
                    format!("no tool `{name}` here; list the tools again (tabs may have changed)"),
                )
            })
    }

    async fn call_tab_tool(
        &self,
        name: &str,
        args: JsonObject,
        ct: &CancellationToken,
    ) -> Result<CallToolResult, Error> {
        let (tool, target) = self.lookup(name).await?;
        let args = serde_json::value::to_raw_value(&args)
            .map_err(|e| Error::new(ErrorCode::InvalidArguments, e.to_string()))?;
        let call_id = next_call_id();
        let req = CallRequest {
            tool,
            tab: Some(target),
            args: Some(args),
            call_id: Some(call_id.clone()),
            ..CallRequest::default()
        };
        let call = self.backend.call(req);
        tokio::pin!(call);
        tokio::select! {
            biased;
            r = &mut call => return r.map(|resp| answered_by(tool_result(&resp.result), &resp.tab)),
            _ = ct.cancelled() => {}
        }
        // The client gave up. Cancel in the daemon and keep driving the call until the
        // daemon ends it with CANCELLED, so nothing is left pending behind us. The cancel may
        // race ahead of the call's own request: retry it briefly until the call is known.
        let cancel = async {
            for delay_ms in [0u64, 10, 20, 50, 100, 200, 400, 800] {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                match self.backend.cancel(&call_id).await {
                    Ok(true) => return,
                    Ok(false) => continue,
                    Err(e) => {
                        tracing::warn!(call_id, error = %e, "could not cancel a call");
                        return;
                    }
                }
            }
        };
        tokio::pin!(cancel);
        let deadline = tokio::time::sleep(CANCEL_CONFIRM);
        tokio::pin!(deadline);
        let mut cancel_sent = false;
        loop {
            tokio::select! {
                r = &mut call => return r.map(|resp| answered_by(tool_result(&resp.result), &resp.tab)),
                _ = &mut cancel, if !cancel_sent => cancel_sent = true,
                _ = &mut deadline => return Err(Error::new(
                    ErrorCode::Cancelled,
                    format!("call `{call_id}` was cancelled; the daemon did not confirm in time"),
                )),
            }
        }
    }

    async fn in_scope_tabs(&self) -> Result<(Vec<TabView>, Vec<Exposed>, Snapshot), Error> {
        let (_, exposed, snapshot) = self.current().await?;
        let tabs = snapshot
            .tabs
            .iter()
            .filter(|t| {
                let b = snapshot.browsers.iter().find(|b| b.id == t.browser);
                self.scope.tab_in_scope(t, b)
            })
            .cloned()
            .collect();
        Ok((tabs, exposed, snapshot))
    }

    async fn list_tabs(&self) -> Result<CallToolResult, Error> {
        let (tabs, exposed, _) = self.in_scope_tabs().await?;
        let rows: Vec<Value> = tabs
            .iter()
            .map(|t| {
                let tools: Vec<&str> = exposed
                    .iter()
                    .filter(|e| e.target == t.tab_ref)
                    .map(|e| e.name.as_str())
                    .collect();
                json!({"tab": t.tab_ref, "title": t.title, "url": t.url,
                    "focused": t.focused, "tools": tools})
            })
            .collect();
        let value = json!({ "tabs": rows });
        Ok(CallToolResult::structured(value))
    }

    async fn open_tab(&self, args: &JsonObject) -> Result<CallToolResult, Error> {
        let url = arg_str(args, "url")?
            .filter(|u| !u.is_empty())
            .ok_or_else(|| Error::new(ErrorCode::InvalidArguments, "`url` is required"))?;
        let focus = match args.get("focus") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(Error::new(
                    ErrorCode::InvalidArguments,
                    "`focus` must be a boolean",
                ))
            }
        };
        let mut browser = arg_str(args, "browser")?.map(str::to_owned);
        let s = &self.scope;
        if !s.browsers.is_empty() || !s.sessions.is_empty() {
            // Keep new tabs inside the browsers this server was scoped to.
            let snapshot = self.backend.snapshot().await?;
            let allowed: Vec<&str> = snapshot
                .browsers
                .iter()
                .filter(|b| s.browser_in_scope(b))
                .map(|b| b.id.as_str())
                .collect();
            browser = match browser {
                Some(b)
                    if allowed
                        .iter()
                        .any(|a| a.trim_start_matches('b') == b.trim_start_matches('b')) =>
                {
                    Some(b)
                }
                Some(b) => {
                    return Err(Error::new(
                        ErrorCode::NoBrowser,
                        format!("browser `{b}` is outside this server's scope"),
                    ))
                }
                None => Some(
                    allowed
                        .first()
                        .ok_or_else(|| {
                            Error::new(
                                ErrorCode::NoBrowser,
                                "no browser in this server's scope is connected",
                            )
                        })?
                        .to_string(),
                ),
            };
        }
        let tab = self
            .backend
            .open_tab(OpenTabRequest {
                url: url.to_owned(),
                focus,
                browser,
                timeout_ms: None,
            })
            .await
            .map_err(|e| e.hint(ErrorCode::AmbiguousTarget, "name one as `browser`"))?;
        Ok(CallToolResult::structured(json!({
            "tab": tab.tab_ref, "title": tab.title, "url": tab.url, "focused": tab.focused,
        })))
    }

    async fn close_tab(&self, args: &JsonObject) -> Result<CallToolResult, Error> {
        let want = arg_str(args, "tab")?
            .ok_or_else(|| Error::new(ErrorCode::InvalidArguments, "`tab` is required"))?;
        let (tabs, _, _) = self.in_scope_tabs().await?;
        let hits: Vec<&TabView> = tabs
            .iter()
            .filter(|t| {
                t.tab_ref == want || (!want.contains(':') && want.parse::<i64>().ok() == Some(t.id))
            })
            .collect();
        let tab = match hits.as_slice() {
            [one] => one.tab_ref.clone(),
            [] => {
                return Err(Error::new(
                    ErrorCode::TabNotFound,
                    format!("no tab `{want}` among the tabs this server exposes"),
                ))
            }
            many => {
                return Err(Error::new(
                    ErrorCode::AmbiguousTarget,
                    format!(
                        "tab id `{want}` exists in several browsers; name it as <browser>:{want}"
                    ),
                )
                .with_details(json!({"candidates": many.iter().map(|t| json!({
                    "tab": t.tab_ref, "title": t.title, "url": t.url,
                })).collect::<Vec<_>>()})))
            }
        };
        let closed = self.backend.close_tab(&tab).await?;
        Ok(CallToolResult::structured(json!({ "closed": closed })))
    }

    /// Sends `list_changed` when the tools differ from what the client last listed (once per
    /// distinct change). Follows the backend's change signal; reconnects if it breaks.
    async fn watch(self: Arc<Self>, peer: Peer<RoleServer>) {
        let mut backoff = Duration::from_millis(200);
        loop {
            let mut changes = match self.backend.changes().await {
                Ok(rx) => {
                    backoff = Duration::from_millis(200);
                    rx
                }
                Err(e) => {
                    tracing::debug!(error = %e, "cannot follow tool changes yet");
                    tokio::select! {
                        _ = self.stop.cancelled() => return,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            };
            loop {
                // Checked once right away too: the list may have changed between the
                // client's listing and this subscription.
                if let Ok((tools, _, _)) = self.current().await {
                    let now = fingerprint(&tools);
                    let notify = {
                        let mut l = lock(&self.listed);
                        let stale =
                            l.fingerprint.is_some_and(|f| f != now) && l.notified != Some(now);
                        if stale {
                            l.notified = Some(now);
                        }
                        stale
                    };
                    if notify && peer.notify_tool_list_changed().await.is_err() {
                        return;
                    }
                }
                tokio::select! {
                    _ = self.stop.cancelled() => return,
                    signal = changes.recv() => if signal.is_none() { break },
                }
            }
        }
    }
}

/// Who we are and what we offer, in every `initialize` answer (the daemon's and the one
/// `browserctl mcp` gives without a daemon).
pub fn info() -> ServerConfig {
    ServerConfig::new(
        ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build(),
    )
    .with_server_info(
        Implementation::new("browser-mcp", env!("CARGO_PKG_VERSION"))
            .with_title("browser-mcp: tools of your browser tabs"),
    )
    .with_protocol_version(PROTOCOL)
    .with_instructions(
        "The tools of the web pages open in the user's browser, one MCP tool per page tool. \
         Each tool's description ends with the tab it runs in. browserctl_list_tabs shows \
         the tabs; browserctl_open_tab and browserctl_close_tab open and close them. Errors \
         start with a stable code such as TOOL_ERROR or TAB_NOT_FOUND.",
    )
}

impl<B: Backend> rmcp::ServerHandler for McpServer<B> {
    fn get_info(&self) -> ServerConfig {
        info()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&PROTOCOL))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The whole list in one page: a few hundred tools at most, and a cursor would go
        // stale as tabs come and go.
        match self.inner.list().await {
            Ok(tools) => Ok(ListToolsResult::with_all_items(tools)),
            Err(e) => Err(ErrorData::internal_error(
                format!("{}: {}", e.code, e.message),
                None,
            )),
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let inner = &self.inner;
        let outcome = match request.name.as_ref() {
            LIST_TABS => inner.list_tabs().await,
            OPEN_TAB => inner.open_tab(&args).await,
            CLOSE_TAB => inner.close_tab(&args).await,
            name => inner.call_tab_tool(name, args, &context.ct).await,
        };
        let result = outcome.unwrap_or_else(|e| error_result(&e));
        Ok(result.into())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if !self.inner.watching.swap(true, Ordering::SeqCst) {
            let watch = self.inner.clone().watch(context.peer.clone());
            self.inner.backend.spawn(watch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(v: Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&v).unwrap()
    }

    #[test]
    fn results_pass_through_or_are_wrapped() {
        let mcp = tool_result(&raw(
            json!({"content": [{"type": "text", "text": "hi"}], "isError": true}),
        ));
        assert_eq!(mcp.is_error, Some(true));
        assert_eq!(
            serde_json::to_value(&mcp.content).unwrap(),
            json!([{"type": "text", "text": "hi"}])
        );
        let text = tool_result(&raw(json!("results for test")));
        assert_eq!(
            serde_json::to_value(&text.content).unwrap(),
            json!([{"type": "text", "text": "results for test"}])
        );
        let obj = tool_result(&raw(json!({"data": [1, 2]})));
        assert_eq!(obj.structured_content, Some(json!({"data": [1, 2]})));
        assert_eq!(obj.is_error, Some(false));
        assert!(tool_result(&raw(Value::Null)).content.is_empty());
        // A screenshot stays an image content block, with its text next to it.
        let blocks = json!([{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "text", "text": "Element e1: 200×120 px (png)."}]);
        let image = tool_result(&raw(json!({ "content": blocks })));
        assert_eq!(serde_json::to_value(&image.content).unwrap(), blocks);
        assert_ne!(image.is_error, Some(true));
    }

    #[test]
    fn errors_carry_their_code() {
        let r = error_result(
            &Error::new(ErrorCode::ToolError, "boom").with_details(json!({"toolCode": "X"})),
        );
        assert_eq!(r.is_error, Some(true));
        let v = serde_json::to_value(&r.content).unwrap();
        assert_eq!(v[0]["text"], "TOOL_ERROR: boom");
        assert_eq!(v[1]["text"], r#"details: {"toolCode":"X"}"#);
    }

    #[test]
    fn meta_tool_names_are_valid_and_distinct() {
        let tools = meta_tools();
        assert_eq!(tools.len(), META_TOOLS.len());
        for (t, name) in tools.iter().zip(META_TOOLS) {
            assert_eq!(t.name, *name);
            assert_eq!(super::super::expose::sanitize(name), *name);
        }
    }
}
