//! `logging/setLevel` and the log messages a session asked for (`notifications/message`).
//!
//! A client hears nothing until it sets a level; then it hears what this server does on its
//! behalf at that level and above: `debug` when a page tool is called, `info` when the tool
//! list changed, `warning` when a call failed. The 2026-07-28 revision drops logging
//! (SEP-2577, hence rmcp's deprecation marks); 2025-11-25 clients still use it.
#![allow(deprecated)]

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::{Peer, RoleServer};
use serde_json::Value;
use std::sync::atomic::{AtomicU8, Ordering};

/// The logger name on every message.
pub const LOGGER: &str = "browser-mcp";

/// The levels this server sends at.
#[derive(Debug, Clone, Copy)]
pub enum Level {
    Debug,
    Info,
    Warning,
}

impl From<Level> for LoggingLevel {
    fn from(l: Level) -> LoggingLevel {
        match l {
            Level::Debug => LoggingLevel::Debug,
            Level::Info => LoggingLevel::Info,
            Level::Warning => LoggingLevel::Warning,
        }
    }
}

/// One session's chosen level.
#[derive(Debug, Default)]
pub struct ClientLog {
    /// 0: nothing asked for yet; else the rank of the lowest level sent.
    min: AtomicU8,
}

fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 1,
        LoggingLevel::Info => 2,
        LoggingLevel::Notice => 3,
        LoggingLevel::Warning => 4,
        LoggingLevel::Error => 5,
        LoggingLevel::Critical => 6,
        LoggingLevel::Alert => 7,
        LoggingLevel::Emergency => 8,
    }
}

impl ClientLog {
    pub fn set(&self, level: LoggingLevel) {
        self.min.store(rank(level), Ordering::Relaxed);
    }

    pub fn wants(&self, level: LoggingLevel) -> bool {
        let min = self.min.load(Ordering::Relaxed);
        min != 0 && rank(level) >= min
    }

    /// Sends `data` at `level` if the client asked for that level; a client gone is no error
    /// of the caller's.
    pub async fn send(&self, peer: &Peer<RoleServer>, level: Level, data: Value) {
        let level = LoggingLevel::from(level);
        if self.wants(level) {
            let message = LoggingMessageNotificationParam::new(level, data).with_logger(LOGGER);
            if let Err(e) = peer.notify_logging_message(message).await {
                tracing::debug!(error = %e, "could not send an MCP log message");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_until_a_level_is_set_then_that_level_and_above() {
        let log = ClientLog::default();
        assert!(!log.wants(LoggingLevel::Emergency));
        log.set(LoggingLevel::Warning);
        assert!(!log.wants(LoggingLevel::Info));
        assert!(log.wants(LoggingLevel::Warning));
        assert!(log.wants(LoggingLevel::Error));
        log.set(LoggingLevel::Debug);
        assert!(log.wants(LoggingLevel::Debug));
    }
}
