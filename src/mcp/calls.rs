//! A `tools/call`'s way to a tab: a page tool to the tab it was listed for (while that tab is
//! still in scope), a built-in to its `tab` argument, else the session's current tab, else
//! where the daemon's rule for `browserctl call` puts it; and a call the client gives up on,
//! cancelled in the daemon.

use super::backend::Backend;
use super::expose::Exposed;
use super::meta::{raw_args, SELECT_TAB};
use super::result::{
    answered_by, carries_page_text, error_result, label_page_text, label_untrusted, tool_result,
    untrusted,
};
use super::server::Inner;
use super::view::{
    candidates_of, current_tab, one_tab, tabs_in_scope, Builtin, Listed, BROWSER_TABS, TAB_ARG,
};
use crate::error::{Error, ErrorCode};
use crate::protocol::control::{CallRequest, CallResponse, TabView};
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::value::RawValue;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long a cancelled call may take to confirm before we answer anyway.
const CANCEL_CONFIRM: Duration = Duration::from_secs(5);

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

impl<B: Backend> Inner<B> {
    /// A listed tool's call, wherever it goes.
    pub(super) async fn call_listed(
        &self,
        listed: &Listed,
        args: Box<RawValue>,
        ct: &CancellationToken,
    ) -> Result<CallToolResult, Error> {
        match listed {
            Listed::Page(e) => self.call_exposed(e, args, ct).await,
            Listed::Builtin(b) => self.call_builtin(b, args, None, ct).await,
        }
    }

    /// A page tool's call, on the tab it was listed for while that tab is still in scope
    /// (it may have moved to another site since), with a failure the page worded labelled
    /// like its results when the page marks them untrusted.
    pub(super) async fn call_exposed(
        &self,
        target: &Exposed,
        args: Box<RawValue>,
        ct: &CancellationToken,
    ) -> Result<CallToolResult, Error> {
        // Tab refs, browsers and the tabs a session opened stay what they were; a URL
        // does not.
        if !self.scope.urls.is_empty() && target.tab_url.is_some() {
            self.tab_in_scope(&target.target).await?;
        }
        let call = self.send(&target.view.name, Some(target.target.clone()), args, ct);
        match call.await {
            Ok(resp) => Ok(Self::page_result(target, resp)),
            Err(e) if e.code == ErrorCode::ToolError && untrusted(&target.view) => Ok(
                label_untrusted(error_result(&e), &target.view, target.tab_url.as_deref()),
            ),
            Err(e) => Err(e),
        }
    }

    /// A page's answer as the client gets it: see super::result.
    fn page_result(target: &Exposed, resp: CallResponse) -> CallToolResult {
        let r = tool_result(&resp.result, target.view.output_schema.is_some());
        let r = if untrusted(&target.view) {
            label_untrusted(r, &target.view, target.tab_url.as_deref())
        } else {
            r
        };
        answered_by(r, &resp.tab)
    }

    /// A built-in's call: on the tab its `tab` argument (or `tab`) names, else on the
    /// session's current tab, else where the daemon's rule for `browserctl call` puts it.
    pub(super) async fn call_builtin(
        &self,
        b: &Builtin,
        args: Box<RawValue>,
        mut tab: Option<String>,
        ct: &CancellationToken,
    ) -> Result<CallToolResult, Error> {
        let mut args: JsonObject = serde_json::from_str(args.get())
            .map_err(|e| Error::new(ErrorCode::InvalidArguments, e.to_string()))?;
        if b.takes_tab {
            match args.remove(TAB_ARG) {
                None | Some(Value::Null) => {}
                Some(Value::String(t)) => tab = Some(t),
                Some(Value::Number(n)) => tab = Some(n.to_string()),
                Some(_) => {
                    return Err(Error::new(
                        ErrorCode::InvalidArguments,
                        "`tab` must be a tab ref such as b1:7",
                    ))
                }
            }
        }
        let name = b.view.name.as_str();
        let args = raw_args(&args)?;
        // Sent once, to one tab: a call that failed on its tab (which may have closed while it
        // ran) is never sent again elsewhere.
        let target = self.builtin_target(name, tab).await?;
        let resp = self.send(name, target, args, ct).await?;
        self.follow_selection(name, &resp);
        let r = tool_result(&resp.result, b.view.output_schema.is_some());
        let r = if carries_page_text(name) && r.is_error != Some(true) {
            label_page_text(r, &resp.tab)
        } else {
            r
        };
        Ok(answered_by(r, &resp.tab))
    }

