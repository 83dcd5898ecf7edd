//! Progress of a long call (a navigation, a wait for an element) for a client that sent a
//! `progressToken`: while the call runs, `notifications/progress` says what it waits for and
//! for how long. Pages report no progress of their own, so the measure is the time waited
//! (seconds, always increasing); what a client gains is knowing the call is alive, and
//! clients that reset their request timeout on progress do not give up on a slow page.
//!
//! A call that ends before [`FIRST`] sends nothing.

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// When the first notification goes out.
pub const FIRST: Duration = Duration::from_millis(250);
/// How often the next ones do.
pub const EVERY: Duration = Duration::from_secs(1);

/// Runs `call`, reporting progress under `token` (if the client sent one) until it ends.
/// `what` says what is waited for ("tab b1:7 to answer `browser_navigate`").
pub async fn reporting<F: Future>(
    peer: &Peer<RoleServer>,
    token: Option<ProgressToken>,
    what: impl FnOnce() -> String,
    call: F,
) -> F::Output {
    let Some(token) = token else {
        return call.await;
    };
    let what = what();
    tokio::pin!(call);
    let start = Instant::now();
    let mut next = start + FIRST;
    loop {
        tokio::select! {
            biased;
            out = &mut call => return out,
            _ = tokio::time::sleep_until(next) => {}
        }
        let waited = start.elapsed();
        let message = format!("waiting for {what}: {:.1} s", waited.as_secs_f64());
        let p = ProgressNotificationParam::new(token.clone(), waited.as_secs_f64())
            .with_message(message);
        if let Err(e) = peer.notify_progress(p).await {
            // The client left; the call itself is cancelled by its own path.
            tracing::debug!(error = %e, "could not send MCP progress");
        }
        next += EVERY;
    }
}
