//! Each tab's turn (issue 60): calls on one tab run in the order they came, calls on different
//! tabs at once. A read (a tool that changes nothing) may share its turn with the reads beside
//! it; an action has the tab to itself. The wait is bounded (`--tab-queue`): one call more is
//! refused with BUSY and a hint of when to try again.
//!
//! Why in the daemon: two agents, or one agent's pipelined calls, would otherwise reach the
//! page together, and a click could land between another call's snapshot and its type. Order
//! is kept by tokio's `RwLock`, whose queue is first come, first served for readers and
//! writers alike. Below `context.rs` (the Daemon holds the queues): it imports none of its
//! folder.

use crate::daemon::registry::Target;
use crate::error::{Error, ErrorCode};
use serde_json::json;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

/// Bounds of the retry hint.
const HINT_MIN: Duration = Duration::from_millis(50);
const HINT_MAX: Duration = Duration::from_secs(10);

/// The tabs that have calls running or waiting, each with its queue. A tab leaves the map
/// when its last call ends, so the map holds only tabs at work.
#[derive(Debug, Default)]
pub struct TabQueues(Mutex<HashMap<Target, Entry>>);

#[derive(Debug)]
struct Entry {
    queue: Arc<Queue>,
    /// Calls that entered and have not ended (running or waiting).
    calls: usize,
    /// Calls still waiting for their turn.
    waiting: usize,
}

#[derive(Debug, Default)]
struct Queue {
    turn: Arc<RwLock<()>>,
    /// A moving average of how long a turn lasts here, in µs, for the retry hint.
    average_us: AtomicU64,
}

/// A call's place in its tab's queue; it waits for its turn with [`Place::turn`]. Dropping it
/// (the call ended, or its caller went away) leaves the queue.
pub struct Place<'a> {
    queues: &'a TabQueues,
    target: Target,
    queue: Arc<Queue>,
    waiting: bool,
}

/// A call's turn on its tab, held (never read) until the call ends.
pub struct Turn {
    _read: Option<OwnedRwLockReadGuard<()>>,
    _act: Option<OwnedRwLockWriteGuard<()>>,
}

impl TabQueues {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Target, Entry>> {
        // Each critical section is a few map operations: a poisoned map is still consistent.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a place in `target`'s queue, unless `max` calls already wait there: then BUSY.
    /// A call counts as waiting until its turn starts, even one that finds the tab free: so
    /// `max` is at least 1, else `--tab-queue 0` would refuse every call.
    pub fn enter(&self, target: Target, max: usize) -> Result<Place<'_>, Error> {
        let max = max.max(1);
        let mut map = self.lock();
        let entry = map.entry(target).or_insert_with(|| Entry {
            queue: Arc::default(),
            calls: 0,
            waiting: 0,
        });
        if entry.waiting >= max {
            let waiting = entry.waiting;
            let average = Duration::from_micros(entry.queue.average_us.load(Ordering::Relaxed));
            if entry.calls == 0 {
                map.remove(&target);
            }
            return Err(busy(target, waiting, max, average));
        }
        entry.calls += 1;
        entry.waiting += 1;
        Ok(Place {
            queues: self,
            target,
            queue: entry.queue.clone(),
            waiting: true,
        })
    }

    /// Tabs with calls running or waiting (for tests and status).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

/// BUSY: `waiting` calls wait for `target` already, `max` at most. The hint is the time the
/// calls ahead are likely to take, by how long turns there lasted lately.
fn busy(target: Target, waiting: usize, max: usize, average: Duration) -> Error {
    let hint = (average * (waiting as u32 + 1)).clamp(HINT_MIN, HINT_MAX);
    let ms = hint.as_millis() as u64;
    Error::new(
        ErrorCode::Busy,
        format!(
            "tab {target} has {waiting} calls waiting for their turn, the most allowed \
             (--tab-queue {max}); try again in about {ms} ms"
        ),
    )
    .with_details(
        json!({"tab": target.to_string(), "waiting": waiting, "max": max,
        "retryAfterMs": ms}),
    )
}

impl Place<'_> {
    /// Waits for the call's turn: shared with other reads when `read`, else alone.
    pub async fn turn(&mut self, read: bool) -> Turn {
        let lock = self.queue.turn.clone();
        let turn = match read {
            true => Turn {
                _read: Some(lock.read_owned().await),
                _act: None,
            },
            false => Turn {
                _read: None,
                _act: Some(lock.write_owned().await),
            },
        };
        self.waited();
        turn
    }

