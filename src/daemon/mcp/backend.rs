//! The daemon as an MCP [`Backend`]: the registry and the call path of this process, for the
//! MCP sessions of `/mcp` ([`super::http`]) and of the control socket
//! ([`super::stream`]). Each session is an agent's lane (issue 60): the tabs it opens are its
//! own, and its calls act only in those and in nobody's.

use crate::daemon::context::Daemon;
use crate::daemon::limits::{self, Slot};
use crate::daemon::registry::{Focus, LaneId, Target};
use crate::daemon::trust::via::Via;
use crate::daemon::{calls, managed};
use crate::error::{Error, ErrorCode};
use crate::mcp::{Backend, Snapshot};
use crate::protocol::control::{
    event_kind, CallRequest, CallResponse, OpenTabRequest, TabGroup, TabView,
};
use crate::protocol::managed::{LaunchRequest, ManagedView};
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use tokio::sync::{broadcast, mpsc};

/// The registry and call path of this daemon, as an MCP backend: one per MCP session.
pub struct DaemonBackend {
    d: Arc<Daemon>,
    /// Calls in flight, counted against `--agent-max-in-flight` for sessions on the loopback
    /// port (`/mcp`); `None` on the control socket, whose clients (`browserctl mcp`) are
    /// limited like any other control client (`--max-calls-in-flight`).
    in_flight: Option<Arc<AtomicU64>>,
    /// The session's lane, ended (its tabs nobody's) when the session's server is dropped.
    lane: LaneId,
    /// Whose machine its paths and roots name: a session through a relay names another's.
    via: Via,
}

impl DaemonBackend {
    /// For an MCP session of an agent on the loopback port (this machine's).
    pub fn agent(d: Arc<Daemon>) -> DaemonBackend {
        DaemonBackend::new(d, Some(Arc::default()), Via::Local)
    }

    /// For an MCP session on the control socket, or on the relay socket (`Via::Relay`).
    pub fn local(d: Arc<Daemon>, via: Via) -> DaemonBackend {
        DaemonBackend::new(d, None, via)
    }

    fn new(d: Arc<Daemon>, in_flight: Option<Arc<AtomicU64>>, via: Via) -> DaemonBackend {
        let lane = d.registry.begin_lane();
        DaemonBackend {
            d,
            in_flight,
            lane,
            via,
        }
    }
}

impl Drop for DaemonBackend {
    fn drop(&mut self) {
        self.d.registry.end_lane(self.lane);
    }
}

impl Backend for DaemonBackend {
    fn name_agent(&self, name: &str) -> String {
        (self.d.registry.name_lane(self.lane, name)).unwrap_or_else(|| name.to_owned())
    }

    async fn snapshot(&self) -> Result<Snapshot, Error> {
        let reg = &self.d.registry;
        Ok(Snapshot {
            browsers: reg.browser_views(),
            tabs: reg.tab_views_by(None, Focus::Person),
            tools: reg.tool_views(None, None, None),
        })
    }

    async fn call(&self, req: CallRequest) -> Result<CallResponse, Error> {
        let _slot = match &self.in_flight {
            None => None,
            Some(count) => {
                let max = self.d.config().agent_max_in_flight;
                let Ok(slot) = Slot::take(count, max) else {
                    let e = limits::exceeded(
                        "agent-max-in-flight",
                        max,
                        format!("this MCP session already has {max} calls in flight (--agent-max-in-flight); wait for one to finish"),
                    );
                    limits::refused(&self.d.stats, 0, &e);
                    return Err(e);
                };
                Some(slot)
            }
        };
        calls::call_as(&self.d, req, Some(self.lane), self.via).await
    }

    async fn cancel(&self, call_id: &str) -> Result<bool, Error> {
        Ok(self.d.cancels.cancel(call_id))
    }

    fn answer_handoff(&self, call_id: &str, answer: &'static str) -> bool {
        self.d.handoffs.answer(call_id, answer)
    }

    async fn open_tab(&self, req: OpenTabRequest) -> Result<TabView, Error> {
        calls::open_tab_as(&self.d, req, Some(self.lane)).await
    }

    async fn group_tabs(&self, tabs: &[String], group: &TabGroup) {
        calls::group_tabs(&self.d, tabs, group).await
    }

    async fn close_tab(&self, tab: &str) -> Result<String, Error> {
        calls::close_tab_as(&self.d, tab, None, Some(self.lane)).await
    }

    async fn launch_browser(&self, req: LaunchRequest) -> Result<ManagedView, Error> {
        // A persistent profile holds the person's logins, and a launched browser asks no
        // consent: an agent's only when the person's config names it for agents (issue 58).
        if let Some(p) = &req.profile {
            if !self.d.config().agent_profiles.contains(p) {
                return Err(Error::new(
                    ErrorCode::Unauthorized,
                    format!(
                        "the persistent profile `{p}` is not named for agents: an agent launches \
                         a profile only if the daemon's config names it (agent-profile = \
                         [\"{p}\"], or --agent-profile {p}); launch without `profile` for a \
                         fresh one"
                    ),
                ));
            }
        }
        let v = managed::launch(&self.d, req).await?;
        // The agent opened the new browser's first tab.
        let first = v.tab.as_deref().map(|t| self.d.registry.parse_tab(t));
        if let Some(Ok(tab @ Target { tab: Some(_), .. })) = first {
            self.d.registry.claim_tab(tab, self.lane);
        }
        Ok(v)
    }

    async fn close_browser(&self, browser: &str) -> Result<ManagedView, Error> {
        managed::close(&self.d, browser).await
    }

    async fn changes(&self) -> Result<mpsc::Receiver<()>, Error> {
        let mut events = self.d.registry.subscribe(None).live;
        let (tx, rx) = mpsc::channel(1);
        let shutdown = self.d.shutdown.clone();
        self.d.tasks.spawn(async move {
            loop {
                let relevant = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tx.closed() => return,
                    e = events.recv() => match e {
                        Ok(e) => event_kind::changes_tools(e.kind),
                        Err(broadcast::error::RecvError::Lagged(_)) => true,
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                };
                // A full channel already holds a signal that covers this event.
                if relevant && matches!(tx.try_send(()), Err(mpsc::error::TrySendError::Closed(_)))
                {
                    return;
                }
            }
        });
        Ok(rx)
    }

    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        self.d.tasks.spawn(task);
    }
}
