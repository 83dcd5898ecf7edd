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
#[derive(Debug, Default)]
pub struct Cancels(Mutex<HashMap<String, (u64, CancellationToken)>>);

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
