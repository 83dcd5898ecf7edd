//! The instance ids handed out by `POST /register`, waiting for their `hello` or held by a
//! connection. Dialect state, so it lives here and not in the registry; the listener owns it.

use crate::error::{Error, ErrorCode};
use crate::protocol::register::{self, RegisterRequest};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A registration nobody said `hello` for is forgotten after this long.
const UNCLAIMED_TTL: Duration = Duration::from_secs(60);
/// Registrations waiting for their `hello`, at most (a loop of POSTs cannot grow memory).
const MAX_UNCLAIMED: usize = 256;

struct Instance {
    user_agent: String,
    window_id: Option<i64>,
    registered: Instant,
    /// The connection that said `hello` for it.
    conn: Option<u64>,
}

/// A std Mutex because every use is a few map operations.
#[derive(Default)]
pub struct Instances {
    inner: Mutex<HashMap<String, Instance>>,
}

#[derive(Debug)]
pub struct Claimed {
    pub user_agent: String,
    pub window_id: Option<i64>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    Unknown,
    AlreadyConnected,
}

impl Instances {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Instance>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn register(&self, req: RegisterRequest) -> Result<String, Error> {
        let now = Instant::now();
        let mut map = self.lock();
        map.retain(|_, i| i.conn.is_some() || now.duration_since(i.registered) < UNCLAIMED_TTL);
        if map.values().filter(|i| i.conn.is_none()).count() >= MAX_UNCLAIMED {
            return Err(Error::new(
                ErrorCode::LimitExceeded,
                format!(
                    "{MAX_UNCLAIMED} registrations are waiting for their hello; try again later"
                ),
            ));
        }
        let id = loop {
            let mut random = [0u8; 6];
            getrandom::fill(&mut random).expect("the OS random source works");
            let id = register::instance_id(crate::time::now_ms(), random);
            if !map.contains_key(&id) {
                break id;
            }
        };
        map.insert(
            id.clone(),
            Instance {
                user_agent: req.user_agent,
                window_id: req.window_id,
                registered: now,
                conn: None,
            },
        );
        Ok(id)
    }

    /// A `hello`: the instance must be registered, recently, and not connected already.
    pub fn claim(&self, id: &str, conn: u64) -> Result<Claimed, Refused> {
        let mut map = self.lock();
        let i = map.get_mut(id).ok_or(Refused::Unknown)?;
        if i.conn.is_some() {
            return Err(Refused::AlreadyConnected);
        }
        if i.registered.elapsed() >= UNCLAIMED_TTL {
            map.remove(id);
            return Err(Refused::Unknown);
        }
        i.conn = Some(conn);
        Ok(Claimed {
            user_agent: i.user_agent.clone(),
            window_id: i.window_id,
        })
    }

    /// The connection ended: the instance is unregistered (seed 002's `unregister`).
    pub fn release(&self, id: &str, conn: u64) {
        let mut map = self.lock();
        if map.get(id).is_some_and(|i| i.conn == Some(conn)) {
            map.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_is_claimed_once_and_released_by_its_connection() {
        let i = Instances::default();
        let id = i.register(RegisterRequest::default()).unwrap();
        assert!(id.starts_with("inst_"));
        assert_eq!(i.claim("inst_0_nope00", 1).unwrap_err(), Refused::Unknown);
        i.claim(&id, 1).unwrap();
        assert_eq!(i.claim(&id, 2).unwrap_err(), Refused::AlreadyConnected);
        i.release(&id, 2);
        assert_eq!(i.claim(&id, 3).unwrap_err(), Refused::AlreadyConnected);
        i.release(&id, 1);
        assert_eq!(i.claim(&id, 3).unwrap_err(), Refused::Unknown);
    }

    #[test]
    fn unclaimed_registrations_are_bounded() {
        let i = Instances::default();
        for _ in 0..MAX_UNCLAIMED {
            i.register(RegisterRequest::default()).unwrap();
        }
        let e = i.register(RegisterRequest::default()).unwrap_err();
        assert_eq!(e.code, ErrorCode::LimitExceeded);
    }
}
