//! The calls of one connection that wait for an answer.
//!
//! Each connection task owns its [`Pending`] table. When the task ends, the table is dropped
//! and every waiter learns at once that the connection is gone, instead of waiting out its
//! timeout.

use crate::error::{Error, ErrorCode};
use crate::protocol::bridge::{TabId, TabInfo};
use crate::protocol::Tool;
use serde_json::value::RawValue;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::oneshot;

/// Where the answer to a request goes.
pub type Reply<T> = oneshot::Sender<Result<T, Error>>;

#[derive(Debug)]
pub enum Waiter {
    Call(Reply<Box<RawValue>>),
    Discover(Reply<Vec<Tool>>),
    Open(Reply<TabInfo>),
    Watch(Reply<()>),
    /// `answerConsent`: the choice the browser took.
    Answer(Reply<String>),
}

impl Waiter {
    pub fn fail(self, e: Error) {
        // A waiter that already gave up is fine to ignore.
        match self {
            Waiter::Call(r) => drop(r.send(Err(e))),
            Waiter::Discover(r) => drop(r.send(Err(e))),
            Waiter::Open(r) => drop(r.send(Err(e))),
            Waiter::Watch(r) => drop(r.send(Err(e))),
            Waiter::Answer(r) => drop(r.send(Err(e))),
        }
    }
}

/// How an answer matched (or did not match) a waiting call.
#[derive(Debug, PartialEq, Eq)]
pub enum Match {
    Late,
    Unknown,
}

/// The calls of one connection that wait for an answer.
#[derive(Debug)]
pub struct Pending {
    waiting: HashMap<String, Waiter>,
    /// Closes wait for the tab's `tabClosed`, whoever asked; each has its own id for a refusal.
    closes: HashMap<TabId, Vec<(String, Reply<()>)>>,
    /// Ids whose caller gave up, remembered (boundedly) to tell a late answer from a stray one.
    forgotten: HashSet<String>,
    forgotten_order: VecDeque<String>,
    /// The daemon-wide count of waiting calls (shown in status), and our share of it.
    gauge: Arc<AtomicU64>,
    counted: u64,
}

const FORGOTTEN_MEMORY: usize = 4096;

impl Pending {
    /// A table whose size is added to `gauge`.
    pub fn counted(gauge: Arc<AtomicU64>) -> Pending {
        Pending {
            waiting: HashMap::new(),
            closes: HashMap::new(),
            forgotten: HashSet::new(),
            forgotten_order: VecDeque::new(),
            gauge,
            counted: 0,
        }
    }

    /// Brings the shared gauge in step with this table's size.
    fn sync(&mut self) {
        let now = self.len() as u64;
        if now > self.counted {
            self.gauge.fetch_add(now - self.counted, Ordering::Relaxed);
        } else if now < self.counted {
            self.gauge.fetch_sub(self.counted - now, Ordering::Relaxed);
        }
        self.counted = now;
    }

    pub fn insert(&mut self, id: String, waiter: Waiter) {
        self.waiting.insert(id, waiter);
        self.sync();
    }

    pub fn insert_close(&mut self, tab: TabId, id: String, reply: Reply<()>) {
        let list = self.closes.entry(tab).or_default();
        list.retain(|(_, r)| !r.is_closed());
        list.push((id, reply));
        self.sync();
    }

    /// The browser refused the close named `id`: its caller learns why. False when no close
    /// has that id.
    pub fn fail_close(&mut self, id: &str, e: Error) -> bool {
        let Some((tab, at)) = self
            .closes
            .iter()
            .find_map(|(tab, list)| Some((*tab, list.iter().position(|(i, _)| i == id)?)))
        else {
            return false;
        };
        if let Some(list) = self.closes.get_mut(&tab) {
            let (_, reply) = list.remove(at);
            let _ = reply.send(Err(e));
            if list.is_empty() {
                self.closes.remove(&tab);
            }
        }
        self.sync();
        true
    }

    /// Takes the waiter for an answer's id, or says why there is none.
    pub fn take(&mut self, id: Option<&str>) -> Result<Waiter, Match> {
        let id = id.ok_or(Match::Unknown)?;
        match self.waiting.remove(id) {
            Some(w) => {
                self.sync();
                Ok(w)
            }
            None if self.forgotten.remove(id) => Err(Match::Late),
            None => Err(Match::Unknown),
        }
    }

