//! A call whose browser went away. A browser that drops its connection may be back at once
//! (its service worker restarted, the same session reconnects), or never (it crashed, it was
//! closed). A call waits `--reconnect-grace` for it and no longer: past that, it fails with
//! NO_BROWSER at once instead of waiting out its timeout, so scripts and agents learn of a
//! dead browser in about a second.

use super::exchange::shutting_down;
use crate::daemon::context::Daemon;
use crate::daemon::registry::{BrowserKey, Resolved, Route, Target};
use crate::error::{Error, ErrorCode};
use serde_json::json;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

/// Whether an attempt failed because the browser's connection went (or was going) away:
/// the retry then waits only for the browser's return, without a backoff first.
pub fn connection_lost(e: &Error) -> bool {
    matches!(e.code, ErrorCode::WebsocketError | ErrorCode::SendError)
}

/// Before a retry after `last`: the target again, waiting up to `grace` (or `timeout`, if
/// shorter) for its browser to come back if its connection is gone, or, after the page
/// navigated away, for the new page to offer the tool.
pub async fn wait_for_route(
    d: &Daemon,
    target: Target,
    tool: &str,
    last: ErrorCode,
    (timeout, grace): (Duration, Duration),
) -> Result<Resolved, Error> {
    let wait = timeout.min(grace);
    let deadline = tokio::time::Instant::now() + wait;
    let also: &[ErrorCode] = match last {
        ErrorCode::PageNavigated => &[ErrorCode::ToolNotFound],
        _ => &[],
    };
    loop {
        let mut events = match d.registry.route_or_wait(target, tool, also)? {
            Route::Ready(r) => return Ok(r),
            Route::Wait(events) => events,
        };
        tokio::select! {
            changed = events.recv() => {
                if matches!(changed, Err(RecvError::Closed)) {
                    // No more changes can come: nothing will bring the browser back.
                    tokio::time::sleep_until(deadline).await;
                }
            }
            _ = tokio::time::sleep_until(deadline) => {
                // Time is up: the browser is still away, or the registry says what else is wrong.
                return match d.registry.route_or_wait(target, tool, &[])? {
                    Route::Ready(r) => Ok(r),
                    Route::Wait(_) => Err(gone(target.browser, wait)),
                };
            }
            _ = d.shutdown.cancelled() => return Err(shutting_down()),
        }
    }
}

/// Resolves once browser `key` is not connected: a call backing off before its retry stops
/// waiting for a browser that has left.
pub async fn departed(d: &Daemon, key: BrowserKey) {
    loop {
        let (present, mut events) = d.registry.presence(key);
        if !present {
            return;
        }
        if matches!(events.recv().await, Err(RecvError::Closed)) {
            return std::future::pending().await;
        }
    }
}

fn gone(browser: BrowserKey, waited: Duration) -> Error {
    let ms = waited.as_millis() as u64;
    Error::new(
        ErrorCode::NoBrowser,
        format!("browser {browser} went away and did not come back within {ms} ms"),
    )
    .with_details(json!({"browser": browser.to_string(), "reconnectGraceMs": ms}))
}
