//! The MCP server (an rmcp `ServerHandler`): `tools/list`, `tools/call`, the meta tools, the
//! session's current tab, cancellation, and `notifications/tools/list_changed`.

use super::backend::Backend;
use super::elicit;
use super::expose::{Scope, Snapshot};
use super::groups::{self, group_for};
use super::identity::{info, NEWEST};
use super::log::{ClientLog, Level};
use super::meta::{
    self, arg_str, raw_args, CALL_TOOL, CLOSE_BROWSER, CLOSE_TAB, LAUNCH_BROWSER, LIST_TABS,
    LIST_TOOLS, OPEN_TAB, SELECT_TAB,
};
use super::progress;
use super::result::error_result;
use super::roots;
use super::view::{browser_tabs_out_of_scope, one_tab, tabs_in_scope, Listed, View, BROWSER_TABS};
use crate::error::{Error, ErrorCode};
use crate::protocol::control::{OpenTabRequest, TabGroup};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, Implementation,
    InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext};
use rmcp::ErrorData;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;
use tokio_util::sync::{CancellationToken, DropGuard};

/// How long a tool list may be reused: not at all, since a tab may open or close any time
/// (and asking again costs a local round trip). Private: it is this user's browser.
const LIST_TTL_MS: u64 = 0;

/// One MCP session's server. Dropping it (the session ended) stops its `list_changed` watcher.
pub struct McpServer<B: Backend> {
    inner: Arc<Inner<B>>,
    _stop: DropGuard,
}

pub(super) struct Inner<B> {
    pub(super) backend: B,
    pub(super) scope: Scope,
    stop: CancellationToken,
    /// What the client last listed: names → tools, and a fingerprint of the whole list.
    listed: Mutex<Listing>,
    watching: AtomicBool,
    /// Whether the client began with `initialize` (revisions up to 2025-11-25), which fixes
    /// the shape of every answer of the session.
    initialized: AtomicBool,
    log: ClientLog,
    /// The tabs this session opened and selected; a change wakes the watchers, as the list
    /// may change with it (the current tab, or a tab's tools that arrived before the tab was
    /// known to be ours).
    pub(super) tabs: tokio::sync::watch::Sender<SessionTabs>,
    /// Tabs in scope already put in this client's tab group.
    grouped: Mutex<HashSet<String>>,
    /// The client's name (`clientInfo.name` at `initialize`), sent with each call so that the
    /// browser's consent prompt names who asks, and the title of its tabs' group: made unique
    /// among the sessions live (`claude-code (2)`), so that it names this agent's lane.
    pub(super) agent: OnceLock<String>,
}

#[derive(Default)]
struct Listing {
    by_name: HashMap<String, Arc<Listed>>,
    fingerprint: Option<u64>,
    /// Whether `list_changed` went out since the client last listed: once is enough until it
    /// lists again (a navigation changes the list a few times in a row).
    notified: bool,
}

/// The tabs one session made its own.
#[derive(Default)]
pub(super) struct SessionTabs {
    /// Opened with `browserctl_open_tab` (for `--own-tabs`).
    opened: Vec<String>,
    /// Browsers launched with `browserctl_launch_browser`: all an `--own-tabs` session closes.
    launched: Vec<String>,
    /// Last opened or selected: the current tab while it is there ([`current_tab`]).
    selected: Option<String>,
}

impl<B: Backend> McpServer<B> {
    pub fn new(backend: B, scope: Scope) -> McpServer<B> {
        let stop = CancellationToken::new();
        McpServer {
            inner: Arc::new(Inner {
                backend,
                scope,
                stop: stop.clone(),
                listed: Mutex::new(Listing::default()),
                watching: AtomicBool::new(false),
                initialized: AtomicBool::new(false),
                log: ClientLog::default(),
                tabs: tokio::sync::watch::Sender::new(SessionTabs::default()),
                grouped: Mutex::new(HashSet::new()),
                agent: OnceLock::new(),
            }),
            _stop: stop.drop_guard(),
        }
    }
}

