//! The event log: every change of the registry as a typed [`Change`], numbered, kept in a
//! ring for `events --since` and broadcast to live readers.
//!
//! Events are published while the registry's lock is held, so their order is the order the
//! state changed. Each event's NDJSON line is written once, by its first reader, outside the
//! lock, and shared by every reader after it.

use super::refs::{BrowserKey, Target};
use crate::protocol::bridge::TabId;
use crate::protocol::control::{event_kind, Event};
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use tokio::sync::broadcast;

/// What changed; serialized as the event's `data`.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
pub enum Change {
    BrowserConnected {
        dialect: &'static str,
        session_id: String,
        name: String,
        version: String,
    },
    BrowserDisconnected {
        closed_tabs: Vec<String>,
    },
    TabCreated(TabChange),
    TabUpdated(TabChange),
    TabClosed {},
    TabFocused {},
    ToolsChanged {
        tools: Vec<String>,
    },
    /// What a page did, as the extension reports it; its data is the extension's object. Also
    /// a consent prompt's start and end (issue 59), whose data the daemon words.
    Page(PageEvent),
    /// A browser the daemon launched exited (issue 32).
    BrowserExited {
        /// `code 0`, `signal 9`.
        exit: String,
        /// It was closed on request (or the daemon stopped), not a crash.
        expected: bool,
        restarting: bool,
    },
}

/// A page event: its kind (one of [`event_kind::PAGE`]) and the extension's data, which
/// is the event's `data` as it is.
#[derive(Debug, Clone)]
pub struct PageEvent {
    pub kind: &'static str,
    pub data: Value,
}

impl Serialize for PageEvent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.data.serialize(s)
    }
}

/// A tab as `tabCreated` and `tabUpdated` describe it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TabChange {
    pub title: String,
    pub url: String,
    pub tools: Vec<String>,
    /// `Some(None)` is written as `null`: a tab announced by the extension says whether an
    /// `openTab` asked for it; one the daemon learnt of by a focus change says nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<Option<String>>,
}

impl Change {
    pub fn kind(&self) -> &'static str {
        match self {
            Change::BrowserConnected { .. } => event_kind::BROWSER_CONNECTED,
            Change::BrowserDisconnected { .. } => event_kind::BROWSER_DISCONNECTED,
            Change::TabCreated(_) => event_kind::TAB_CREATED,
            Change::TabUpdated(_) => event_kind::TAB_UPDATED,
            Change::TabClosed {} => event_kind::TAB_CLOSED,
            Change::TabFocused {} => event_kind::TAB_FOCUSED,
            Change::ToolsChanged { .. } => event_kind::TOOLS_CHANGED,
            Change::Page(p) => p.kind,
            Change::BrowserExited { .. } => event_kind::BROWSER_EXITED,
        }
    }
}

/// One published event: its fields for filtering, and its line, written on first use.
#[derive(Debug)]
pub struct Published {
    pub seq: u64,
    pub kind: &'static str,
    pub time: u64,
    pub browser: String,
    pub tab: Option<String>,
    pub change: Change,
    line: OnceLock<Bytes>,
}

impl Published {
    /// The event as one NDJSON line (with its newline).
    pub fn line(&self) -> Bytes {
        self.line
            .get_or_init(|| {
                let event = Event {
                    seq: self.seq,
                    kind: self.kind,
                    time: self.time,
                    browser: Some(self.browser.as_str()),
                    tab: self.tab.as_deref(),
                    data: Some(&self.change),
                };
                let mut line = serde_json::to_vec(&event).expect("events serialize");
                line.push(b'\n');
                Bytes::from(line)
            })
            .clone()
    }
}

/// A live subscription and what the ring still holds of the past (see [`EventLog::subscribe`]).
pub struct Subscription {
    pub live: broadcast::Receiver<Arc<Published>>,
    pub backlog: Vec<Arc<Published>>,
    /// Events after `since` that are gone from the ring: `(from, to)`, inclusive.
    pub gap: Option<(u64, u64)>,
    /// The last sequence number before the live events (where a reader starts).
    pub last_seq: u64,
}

pub struct EventLog {
    ring: VecDeque<Arc<Published>>,
    capacity: usize,
    next_seq: u64,
    live: broadcast::Sender<Arc<Published>>,
    now_ms: fn() -> u64,
}

impl EventLog {
    pub fn new(ring_capacity: usize, broadcast_capacity: usize) -> EventLog {
        let (live, _) = broadcast::channel(broadcast_capacity.max(1));
        EventLog {
            ring: VecDeque::with_capacity(ring_capacity.min(4096)),
            capacity: ring_capacity.max(1),
            next_seq: 1,
            live,
            now_ms: crate::time::now_ms,
        }
    }

    pub fn publish(&mut self, browser: BrowserKey, tab: Option<TabId>, change: Change) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let target = Target { browser, tab: None };
        let published = Arc::new(Published {
            seq,
            kind: change.kind(),
            time: (self.now_ms)(),
            browser: target.to_string(),
            tab: tab.map(|t| Target::tab(browser, t).to_string()),
            change,
            line: OnceLock::new(),
        });
        if self.ring.len() == self.capacity {
            self.ring.pop_front();
        }
        self.ring.push_back(published.clone());
        // No receivers is fine: nobody is listening right now.
        let _ = self.live.send(published);
    }

    /// Live events from now on, and the retained events after `since`, at the same instant, so
    /// a reader neither misses nor repeats an event.
    pub fn subscribe(&self, since: Option<u64>) -> Subscription {
        let live = self.live.subscribe();
        let (backlog, gap) = match since {
            None => (Vec::new(), None),
            Some(since) => self.after(since),
        };
        Subscription {
            live,
            backlog,
            gap,
            last_seq: since.unwrap_or_else(|| self.last_seq()),
        }
    }

    /// Retained events with `seq > since`, and the range `(from, to)` of events that are gone.
    pub fn after(&self, since: u64) -> (Vec<Arc<Published>>, Option<(u64, u64)>) {
        let oldest = self.ring.front().map(|e| e.seq).unwrap_or(self.next_seq);
        let gap = (since + 1 < oldest).then(|| (since + 1, oldest - 1));
        let backlog = self
            .ring
            .iter()
            .filter(|e| e.seq > since)
            .cloned()
            .collect();
        (backlog, gap)
    }

    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_the_wire_shape() {
        let mut log = EventLog::new(4, 4);
        log.now_ms = || 7;
        log.publish(BrowserKey(1), Some(3), Change::TabClosed {});
        log.publish(
            BrowserKey(1),
            Some(4),
            Change::TabCreated(TabChange {
                title: "t".into(),
                url: "u".into(),
                tools: vec!["a".into()],
                request_id: Some(None),
            }),
        );
        let (events, gap) = log.after(0);
        assert!(gap.is_none());
        let lines: Vec<serde_json::Value> = events
            .iter()
            .map(|e| serde_json::from_slice(&e.line()).unwrap())
            .collect();
        assert_eq!(
            lines[0],
            serde_json::json!({"seq": 1, "type": "tabClosed", "time": 7, "browser": "b1",
                "tab": "b1:3", "data": {}})
        );
        assert_eq!(
            lines[1]["data"],
            serde_json::json!({"title": "t", "url": "u", "tools": ["a"], "requestId": null})
        );
    }
}
