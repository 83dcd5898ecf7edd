//! The tabs handed to the person (`browser_handoff`, issue 60): while one waits for the
//! person's answer, every other call on that tab fails at once with HANDOFF_IN_PROGRESS
//! rather than queueing behind a wait of minutes. Below `context.rs` (the Daemon holds the
//! set): it imports none of its folder.

use crate::daemon::registry::Target;
use crate::error::{Error, ErrorCode};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Mutex;

/// The built-in that hands a tab to the person.
pub const HANDOFF: &str = "browser_handoff";

#[derive(Debug, Default)]
pub struct Handoffs(Mutex<HashSet<Target>>);

/// A tab's hand-off, held until its call ends (answered, failed, or its caller gone).
pub struct Held<'a> {
    handoffs: &'a Handoffs,
    target: Target,
}

impl Handoffs {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<Target>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Refuses a call on a tab that is handed to the person.
    pub fn refuse(&self, target: Target) -> Result<(), Error> {
        match self.lock().contains(&target) {
            true => Err(in_progress(target)),
            false => Ok(()),
        }
    }

    /// Marks the tab as handed to the person, unless it already is.
    pub fn hold(&self, target: Target) -> Result<Held<'_>, Error> {
        if !self.lock().insert(target) {
            return Err(in_progress(target));
        }
        Ok(Held {
            handoffs: self,
            target,
        })
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
        let held = h.hold(tab).unwrap();
        assert_eq!(
            h.refuse(tab).unwrap_err().code,
            ErrorCode::HandoffInProgress
        );
        assert_eq!(
            h.hold(tab).err().unwrap().code,
            ErrorCode::HandoffInProgress
        );
        assert!(h.refuse(other).is_ok());
        drop(held);
        assert!(h.refuse(tab).is_ok());
    }
}
