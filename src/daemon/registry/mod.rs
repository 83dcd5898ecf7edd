//! The registry: which browsers are connected, their tabs and tools, and the log of changes.
//!
//! [`Registry`] is a handle whose methods take its lock for a few map operations and release
//! it before they return; no caller ever holds the lock, so none can hold it across an
//! `.await`. Inside:
//! - [`state`]: the data and its mutations (what connections report);
//! - [`events`]: every change as a typed [`Change`](events::Change), numbered, in a ring and on a broadcast;
//! - [`sessions`]: keys remembered for sessions that may reconnect;
//! - [`refs`]: the names of browsers and targets (`b1`, `b1:12`) with `FromStr`/`Display`;
//! - [`resolve`]: from a caller's tool and reference to a connected target, or a typed error;
//! - [`views`]: the projections the APIs show, built outside the lock;
//! - [`lanes`]: agents' lanes, the tabs each opened, and the person's focus (issue 60).
//!
//! Beside it, [`presence`]: whether an agent is at work, which the browsers in the registry
//! are told. Below `context.rs` in `daemon/mod.rs`'s order: it may import `conn/` and the
//! entries below it (in use: `limits.rs`).

mod events;
mod lanes;
#[cfg(test)]
mod model;
pub(crate) mod presence;
mod refs;
mod resolve;
mod sessions;
mod state;
#[cfg(test)]
mod tests;
mod views;

pub use events::{Published, Subscription};
pub use lanes::LaneId;
pub use refs::{BrowserKey, Target};
pub use resolve::Resolved;
pub use state::{Initial, Limits, Update};
pub use views::Focus;

use crate::daemon::conn::ConnHandle;
use crate::error::{Error, ErrorCode};
use crate::protocol::bridge::{BrowserInfo, TabId};
use crate::protocol::control::{BrowserView, CallRequest, TabView, ToolView};
use state::State;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;
use views::{TabCopy, ToolsCopy};

pub struct Registry {
    // Why a std Mutex: every critical section is a few map operations and never awaits.
    state: Mutex<State>,
}

/// A browser just attached (see [`Registry::attach`]).
pub struct Attached {
    pub key: BrowserKey,
    /// The connection that held the same session until now; close it.
    pub displaced: Option<ConnHandle>,
    /// What of the browser's initial tabs or tools went beyond a limit.
    pub refused: Result<(), Error>,
}

/// See [`Registry::focus_moving`].
pub struct FocusMoving<'a> {
    registry: &'a Registry,
    key: BrowserKey,
}

impl Drop for FocusMoving<'_> {
    fn drop(&mut self) {
        self.registry.lock().lanes.focus_moved(self.key);
    }
}

/// Counts for `/v1/status`.
pub struct Summary {
    pub browsers: usize,
    pub tabs: usize,
    pub tools: usize,
    pub last_seq: u64,
}

/// Where a retried call goes now (see [`Registry::route_or_wait`]).
pub enum Route {
    Ready(Resolved),
    /// The browser is not connected now; any registry change may bring it back.
    Wait(broadcast::Receiver<Arc<Published>>),
}

