//! Another user's connection, refused before it costs anything (issue 35, item 6): no
//! connection slot, one canned answer written at once, the socket closed, and one log line a
//! second however many arrive. Before, such a connection took a slot before its uid was
//! checked and stayed open until it spoke: 1,100 of them held the user's own browser out
//! (LIMIT_EXCEEDED) and wrote 5,123 WARN lines.

use crate::error::{Error, ErrorBody};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// At most this many refusals are answered at once; beyond, a connection is closed unanswered.
const ANSWERING_MAX: u64 = 64;
/// How long a refused peer may take to send its request's head (it is answered then, or
/// when that time is up), and to read the answer.
const DRAIN: Duration = Duration::from_millis(500);

/// Refusals of one listener: how many are being answered, and the throttled log.
#[derive(Default)]
pub struct Refusals {
    answering: Arc<AtomicU64>,
    log: Throttled,
}

impl Refusals {
    /// Answers `error` (HTTP 403) on `stream` and closes it, in a task of its own; logs
    /// `what` at most once a second, with how many were refused since.
    pub fn refuse<S>(
        &self,
        tasks: &tokio_util::task::TaskTracker,
        stream: S,
        error: Error,
        what: &str,
    ) where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        self.log.warn(what, &error.message);
        let answering = self.answering.clone();
        if answering.fetch_add(1, Ordering::Relaxed) >= ANSWERING_MAX {
            answering.fetch_sub(1, Ordering::Relaxed);
            return; // dropped: closed unanswered
        }
        tasks.spawn(async move {
            answer_and_close(stream, &error).await;
            answering.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

async fn answer_and_close<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, error: &Error) {
    // The request's head first (bounded in bytes and time): a client still writing its
    // request when the socket closes would see a reset, not the answer.
    let mut sink = [0u8; 4096];
    let mut head = Vec::new();
    let _ = tokio::time::timeout(DRAIN, async {
        while head.len() < 16 * 1024 && !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&sink[..n]),
            }
        }
    })
    .await;
    let body = serde_json::to_vec(&ErrorBody {
        error: error.clone(),
    })
    .unwrap_or_default();
    let answer = format!(
        "HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let written = async {
        stream.write_all(answer.as_bytes()).await?;
        stream.write_all(&body).await?;
        stream.shutdown().await
    };
    if tokio::time::timeout(DRAIN, written).await.is_err() {
        return;
    }
    // Whatever else it sends (a body) is read and dropped for a moment, for the same reason.
    let mut left = 64 * 1024usize;
    let _ = tokio::time::timeout(Duration::from_millis(200), async {
        while left > 0 {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    })
    .await;
}

/// A warning logged at most once a second, saying how many were folded into it.
#[derive(Default)]
pub struct Throttled {
    last: Mutex<Option<Instant>>,
    folded: AtomicU64,
}

impl Throttled {
    pub fn warn(&self, what: &str, detail: &str) {
        let now = Instant::now();
        let due = {
            let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
            let due = last.is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1));
            if due {
                *last = Some(now);
            }
            due
        };
        if !due {
            self.folded.fetch_add(1, Ordering::Relaxed);
            return;
        }
        match self.folded.swap(0, Ordering::Relaxed) {
            0 => tracing::warn!("{what}: {detail}"),
            n => tracing::warn!(folded = n, "{what}: {detail} ({n} more in the last second)"),
        }
    }
}
