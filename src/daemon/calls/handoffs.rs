//! The tabs handed to the person (`browser_handoff`, issue 60): while one waits for the
//! person's answer, every other call on that tab fails at once with HANDOFF_IN_PROGRESS
//! rather than queueing behind a wait of minutes; and the person may answer it in the agent's
//! own client instead (MCP elicitation), by the call's id. Below `context.rs` (the Daemon
//! holds the set): it imports none of its folder.

use crate::daemon::conn::{Command, ConnHandle, Request};
use crate::daemon::registry::Target;
use crate::error::{Error, ErrorCode};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Mutex;

pub use crate::protocol::tool::HANDOFF;

/// A hand-off in progress: the call's id (when its caller gave one) and the browser's
/// connection, where an answer from the agent's client goes.
#[derive(Debug)]
struct Handed {
    call_id: Option<String>,
    conn: ConnHandle,
}

#[derive(Debug, Default)]
pub struct Handoffs(Mutex<HashMap<Target, Handed>>);

/// A tab's hand-off, held until its call ends (answered, failed, or its caller gone).
pub struct Held<'a> {
    handoffs: &'a Handoffs,
    target: Target,
}

impl Handoffs {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Target, Handed>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Refuses a call on a tab that is handed to the person.
    pub fn refuse(&self, target: Target) -> Result<(), Error> {
        match self.lock().contains_key(&target) {
            true => Err(in_progress(target)),
            false => Ok(()),
        }
    }

    /// Marks the tab as handed to the person, unless it already is.
    pub fn hold(
        &self,
        target: Target,
        call_id: Option<String>,
        conn: ConnHandle,
    ) -> Result<Held<'_>, Error> {
        match self.lock().entry(target) {
            std::collections::hash_map::Entry::Occupied(_) => return Err(in_progress(target)),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(Handed { call_id, conn });
            }
        }
        Ok(Held {
            handoffs: self,
            target,
        })
    }

    /// The person's answer (`done` or `cant`) to the hand-off of call `call_id`, given in the
    /// agent's client: the browser ends it as if answered there, and the call returns what it
    /// would have. False when no such hand-off waits (answered already, first answer wins).
    pub fn answer(&self, call_id: &str, answer: &'static str) -> bool {
        let map = self.lock();
        let Some((target, handed)) = map
            .iter()
            .find(|(_, h)| h.call_id.as_deref() == Some(call_id))
        else {
            return false;
        };
        let Some(tab) = target.tab else {
            return false;
        };
        let end = Request::EndHandoff {
            tab,
            answer: Some(answer),
        };
        handed.conn.tx.try_send(Command::Request(end)).is_ok()
    }
}

impl Held<'_> {
    pub fn target(&self) -> Target {
        self.target
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.handoffs.lock().remove(&self.target);
    }
}

fn in_progress(target: Target) -> Error {
    Error::new(
        ErrorCode::HandoffInProgress,
        format!("tab {target} is handed to the person, who has not answered yet; nothing else runs there until they do"),
    )
    .with_details(json!({"tab": target.to_string()}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::registry::BrowserKey;

    #[test]
    fn a_held_tab_refuses_calls_until_its_hand_off_ends() {
        let h = Handoffs::default();
        let (tab, other) = (Target::tab(BrowserKey(1), 7), Target::tab(BrowserKey(1), 8));
        let conn = || ConnHandle::test(1);
        let held = h.hold(tab, Some("c1".into()), conn()).unwrap();
        assert_eq!(
            h.refuse(tab).unwrap_err().code,
            ErrorCode::HandoffInProgress
        );
        assert_eq!(
            h.hold(tab, None, conn()).err().unwrap().code,
            ErrorCode::HandoffInProgress
        );
        assert!(h.refuse(other).is_ok());
        assert!(!h.answer("c2", "done"), "no hand-off of that call");
        drop(held);
        assert!(!h.answer("c1", "done"), "over");
        assert!(h.refuse(tab).is_ok());
    }
}