impl<B: Backend> McpServer<B> {
    pub(super) fn inner(&self) -> Weak<Inner<B>> {
        Arc::downgrade(&self.inner)
    }
}

/// Where a session's server leaves a handle on itself as it answers `initialize`, for the
/// transport that began the session (`/mcp` puts one among the request's extensions; see
/// [`super::shortcut`]).
pub struct ServerSlot<B: Backend>(Arc<OnceLock<Weak<Inner<B>>>>);

impl<B: Backend> Clone for ServerSlot<B> {
    fn clone(&self) -> Self {
        ServerSlot(self.0.clone())
    }
}

impl<B: Backend> Default for ServerSlot<B> {
    fn default() -> Self {
        ServerSlot(Arc::default())
    }
}

impl<B: Backend> ServerSlot<B> {
    pub(super) fn get(&self) -> Option<Weak<Inner<B>>> {
        self.0.get().cloned()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn fingerprint(tools: &[Tool]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(tools)
        .unwrap_or_default()
        .hash(&mut h);
    h.finish()
}

impl<B: Backend> Inner<B> {
    /// A tool of the client's last listing, by the name it was shown under.
    pub(super) fn listed_tool(&self, name: &str) -> Option<Arc<Listed>> {
        lock(&self.listed).by_name.get(name).cloned()
    }

    /// Whether the client asked for no log messages of calls (`logging/setLevel` at
    /// `warning` or lower would have it hear of each call and each failure).
    pub(super) fn quiet(&self) -> bool {
        !self.log.wants(Level::Warning.into())
    }

    /// Whether the session began with `initialize` (see [`Inner::initialized`]).
    pub(super) fn initialized(&self) -> bool {
        self.initialized.load(Ordering::Relaxed)
    }

    /// The scope with the tabs this session opened filled in.
    pub(super) fn scope(&self) -> Scope {
        let mut scope = self.scope.clone();
        if scope.own_tabs {
            scope.opened = self.tabs.borrow().opened.clone();
        }
        scope
    }

    pub(super) fn selected(&self) -> Option<String> {
        self.tabs.borrow().selected.clone()
    }

    /// Makes `tab` the session's current tab (and, `opened`, one of its own).
    pub(super) fn select(&self, tab: &str, opened: bool) {
        self.tabs.send_modify(|t| {
            if opened {
                t.opened.push(tab.to_owned());
            }
            t.selected = Some(tab.to_owned());
        });
    }

    /// The selected tab is gone: the current tab is the focused one again.
    pub(super) fn unselect(&self) {
        self.tabs.send_modify(|t| t.selected = None);
    }

    /// The session's view of the browsers now (see super::view).
    async fn current(&self) -> Result<View, Error> {
        let snapshot = self.backend.snapshot().await?;
        Ok(View::new(
            snapshot,
            &self.scope(),
            self.selected().as_deref(),
        ))
    }

    async fn list(&self, client: Option<Implementation>) -> Result<Vec<Tool>, Error> {
        let (tools, listed) = match self.current().await {
            Ok(view) => {
                self.group_scoped(&view.snapshot, client).await;
                (view.tools, view.listed)
            }
            // No daemon yet (a client started before it): offer the meta tools, whose calls
            // say what is wrong, and announce the tab tools once the daemon is there.
            Err(e) if e.code == ErrorCode::DaemonUnavailable => {
                tracing::warn!("{e}");
                (meta::tools(), Vec::new())
            }
            Err(e) => return Err(e),
        };
        let mut listing = lock(&self.listed);
        listing.by_name = listed
            .into_iter()
            .map(|l| (l.name().to_owned(), Arc::new(l)))
            .collect();
        listing.fingerprint = Some(fingerprint(&tools));
        listing.notified = false;
        Ok(tools)
    }

    /// Puts the tabs this session is scoped to by tab or URL (`--tab`, `--url`) in the
    /// client's tab group, each once, so the user sees which tabs an agent may drive. A scope
    /// of whole browsers claims no tabs; tabs the session opened were grouped as they opened.
    async fn group_scoped(&self, snapshot: &Snapshot, client: Option<Implementation>) {
        let fresh = groups::claim(snapshot, &self.scope, &mut lock(&self.grouped));
        if fresh.is_empty() {
            return;
        }
        self.backend.group_tabs(&fresh, &self.group(client)).await;
    }

    /// The tab group of this session's tabs: named after its agent's lane.
    fn group(&self, client: Option<Implementation>) -> TabGroup {
        match self.agent.get() {
            Some(label) => TabGroup {
                title: label.clone(),
            },
            None => group_for(client),
        }
    }

    /// The tool behind a name: from the client's last listing (names mean what the client
    /// was shown), else from a fresh look for a client that calls without listing.
    async fn lookup(&self, name: &str) -> Result<Arc<Listed>, Error> {
        if let Some(l) = self.listed_tool(name) {
            return Ok(l);
        }
        if name == BROWSER_TABS && !self.scope.is_everything() {
            return Err(browser_tabs_out_of_scope());
        }
        let view = self.current().await?;
        view.listed
            .into_iter()
            .find(|l| l.name() == name)
            .map(Arc::new)
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::ToolNotFound,
                    format!("no tool `{name}` here; list the tools again (tabs may have changed)"),
                )
            })
    }

    /// `browserctl_call_tool`: a built-in (with `tab`), or a page tool by the name
    /// `browserctl_list_tools` shows (or its page's name and tab), from a fresh look.
    async fn call_by_name(
        &self,
        args: &JsonObject,
        ct: &CancellationToken,
    ) -> Result<CallToolResult, Error> {
        let view = self.current().await?;
        let name = arg_str(args, "name")?;
        let builtin = view.listed.iter().find_map(|l| match l {
            Listed::Builtin(b) if Some(b.view.name.as_str()) == name => Some(b),
            _ => None,
        });
        if let Some(b) = builtin {
            let tab = arg_str(args, "tab")?.map(str::to_owned);
            let arguments = raw_args(&meta::arguments(args)?)?;
            return self.call_builtin(b, arguments, tab, ct).await;
        }
        if name == Some(BROWSER_TABS) && !self.scope.is_everything() {
            return Err(browser_tabs_out_of_scope());
        }
        let (target, args) = meta::resolve_call(view.pages, args)?;
        self.call_exposed(&target, raw_args(&args)?, ct).await
    }

    async fn call_tab_tool(
        &self,
        name: &str,
        args: JsonObject,
        ct: &CancellationToken,
    ) -> Result<CallToolResult, Error> {
        let listed = self.lookup(name).await?;
        self.call_listed(&listed, raw_args(&args)?, ct).await
    }

    async fn list_tools(&self, args: &JsonObject) -> Result<CallToolResult, Error> {
        let view = self.current().await?;
        Ok(CallToolResult::structured(meta::list_tools(
            &view.pages,
            args,
        )?))
    }

    async fn list_tabs(&self) -> Result<CallToolResult, Error> {
        let view = self.current().await?;
        let rows: Vec<Value> = tabs_in_scope(&view.snapshot, &self.scope())
            .into_iter()
            .map(|t| {
                let tools: Vec<&str> = view
                    .pages
                    .iter()
                    .filter(|e| e.target == t.tab_ref)
                    .map(|e| e.view.name.as_str())
                    .collect();
                let mut row = json!({"tab": t.tab_ref, "title": t.title, "url": t.url,
                    "focused": t.focused, "tools": tools});
                if let Some(owner) = &t.owner {
                    row["owner"] = json!(owner);
                }
                if view.current.as_deref() == Some(t.tab_ref.as_str()) {
                    row["current"] = json!(true);
                }
                row
            })
            .collect();
        // Titles and URLs are the pages' words.
        let r = CallToolResult::structured(json!({ "tabs": rows }));
        Ok(super::result::label_page_text(r, "the tabs' titles"))
    }

    async fn select_tab(&self, args: &JsonObject) -> Result<CallToolResult, Error> {
        let want = arg_str(args, "tab")?
            .ok_or_else(|| Error::new(ErrorCode::InvalidArguments, "`tab` is required"))?;
        let snapshot = self.backend.snapshot().await?;
        let tab = one_tab(&snapshot, &self.scope(), want)?;
        self.select(&tab, false);
        let t = snapshot.tabs.iter().find(|t| t.tab_ref == tab);
        Ok(CallToolResult::structured(json!({
            "tab": tab, "title": t.map(|t| &t.title), "url": t.map(|t| &t.url),
        })))
    }

    async fn open_tab(
        &self,
        args: &JsonObject,
        client: Option<Implementation>,
    ) -> Result<CallToolResult, Error> {
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
                group: Some(self.group(client)),
            })
            .await
            .map_err(|e| e.hint(ErrorCode::AmbiguousTarget, "name one as `browser`"))?;
        self.select(&tab.tab_ref, true);
        Ok(CallToolResult::structured(json!({
            "tab": tab.tab_ref, "title": tab.title, "url": tab.url, "focused": tab.focused,
        })))
    }

    async fn close_tab(&self, args: &JsonObject) -> Result<CallToolResult, Error> {
        let want = arg_str(args, "tab")?
            .ok_or_else(|| Error::new(ErrorCode::InvalidArguments, "`tab` is required"))?;
        let snapshot = self.backend.snapshot().await?;
        let tab = one_tab(&snapshot, &self.scope(), want)?;
        let closed = self.backend.close_tab(&tab).await?;
        Ok(CallToolResult::structured(json!({ "closed": closed })))
    }

    /// A session scoped to some tabs, URLs or browsers starts and stops none; one limited to
    /// its own tabs may, and the new browser's first tab is one of them.
    fn may_manage_browsers(&self) -> Result<(), Error> {
        let s = &self.scope;
        if s.tabs.is_empty() && s.urls.is_empty() && s.browsers.is_empty() && s.sessions.is_empty()
        {
            return Ok(());
        }
        Err(Error::new(
            ErrorCode::Unauthorized,
            "this MCP server is scoped to some tabs or browsers; it launches and closes none",
        ))
    }

    async fn launch_browser(&self, args: &JsonObject) -> Result<CallToolResult, Error> {
        self.may_manage_browsers()?;
        let v = self
            .backend
            .launch_browser(meta::launch_request(args)?)
            .await?;
        self.tabs
            .send_modify(|t| t.launched.push(v.browser.clone()));
        if let Some(tab) = &v.tab {
            self.select(tab, true);
        }
        Ok(CallToolResult::structured(json!({
            "browser": v.browser, "tab": v.tab, "kind": v.kind, "headless": v.headless,
            "profile": v.profile,
        })))
    }

    async fn close_browser(&self, args: &JsonObject) -> Result<CallToolResult, Error> {
        self.may_manage_browsers()?;
        let want = arg_str(args, "browser")?
            .ok_or_else(|| Error::new(ErrorCode::InvalidArguments, "`browser` is required"))?;
        if self.scope.own_tabs && !self.tabs.borrow().launched.iter().any(|b| b == want) {
            let why = "an --own-tabs session closes only the browsers it launched";
            return Err(Error::new(ErrorCode::Unauthorized, why));
        }
        let v = self.backend.close_browser(want).await?;
        Ok(CallToolResult::structured(
            json!({ "closed": v.browser, "exit": v.exit }),
        ))
    }

    /// A 2026-07-28 `subscriptions/listen` stream: `list_changed` each time the tools differ
    /// from the last ones announced (those at the start first), until the client cancels.
    async fn listen(&self, ctx: &SubscriptionContext) {
        let Ok(mut changes) = self.backend.changes().await else {
            return ctx.cancelled().await;
        };
        let fingerprint = async || self.current().await.ok().map(|v| fingerprint(&v.tools));
        let mut tabs = self.tabs.subscribe();
        let mut announced = fingerprint().await;
        loop {
            tokio::select! {
                _ = ctx.cancelled() => return,
                signal = changes.recv() => if signal.is_none() { return ctx.cancelled().await },
                _ = tabs.changed() => {}
            }
            let now = fingerprint().await;
            if now.is_some() && now != announced {
                announced = now;
                if ctx.sink().notify_tool_list_changed().await.is_err() {
                    return;
                }
            }
        }
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
            let mut tabs = self.tabs.subscribe();
            loop {
                // Checked once right away too: the list may have changed between the
                // client's listing and this subscription.
                if let Ok(view) = self.current().await {
                    let tools = view.tools;
                    let now = fingerprint(&tools);
                    let notify = {
                        let mut l = lock(&self.listed);
                        let stale = l.fingerprint.is_some_and(|f| f != now) && !l.notified;
                        if stale {
                            l.notified = true;
                        }
                        stale
                    };
                    if notify {
                        if peer.notify_tool_list_changed().await.is_err() {
                            return;
                        }
                        let data = json!({"event": "toolsChanged", "tools": tools.len()});
                        self.log.send(&peer, Level::Info, data).await;
                    }
                }
                tokio::select! {
                    _ = self.stop.cancelled() => return,
                    signal = changes.recv() => if signal.is_none() { break },
                    _ = tabs.changed() => {}
                }
            }
        }
    }
}

