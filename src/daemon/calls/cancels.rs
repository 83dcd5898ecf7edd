//! The calls in flight that a caller may cancel by the `callId` it chose
//! (`DELETE /v1/calls/{callId}`, MCP's `notifications/cancelled`).

use crate::error::Error;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// The calls in flight that carry a caller-chosen `callId`, so that `DELETE /v1/calls/{id}`
/// can end them. Calls without an id never touch it, which keeps the common path free of an
/// extra lock.
///
/// Beside them, which caller's call each message to a browser carries (message id → callId),
/// so that what a browser reports about a message (a consent prompt, issue 59) names the
/// caller's call.
#[derive(Debug, Default)]
pub struct Cancels(
    Mutex<HashMap<String, (u64, CancellationToken)>>,
    Mutex<HashMap<String, String>>,
);

impl Cancels {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, CancellationToken)>> {
        // Each critical section is one map operation: a poisoned map is still consistent.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn register(&self, id: &str) -> Result<Registered<'_>, Error> {
        static GENERATION: AtomicU64 = AtomicU64::new(1);
        let generation = GENERATION.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        match self.lock().entry(id.to_owned()) {
            Entry::Occupied(_) => {
                return Err(Error::bad_request(format!(
                    "callId `{id}` is already in flight; choose a unique one"
                )))
            }
            Entry::Vacant(slot) => {
                slot.insert((generation, token.clone()));
            }
        }
        Ok(Registered {
            cancels: self,
            id: id.to_owned(),
            generation,
            token,
        })
    }

    /// Notes that the browser message `message` carries the caller's call `call_id`, until
    /// the returned guard is dropped.
    pub fn carried(&self, message: &str, call_id: &str) -> Carried<'_> {
        let mut map = self.1.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(message.to_owned(), call_id.to_owned());
        Carried {
            cancels: self,
            message: message.to_owned(),
        }
    }

    /// The caller's call a browser message carries, while it is in flight.
    pub fn caller_of(&self, message: &str) -> Option<String> {
        let map = self.1.lock().unwrap_or_else(|e| e.into_inner());
        map.get(message).cloned()
    }

    /// Cancels the call with this id; false when no such call is in flight.
    pub fn cancel(&self, id: &str) -> bool {
        match self.lock().remove(id) {
            Some((_, token)) => {
                token.cancel();
                true
            }
            None => false,
        }
    }
}

/// A browser message's entry in [`Cancels::carried`], removed when the attempt ends.
pub struct Carried<'a> {
    cancels: &'a Cancels,
    message: String,
}

impl Drop for Carried<'_> {
    fn drop(&mut self) {
        let mut map = self.cancels.1.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(&self.message);
    }
}

/// A call's entry in [`Cancels`], removed when the call ends however it ends.
pub struct Registered<'a> {
    cancels: &'a Cancels,
    id: String,
    generation: u64,
    pub token: CancellationToken,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut map = self.cancels.lock();
        // Only our own entry: after a cancel the id may already be reused by a new call.
        if map
            .get(&self.id)
            .is_some_and(|(g, _)| *g == self.generation)
        {
            map.remove(&self.id);
        }
    }
}
