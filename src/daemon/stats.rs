//! The counters `/v1/status` shows.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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
    /// MCP sessions live on /mcp (and `initialize` requests being served).
    pub mcp_sessions: Arc<AtomicU64>,
    /// Woken when the last call in flight ends (shutdown waits on it).
    pub idle: tokio::sync::Notify,
}

impl Stats {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}
