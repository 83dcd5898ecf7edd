//! [`Daemon`]: what every task of the daemon shares — settings, the registry, counters, the
//! calls that can be cancelled, each tab's queue of calls and hand-off, and the two-stage shutdown.

use super::calls::args::ValidatorCache;
use super::calls::cancels::Cancels;
use super::calls::handoffs::Handoffs;
use super::calls::prompts::Prompts;
use super::calls::queues::TabQueues;
use super::managed::table::Managed;
use super::registry::presence::Presence;
use super::registry::{Limits, Registry};
use super::settings::config::Config;
use super::stats::Stats;
use super::trust::pairing::Pairings;
use std::path::PathBuf;
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Facts fixed at start.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub port: u16,
    pub socket: PathBuf,
    pub discovery_file: PathBuf,
    pub started_at: String,
    pub started: Instant,
}

pub struct Daemon {
    // Swapped whole by a SIGHUP reload. Read it with `config()`, which clones the Arc under
    // the lock, so no reader ever holds the lock across an `.await`.
    config: RwLock<Arc<Config>>,
    pub runtime: Runtime,
    /// The token of the loopback port (the user's, kept in a file; `browserctl token rotate`
    /// changes it while the daemon runs, and the discovery file follows).
    pub token: tokio::sync::watch::Sender<Arc<str>>,
    pub registry: Registry,
    pub stats: Stats,
    pub validators: ValidatorCache,
    /// Calls in flight that a caller may cancel by their `callId`.
    pub cancels: Cancels,
    /// Each tab's calls, in turn (issue 60).
    pub queues: TabQueues,
    /// The tabs handed to the person (`browser_handoff`, issue 60).
    pub handoffs: Handoffs,
    /// The consent prompts that wait for the person (issue 60).
    pub prompts: Prompts,
    /// The user's pairings with browser profiles, and this daemon's pairing codes.
    pub pairings: Pairings,
    /// The browsers this daemon launched (issue 32).
    pub managed: Managed,
    /// Whether an agent is at work, which the browsers are told (issue 30).
    pub presence: Arc<Presence>,
    /// First stage of shutdown: stop accepting connections and new calls; calls in flight go on.
    pub draining: CancellationToken,
    /// Last stage: close every connection (WebSockets with 1001), fail what is left. Cancelling
    /// it also cancels `draining`.
    pub shutdown: CancellationToken,
    /// Every task the daemon starts; shutdown waits for them.
    pub tasks: TaskTracker,
}

impl Daemon {
    pub fn new(config: Config, runtime: Runtime, token: String) -> Daemon {
        let pairing_file = config.pairing_path();
        let registry = Registry::new(config.event_buffer, config.event_stream_buffer);
        registry.set_limits(registry_limits(&config));
        let shutdown = CancellationToken::new();
        Daemon {
            config: RwLock::new(Arc::new(config)),
            runtime,
            token: tokio::sync::watch::Sender::new(token.into()),
            registry,
            stats: Stats::default(),
            validators: ValidatorCache::default(),
            cancels: Cancels::default(),
            queues: TabQueues::default(),
            handoffs: Handoffs::default(),
            prompts: Prompts::default(),
            pairings: Pairings::new(pairing_file),
            managed: Managed::default(),
            presence: Arc::default(),
            draining: shutdown.child_token(),
            shutdown,
            tasks: TaskTracker::new(),
        }
    }

    /// The token in force now.
    pub fn token(&self) -> Arc<str> {
        self.token.borrow().clone()
    }

    /// The settings in force now (they change on SIGHUP).
    pub fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn set_config(&self, config: Arc<Config>) {
        self.registry.set_limits(registry_limits(&config));
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = config;
    }
}

fn registry_limits(c: &Config) -> Limits {
    Limits {
        tabs_per_browser: c.max_tabs_per_browser,
        tools_per_tab: c.max_tools_per_tab,
    }
}

/// For the tasks that look for what has been idle too long: waits a quarter of the period
/// `of` names in the settings (read afresh each time: SIGHUP may change it), between 100 ms and
/// 30 s. Then the daemon and that period, or `None` once the daemon shuts down or is gone.
pub async fn quarter_of(
    d: &Weak<Daemon>,
    of: fn(&Config) -> Duration,
) -> Option<(Arc<Daemon>, Duration)> {
    let (period, shutdown) = {
        let d = d.upgrade()?;
        (of(&d.config()), d.shutdown.clone())
    };
    let tick = (period / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
    tokio::select! {
        _ = shutdown.cancelled() => return None,
        _ = tokio::time::sleep(tick) => {}
    }
    Some((d.upgrade()?, period))
}
