//! One exchange with a browser: hand a request to its connection, wait for the answer under a
//! timeout, and make sure the connection forgets the waiter when we stop waiting.

use crate::daemon::conn::{Command, ConnHandle, Request};
use crate::error::{Error, ErrorCode};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub fn shutting_down() -> Error {
    Error::new(ErrorCode::ShuttingDown, "browser-mcpd is shutting down")
}

/// What an exchange needs of the daemon: when to give up, and where a late notice may run.
pub struct Scope<'a> {
    pub stop: &'a CancellationToken,
    pub tasks: &'a TaskTracker,
}

/// Hands a request to a connection and waits for its answer under a timeout. `id` is the
/// request's correlation id, forgotten by the connection when we stop waiting.
pub async fn exchange<T>(
    scope: Scope<'_>,
    conn: &ConnHandle,
    id: Option<String>,
    request: Request,
    rx: oneshot::Receiver<Result<T, Error>>,
    timeout: Duration,
    what: &str,
) -> Result<T, Error> {
    let never_sent = || {
        Error::new(
            ErrorCode::SendError,
            format!("{what}: the browser connection closed before the message was sent"),
        )
    };
    // The connection's queue is bounded: when a browser stops reading, the wait for room
    // counts against the call's timeout like the wait for the answer.
    let started = tokio::time::Instant::now();
    let full = timeout;
    let queued = tokio::select! {
        biased;
        _ = scope.stop.cancelled() => return Err(shutting_down()),
        queued = tokio::time::timeout(timeout, conn.tx.send(Command::Request(request))) => queued,
    };
    match queued {
        Ok(Ok(())) => {}
        Ok(Err(_)) => return Err(never_sent()),
        Err(_) => {
            return Err(Error::new(
                ErrorCode::SendError,
                format!(
                    "{what}: the browser connection accepted nothing for {} ms (it is not reading); not sent",
                    timeout.as_millis()
                ),
            ))
        }
    }
    let timeout = timeout.saturating_sub(started.elapsed());
    // From here on, if we stop waiting for any reason (timeout, cancel, a caller that went
    // away), the connection must forget the pending entry.
    let mut forget = ForgetOnDrop {
        conn,
        id,
        tasks: scope.tasks,
    };
    // At the last stage of shutdown a call still waiting fails as SHUTTING_DOWN, whatever the
    // connection does meanwhile.
    let outcome = tokio::select! {
        biased;
        _ = scope.stop.cancelled() => return Err(shutting_down()),
        outcome = tokio::time::timeout(timeout, rx) => outcome,
    };
    if outcome.is_ok() {
        forget.id = None;
    }
    drop(forget);
    match outcome {
        Ok(Ok(answer)) => answer,
        // The connection dropped the request before writing it: it never reached the browser.
        Ok(Err(_)) => Err(never_sent()),
        Err(_) => Err(Error::new(
            ErrorCode::MessageTimeout,
            format!(
                "{what}: no answer from the browser within {} ms",
                full.as_millis()
            ),
        )),
    }
}

/// Tells a connection to forget a pending request unless disarmed (`id = None`).
struct ForgetOnDrop<'a> {
    conn: &'a ConnHandle,
    id: Option<String>,
    tasks: &'a TaskTracker,
}

impl Drop for ForgetOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            // The connection must drop its waiter or the table grows without bound; when
            // its queue is full, hand the notice to a task rather than delay our caller.
            if let Err(mpsc::error::TrySendError::Full(forget)) =
                self.conn.tx.try_send(Command::Forget { id })
            {
                let tx = self.conn.tx.clone();
                if tokio::runtime::Handle::try_current().is_ok() {
                    self.tasks.spawn(async move {
                        let _ = tx.send(forget).await;
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A closeTab through a connection whose receiving end `end` disposes of.
    async fn close_through(end: impl FnOnce(mpsc::Receiver<Command>)) -> Error {
        let (stop, tasks) = (CancellationToken::new(), TaskTracker::new());
        let scope = Scope {
            stop: &stop,
            tasks: &tasks,
        };
        let (tx, rx) = mpsc::channel(1);
        end(rx);
        let conn = ConnHandle { id: 1, tx };
        let (reply, answer) = oneshot::channel::<Result<(), Error>>();
        let req = Request::CloseTab { tab: 1, reply };
        let limit = Duration::from_secs(5);
        exchange(scope, &conn, None, req, answer, limit, "x")
            .await
            .unwrap_err()
    }

    #[tokio::test]
    async fn a_message_that_never_left_is_a_send_error() {
        // The connection is gone before the send.
        assert_eq!(close_through(drop).await.code, ErrorCode::SendError);
        // The connection ends with the request still queued: it never reached the browser.
        let e = close_through(|mut rx| {
            tokio::spawn(async move { drop(rx.recv().await) });
        });
        assert_eq!(e.await.code, ErrorCode::SendError);
    }
}