impl Registry {
    pub fn new(ring_capacity: usize, broadcast_capacity: usize) -> Registry {
        Registry {
            state: Mutex::new(State::new(ring_capacity, broadcast_capacity)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves a registry that is still structurally sound
        // (every mutation is a single map operation), so keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_limits(&self, limits: Limits) {
        self.lock().limits = limits;
    }

    // ---- what connections report ----------------------------------------------------------

    /// Registers a connection's browser with what it brings, in one step (readers never see
    /// it half there). The same (dialect, session) gets its old key back.
    pub fn attach(
        &self,
        dialect: &'static str,
        session_id: &str,
        info: BrowserInfo,
        conn: ConnHandle,
        initial: Initial,
    ) -> Attached {
        let conn_id = conn.id;
        let connected_at = crate::time::now_rfc3339();
        let mut s = self.lock();
        let (key, displaced) = s.attach(dialect, session_id, info, conn, connected_at);
        let refused = s.initial(key, conn_id, initial);
        Attached {
            key,
            displaced,
            refused,
        }
    }

    /// Removes a browser when its connection ends. Only the connection that currently owns the
    /// browser may remove it (a displaced connection's late goodbye changes nothing).
    pub fn detach(&self, key: BrowserKey, conn_id: u64) -> bool {
        self.lock().remove_browser(key, Some(conn_id)).is_some()
    }

    /// Applies what a browser's connection reports (see [`Update`]); only the connection that
    /// owns the browser now changes anything.
    pub fn update(&self, key: BrowserKey, conn_id: u64, u: Update) -> Result<(), Error> {
        self.lock().update(key, conn_id, u)
    }

    /// The key a session will have when it connects: a browser the daemon launches is named
    /// before its extension connects (issue 32), and keeps the name across restarts.
    pub fn reserve(&self, dialect: &'static str, session_id: &str) -> BrowserKey {
        self.lock().sessions.key(dialect, session_id)
    }

    /// Publishes that a browser the daemon launched exited: no connection reports that.
    pub fn browser_exited(&self, key: BrowserKey, exit: String, expected: bool, restarting: bool) {
        self.lock().events.publish(
            key,
            None,
            events::Change::BrowserExited {
                exit,
                expected,
                restarting,
            },
        );
    }

    // ---- events -------------------------------------------------------------------------

    /// Live events, and the retained ones after `since` (see [`Subscription`]).
    pub fn subscribe(&self, since: Option<u64>) -> Subscription {
        self.lock().events.subscribe(since)
    }

    /// Retained events with `seq > since`, and the range `(from, to)` of events that are gone.
    pub fn events_after(&self, since: u64) -> (Vec<Arc<Published>>, Option<(u64, u64)>) {
        self.lock().events.after(since)
    }

    // ---- resolution ---------------------------------------------------------------------

    /// A browser reference (`b1`, `1`, a session id) to a connected browser.
    pub fn parse_browser(&self, s: &str) -> Result<BrowserKey, Error> {
        self.lock().parse_browser(s)
    }

    /// A target reference (`b1:12`, `b1`, a bare tab id when unique) to a connected target.
    pub fn parse_tab(&self, s: &str) -> Result<Target, Error> {
        self.lock().parse_tab(s)
    }

    /// Where a call goes (see [`State::resolve_call`]); without a tab, to the focused one
    /// among several: the browser's, or for an agent the person's.
    pub fn resolve_call(&self, req: &CallRequest, focus: Focus) -> Result<Resolved, Error> {
        let (tab, browser) = (req.tab.as_deref(), req.browser.as_deref());
        self.lock().resolve_call(&req.tool, tab, browser, focus)
    }

    /// A retry's route to its target, or, while its browser is away (or while the target
    /// fails with one of `also`), a subscription taken at the same instant to wait for a
    /// change without missing it.
    pub fn route_or_wait(
        &self,
        target: Target,
        tool: &str,
        also: &[ErrorCode],
    ) -> Result<Route, Error> {
        let s = self.lock();
        match s.resolve_target(target, tool) {
            Ok(r) => Ok(Route::Ready(r)),
            Err(e) if e.code == ErrorCode::NoBrowser || also.contains(&e.code) => {
                Ok(Route::Wait(s.events.subscribe(None).live))
            }
            Err(e) => Err(e),
        }
    }

    /// Whether a browser is connected now, with a subscription taken at the same instant to
    /// learn of its departure or return without missing it.
    pub fn presence(&self, key: BrowserKey) -> (bool, broadcast::Receiver<Arc<Published>>) {
        let s = self.lock();
        (s.browsers.contains_key(&key), s.events.subscribe(None).live)
    }

    /// Where a session's call goes, `req.tab` a tab or browser of the session or none (see
    /// [`State::resolve_in_session`]).
    pub fn resolve_in_session(&self, session: &str, req: &CallRequest) -> Result<Target, Error> {
        self.lock()
            .resolve_in_session(session, &req.tool, req.tab.as_deref())
    }

    /// The browser a new tab opens in (named, else focused last, else the only one) and its
    /// connection.
    pub fn new_tab_route(&self, browser: Option<&str>) -> Result<(BrowserKey, ConnHandle), Error> {
        let s = self.lock();
        let key = s.browser_for_new_tab(browser)?;
        Ok((key, s.connection(Target::browser(key))?))
    }

    /// A tab reference to the tab and its connection; a browser is refused.
    pub fn tab_route(&self, tab: &str) -> Result<(Target, TabId, ConnHandle), Error> {
        let s = self.lock();
        let target = s.parse_tab(tab)?;
        let Some(id) = target.tab else {
            return Err(Error::new(
                ErrorCode::TabNotFound,
                format!("`{tab}` is a browser, not a tab"),
            ));
        };
        Ok((target, id, s.connection(target)?))
    }

    /// Every browser connection, for what goes to all of them ([`presence`]).
    pub fn connections(&self) -> Vec<ConnHandle> {
        self.lock()
            .browsers
            .values()
            .map(|b| b.conn.clone())
            .collect()
    }

    // ---- lanes (issue 60; see [`lanes`]) ---------------------------------------------------

    /// A new MCP session's lane, labelled [`UNNAMED`] until its agent says its name.
    pub fn begin_lane(&self) -> LaneId {
        self.lock().lanes.begin()
    }

    /// Names a lane after its agent; answers its label (`name`, or `name (2)` beside another
    /// live session of that name), `None` for a lane that ended.
    pub fn name_lane(&self, lane: LaneId, name: &str) -> Option<String> {
        self.lock().lanes.name(lane, name)
    }

    /// The session ended: its tabs are nobody's now.
    pub fn end_lane(&self, lane: LaneId) {
        self.lock().lanes.end(lane);
    }

    pub fn lane_label(&self, lane: LaneId) -> Option<String> {
        self.lock().lanes.label(lane).map(str::to_owned)
    }

    /// The lane opened this tab: it is its own.
    pub fn claim_tab(&self, tab: Target, lane: LaneId) {
        self.lock().lanes.claim(tab, lane);
    }

    /// Whether `lane` (`None`: the person) may act in `tab`, or TAB_OWNED naming its owner.
    pub fn may_act(&self, tab: Target, lane: Option<LaneId>, shared: bool) -> Result<(), Error> {
        self.lock().lanes.may_act(tab, lane, shared)
    }

    /// An agent's action that may move the focus in this browser, until the guard drops: the
    /// focus changes it makes are not the person's.
    pub fn focus_moving(&self, key: BrowserKey) -> FocusMoving<'_> {
        self.lock().lanes.focus_moving(key);
        FocusMoving {
            registry: self,
            key,
        }
    }

    // ---- views --------------------------------------------------------------------------

    pub fn summary(&self) -> Summary {
        let s = self.lock();
        Summary {
            browsers: s.browsers.len(),
            tabs: s.browsers.values().map(|b| b.tabs.len()).sum(),
            tools: s.tool_sets().map(|(_, tools)| tools.len()).sum(),
            last_seq: s.events.last_seq(),
        }
    }

    pub fn browser_views(&self) -> Vec<BrowserView> {
        self.lock()
            .browsers
            .values()
            .map(views::browser_view)
            .collect()
    }

    pub fn tab_views(&self, browser: Option<BrowserKey>) -> Vec<TabView> {
        self.tab_views_by(browser, Focus::Browser)
    }

    /// The tabs, `focused` meaning the browser's focus or the person's.
    pub fn tab_views_by(&self, browser: Option<BrowserKey>, focus: Focus) -> Vec<TabView> {
        let copies: Vec<TabCopy> = {
            let s = self.lock();
            let s = &*s;
            s.browsers
                .values()
                .filter(|b| browser.is_none_or(|k| k == b.key))
                .flat_map(|b| b.tabs.values().map(move |t| TabCopy::of(s, b, t, focus)))
                .collect()
        };
        copies.into_iter().map(TabCopy::view).collect()
    }

    pub fn tab_view(&self, target: Target) -> Option<TabView> {
        let copy = {
            let s = self.lock();
            let b = s.browsers.get(&target.browser)?;
            TabCopy::of(&s, b, b.tabs.get(&target.tab?)?, Focus::Browser)
        };
        Some(copy.view())
    }

    /// Every tool, optionally only those of one target (tab or browser), of one browser, or
    /// with one name.
    pub fn tool_views(
        &self,
        target: Option<Target>,
        browser: Option<BrowserKey>,
        name: Option<&str>,
    ) -> Vec<ToolView> {
        let copy = ToolsCopy::of(&self.lock(), |t| {
            target.is_none_or(|want| want == t) && browser.is_none_or(|k| k == t.browser)
        });
        copy.views(name)
    }

    /// The browsers of a session, and every tool they offer with where it lives.
    pub fn session(&self, session: &str) -> (Vec<BrowserKey>, Vec<ToolView>) {
        let (browsers, copy) = {
            let s = self.lock();
            let browsers = s.session_browsers(session);
            let copy = ToolsCopy::of(&s, |t| browsers.contains(&t.browser));
            (browsers, copy)
        };
        (browsers, copy.views(None))
    }

    /// Session ids known (connected or remembered for a reconnect).
    #[cfg(test)]
    pub fn remembered_sessions(&self) -> usize {
        self.lock().sessions.len()
    }
}