    /// A request whose frame could not be written: its waiter fails as never sent (the
    /// connection's other waiters fail when it ends).
    pub fn fail_unsent(&mut self, id: &str) {
        if let Ok(w) = self.take(Some(id)) {
            w.fail(Error::new(
                ErrorCode::SendError,
                "could not write to the browser connection",
            ));
        }
    }

    pub fn forget(&mut self, id: String) {
        if self.waiting.remove(&id).is_none() {
            return;
        }
        self.sync();
        if self.forgotten_order.len() == FORGOTTEN_MEMORY {
            if let Some(old) = self.forgotten_order.pop_front() {
                self.forgotten.remove(&old);
            }
        }
        self.forgotten.insert(id.clone());
        self.forgotten_order.push_back(id);
    }

    pub fn tab_closed(&mut self, tab: TabId) {
        for (_, reply) in self.closes.remove(&tab).unwrap_or_default() {
            let _ = reply.send(Ok(()));
        }
        self.sync();
    }

    pub fn len(&self) -> usize {
        self.waiting.len() + self.closes.values().map(Vec::len).sum::<usize>()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fails every waiter: the connection is gone.
    pub fn fail_all(&mut self, code: ErrorCode, message: &str) {
        for (_, w) in self.waiting.drain() {
            w.fail(Error::new(code, message));
        }
        for (_, list) in self.closes.drain() {
            for (_, reply) in list {
                let _ = reply.send(Err(Error::new(code, message)));
            }
        }
        self.sync();
    }
}

impl Default for Pending {
    fn default() -> Pending {
        Pending::counted(Arc::new(AtomicU64::new(0)))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.gauge.fetch_sub(self.counted, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_and_unknown_answers_are_told_apart_and_leave_nothing_behind() {
        let gauge = Arc::new(AtomicU64::new(0));
        let mut p = Pending::counted(gauge.clone());
        for i in 0..5000 {
            let (tx, _rx) = oneshot::channel();
            p.insert(format!("call_{i}"), Waiter::Call(tx));
            assert_eq!(gauge.load(Ordering::Relaxed), 1);
            p.forget(format!("call_{i}"));
        }
        assert!(p.is_empty());
        assert_eq!(gauge.load(Ordering::Relaxed), 0);
        assert!(p.forgotten.len() <= FORGOTTEN_MEMORY);
        assert_eq!(p.take(Some("call_4999")).unwrap_err(), Match::Late);
        assert_eq!(p.take(Some("call_4999")).unwrap_err(), Match::Unknown);
        assert_eq!(p.take(None).unwrap_err(), Match::Unknown);
    }

    #[test]
    fn fail_all_reaches_every_waiter() {
        let mut p = Pending::default();
        let (tx, mut rx) = oneshot::channel();
        p.insert("call_1".into(), Waiter::Call(tx));
        let (ctx, mut crx) = oneshot::channel();
        p.insert_close(3, "close_1".into(), ctx);
        p.fail_all(ErrorCode::WebsocketError, "gone");
        assert_eq!(
            rx.try_recv().unwrap().unwrap_err().code,
            ErrorCode::WebsocketError
        );
        assert_eq!(
            crx.try_recv().unwrap().unwrap_err().code,
            ErrorCode::WebsocketError
        );
        assert!(p.is_empty());
    }

    #[test]
    fn a_refused_close_fails_its_own_caller_only() {
        let mut p = Pending::default();
        let (a, mut arx) = oneshot::channel();
        let (b, mut brx) = oneshot::channel();
        p.insert_close(3, "close_1".into(), a);
        p.insert_close(3, "close_2".into(), b);
        assert!(!p.fail_close("close_9", Error::new(ErrorCode::ToolError, "no")));
        assert!(p.fail_close("close_1", Error::new(ErrorCode::ToolError, "no")));
        assert_eq!(
            arx.try_recv().unwrap().unwrap_err().code,
            ErrorCode::ToolError
        );
        assert!(brx.try_recv().is_err(), "the other close still waits");
        p.tab_closed(3);
        assert!(brx.try_recv().unwrap().is_ok());
        assert!(p.is_empty());
    }
}
