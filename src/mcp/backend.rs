//! What the MCP server drives: the daemon's registry and call path.

use super::expose::Snapshot;
use crate::error::Error;
use crate::protocol::control::{CallRequest, CallResponse, OpenTabRequest, TabGroup, TabView};
use crate::protocol::managed::{LaunchRequest, ManagedView};
use std::future::Future;
use tokio::sync::mpsc;

/// What the MCP server needs from the daemon: the control API for `browserctl mcp`, the
/// registry itself inside the daemon.
pub trait Backend: Send + Sync + 'static {
    /// The session's agent said its name (`initialize`): the label its tabs' group and its
    /// calls carry, which the daemon makes unique among the sessions live (issue 60).
    fn name_agent(&self, name: &str) -> String {
        name.to_owned()
    }
    /// Browsers, tabs and tools, as one consistent-enough picture; the focused tab is the one
    /// the person focused (an agent's action does not move it).
    fn snapshot(&self) -> impl Future<Output = Result<Snapshot, Error>> + Send;
    /// A tool call through the daemon's call path (validation, timeouts, retries).
    fn call(&self, req: CallRequest) -> impl Future<Output = Result<CallResponse, Error>> + Send;
    /// Cancels the call with this `callId`; false when the daemon has no such call (yet).
    fn cancel(&self, call_id: &str) -> impl Future<Output = Result<bool, Error>> + Send;
    /// The person's answer (`done`, `cant`) to the hand-off of call `call_id`, given in the
    /// agent's client; false when it no longer waits (answered in the browser first).
    fn answer_handoff(&self, call_id: &str, answer: &'static str) -> bool;
    fn open_tab(&self, req: OpenTabRequest) -> impl Future<Output = Result<TabView, Error>> + Send;
    /// Puts existing tabs (refs) in a tab group, as far as their browsers can: best effort.
    fn group_tabs(&self, tabs: &[String], group: &TabGroup) -> impl Future<Output = ()> + Send;
    fn close_tab(&self, tab: &str) -> impl Future<Output = Result<String, Error>> + Send;
    /// Launches a browser of the agent's own (issue 32); answers once its first tab is up.
    fn launch_browser(
        &self,
        req: LaunchRequest,
    ) -> impl Future<Output = Result<ManagedView, Error>> + Send;
    /// Closes a browser the daemon launched.
    fn close_browser(
        &self,
        browser: &str,
    ) -> impl Future<Output = Result<ManagedView, Error>> + Send;
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
