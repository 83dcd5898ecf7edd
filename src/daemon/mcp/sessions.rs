//! The sessions of `/mcp`, bounded: rmcp's in-memory session manager, with each live session
//! counted against `--mcp-max-sessions` and closed once it has been idle (no request in
//! progress, no stream open) for `--mcp-session-idle`.
//!
//! Why our own idle rule and not rmcp's `keep_alive`: rmcp counts only messages, so a client
//! that sits on its open `GET` stream waiting for `list_changed` would be dropped while
//! connected; and a session never asked anything again would live as long as the timer
//! allows. Here a session is idle only when nothing of it is open.
//!
//! A new session's slot is taken before its `initialize` is served (so the cap holds under
//! a flood of them) and adopted once rmcp names the session in its answer.

use super::backend::DaemonBackend;
use crate::daemon::limits::Slot;
use crate::daemon::registry::presence::Hold;
use crate::mcp::server::ServerSlot;
use crate::mcp::shortcut::Shortcut;
use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every live session of `/mcp`, and the count of them (with the `initialize` requests being
/// served) that status shows.
pub struct Sessions {
    inner: LocalSessionManager,
    live: Mutex<HashMap<SessionId, Entry>>,
    /// Shortcuts of sessions whose `initialize` was answered and that are not adopted yet.
    fresh: Mutex<HashMap<SessionId, Shortcut<DaemonBackend>>>,
    count: Arc<AtomicU64>,
}

struct Entry {
    _slot: Slot,
    /// The browsers watch their pages while an agent's session lives (issue 30).
    _present: Hold,
    shortcut: Option<Shortcut<DaemonBackend>>,
    /// Requests and streams of this session open now.
    open: usize,
    /// When the last of them ended (or the session began).
    since: Instant,
}

/// A request or stream of a session in progress; the session is not idle while it lives.
pub struct Activity {
    sessions: Arc<Sessions>,
    id: SessionId,
    /// The short way to the session's listed tab tools.
    pub shortcut: Option<Shortcut<DaemonBackend>>,
}

impl Drop for Activity {
    fn drop(&mut self) {
        if let Some(e) = self.sessions.lock().get_mut(&self.id) {
            e.open = e.open.saturating_sub(1);
            e.since = Instant::now();
        }
    }
}

impl Sessions {
    /// `count` is the daemon's counter of live sessions (shown in status).
    pub fn new(count: Arc<AtomicU64>) -> Sessions {
        let mut inner = LocalSessionManager::default();
        // Our idle rule replaces rmcp's (see the module's comment).
        inner.session_config.keep_alive = None;
        Sessions {
            inner,
            live: Mutex::default(),
            fresh: Mutex::default(),
            count,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Entry>> {
        lock(&self.live)
    }

    /// A slot for a session about to begin, unless `max` are live; `Err` holds how many are.
    pub fn reserve(&self, max: usize) -> Result<Slot, u64> {
        Slot::take(&self.count, max)
    }

    /// The session rmcp just created holds `slot` from now on, until it ends.
    pub async fn adopt(&self, id: SessionId, slot: Slot, present: Hold) {
        let shortcut = lock(&self.fresh).remove(&id);
        let entry = Entry {
            _slot: slot,
            _present: present,
            shortcut,
            open: 0,
            since: Instant::now(),
        };
        self.lock().insert(id.clone(), entry);
        // It may have ended already (before it was ours to count), and then nobody else
        // would remove it.
        if !self.inner.sessions.read().await.contains_key(&id) {
            self.lock().remove(&id);
        }
    }

    /// Marks a request to the session `id` in progress, if the session is live.
    pub fn activity(self: &Arc<Self>, id: &str) -> Option<Activity> {
        let id: SessionId = id.into();
        let mut live = self.lock();
        let e = live.get_mut(&id)?;
        e.open += 1;
        let shortcut = e.shortcut.clone();
        Some(Activity {
            sessions: self.clone(),
            id,
            shortcut,
        })
    }

    /// Live sessions.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Closes every session idle for `idle` or longer; returns how many.
    pub async fn close_idle(&self, idle: Duration) -> usize {
        let stale: Vec<SessionId> = self
            .lock()
            .iter()
            .filter(|(_, e)| e.open == 0 && e.since.elapsed() >= idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &stale {
            if let Err(e) = self.close_session(id).await {
                tracing::debug!(session = %id, error = %e, "could not close an idle MCP session");
            }
        }
        stale.len()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Gives the pages that closed sessions freed back to the system. glibc's malloc keeps freed
/// memory in its heaps for reuse; after a flood of sessions that would leave the daemon
/// holding the flood's peak for good. Other allocators return memory on their own.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks and trims the allocator's own free lists.
    unsafe {
        nix::libc::malloc_trim(0);
    }
}

/// rmcp's manager, with the count kept: a session leaves the count when rmcp closes it
/// (client's DELETE, its service ended) or we do (idle).
impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    /// Also keeps the session's shortcut, which its server leaves in the request.
    async fn initialize_session(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let slot = ServerSlot::<DaemonBackend>::default();
        if let ClientJsonRpcMessage::Request(r) = &mut message {
            r.request.extensions_mut().insert(slot.clone());
        }
        let answer = self.inner.initialize_session(id, message).await;
        if let (Ok(_), Some(shortcut)) = (&answer, Shortcut::of_slot(&slot)) {
            lock(&self.fresh).insert(id.clone(), shortcut);
        }
        answer
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closed = self.inner.close_session(id).await;
        self.lock().remove(id);
        lock(&self.fresh).remove(id);
        closed
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }
}
