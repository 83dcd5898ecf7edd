//! Configured limits that are not one component's business: open connections per listener,
//! and the one place that counts and logs a refusal.

use super::Stats;
use crate::error::Error;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One open connection, counted for as long as it lives (an upgraded WebSocket carries it on
/// after its HTTP connection task has ended).
#[derive(Debug)]
pub struct ConnSlot(Arc<AtomicU64>);

impl ConnSlot {
    /// Takes a slot unless `max` are already open; `Err` holds the number open.
    pub fn take(open: &Arc<AtomicU64>, max: usize) -> Result<ConnSlot, u64> {
        let before = open.fetch_add(1, Ordering::Relaxed);
        if before >= max as u64 {
            open.fetch_sub(1, Ordering::Relaxed);
            return Err(before);
        }
        Ok(ConnSlot(open.clone()))
    }
}

impl Drop for ConnSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Counts a refusal for status and says in the log what was refused and why.
pub fn refused(stats: &Stats, conn: u64, e: &Error) {
    Stats::bump(&stats.limits_exceeded);
    tracing::warn!(conn, code = %e.code, "refused: {}", e.message);
}

/// [`refused`] for a registry update that may have hit a limit.
pub fn check(stats: &Stats, conn: u64, r: Result<(), Error>) {
    if let Err(e) = r {
        refused(stats, conn, &e);
    }
}

/// Raises the soft limit on open files to the hard limit (the soft default of 1024 is below
/// what the connection limits allow) and warns when the limits cannot be reached anyway.
pub fn raise_open_files(c: &super::Config) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return;
    };
    let want = hard.min(1 << 20);
    let soft = if want > soft && setrlimit(Resource::RLIMIT_NOFILE, want, hard).is_ok() {
        want
    } else {
        soft
    };
    // Listeners, the watcher, logs and a margin besides the connections.
    let need = (c.max_connections + c.max_control_connections + 64) as u64;
    if soft < need {
        tracing::warn!(
            open_files = soft,
            need,
            "the open-file limit is below --max-connections + --max-control-connections; \
             beyond it new connections fail to be accepted"
        );
    }
}
