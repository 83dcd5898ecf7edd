//! Agents' lanes (issue 60). Each MCP session is a lane, labelled after its agent (the
//! client's `clientInfo.name`); a tab a lane opened is that lane's own until the tab closes or
//! the session ends. Another agent may read it and, unless the person allows more
//! (`share-agent-tabs`), act in it not at all. The person (browserctl, the control API) has no
//! lane and is never refused.
//!
//! And the person's focus: the tab the person focused last. A focus change that arrives while
//! an agent's action may be moving the focus (a tab opened in front, `browser_tabs select`, a
//! screenshot, which brings its tab to the front) is not the person's, so a session that
//! follows the focus is not moved by another agent's action.

use super::refs::{BrowserKey, Target};
use crate::error::{Error, ErrorCode};
use crate::protocol::bridge::TabId;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// A lane's number, unique in the daemon's life.
pub type LaneId = u64;

/// How long after an agent's focus-moving action a focus change is still counted as its: the
/// browser reports the change about when it answers the call, before or after.
const FOCUS_TAIL: Duration = Duration::from_secs(1);

/// The label of a lane whose client gave no name (and of one that never said `initialize`).
pub const UNNAMED: &str = "MCP agent";

#[derive(Debug, Default)]
pub struct Lanes {
    next: LaneId,
    /// Live lanes and their labels.
    live: BTreeMap<LaneId, String>,
    /// Tabs a live lane opened. Kept while their browser reconnects (the same tab ids come
    /// back); forgotten when the tab closes, or the lane ends.
    owners: HashMap<Target, LaneId>,
    /// Browsers where an agent's action may be moving the focus now, or did within
    /// [`FOCUS_TAIL`].
    moving: HashMap<BrowserKey, Moving>,
}

#[derive(Debug)]
struct Moving {
    active: u32,
    until: Instant,
}

impl Lanes {
    /// A new lane, labelled [`UNNAMED`] until its agent says its name.
    pub fn begin(&mut self) -> LaneId {
        self.next += 1;
        let id = self.next;
        let label = self.unique(id, UNNAMED);
        self.live.insert(id, label);
        id
    }

    /// Names a live lane after its agent; answers the label: the name, or `name (2)` while
    /// another live lane has that label, so that two sessions of one client are told apart.
    pub fn name(&mut self, id: LaneId, name: &str) -> Option<String> {
        if !self.live.contains_key(&id) {
            return None;
        }
        let label = self.unique(id, name);
        self.live.insert(id, label.clone());
        Some(label)
    }

    fn unique(&self, id: LaneId, name: &str) -> String {
        let taken = |l: &str| self.live.iter().any(|(k, v)| *k != id && v == l);
        if !taken(name) {
            return name.to_owned();
        }
        (2..)
            .map(|n| format!("{name} ({n})"))
            .find(|l| !taken(l))
            .expect("a free label")
    }

    /// The session ended: its tabs are nobody's now.
    pub fn end(&mut self, id: LaneId) {
        self.live.remove(&id);
        self.owners.retain(|_, lane| *lane != id);
    }

    pub fn label(&self, id: LaneId) -> Option<&str> {
        self.live.get(&id).map(String::as_str)
    }

    /// Makes a tab the lane's own (it opened it), unless the lane has ended meanwhile.
    pub fn claim(&mut self, tab: Target, id: LaneId) {
        if self.live.contains_key(&id) {
            self.owners.insert(tab, id);
        }
    }

    /// The lane that owns a tab, and its label.
    pub fn owner(&self, tab: Target) -> Option<(LaneId, &str)> {
        let id = *self.owners.get(&tab)?;
        Some((id, self.label(id)?))
    }

    pub fn tab_closed(&mut self, tab: Target) {
        self.owners.remove(&tab);
    }

    /// A browser (re)connected with these tabs: what it owned among the others is gone.
    pub fn browser_tabs(&mut self, key: BrowserKey, tabs: &[TabId]) {
        self.owners
            .retain(|t, _| t.browser != key || t.tab.is_some_and(|id| tabs.contains(&id)));
    }

    /// An agent's action that may move the focus in this browser begins.
    pub fn focus_moving(&mut self, key: BrowserKey) {
        let m = self.moving.entry(key).or_insert(Moving {
            active: 0,
            until: Instant::now(),
        });
        m.active += 1;
    }

