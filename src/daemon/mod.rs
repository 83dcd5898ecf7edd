//! browser-mcpd: the long-running per-user daemon.
//!
//! - [`registry`]: browsers → tabs → tools, and the event log (synchronous, behind a Mutex).
//! - [`conn`]: the handle to a browser connection and its table of pending calls.
//! - [`calls`]: the call path (target choice, validation, timeout, retry, backoff).
//! - [`extension`]: the loopback listener and [`bridge`], the seed-001 dialect adapter.
//! - [`register`] (seed 002, register/hello) and [`jsonrpc`] (seed 003, JSON-RPC browsers
//!   and agents): the other dialect adapters on the same port; [`keepalive`]: their pings.
//! - [`control`]: the Unix-socket HTTP/JSON API.
//! - [`mcp_http`]: MCP over Streamable HTTP at `/mcp` on the loopback port.
//! - [`pairing`]: the user's pairings with browser profiles and the codes that make them;
//!   [`auth`]: the daemon's side of the trust handshake; [`peer`]: the uid at the other end of a loopback TCP connection (issue 21).
//! - [`discovery`]: `/tmp/browser-mcp/server-<pid>.json` and its watcher.
//! - [`service`]: start-up, signals, reload and shutdown; [`settings`] (flags, environment,
//!   config file), [`logging`] (journal or stderr), [`sd`] (sd_notify, watchdog, socket
//!   activation).

pub mod args;
pub mod auth;
pub mod bridge;
pub mod calls;
pub mod classify;
pub mod config;
pub mod conn;
pub mod control;
pub mod discovery;
pub mod extension;
pub mod jsonrpc;
pub mod keepalive;
pub mod limits;
pub mod logging;
pub mod mcp_http;
pub mod pairing;
pub mod peer;
pub mod register;
pub mod registry;
pub mod sd;
pub mod service;
pub mod settings;
pub mod upload;

pub use config::Config;

use registry::Registry;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Counters shown by `/v1/status`.
#[derive(Debug, Default)]
pub struct Stats {
    pub calls_in_flight: AtomicU64,
    /// Calls waiting for a browser's answer, summed over every connection's pending table.
    pub pending: Arc<AtomicU64>,
    pub calls_total: AtomicU64,
    pub calls_failed: AtomicU64,
    pub calls_cancelled: AtomicU64,
    pub late_responses: AtomicU64,
    pub unknown_responses: AtomicU64,
    pub bad_messages: AtomicU64,
    /// Connections, messages and requests refused because a configured limit was reached.
    pub limits_exceeded: AtomicU64,
    /// Connections open now on the extension port and on the control socket.
    pub extension_connections: Arc<AtomicU64>,
    pub control_connections: Arc<AtomicU64>,
    /// Woken when the last call in flight ends (shutdown waits on it).
    pub idle: tokio::sync::Notify,
}

impl Stats {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Facts fixed at start.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub port: u16,
    pub socket: PathBuf,
    pub discovery_file: PathBuf,
    pub started_at: String,
    pub started: Instant,
    pub token: String,
}

/// Everything the tasks of the daemon share.
pub struct Daemon {
    // Swapped whole by a SIGHUP reload. Read it with `config()`, which clones the Arc under
    // the lock, so no reader ever holds the lock across an `.await`.
    config: RwLock<Arc<Config>>,
    pub runtime: Runtime,
    // Why a std Mutex: every critical section is a few map operations and never awaits.
    registry: Mutex<Registry>,
    pub stats: Stats,
    pub validators: args::ValidatorCache,
    /// Calls in flight that a caller may cancel by their `callId`.
    pub cancels: calls::Cancels,
    /// The MCP Streamable HTTP service behind `/mcp`, built on first use.
    pub mcp_http: std::sync::OnceLock<mcp_http::Service>,
    /// Seed-002 registrations (`POST /register`) waiting for or holding a connection.
    pub instances: register::Instances,
    /// First stage of shutdown: stop accepting connections and new calls; calls in flight go on.
    pub draining: CancellationToken,
    /// Last stage: close every connection (WebSockets with 1001), fail what is left. Cancelling
    /// it also cancels `draining`.
    pub shutdown: CancellationToken,
    pub tasks: TaskTracker,
}

impl Daemon {
    pub fn new(config: Config, runtime: Runtime) -> Daemon {
        let mut registry = Registry::new(config.event_buffer, config.event_stream_buffer);
        registry.set_limits(registry_limits(&config));
        let shutdown = CancellationToken::new();
        Daemon {
            config: RwLock::new(Arc::new(config)),
            runtime,
            registry: Mutex::new(registry),
            stats: Stats::default(),
            validators: args::ValidatorCache::default(),
            cancels: calls::Cancels::default(),
            mcp_http: std::sync::OnceLock::new(),
            instances: register::Instances::default(),
            draining: shutdown.child_token(),
            shutdown,
            tasks: TaskTracker::new(),
        }
    }

    /// The settings in force now (they change on SIGHUP).
    pub fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn set_config(&self, config: Arc<Config>) {
        self.registry().set_limits(registry_limits(&config));
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = config;
    }

    /// The registry, locked. Keep the guard for a few statements; never across an `.await`.
    pub fn registry(&self) -> MutexGuard<'_, Registry> {
        // A panic while holding the lock leaves a registry that is still structurally sound
        // (every mutation is a single map operation), so keep serving.
        self.registry.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn registry_limits(c: &Config) -> registry::Limits {
    registry::Limits {
        tabs_per_browser: c.max_tabs_per_browser,
        tools_per_tab: c.max_tools_per_tab,
    }
}

pub use service::run;
