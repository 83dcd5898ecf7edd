//! Whether an agent is at work (issue 30).
//!
//! Our extension keeps its isolated world out of the person's pages until a daemon says an
//! agent is watching (`watch`, an additive message of the bridge protocol): then it puts its
//! bridge into the tabs already open, whose page tools reach the registry before it answers,
//! and into every page that loads after. Until then a page pays for the page-world scripts
//! alone, and its WebMCP tools wait in its own world.
//!
//! An agent is at work while a client asks for something of the browsers (tabs, tools, a
//! call, events, an MCP session: [`Presence::attend`]), while a long-lived session of one is
//! open (an event stream, an MCP session: a [`Hold`] it keeps), and for `--agent-idle` after
//! the last of them. The first request after a quiet spell waits until the browsers have
//! reported their pages' tools, at most [`ARM_WAIT`]: a listing right after it must see them.

use super::Registry;
use crate::daemon::conn::{next_id, Command, Request};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The longest the first request of an agent waits for the browsers to report their pages.
/// A browser that has not answered by then reports them as `toolsChanged` when it can.
pub const ARM_WAIT: Duration = Duration::from_millis(2500);

#[derive(Debug)]
pub struct Presence {
    /// The browsers have been told an agent is at work (a browser that joins is told too).
    watching: AtomicBool,
    /// ... and have answered, or the wait for them is over: an agent's request may go on.
    armed: AtomicBool,
    /// Requests and sessions of agents open now.
    holds: AtomicUsize,
    /// When the last of them ended (or began), in ms since `epoch`.
    last_ms: AtomicU64,
    epoch: Instant,
    /// One change at a time. Held across the wait for the browsers' answers on purpose: the
    /// other first requests of an agent wait for that same arming, not for one of their own.
    changing: tokio::sync::Mutex<()>,
}

/// An agent's request or session in progress; the daemon watches while one lives.
#[derive(Debug)]
pub struct Hold(Arc<Presence>);

impl Drop for Hold {
    fn drop(&mut self) {
        self.0.stamp();
        self.0.holds.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Default for Presence {
    fn default() -> Presence {
        Presence {
            watching: AtomicBool::new(false),
            armed: AtomicBool::new(false),
            holds: AtomicUsize::new(0),
            last_ms: AtomicU64::new(0),
            epoch: Instant::now(),
            changing: tokio::sync::Mutex::new(()),
        }
    }
}

impl Presence {
    /// Whether the browsers have been told that an agent is at work.
    pub fn watching(&self) -> bool {
        self.watching.load(Ordering::SeqCst)
    }

    fn stamp(&self) {
        let now = self.epoch.elapsed().as_millis() as u64;
        self.last_ms.fetch_max(now, Ordering::Relaxed);
    }

    /// Keeps the daemon watching while the hold lives, without telling anyone: for a session
    /// whose first request attended already.
    pub fn hold(self: &Arc<Self>) -> Hold {
        self.holds.fetch_add(1, Ordering::SeqCst);
        self.stamp();
        Hold(self.clone())
    }

    /// An agent's request: watching from now on, for as long as the hold lives and
    /// `--agent-idle` after. The first one after a quiet spell tells the browsers and waits
    /// for their pages' tools.
    pub async fn attend(self: &Arc<Self>, registry: &Registry) -> Hold {
        let hold = self.hold();
        // SeqCst, against `stand_down`: either it sees our hold, or we see it stood down.
        if !self.armed.load(Ordering::SeqCst) {
            self.arm(registry).await;
        }
        hold
    }

    async fn arm(&self, registry: &Registry) {
        let _one = self.changing.lock().await;
        if self.armed.load(Ordering::SeqCst) {
            return; // another request armed while we waited for it
        }
        // Before the connections are listed: one that joins meanwhile is told as it joins
        // (dialect/bridge.rs).
        self.watching.store(true, Ordering::SeqCst);
        let started = Instant::now();
        let answers: Vec<_> = registry
            .connections()
            .into_iter()
            .filter_map(|conn| tell(&conn.tx, true))
            .collect();
        let told = answers.len();
        let deadline = tokio::time::sleep(ARM_WAIT);
        tokio::pin!(deadline);
        let mut late = 0;
        for rx in answers {
            tokio::select! {
                _ = rx => {}
                _ = &mut deadline => late += 1,
            }
        }
        self.armed.store(true, Ordering::SeqCst);
        tracing::info!(
            browsers = told,
            late,
            ms = started.elapsed().as_millis() as u64,
            "an agent is at work: the browsers watch their pages"
        );
    }

    /// Tells the browsers that no agent is at work any more, if none has been for `idle`.
    pub async fn stand_down(&self, registry: &Registry, idle: Duration) {
        let _one = self.changing.lock().await;
        let now = self.epoch.elapsed().as_millis() as u64;
        let quiet = now.saturating_sub(self.last_ms.load(Ordering::Relaxed));
        if !self.watching()
            || self.holds.load(Ordering::SeqCst) > 0
            || quiet < idle.as_millis() as u64
        {
            return;
        }
        self.armed.store(false, Ordering::SeqCst);
        if self.holds.load(Ordering::SeqCst) > 0 {
            // A request came in between, and saw us armed: it stays so.
            self.armed.store(true, Ordering::SeqCst);
            return;
        }
        self.watching.store(false, Ordering::SeqCst);
        for conn in registry.connections() {
            drop(tell(&conn.tx, false));
        }
        tracing::info!(
            idle_s = idle.as_secs(),
            "no agent at work: the browsers stop watching their pages"
        );
    }
}

/// One `watch` to one browser connection; its answer, unless the connection's queue is full
/// (a browser that does not read is not waited for).
fn tell(
    tx: &tokio::sync::mpsc::Sender<Command>,
    on: bool,
) -> Option<oneshot::Receiver<Result<(), crate::error::Error>>> {
    let (reply, rx) = oneshot::channel();
    let id = next_id("watch");
    tx.try_send(Command::Request(Request::Watch { id, on, reply }))
        .ok()
        .map(|()| rx)
}