impl<B: Backend> rmcp::ServerHandler for McpServer<B> {
    fn get_info(&self) -> ServerConfig {
        info()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if let Some(slot) = context.extensions.get::<ServerSlot<B>>() {
            let _ = slot.0.set(self.inner());
        }
        context.peer.set_peer_info(request.clone());
        let name = groups::group_for(Some(request.client_info.clone())).title;
        let _ = self.inner.agent.set(self.inner.backend.name_agent(&name));
        let answer = self.negotiate_initialize(&request);
        self.inner
            .initialized
            .store(answer.is_ok(), Ordering::Relaxed);
        answer
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&NEWEST))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The whole list in one page: a few hundred tools at most, and a cursor would go
        // stale as tabs come and go.
        match self.inner.list(context.client_info()).await {
            Ok(tools) => Ok(ListToolsResult::with_all_items(tools)
                .with_ttl_ms(LIST_TTL_MS)
                .with_cache_scope(CacheScope::Private)),
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
        let (peer, tool) = (&context.peer, request.name.as_ref());
        inner
            .log
            .send(peer, Level::Debug, json!({"event": "call", "tool": tool}))
            .await;
        let token = context.meta.get_progress_token();
        let what = || match tool {
            // The person, not the page, ends it (issue 60).
            "browser_handoff" => "the person to answer the hand-off (`browser_handoff`)".to_owned(),
            _ => format!("the browser to finish `{tool}`"),
        };
        let roots = if roots::wants_roots(tool, &args, CALL_TOOL) {
            roots::of_client(peer).await
        } else {
            Vec::new()
        };
        let outcome = progress::reporting(
            peer,
            token,
            what,
            roots::with(
                roots,
                elicit::with(peer, async {
                    match tool {
                        LIST_TABS => inner.list_tabs().await,
                        SELECT_TAB => inner.select_tab(&args).await,
                        OPEN_TAB => inner.open_tab(&args, context.client_info()).await,
                        CLOSE_TAB => inner.close_tab(&args).await,
                        LIST_TOOLS => inner.list_tools(&args).await,
                        CALL_TOOL => inner.call_by_name(&args, &context.ct).await,
                        LAUNCH_BROWSER => inner.launch_browser(&args).await,
                        CLOSE_BROWSER => inner.close_browser(&args).await,
                        name => inner.call_tab_tool(name, args, &context.ct).await,
                    }
                }),
            ),
        )
        .await;
        if let Err(e) = &outcome {
            let data =
                json!({"event": "callFailed", "tool": tool, "code": e.code, "message": e.message});
            inner.log.send(peer, Level::Warning, data).await;
        }
        let result = outcome.unwrap_or_else(|e| error_result(&e));
        Ok(result.into())
    }

    #[allow(deprecated)] // logging: a 2025-11-25 feature, see super::log
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.log.set(request.level);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Tool list changes are all this server announces.
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.inner.listen(&context).await;
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if !self.inner.watching.swap(true, Ordering::SeqCst) {
            let watch = self.inner.clone().watch(context.peer.clone());
            self.inner.backend.spawn(watch);
        }
    }
}
