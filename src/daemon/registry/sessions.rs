//! Remembered sessions: which browser key a (dialect, session id) had, kept after its
//! connection ends so that a reconnect of the same session gets its old key back.

use super::refs::BrowserKey;
use std::collections::{HashMap, VecDeque};

/// Disconnected sessions whose browser key is kept for their return.
pub const REMEMBERED_SESSIONS: usize = 4096;

type Session = (&'static str, String);

#[derive(Debug)]
pub struct Sessions {
    /// (dialect, session id) → (key, stamp of its last departure).
    known: HashMap<Session, (BrowserKey, u64)>,
    /// Departures, oldest first: only the sessions of the last [`REMEMBERED_SESSIONS`] are
    /// kept, or every new session id (each seed-002 registration has one) would grow the map.
    /// A session that left again since has a newer stamp, so its old entry forgets nothing.
    departed: VecDeque<(Session, u64)>,
    departures: u64,
    next_key: u64,
}

impl Default for Sessions {
    fn default() -> Sessions {
        Sessions {
            known: HashMap::new(),
            departed: VecDeque::new(),
            departures: 0,
            next_key: 1,
        }
    }
}

impl Sessions {
    /// The key of a session: its old one if it was here before, else a new one.
    pub fn key(&mut self, dialect: &'static str, session_id: &str) -> BrowserKey {
        let session = (dialect, session_id.to_owned());
        if let Some(&(key, _)) = self.known.get(&session) {
            return key;
        }
        let key = BrowserKey(self.next_key);
        self.next_key += 1;
        self.known.insert(session, (key, 0));
        key
    }

    /// The session's connection ended. `connected` says whether a key is still in use; the
    /// sessions forgotten to stay within bounds are those not connected.
    pub fn departed(
        &mut self,
        dialect: &'static str,
        session_id: &str,
        connected: impl Fn(BrowserKey) -> bool,
    ) {
        self.departures += 1;
        let session = (dialect, session_id.to_owned());
        if let Some(entry) = self.known.get_mut(&session) {
            entry.1 = self.departures;
        }
        self.departed.push_back((session, self.departures));
        while self.departed.len() > REMEMBERED_SESSIONS {
            let Some((old, stamp)) = self.departed.pop_front() else {
                break;
            };
            // Forgotten only if this was its last departure and it has not come back.
            if let Some(&(k, last)) = self.known.get(&old) {
                if last == stamp && !connected(k) {
                    self.known.remove(&old);
                }
            }
        }
    }

    /// Whether `key` was ever handed out and is still remembered.
    pub fn remembers(&self, key: BrowserKey) -> bool {
        self.known.values().any(|v| v.0 == key)
    }

    /// Session ids known (connected or remembered for a reconnect).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.known.len()
    }
}