    /// Where a built-in's call goes (`None`: the daemon's rule).
    async fn builtin_target(
        &self,
        tool: &str,
        tab: Option<String>,
    ) -> Result<Option<String>, Error> {
        if self.scope.is_everything() {
            if tab.is_some() {
                return Ok(tab);
            }
            let Some(selected) = self.selected() else {
                return Ok(None);
            };
            // The selected tab may have closed since: then the current tab is the focused one.
            let snapshot = self.backend.snapshot().await?;
            if snapshot.tabs.iter().any(|t| t.tab_ref == selected) {
                return Ok(Some(selected));
            }
            self.unselect();
            return Ok(None);
        }
        // Scoped: chosen among the tabs in scope now, never outside them.
        let snapshot = self.backend.snapshot().await?;
        let scope = self.scope();
        if let Some(want) = tab {
            return Ok(Some(one_tab(&snapshot, &scope, &want)?));
        }
        let offers = |r: &str| snapshot.tools.iter().any(|v| v.tab == r && v.name == tool);
        if let Some(current) = current_tab(&snapshot, &scope, self.selected().as_deref()) {
            if offers(&current) {
                return Ok(Some(current));
            }
        }
        let candidates: Vec<&TabView> = tabs_in_scope(&snapshot, &scope)
            .into_iter()
            .filter(|t| offers(&t.tab_ref))
            .collect();
        match candidates.as_slice() {
            [one] => Ok(Some(one.tab_ref.clone())),
            [] => Err(Error::new(
                ErrorCode::ToolNotFound,
                format!("no tab this server exposes offers `{tool}`"),
            )),
            many => Err(Error::new(
                ErrorCode::AmbiguousTarget,
                format!(
                    "{} tabs offer `{tool}` and none is current; pass `tab`, or select one with {SELECT_TAB}",
                    many.len()
                ),
            )
            .with_details(candidates_of(many))),
        }
    }

    /// `browser_tabs` that selected or opened a tab makes it the current tab, as
    /// `browserctl_select_tab` and `browserctl_open_tab` do.
    fn follow_selection(&self, tool: &str, resp: &CallResponse) {
        if tool != BROWSER_TABS {
            return;
        }
        let Ok(v) = serde_json::from_str::<Value>(resp.result.get()) else {
            return;
        };
        let id = v
            .pointer("/structuredContent/tab/id")
            .and_then(Value::as_i64);
        let browser = resp.tab.split(':').next();
        if let (Some(id), Some(browser)) = (id, browser) {
            self.select(&format!("{browser}:{id}"), false);
        }
    }

    /// Whether a tab is in this server's scope now; a call to a tab that left it is refused.
    async fn tab_in_scope(&self, tab: &str) -> Result<(), Error> {
        let snapshot = self.backend.snapshot().await?;
        one_tab(&snapshot, &self.scope(), tab).map(drop)
    }

    /// One call through the daemon, cancelled there when the client gives up.
    async fn send(
        &self,
        tool: &str,
        tab: Option<String>,
        args: Box<RawValue>,
        ct: &CancellationToken,
    ) -> Result<CallResponse, Error> {
        let call_id = next_call_id();
        // Only a hand-off may be asked in the client too: read its arguments (the reason)
        // before they go, and nothing for any other call.
        let asks_client = (tool == super::elicit::HANDOFF)
            .then(super::elicit::client)
            .flatten()
            .map(|peer| {
                let args = serde_json::from_str::<Value>(args.get()).unwrap_or_default();
                (peer, args)
            });
        let req = CallRequest {
            tool: tool.to_owned(),
            tab,
            args: Some(args),
            call_id: Some(call_id.clone()),
            upload_roots: super::roots::current(),
            agent: self.agent.get().cloned(),
            ..CallRequest::default()
        };
        let call = self.backend.call(req);
        tokio::pin!(call);
        // A hand-off is asked in the client too where it can answer; its answer ends the
        // hand-off in the browser, and the call returns what the browser then says.
        let door = async {
            match asks_client {
                Some((peer, args)) => {
                    super::elicit::ask(peer, &args, self.agent.get().map(String::as_str)).await
                }
                None => std::future::pending().await,
            }
        };
        tokio::pin!(door);
        let mut asked = false;
        loop {
            tokio::select! {
                biased;
                r = &mut call => return r,
                _ = ct.cancelled() => break,
                answer = &mut door, if !asked => {
                    asked = true;
                    self.backend.answer_handoff(&call_id, answer);
                }
            }
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
                r = &mut call => return r,
                _ = &mut cancel, if !cancel_sent => cancel_sent = true,
                _ = &mut deadline => return Err(Error::new(
                    ErrorCode::Cancelled,
                    format!("call `{call_id}` was cancelled; the daemon did not confirm in time"),
                )),
            }
        }
    }
}