    fn waited(&mut self) {
        if std::mem::take(&mut self.waiting) {
            if let Some(e) = self.queues.lock().get_mut(&self.target) {
                e.waiting -= 1;
            }
        }
    }

    /// Notes how long a turn lasted, for later retry hints.
    pub fn took(&self, started: Instant) {
        let us = started.elapsed().as_micros().min(u64::MAX as u128) as u64;
        let avg = &self.queue.average_us;
        let old = avg.load(Ordering::Relaxed);
        let new = if old == 0 { us } else { (old * 7 + us) / 8 };
        avg.store(new, Ordering::Relaxed);
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut map = self.queues.lock();
        if let Some(e) = map.get_mut(&self.target) {
            e.calls -= 1;
            if self.waiting {
                e.waiting -= 1;
            }
            if e.calls == 0 {
                map.remove(&self.target);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::registry::BrowserKey;

    fn tab(id: i64) -> Target {
        Target::tab(BrowserKey(1), id)
    }

    /// Queues that outlive the tasks the tests spawn.
    fn queues() -> &'static TabQueues {
        Box::leak(Box::default())
    }

    #[tokio::test]
    async fn calls_on_a_tab_take_turns_in_order_and_the_wait_is_bounded() {
        let q = queues();
        let mut first = q.enter(tab(1), 1).unwrap();
        let turn = first.turn(false).await;
        // Another tab is not held up.
        let mut other = q.enter(tab(2), 1).unwrap();
        drop(other.turn(false).await);
        drop(other);
        // One may wait behind the action; a second is refused.
        let mut second = q.enter(tab(1), 1).unwrap();
        let e = q.enter(tab(1), 1).err().expect("BUSY");
        assert_eq!(e.code, ErrorCode::Busy);
        assert!(e.retryable);
        let hint = e.details.as_ref().unwrap()["retryAfterMs"]
            .as_u64()
            .unwrap();
        assert!((50..=10_000).contains(&hint), "{e:?}");
        let waiting = tokio::spawn(async move {
            let _t = second.turn(true).await;
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            !waiting.is_finished(),
            "the read waits for the action ahead"
        );
        drop(turn);
        waiting.await.unwrap();
        drop(first);
        assert_eq!(q.len(), 0, "idle tabs leave the map");
        // `--tab-queue 0` still lets a call onto a free tab.
        drop(q.enter(tab(3), 0).unwrap().turn(false).await);
    }

    #[tokio::test]
    async fn reads_share_a_turn_and_an_action_waits_for_them() {
        let q = queues();
        let (mut a, mut b) = (q.enter(tab(1), 4).unwrap(), q.enter(tab(1), 4).unwrap());
        let (ra, rb) = (a.turn(true).await, b.turn(true).await);
        let mut act = q.enter(tab(1), 4).unwrap();
        let acting = tokio::spawn(async move {
            let _t = act.turn(false).await;
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!acting.is_finished());
        // A read that came after the action waits for it too: order is kept.
        let mut late = q.enter(tab(1), 4).unwrap();
        let reading = tokio::spawn(async move {
            let _t = late.turn(true).await;
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!reading.is_finished());
        drop((ra, rb));
        acting.await.unwrap();
        reading.await.unwrap();
        drop((a, b));
        assert_eq!(q.len(), 0);
    }
}
