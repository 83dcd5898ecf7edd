//! How long one attempt may take and when a failed attempt may be repeated.

use crate::daemon::context::Daemon;
use crate::error::{Error, ErrorCode};
use crate::protocol::control::CallRequest;
use crate::protocol::Tool;
use std::time::Duration;

/// The longest per-request timeout the API accepts (a day): longer ones are surely mistakes,
/// and deadlines far in the future overflow the clock arithmetic.
pub const MAX_TIMEOUT_MS: u64 = 86_400_000;

/// The longest a hand-off may wait for the person: the extension's longest, 2 hours (its
/// `timeoutSec` at most 1 hour, then 10 minutes more per time the person asks, up to 2 hours
/// in all: extension/worker/calls/handoff.js), and a minute for the snapshot that ends it.
pub const HANDOFF_CEILING: Duration = Duration::from_secs(2 * 3600 + 60);

/// Retry and timeout settings of one call: the daemon's defaults, overridden per call.
#[derive(Debug, Clone)]
pub struct Policy {
    /// One attempt's timeout (`attemptTimeoutMs`, else `--call-timeout`).
    pub timeout: Duration,
    /// The whole call's budget (`timeoutMs`), retries and backoff included.
    pub budget: Option<Duration>,
    pub retries: u32,
    pub base: Duration,
    pub multiplier: f64,
    pub max_delay: Duration,
    pub retry_on_timeout: bool,
    /// How long a retry waits for a browser whose connection dropped (`--reconnect-grace`).
    pub grace: Duration,
}

/// The most retries one call may ask for: each costs an attempt's timeout plus a backoff, and
/// a call that repeats for days is a mistake.
pub const MAX_RETRIES: u32 = 100;

/// A caller's `timeoutMs`, checked: between 1 ms and a day (deadlines further out would
/// overflow the clock arithmetic).
pub fn checked_timeout(ms: Option<u64>, default: Duration) -> Result<Duration, Error> {
    checked_ms("timeoutMs", ms).map(|t| t.unwrap_or(default))
}

/// A duration field of a request, checked as [`checked_timeout`] does.
fn checked_ms(field: &str, ms: Option<u64>) -> Result<Option<Duration>, Error> {
    const MAX: u64 = MAX_TIMEOUT_MS;
    match ms {
        None => Ok(None),
        Some(ms) if (1..=MAX).contains(&ms) => Ok(Some(Duration::from_millis(ms))),
        Some(ms) => Err(Error::bad_request(format!(
            "`{field}` must be between 1 and {MAX}, not {ms}"
        ))),
    }
}

impl Policy {
    pub fn for_request(d: &Daemon, req: &CallRequest) -> Result<Policy, Error> {
        let c = d.config();
        let retries = req.retries.unwrap_or(c.retries);
        if retries > MAX_RETRIES {
            return Err(Error::bad_request(format!(
                "`retries` must be at most {MAX_RETRIES}, not {retries}"
            )));
        }
        Ok(Policy {
            timeout: checked_ms("attemptTimeoutMs", req.attempt_timeout_ms)?
                .unwrap_or(c.call_timeout),
            budget: checked_ms("timeoutMs", req.timeout_ms)?,
            retries,
            base: c.backoff_base,
            multiplier: c.backoff_multiplier,
            max_delay: c.backoff_max,
            retry_on_timeout: req.retry_on_timeout,
            grace: c.reconnect_grace,
        })
    }

    /// A hand-off's: one attempt, never repeated (the person would be asked twice), that
    /// waits as long as the extension lets the person take ([`HANDOFF_CEILING`]); the
    /// extension ends it with HANDOFF_TIMEOUT at its own deadline.
    pub fn handoff(self) -> Policy {
        Policy {
            timeout: HANDOFF_CEILING,
            budget: None,
            retries: 0,
            retry_on_timeout: false,
            ..self
        }
    }

    /// `base × multiplier^attempt`, clamped to the maximum (attempt counts from 0).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = self.multiplier.max(1.0).powi(attempt.min(64) as i32);
        let ms = (self.base.as_millis() as f64 * factor).min(self.max_delay.as_millis() as f64);
        Duration::from_millis(ms as u64)
    }
}

/// Whether a failed attempt may be repeated for this tool.
pub fn should_retry(e: &Error, tool: &Tool, retry_on_timeout: bool) -> bool {
    match e.code {
        ErrorCode::SendError => true,
        // The tool may have run (part way, for a page that navigated away mid-call).
        ErrorCode::MessageTimeout | ErrorCode::WebsocketError | ErrorCode::PageNavigated => {
            retry_on_timeout || tool.safe_to_repeat()
        }
        ErrorCode::ToolError => e.retryable,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn backoff_grows_and_is_clamped() {
        let p = Policy {
            timeout: Duration::from_secs(1),
            budget: None,
            retries: 5,
            base: Duration::from_millis(1000),
            multiplier: 2.0,
            max_delay: Duration::from_millis(5000),
            retry_on_timeout: false,
            grace: Duration::from_secs(1),
        };
        let delays: Vec<u64> = (0..5).map(|a| p.delay(a).as_millis() as u64).collect();
        assert_eq!(delays, vec![1000, 2000, 4000, 5000, 5000]);
    }

    #[test]
    fn timeouts_are_retried_only_for_safe_tools() {
        let plain: Tool = serde_json::from_value(json!({"name": "click"})).unwrap();
        let ro: Tool =
            serde_json::from_value(json!({"name": "read", "annotations": {"readOnlyHint": true}}))
                .unwrap();
        let timeout = Error::new(ErrorCode::MessageTimeout, "t");
        assert!(!should_retry(&timeout, &plain, false));
        assert!(should_retry(&timeout, &plain, true));
        assert!(should_retry(&timeout, &ro, false));
        assert!(should_retry(
            &Error::new(ErrorCode::SendError, "s"),
            &plain,
            false
        ));
        let transient = Error::new(ErrorCode::ToolError, "network").retryable(true);
        assert!(should_retry(&transient, &plain, false));
        let unknown = Error::new(ErrorCode::ToolError, "boom").retryable(false);
        assert!(!should_retry(&unknown, &ro, false));
        assert!(!should_retry(
            &Error::new(ErrorCode::InvalidArguments, "x"),
            &ro,
            true
        ));
    }
}