    /// It ended; focus changes within [`FOCUS_TAIL`] still count as its.
    pub fn focus_moved(&mut self, key: BrowserKey) {
        let now = Instant::now();
        if let Some(m) = self.moving.get_mut(&key) {
            m.active = m.active.saturating_sub(1);
            m.until = now + FOCUS_TAIL;
        }
        self.moving.retain(|_, m| m.active > 0 || m.until > now);
    }

    /// Whether a focus change in this browser now is an agent's doing.
    pub fn agent_moving(&self, key: BrowserKey) -> bool {
        self.moving
            .get(&key)
            .is_some_and(|m| m.active > 0 || m.until > Instant::now())
    }

    /// Whether `lane` (an agent's; `None`, the person) may act in `tab`: its own, nobody's,
    /// or anyone's when `shared`; else TAB_OWNED naming the owner.
    pub fn may_act(&self, tab: Target, lane: Option<LaneId>, shared: bool) -> Result<(), Error> {
        let (Some(me), Some((owner, label))) = (lane, self.owner(tab)) else {
            return Ok(());
        };
        if owner == me || shared {
            return Ok(());
        }
        Err(Error::new(
            ErrorCode::TabOwned,
            format!(
                "tab {tab} is {label}'s: that agent opened it, so another agent may read it \
                 (snapshot, console, network, screenshots) but not act in it; open a tab of \
                 your own, or ask the person, who alone can let agents act in each other's tabs"
            ),
        )
        .with_details(json!({"tab": tab.to_string(), "owner": label, "ownerLane": owner})))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tab(id: TabId) -> Target {
        Target::tab(BrowserKey(1), id)
    }

    #[test]
    fn a_lane_owns_what_it_opened_until_it_ends_or_the_tab_closes() {
        let mut l = Lanes::default();
        let (a, b) = (l.begin(), l.begin());
        assert_eq!(l.name(a, "claude-code").as_deref(), Some("claude-code"));
        // A second live session of the same client is told apart.
        assert_eq!(l.name(b, "claude-code").as_deref(), Some("claude-code (2)"));
        l.claim(tab(7), a);
        l.claim(tab(8), b);
        assert!(l.may_act(tab(7), Some(a), false).is_ok());
        assert!(l.may_act(tab(7), None, false).is_ok(), "the person");
        assert!(l.may_act(tab(9), Some(b), false).is_ok(), "nobody's tab");
        assert!(l.may_act(tab(7), Some(b), true).is_ok(), "shared");
        let e = l.may_act(tab(7), Some(b), false).unwrap_err();
        assert_eq!(e.code, ErrorCode::TabOwned);
        assert!(e.message.contains("b1:7 is claude-code's"), "{e}");
        assert_eq!(e.details.unwrap()["owner"], "claude-code");
        l.tab_closed(tab(7));
        assert!(l.may_act(tab(7), Some(b), false).is_ok());
        l.end(b);
        assert!(l.owner(tab(8)).is_none());
        // An ended lane claims nothing, and its label is free again.
        l.claim(tab(8), b);
        assert!(l.owner(tab(8)).is_none());
        let c = l.begin();
        assert_eq!(l.name(c, "claude-code").as_deref(), Some("claude-code (2)"));
    }

    #[test]
    fn a_reconnected_browser_keeps_the_owners_of_the_tabs_it_still_has() {
        let mut l = Lanes::default();
        let a = l.begin();
        l.claim(tab(7), a);
        l.claim(tab(8), a);
        l.browser_tabs(BrowserKey(1), &[8]);
        assert!(l.owner(tab(7)).is_none());
        assert_eq!(l.owner(tab(8)).map(|o| o.0), Some(a));
    }

    #[test]
    fn focus_moves_count_as_an_agents_while_it_acts_and_a_moment_after() {
        let mut l = Lanes::default();
        let key = BrowserKey(1);
        assert!(!l.agent_moving(key));
        l.focus_moving(key);
        l.focus_moving(key);
        l.focus_moved(key);
        assert!(l.agent_moving(key));
        l.focus_moved(key);
        assert!(l.agent_moving(key), "within the tail");
        l.moving.get_mut(&key).unwrap().until = Instant::now();
        assert!(!l.agent_moving(key));
    }
}
