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
    pub token: TokenCell,
    /// The token the discovery file carries, as its writer last wrote it (service/discovery.rs).
    pub token_on_disk: TokenCell,
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
        let token: Arc<str> = token.into();
        Daemon {
            config: RwLock::new(Arc::new(config)),
            runtime,
            token: TokenCell::new(token.clone()),
            token_on_disk: TokenCell::new(token),
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

    /// Puts `token` in force, and returns once the discovery file carries it too (or after
    /// `wait`: a file that cannot be written must not hold the answer): a script that rotates the
    /// token and then reads the file finds the new one.
    pub async fn put_token_in_force(&self, token: Arc<str>, wait: std::time::Duration) {
        replace_and_wait(&self.token, &self.token_on_disk, token, wait).await
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

type TokenCell = tokio::sync::watch::Sender<Arc<str>>;

/// Puts `token` in `in_force`, then waits up to `wait` for `on_disk` to say it too.
async fn replace_and_wait(
    in_force: &TokenCell,
    on_disk: &TokenCell,
    token: Arc<str>,
    wait: std::time::Duration,
) {
    let mut written = on_disk.subscribe();
    in_force.send_replace(token.clone());
    let _ = tokio::time::timeout(wait, written.wait_for(|t| *t == token)).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_new_token_is_answered_once_the_discovery_file_carries_it() {
        let in_force = TokenCell::new("old".into());
        let on_disk = TokenCell::new("old".into());
        // The discovery file's writer, slow on purpose.
        let writer = {
            let (mut seen, on_disk) = (in_force.subscribe(), on_disk.clone());
            tokio::spawn(async move {
                seen.changed().await.unwrap();
                let t = seen.borrow_and_update().clone();
                tokio::time::sleep(Duration::from_millis(100)).await;
                on_disk.send_replace(t);
            })
        };
        let started = std::time::Instant::now();
        replace_and_wait(&in_force, &on_disk, "new".into(), Duration::from_secs(10)).await;
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert_eq!(&**on_disk.borrow(), "new");
        writer.await.unwrap();
    }

    #[tokio::test]
    async fn a_file_that_is_never_written_does_not_hold_the_answer() {
        let in_force = TokenCell::new("old".into());
        let on_disk = TokenCell::new("old".into());
        let started = std::time::Instant::now();
        replace_and_wait(&in_force, &on_disk, "new".into(), Duration::from_millis(50)).await;
        assert!(started.elapsed() >= Duration::from_millis(50));
        assert_eq!(&**in_force.borrow(), "new");
    }
}
