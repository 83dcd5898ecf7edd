//! The live picture: browsers → tabs → tools, and the event log.
//!
//! A plain synchronous struct so it can be unit-tested without a runtime. It lives behind a
//! `std::sync::Mutex` whose critical sections are short and never span an `.await`. Events are
//! published while the lock is held, so every reader sees them in the order the state changed.
//!
//! A browser is known by a daemon-assigned key (`b1`, `b2`, …) that stays the same when the
//! same session reconnects; a tab is `<browser>:<tab id>`, which is unambiguous even when two
//! browsers both have a tab 1.

use super::conn::ConnHandle;
use crate::error::{Error, ErrorCode};
use crate::protocol::bridge::{BrowserInfo, Hidden, TabId, TabInfo};
use crate::protocol::control::{event_kind, BrowserView, TabView, ToolView};
use crate::protocol::Tool;
use bytes::Bytes;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use tokio::sync::broadcast;

pub type BrowserKey = u64;

pub fn browser_ref(key: BrowserKey) -> String {
    format!("b{key}")
}

pub fn tab_ref(key: BrowserKey, tab: TabId) -> String {
    format!("b{key}:{tab}")
}

/// A call or tab target: a tab of a browser, or the browser itself for dialects without tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    pub browser: BrowserKey,
    pub tab: Option<TabId>,
}

impl Target {
    pub fn display(&self) -> String {
        match self.tab {
            Some(tab) => tab_ref(self.browser, tab),
            None => browser_ref(self.browser),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Tab {
    pub id: TabId,
    pub title: String,
    pub url: String,
    pub tools: Arc<Vec<Tool>>,
    /// What the extension keeps from us and why; replaced together with `tools`.
    pub hidden: Option<Hidden>,
}

#[derive(Debug)]
pub struct Browser {
    pub key: BrowserKey,
    pub conn: ConnHandle,
    pub dialect: &'static str,
    pub session_id: String,
    pub info: BrowserInfo,
    pub connected_at: String,
    pub tabs: BTreeMap<TabId, Tab>,
    pub focused: Option<TabId>,
    /// Browser-level tools, for dialects that have no tabs.
    pub tools: Arc<Vec<Tool>>,
}

/// One published event: its fields for filtering and its NDJSON line, serialized once for
/// every reader.
#[derive(Debug)]
pub struct Published {
    pub seq: u64,
    pub kind: &'static str,
    pub tab: Option<String>,
    pub browser: Option<String>,
    pub line: Bytes,
}

/// A tool as the registry holds it: shared with the registry, not copied, on the call path.
#[derive(Debug, Clone)]
pub struct ToolRef {
    set: Arc<Vec<Tool>>,
    index: usize,
}

impl std::ops::Deref for ToolRef {
    type Target = Tool;
    fn deref(&self) -> &Tool {
        &self.set[self.index]
    }
}

/// What a call needs once its target is chosen: where to send, and the tool's declaration.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub target: Target,
    pub conn: ConnHandle,
    pub session_id: String,
    pub tool: Option<ToolRef>,
}

/// How much one browser may put in the registry (`--max-tabs-per-browser`,
/// `--max-tools-per-tab`). What goes beyond is refused with LIMIT_EXCEEDED and never stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub tabs_per_browser: usize,
    pub tools_per_tab: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            tabs_per_browser: usize::MAX,
            tools_per_tab: usize::MAX,
        }
    }
}

impl Limits {
    fn tabs(&self, key: BrowserKey, id: TabId) -> Error {
        let max = self.tabs_per_browser;
        Error::new(
            ErrorCode::LimitExceeded,
            format!(
                "browser {} already has {max} tabs (--max-tabs-per-browser); tab {id} refused",
                browser_ref(key)
            ),
        )
        .with_details(json!({"limit": "maxTabsPerBrowser", "max": max}))
    }

    fn tools(&self, place: String, offered: usize) -> Error {
        let max = self.tools_per_tab;
        Error::new(
            ErrorCode::LimitExceeded,
            format!("{place} offers {offered} tools, more than {max} (--max-tools-per-tab); its tools are unchanged"),
        )
        .with_details(json!({"limit": "maxToolsPerTab", "max": max, "offered": offered}))
    }
}

/// Disconnected sessions whose browser key is kept for their return.
pub const REMEMBERED_SESSIONS: usize = 4096;

pub struct Registry {
    browsers: BTreeMap<BrowserKey, Browser>,
    limits: Limits,
    /// (dialect, session id) → (key, stamp of its last departure), kept after a disconnect so
    /// a reconnect gets its old key.
    sessions: HashMap<(&'static str, String), (BrowserKey, u64)>,
    /// Departures, oldest first: only the sessions of the last [`REMEMBERED_SESSIONS`] are
    /// kept, or every new session id (each seed-002 registration has one) would grow the map.
    /// A session that left again since has a newer stamp, so its old entry forgets nothing.
    departed: VecDeque<((&'static str, String), u64)>,
    departures: u64,
    next_key: BrowserKey,
    ring: VecDeque<Arc<Published>>,
    ring_capacity: usize,
    next_seq: u64,
    events: broadcast::Sender<Arc<Published>>,
    now_ms: fn() -> u64,
}

impl Registry {
    pub fn new(ring_capacity: usize, broadcast_capacity: usize) -> Registry {
        let (events, _) = broadcast::channel(broadcast_capacity.max(1));
        Registry {
            browsers: BTreeMap::new(),
            limits: Limits::default(),
            sessions: HashMap::new(),
            departed: VecDeque::new(),
            departures: 0,
            next_key: 1,
            ring: VecDeque::with_capacity(ring_capacity.min(4096)),
            ring_capacity: ring_capacity.max(1),
            next_seq: 1,
            events,
            now_ms: crate::time::now_ms,
        }
    }

    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    // ---- events -------------------------------------------------------------------------

    fn publish(&mut self, kind: &'static str, key: BrowserKey, tab: Option<TabId>, data: Value) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let browser = browser_ref(key);
        let tab = tab.map(|t| tab_ref(key, t));
        let event = crate::protocol::control::Event {
            seq,
            kind: kind.to_owned(),
            time: (self.now_ms)(),
            browser: Some(browser.clone()),
            tab: tab.clone(),
            data: Some(data),
        };
        let mut line = serde_json::to_vec(&event).expect("events serialize");
        line.push(b'\n');
        let published = Arc::new(Published {
            seq,
            kind,
            tab,
            browser: Some(browser),
            line: Bytes::from(line),
        });
        if self.ring.len() == self.ring_capacity {
            self.ring.pop_front();
        }
        self.ring.push_back(published.clone());
        // No receivers is fine: nobody is listening right now.
        let _ = self.events.send(published);
    }

    /// Subscribes to live events and returns the retained events after `since`, atomically,
    /// so a reader neither misses nor repeats an event. `Err(first)` means events after
    /// `since` were already dropped from the ring; `first` is the oldest one still kept.
    #[allow(clippy::type_complexity)]
    pub fn subscribe(
        &self,
        since: Option<u64>,
    ) -> (
        broadcast::Receiver<Arc<Published>>,
        Vec<Arc<Published>>,
        Option<(u64, u64)>,
    ) {
        let rx = self.events.subscribe();
        let (backlog, gap) = match since {
            None => (Vec::new(), None),
            Some(since) => self.events_after(since),
        };
        (rx, backlog, gap)
    }

    /// Retained events with `seq > since`, and the range `(from, to)` of events that are gone.
    pub fn events_after(&self, since: u64) -> (Vec<Arc<Published>>, Option<(u64, u64)>) {
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

    /// Session ids known (connected or remembered for a reconnect).
    pub fn remembered_sessions(&self) -> usize {
        self.sessions.len()
    }

    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    // ---- browser lifecycle --------------------------------------------------------------

    /// Registers a connection's browser. The same (dialect, session) gets its old key back. If
    /// another live connection holds that session, it is displaced and returned so the caller
    /// can close it.
    pub fn attach(
        &mut self,
        dialect: &'static str,
        session_id: &str,
        info: BrowserInfo,
        conn: ConnHandle,
        connected_at: String,
    ) -> (BrowserKey, Option<ConnHandle>) {
        let key = match self.sessions.get(&(dialect, session_id.to_owned())) {
            Some(&(key, _)) => key,
            None => {
                let key = self.next_key;
                self.next_key += 1;
                self.sessions
                    .insert((dialect, session_id.to_owned()), (key, 0));
                key
            }
        };
        let displaced = self.remove_browser(key, None).map(|b| b.conn);
        self.browsers.insert(
            key,
            Browser {
                key,
                conn,
                dialect,
                session_id: session_id.to_owned(),
                info: info.clone(),
                connected_at,
                tabs: BTreeMap::new(),
                focused: None,
                tools: Arc::new(Vec::new()),
            },
        );
        self.publish(
            event_kind::BROWSER_CONNECTED,
            key,
            None,
            json!({"dialect": dialect, "sessionId": session_id, "name": info.name, "version": info.version}),
        );
        (key, displaced)
    }

    /// Removes a browser when its connection ends. Only the connection that currently owns the
    /// browser may remove it (a displaced connection's late goodbye changes nothing).
    pub fn detach(&mut self, key: BrowserKey, conn_id: u64) -> bool {
        self.remove_browser(key, Some(conn_id)).is_some()
    }

    fn remove_browser(&mut self, key: BrowserKey, conn_id: Option<u64>) -> Option<Browser> {
        if let Some(want) = conn_id {
            if self.browsers.get(&key)?.conn.id != want {
                return None;
            }
        }
        let browser = self.browsers.remove(&key)?;
        self.departures += 1;
        let session = (browser.dialect, browser.session_id.clone());
        if let Some(entry) = self.sessions.get_mut(&session) {
            entry.1 = self.departures;
        }
        self.departed.push_back((session, self.departures));
        while self.departed.len() > REMEMBERED_SESSIONS {
            let Some((old, stamp)) = self.departed.pop_front() else {
                break;
            };
            // Forgotten only if this was its last departure and it has not come back.
            if let Some(&(k, last)) = self.sessions.get(&old) {
                if last == stamp && !self.browsers.contains_key(&k) {
                    self.sessions.remove(&old);
                }
            }
        }
        let tabs: Vec<String> = browser.tabs.keys().map(|&t| tab_ref(key, t)).collect();
        self.publish(
            event_kind::BROWSER_DISCONNECTED,
            key,
            None,
            json!({"closedTabs": tabs}),
        );
        Some(browser)
    }

    fn browser_mut(&mut self, key: BrowserKey, conn_id: u64) -> Option<&mut Browser> {
        self.browsers.get_mut(&key).filter(|b| b.conn.id == conn_id)
    }

    pub fn set_browser_info(&mut self, key: BrowserKey, conn_id: u64, info: BrowserInfo) {
        if let Some(b) = self.browser_mut(key, conn_id) {
            b.info = info;
        }
    }

    /// Replaces a browser's tabs with a snapshot (`connected`), emitting the difference. Tabs
    /// beyond the limit are left out; the first refusal is returned.
    pub fn replace_tabs(
        &mut self,
        key: BrowserKey,
        conn_id: u64,
        tabs: Vec<TabInfo>,
    ) -> Result<(), Error> {
        let Some(b) = self.browser_mut(key, conn_id) else {
            return Ok(());
        };
        let fresh: std::collections::BTreeSet<TabId> = tabs.iter().map(|t| t.id).collect();
        let gone: Vec<TabId> = b
            .tabs
            .keys()
            .copied()
            .filter(|id| !fresh.contains(id))
            .collect();
        for id in gone {
            self.tab_closed(key, conn_id, id);
        }
        let mut first_refusal = Ok(());
        for tab in tabs {
            if let Err(e) = self.upsert_tab(key, conn_id, tab, None) {
                if first_refusal.is_ok() {
                    first_refusal = Err(e);
                }
            }
        }
        first_refusal
    }

    // ---- tab events ---------------------------------------------------------------------

    /// tabCreated / tabUpdated: inserts or updates a tab. Tools absent in the message are kept.
    pub fn upsert_tab(
        &mut self,
        key: BrowserKey,
        conn_id: u64,
        info: TabInfo,
        request_id: Option<&str>,
    ) -> Result<(), Error> {
        let limits = self.limits;
        let Some(b) = self.browser_mut(key, conn_id) else {
            return Ok(());
        };
        let mut info = info;
        let id = info.id;
        let existed = b.tabs.contains_key(&id);
        if !existed && b.tabs.len() >= limits.tabs_per_browser {
            return Err(limits.tabs(key, id));
        }
        let mut refused = Ok(());
        if let Some(n) = info.tools.as_ref().map(Vec::len) {
            if n > limits.tools_per_tab {
                info.tools = None;
                refused = Err(limits.tools(format!("tab {}", tab_ref(key, id)), n));
            }
        }
        let focused = info.focused == Some(true);
        let tab = b.tabs.entry(id).or_insert_with(|| Tab {
            id,
            title: String::new(),
            url: String::new(),
            tools: Arc::new(Vec::new()),
            hidden: None,
        });
        let tools_changed = info
            .tools
            .as_ref()
            .is_some_and(|tools| tools.as_slice() != tab.tools.as_slice());
        let changed = !existed || tab.title != info.title || tab.url != info.url;
        tab.title = info.title;
        tab.url = info.url;
        if let Some(tools) = info.tools {
            tab.hidden = info.hidden;
            if tools_changed {
                tab.tools = Arc::new(tools);
            }
        }
        let data = json!({"title": tab.title, "url": tab.url, "tools": tool_names(&tab.tools),
            "requestId": request_id});
        if focused {
            b.focused = Some(id);
        }
        if !existed {
            self.publish(event_kind::TAB_CREATED, key, Some(id), data);
        } else if changed || tools_changed {
            self.publish(event_kind::TAB_UPDATED, key, Some(id), data);
        }
        refused
    }

    pub fn tab_closed(&mut self, key: BrowserKey, conn_id: u64, id: TabId) -> bool {
        let Some(b) = self.browser_mut(key, conn_id) else {
            return false;
        };
        if b.tabs.remove(&id).is_none() {
            return false;
        }
        if b.focused == Some(id) {
            b.focused = None;
        }
        self.publish(event_kind::TAB_CLOSED, key, Some(id), json!({}));
        true
    }

    /// A page event (`tabEvent`): published as an event of kind `kind` (one of
    /// [`event_kind::PAGE`]) on a tab the registry knows; false (nothing published) otherwise.
    pub fn tab_event(
        &mut self,
        key: BrowserKey,
        conn_id: u64,
        id: TabId,
        kind: &'static str,
        data: Value,
    ) -> bool {
        let known = self
            .browser_mut(key, conn_id)
            .is_some_and(|b| b.tabs.contains_key(&id));
        if known {
            self.publish(kind, key, Some(id), data);
        }
        known
    }

    pub fn tab_focused(
        &mut self,
        key: BrowserKey,
        conn_id: u64,
        id: TabId,
        tools: Option<Vec<Tool>>,
        hidden: Option<Hidden>,
    ) -> Result<(), Error> {
        let limits = self.limits;
        let Some(b) = self.browser_mut(key, conn_id) else {
            return Ok(());
        };
        if !b.tabs.contains_key(&id) && b.tabs.len() >= limits.tabs_per_browser {
            return Err(limits.tabs(key, id));
        }
        if let std::collections::btree_map::Entry::Vacant(slot) = b.tabs.entry(id) {
            // Focus on a tab we were never told about: know it from now on.
            slot.insert(Tab {
                id,
                title: String::new(),
                url: String::new(),
                tools: Arc::new(Vec::new()),
                hidden: None,
            });
            self.publish(
                event_kind::TAB_CREATED,
                key,
                Some(id),
                json!({"title": "", "url": "", "tools": []}),
            );
        }
        let Some(b) = self.browser_mut(key, conn_id) else {
            return Ok(());
        };
        b.focused = Some(id);
        let refused = match tools {
            Some(tools) => self.set_tools(key, conn_id, id, tools, hidden),
            None => Ok(()),
        };
        self.publish(event_kind::TAB_FOCUSED, key, Some(id), json!({}));
        refused
    }

    /// toolsChanged: replaces a tab's tools (and what is hidden); an event only when the tools
    /// really changed.
    pub fn set_tools(
        &mut self,
        key: BrowserKey,
        conn_id: u64,
        id: TabId,
        tools: Vec<Tool>,
        hidden: Option<Hidden>,
    ) -> Result<(), Error> {
        let limits = self.limits;
        let Some(b) = self.browser_mut(key, conn_id) else {
            return Ok(());
        };
        let Some(tab) = b.tabs.get_mut(&id) else {
            return Ok(());
        };
        if tools.len() > limits.tools_per_tab {
            return Err(limits.tools(format!("tab {}", tab_ref(key, id)), tools.len()));
        }
        tab.hidden = hidden;
        if tab.tools.as_slice() == tools.as_slice() {
            return Ok(());
        }
        tab.tools = Arc::new(tools);
        let names = json!(tool_names(&tab.tools));
        self.publish(
            event_kind::TOOLS_CHANGED,
            key,
            Some(id),
            json!({"tools": names}),
        );
        Ok(())
    }

    /// Browser-level tools (dialects without tabs).
    pub fn set_browser_tools(
        &mut self,
        key: BrowserKey,
        conn_id: u64,
        tools: Vec<Tool>,
    ) -> Result<(), Error> {
        let limits = self.limits;
        let Some(b) = self.browser_mut(key, conn_id) else {
            return Ok(());
        };
        if tools.len() > limits.tools_per_tab {
            return Err(limits.tools(format!("browser {}", browser_ref(key)), tools.len()));
        }
        if b.tools.as_slice() == tools.as_slice() {
            return Ok(());
        }
        b.tools = Arc::new(tools);
        let names = json!(tool_names(&b.tools));
        self.publish(
            event_kind::TOOLS_CHANGED,
            key,
            None,
            json!({"tools": names}),
        );
        Ok(())
    }

    // ---- lookups ------------------------------------------------------------------------

    pub fn counts(&self) -> (usize, usize, usize) {
        let tabs = self.browsers.values().map(|b| b.tabs.len()).sum();
        let tools = self
            .browsers
            .values()
            .map(|b| b.tools.len() + b.tabs.values().map(|t| t.tools.len()).sum::<usize>())
            .sum();
        (self.browsers.len(), tabs, tools)
    }

    pub fn browser_views(&self) -> Vec<BrowserView> {
        self.browsers.values().map(browser_view).collect()
    }

    /// Parses a browser reference: `b1` or `1`.
    pub fn parse_browser(&self, s: &str) -> Result<BrowserKey, Error> {
        let key = s
            .strip_prefix('b')
            .unwrap_or(s)
            .parse::<BrowserKey>()
            .ok()
            .or_else(|| {
                // A session id is a fine way to name a browser too.
                self.browsers
                    .values()
                    .find(|b| b.session_id == s)
                    .map(|b| b.key)
            });
        match key {
            Some(k) if self.browsers.contains_key(&k) => Ok(k),
            _ => Err(Error::new(
                ErrorCode::NoBrowser,
                format!("no connected browser `{s}`"),
            )
            .with_details(json!({"browsers": self.browsers.keys().map(|&k| browser_ref(k)).collect::<Vec<_>>()}))),
        }
    }

    /// Parses a tab reference: `b1:12`, or a bare `12` when only one browser has tab 12.
    pub fn parse_tab(&self, s: &str) -> Result<Target, Error> {
        let not_found = || Error::new(ErrorCode::TabNotFound, format!("no tab `{s}`"));
        // A browser we know that is not connected now (reconnecting, or gone for good) is
        // NO_BROWSER, which a caller may retry; a name we never handed out is TAB_NOT_FOUND.
        let absent = |b: &str| {
            let known = b
                .strip_prefix('b')
                .and_then(|k| k.parse::<BrowserKey>().ok())
                .filter(|k| self.sessions.values().any(|v| v.0 == *k));
            match known {
                Some(k) => Error::new(
                    ErrorCode::NoBrowser,
                    format!(
                        "browser {} is not connected (it may be reconnecting)",
                        browser_ref(k)
                    ),
                ),
                None => not_found(),
            }
        };
        if let Some((b, t)) = s.split_once(':') {
            let key = self.parse_browser(b).map_err(|_| absent(b))?;
            let id: TabId = t.parse().map_err(|_| not_found())?;
            return match self.browsers[&key].tabs.contains_key(&id) {
                true => Ok(Target {
                    browser: key,
                    tab: Some(id),
                }),
                false => Err(not_found()),
            };
        }
        if s.starts_with('b') {
            // A browser used as a target: its browser-level tools.
            let key = self.parse_browser(s).map_err(|_| absent(s))?;
            return Ok(Target {
                browser: key,
                tab: None,
            });
        }
        let id: TabId = s.parse().map_err(|_| not_found())?;
        let hits: Vec<BrowserKey> = self
            .browsers
            .values()
            .filter(|b| b.tabs.contains_key(&id))
            .map(|b| b.key)
            .collect();
        match hits.as_slice() {
            [] => Err(not_found()),
            [key] => Ok(Target {
                browser: *key,
                tab: Some(id),
            }),
            many => Err(Error::new(
                ErrorCode::AmbiguousTarget,
                format!("tab id {id} exists in several browsers; name it as <browser>:{id}"),
            )
            .with_details(
                json!({"candidates": many.iter().map(|&k| tab_ref(k, id)).collect::<Vec<_>>()}),
            )),
        }
    }

    pub fn tab_view(&self, target: Target) -> Option<TabView> {
        let b = self.browsers.get(&target.browser)?;
        let tab = b.tabs.get(&target.tab?)?;
        Some(tab_view(b, tab))
    }

    pub fn tab_views(&self, browser: Option<BrowserKey>) -> Vec<TabView> {
        self.browsers
            .values()
            .filter(|b| browser.is_none_or(|k| k == b.key))
            .flat_map(|b| b.tabs.values().map(move |t| tab_view(b, t)))
            .collect()
    }

    /// Every tool, optionally only those of one target (tab or browser) or with one name.
    pub fn tool_views(
        &self,
        target: Option<Target>,
        browser: Option<BrowserKey>,
        name: Option<&str>,
    ) -> Vec<ToolView> {
        let mut out = Vec::new();
        for (t, tools) in self.tool_sets() {
            if target.is_some_and(|want| want != t) || browser.is_some_and(|k| k != t.browser) {
                continue;
            }
            for tool in tools
                .iter()
                .filter(|tool| name.is_none_or(|n| tool.name == n))
            {
                out.push(ToolView::new(t.display(), browser_ref(t.browser), tool));
            }
        }
        out
    }

    /// Every (target, tools) pair: each tab, and each browser that has browser-level tools.
    fn tool_sets(&self) -> impl Iterator<Item = (Target, &Arc<Vec<Tool>>)> {
        self.browsers.values().flat_map(|b| {
            let own = (!b.tools.is_empty()).then_some((
                Target {
                    browser: b.key,
                    tab: None,
                },
                &b.tools,
            ));
            own.into_iter().chain(b.tabs.values().map(move |t| {
                (
                    Target {
                        browser: b.key,
                        tab: Some(t.id),
                    },
                    &t.tools,
                )
            }))
        })
    }

    fn find_tool(&self, target: Target, name: &str) -> Option<ToolRef> {
        let b = self.browsers.get(&target.browser)?;
        let set = match target.tab {
            Some(t) => &b.tabs.get(&t)?.tools,
            None => &b.tools,
        };
        let index = set.iter().position(|t| t.name == name)?;
        Some(ToolRef {
            set: set.clone(),
            index,
        })
    }

    /// The connection behind a target, without looking at tools (open/close/discover).
    pub fn connection(&self, target: Target) -> Result<(ConnHandle, String), Error> {
        match self.browsers.get(&target.browser) {
            Some(b) => Ok((b.conn.clone(), b.session_id.clone())),
            None => Err(Error::new(
                ErrorCode::NoBrowser,
                format!("browser {} is not connected", browser_ref(target.browser)),
            )),
        }
    }

    /// Chooses where a call goes. With a tab: that one, which must offer the tool. Without
    /// (see [`Registry::choose_among`]): the only tab offering the tool, else the one focused
    /// tab among those offering it, else AMBIGUOUS_TARGET listing the candidates.
    pub fn resolve_call(
        &self,
        tool: &str,
        tab: Option<&str>,
        browser: Option<&str>,
    ) -> Result<Resolved, Error> {
        if self.browsers.is_empty() {
            return Err(Error::new(
                ErrorCode::NoBrowser,
                "no browser is connected to browser-mcpd",
            ));
        }
        let only_browser = browser.map(|b| self.parse_browser(b)).transpose()?;
        let target = match tab {
            Some(t) => {
                let target = self.parse_tab(t)?;
                if only_browser.is_some_and(|k| k != target.browser) {
                    return Err(Error::new(
                        ErrorCode::TabNotFound,
                        format!(
                            "tab `{t}` is not in browser {}",
                            browser.unwrap_or_default()
                        ),
                    ));
                }
                if self.find_tool(target, tool).is_none() {
                    return Err(self.tool_not_found(tool, Some(target)));
                }
                target
            }
            None => self.choose_target(tool, only_browser)?,
        };
        self.resolve_target(target, tool)
    }

    /// The call's route to a known target, re-checked on every attempt (the browser may have
    /// reconnected, or the tab may have gone).
    pub fn resolve_target(&self, target: Target, tool: &str) -> Result<Resolved, Error> {
        let (conn, session_id) = self.connection(target)?;
        if let Some(tab) = target.tab {
            if !self.browsers[&target.browser].tabs.contains_key(&tab) {
                return Err(Error::new(
                    ErrorCode::TabNotFound,
                    format!("tab {} is gone", target.display()),
                ));
            }
        }
        let found = self.find_tool(target, tool);
        if found.is_none() {
            return Err(self.tool_not_found(tool, Some(target)));
        }
        Ok(Resolved {
            target,
            conn,
            session_id,
            tool: found,
        })
    }

    fn choose_target(&self, tool: &str, browser: Option<BrowserKey>) -> Result<Target, Error> {
        let keep = |b: &Browser| browser.is_none_or(|k| k == b.key);
        self.choose_among(tool, keep, || {
            let base = self.tool_not_found(tool, None);
            self.hidden_not_found(tool, keep, base)
        })
    }

    /// The default target rule, the same for every caller: the candidates are the targets
    /// offering `tool` in the browsers `keep` accepts. One candidate: it. Several: the one
    /// that is its browser's focused tab, if exactly one is; otherwise AMBIGUOUS_TARGET
    /// listing them. Nothing depends on which browser connected or was focused last, so two
    /// browsers each with a focused tab offering the tool are ambiguous, not a race.
    fn choose_among(
        &self,
        tool: &str,
        keep: impl Fn(&Browser) -> bool,
        not_found: impl FnOnce() -> Error,
    ) -> Result<Target, Error> {
        let candidates: Vec<Target> = self
            .tool_sets()
            .filter(|(t, _)| keep(&self.browsers[&t.browser]))
            .filter(|(_, tools)| tools.iter().any(|x| x.name == tool))
            .map(|(t, _)| t)
            .collect();
        let focused: Vec<Target> = candidates
            .iter()
            .copied()
            .filter(|t| t.tab.is_some() && self.browsers[&t.browser].focused == t.tab)
            .collect();
        match (candidates.as_slice(), focused.as_slice()) {
            ([], _) => Err(not_found()),
            ([only], _) | (_, [only]) => Ok(*only),
            (many, _) => {
                let list: Vec<Value> = many
                    .iter()
                    .map(|t| {
                        let (title, url) = t
                            .tab
                            .and_then(|id| self.browsers[&t.browser].tabs.get(&id))
                            .map(|tab| (tab.title.clone(), tab.url.clone()))
                            .unwrap_or_default();
                        json!({"tab": t.display(), "title": title, "url": url})
                    })
                    .collect();
                let refs: Vec<String> = many.iter().map(Target::display).collect();
                let why = if focused.is_empty() {
                    "none of them is focused".to_owned()
                } else {
                    format!("{} of them are focused", focused.len())
                };
                Err(Error::new(
                    ErrorCode::AmbiguousTarget,
                    format!(
                        "tool `{tool}` is offered by {} tabs ({}) and {why}; choose one with --tab",
                        many.len(),
                        refs.join(", ")
                    ),
                )
                .with_details(json!({"candidates": list})))
            }
        }
    }

    fn tool_not_found(&self, tool: &str, target: Option<Target>) -> Error {
        let mut available: Vec<String> = match target {
            Some(t) => self.tool_views(Some(t), None, None),
            None => self.tool_views(None, None, None),
        }
        .into_iter()
        .map(|v| v.name)
        .collect();
        available.sort();
        available.dedup();
        let Some(t) = target else {
            return Error::new(
                ErrorCode::ToolNotFound,
                format!("no tool `{tool}` on any tab"),
            )
            .with_details(json!({"available": available}));
        };
        match self.hidden_reason(t, tool) {
            // The user turned it off in the browser: say so, or they will hunt for a bug.
            Some(reason) => Error::new(
                ErrorCode::ToolNotFound,
                format!(
                    "`{tool}` on {} is hidden by the browser extension: {reason}",
                    t.display()
                ),
            )
            .with_details(json!({"available": available, "hidden": true, "reason": reason})),
            None => Error::new(
                ErrorCode::ToolNotFound,
                format!("no tool `{tool}` on {}", t.display()),
            )
            .with_details(json!({"available": available})),
        }
    }

    /// Why the extension keeps `tool` of `target` from us, if it said so.
    fn hidden_reason(&self, target: Target, tool: &str) -> Option<&str> {
        let hidden = self
            .browsers
            .get(&target.browser)?
            .tabs
            .get(&target.tab?)?
            .hidden
            .as_ref()?;
        hidden.names(tool).then_some(hidden.reason.as_str())
    }

    /// No target offers `tool`: when some tabs of the browsers `keep` accepts hide it, an
    /// error that says where and why; else `base`.
    fn hidden_not_found(&self, tool: &str, keep: impl Fn(&Browser) -> bool, base: Error) -> Error {
        let hits: Vec<(String, &str)> = self
            .browsers
            .values()
            .filter(|b| keep(b))
            .flat_map(|b| {
                b.tabs.values().filter_map(move |t| {
                    let h = t.hidden.as_ref().filter(|h| h.names(tool))?;
                    Some((tab_ref(b.key, t.id), h.reason.as_str()))
                })
            })
            .collect();
        let Some(&(_, first)) = hits.first() else {
            return base;
        };
        let reason = match hits.iter().all(|(_, r)| *r == first) {
            true => first,
            false => "the reasons differ per tab (see details.tabs)",
        };
        let refs: Vec<&str> = hits.iter().map(|(t, _)| t.as_str()).collect();
        let mut details = base.details.unwrap_or_else(|| json!({}));
        details["hidden"] = json!(true);
        details["reason"] = json!(reason);
        details["tabs"] = hits
            .iter()
            .map(|(tab, reason)| json!({"tab": tab, "reason": reason}))
            .collect();
        Error::new(
            ErrorCode::ToolNotFound,
            format!(
                "`{tool}` on {} is hidden by the browser extension: {reason}",
                refs.join(", ")
            ),
        )
        .with_details(details)
    }

    // ---- sessions (JSON-RPC agents see the browsers of their session, any dialect) -------

    fn in_session(&self, key: BrowserKey, session: &str) -> bool {
        self.browsers
            .get(&key)
            .is_some_and(|b| b.session_id == session)
    }

    /// The browsers whose session id is `session`.
    pub fn session_browsers(&self, session: &str) -> Vec<BrowserKey> {
        self.browsers
            .values()
            .filter(|b| b.session_id == session)
            .map(|b| b.key)
            .collect()
    }

    /// Every tool of every browser in a session, with where it lives.
    pub fn session_tool_views(&self, session: &str) -> Vec<ToolView> {
        self.tool_sets()
            .filter(|(t, _)| self.in_session(t.browser, session))
            .flat_map(|(t, tools)| {
                tools
                    .iter()
                    .map(move |tool| ToolView::new(t.display(), browser_ref(t.browser), tool))
            })
            .collect()
    }

    /// Where a session's call goes: `target` (a tab or browser reference, which must belong to
    /// the session and offer the tool), else the session's focused or only offer of the tool.
    pub fn resolve_in_session(
        &self,
        session: &str,
        tool: &str,
        target: Option<&str>,
    ) -> Result<Target, Error> {
        if self.session_browsers(session).is_empty() {
            return Err(Error::new(
                ErrorCode::NoBrowser,
                format!("no browser is connected in session `{session}`"),
            ));
        }
        if let Some(t) = target {
            let target = self.parse_tab(t)?;
            if !self.in_session(target.browser, session) {
                return Err(Error::new(
                    ErrorCode::TabNotFound,
                    format!("`{t}` is not in session `{session}`"),
                ));
            }
            if self.find_tool(target, tool).is_none() {
                return Err(self.tool_not_found(tool, Some(target)));
            }
            return Ok(target);
        }
        self.choose_among(
            tool,
            |b| b.session_id == session,
            || {
                let keep = |b: &Browser| b.session_id == session;
                let mut available: Vec<String> = self
                    .session_tool_views(session)
                    .into_iter()
                    .map(|v| v.name)
                    .collect();
                available.sort();
                available.dedup();
                let base = Error::new(
                    ErrorCode::ToolNotFound,
                    format!("no tool `{tool}` in session `{session}`"),
                )
                .with_details(json!({"available": available}));
                self.hidden_not_found(tool, keep, base)
            },
        )
    }

    /// The browser a new tab opens in when none is named: the only one connected; with
    /// several, AMBIGUOUS_TARGET (a new tab must not land in a browser the caller did not
    /// expect).
    pub fn default_browser(&self) -> Result<BrowserKey, Error> {
        let keys: Vec<BrowserKey> = self.browsers.keys().copied().collect();
        match keys.as_slice() {
            [] => Err(Error::new(
                ErrorCode::NoBrowser,
                "no browser is connected to browser-mcpd",
            )),
            [only] => Ok(*only),
            many => Err(Error::new(
                ErrorCode::AmbiguousTarget,
                format!(
                    "{} browsers are connected; choose one with --browser",
                    keys.len()
                ),
            )
            .with_details(
                json!({"candidates": many.iter().map(|&k| browser_ref(k)).collect::<Vec<_>>()}),
            )),
        }
    }

    /// Every connection, for shutdown.
    pub fn connections(&self) -> Vec<ConnHandle> {
        self.browsers.values().map(|b| b.conn.clone()).collect()
    }
}

fn tool_names(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

fn browser_view(b: &Browser) -> BrowserView {
    BrowserView {
        id: browser_ref(b.key),
        dialect: b.dialect.to_owned(),
        session_id: b.session_id.clone(),
        name: b.info.name.clone(),
        version: b.info.version.clone(),
        connected_at: b.connected_at.clone(),
        tabs: b.tabs.len(),
        tools: b.tools.len() + b.tabs.values().map(|t| t.tools.len()).sum::<usize>(),
    }
}

fn tab_view(b: &Browser, t: &Tab) -> TabView {
    TabView {
        tab_ref: tab_ref(b.key, t.id),
        browser: browser_ref(b.key),
        id: t.id,
        title: t.title.clone(),
        url: t.url.clone(),
        focused: b.focused == Some(t.id),
        tools: t.tools.as_ref().clone(),
        hidden: t.hidden.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(json!({"name": name})).unwrap()
    }

    fn tab(id: TabId, tools: &[&str], focused: bool) -> TabInfo {
        TabInfo {
            id,
            title: format!("tab {id}"),
            url: format!("https://example.com/{id}"),
            tools: Some(tools.iter().map(|n| tool(n)).collect()),
            focused: Some(focused),
            window_id: None,
            hidden: None,
        }
    }

    fn registry_with_two_browsers() -> (Registry, BrowserKey, BrowserKey) {
        let mut r = Registry::new(16, 16);
        let (a, _) = r.attach(
            "bridge",
            "s1",
            BrowserInfo::default(),
            ConnHandle::test(1),
            "t".into(),
        );
        r.replace_tabs(
            a,
            1,
            vec![tab(1, &["search"], false), tab(2, &["click"], false)],
        )
        .unwrap();
        let (b, _) = r.attach(
            "bridge",
            "s2",
            BrowserInfo::default(),
            ConnHandle::test(2),
            "t".into(),
        );
        r.replace_tabs(b, 2, vec![tab(1, &["search"], false)])
            .unwrap();
        (r, a, b)
    }

    #[test]
    fn clashing_tab_ids_are_distinguished_by_browser() {
        let (r, a, b) = registry_with_two_browsers();
        assert_eq!(
            r.parse_tab("b1:1").unwrap(),
            Target {
                browser: a,
                tab: Some(1)
            }
        );
        assert_eq!(
            r.parse_tab("b2:1").unwrap(),
            Target {
                browser: b,
                tab: Some(1)
            }
        );
        assert_eq!(
            r.parse_tab("1").unwrap_err().code,
            ErrorCode::AmbiguousTarget
        );
        assert_eq!(
            r.parse_tab("2").unwrap(),
            Target {
                browser: a,
                tab: Some(2)
            }
        );
        assert_eq!(
            r.parse_tab("b2:2").unwrap_err().code,
            ErrorCode::TabNotFound
        );
    }

    #[test]
    fn target_selection_prefers_focus_then_uniqueness() {
        let (mut r, a, b) = registry_with_two_browsers();
        assert_eq!(
            r.resolve_call("click", None, None).unwrap().target.tab,
            Some(2)
        );
        let e = r.resolve_call("search", None, None).unwrap_err();
        assert_eq!(e.code, ErrorCode::AmbiguousTarget);
        assert_eq!(
            e.details.unwrap()["candidates"].as_array().unwrap().len(),
            2
        );
        r.tab_focused(b, 2, 1, None, None).unwrap();
        assert_eq!(
            r.resolve_call("search", None, None).unwrap().target,
            Target {
                browser: b,
                tab: Some(1)
            }
        );
        assert_eq!(
            r.resolve_call("search", None, Some("b1"))
                .unwrap()
                .target
                .browser,
            a
        );
        assert_eq!(
            r.resolve_call("nope", None, None).unwrap_err().code,
            ErrorCode::ToolNotFound
        );
    }

    #[test]
    fn a_hidden_tool_fails_with_the_extensions_reason() {
        let (mut r, a, b) = registry_with_two_browsers();
        let off = |reason: &str| Hidden {
            tools: vec!["browser_snapshot".into(), "search".into()],
            reason: reason.into(),
        };
        r.set_tools(a, 1, 1, vec![], Some(off("this site is turned off")))
            .unwrap();
        let e = r.resolve_call("search", Some("b1:1"), None).unwrap_err();
        assert_eq!(e.code, ErrorCode::ToolNotFound);
        assert_eq!(
            e.message,
            "`search` on b1:1 is hidden by the browser extension: this site is turned off"
        );
        let details = e.details.unwrap();
        assert_eq!(
            (&details["hidden"], &details["reason"]),
            (&json!(true), &json!("this site is turned off"))
        );
        assert_eq!(
            r.tab_view(r.parse_tab("b1:1").unwrap()).unwrap().hidden,
            Some(off("this site is turned off"))
        );
        // Without --tab: another tab still offers `search`, so it goes there.
        assert_eq!(
            r.resolve_call("search", None, None).unwrap().target,
            Target {
                browser: b,
                tab: Some(1)
            }
        );
        // Nobody offers it and one tab hides it.
        let e = r.resolve_call("browser_snapshot", None, None).unwrap_err();
        assert_eq!(e.code, ErrorCode::ToolNotFound);
        assert!(
            e.message
                .starts_with("`browser_snapshot` on b1:1 is hidden"),
            "{}",
            e.message
        );
        // Two tabs hide it for different reasons: both named, the reasons in details.
        r.set_tools(b, 2, 1, vec![], Some(off("built-ins are off")))
            .unwrap();
        let e = r.resolve_call("search", None, None).unwrap_err();
        assert!(
            e.message.starts_with("`search` on b1:1, b2:1 is hidden"),
            "{}",
            e.message
        );
        assert_eq!(e.details.unwrap()["tabs"][1]["reason"], "built-ins are off");
        // Limited to one browser, only its hidden list counts.
        let e = r.resolve_call("search", None, Some("b2")).unwrap_err();
        assert!(
            e.message
                .ends_with("on b2:1 is hidden by the browser extension: built-ins are off"),
            "{}",
            e.message
        );
        // New tools without a hint: nothing is hidden any more, and the error is the plain one.
        r.set_tools(a, 1, 1, vec![], None).unwrap();
        let e = r.resolve_call("search", Some("b1:1"), None).unwrap_err();
        assert_eq!(e.message, "no tool `search` on b1:1");
        assert!(e.details.unwrap().get("hidden").is_none());
        // A tab update that carries tools replaces the hint; one without tools keeps it.
        r.upsert_tab(
            a,
            1,
            TabInfo {
                hidden: Some(off("off")),
                ..tab(1, &[], false)
            },
            None,
        )
        .unwrap();
        r.upsert_tab(
            a,
            1,
            TabInfo {
                tools: None,
                ..tab(1, &[], false)
            },
            None,
        )
        .unwrap();
        let e = r.resolve_call("search", Some("b1:1"), None).unwrap_err();
        assert!(
            e.message.ends_with("hidden by the browser extension: off"),
            "{}",
            e.message
        );
        // Focus with tools replaces it too.
        r.tab_focused(a, 1, 1, Some(vec![tool("search")]), None)
            .unwrap();
        assert!(r.resolve_call("search", Some("b1:1"), None).is_ok());
    }

    #[test]
    fn a_session_sees_its_browsers_of_every_dialect_and_no_others() {
        let (mut r, a, _) = registry_with_two_browsers();
        let (c, _) = r.attach(
            "jsonrpc",
            "s1",
            BrowserInfo::default(),
            ConnHandle::test(5),
            "t".into(),
        );
        r.set_browser_tools(c, 5, vec![tool("greet"), tool("search")])
            .unwrap();
        assert_eq!(r.session_browsers("s1"), vec![a, c]);
        let mut names: Vec<String> = r
            .session_tool_views("s1")
            .into_iter()
            .map(|v| format!("{}/{}", v.tab, v.name))
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec!["b1:1/search", "b1:2/click", "b3/greet", "b3/search"]
        );
        let t = r.resolve_in_session("s1", "greet", None).unwrap();
        assert_eq!(
            t,
            Target {
                browser: c,
                tab: None
            }
        );
        let e = r.resolve_in_session("s1", "search", None).unwrap_err();
        assert_eq!(e.code, ErrorCode::AmbiguousTarget);
        assert_eq!(
            r.resolve_in_session("s1", "search", Some("b3")).unwrap(),
            Target {
                browser: c,
                tab: None
            }
        );
        // s2's tab is not reachable from s1, even when named.
        assert_eq!(
            r.resolve_in_session("s1", "search", Some("b2:1"))
                .unwrap_err()
                .code,
            ErrorCode::TabNotFound
        );
        let e = r.resolve_in_session("s1", "nope", None).unwrap_err();
        assert_eq!(e.code, ErrorCode::ToolNotFound);
        assert_eq!(
            e.details.unwrap()["available"],
            json!(["click", "greet", "search"])
        );
        assert_eq!(
            r.resolve_in_session("empty", "greet", None)
                .unwrap_err()
                .code,
            ErrorCode::NoBrowser
        );
    }

    #[test]
    fn detach_removes_tabs_and_reconnect_keeps_the_key() {
        let (mut r, a, _) = registry_with_two_browsers();
        assert!(!r.detach(a, 99), "a stranger connection cannot detach");
        assert!(r.detach(a, 1));
        assert_eq!(r.tab_views(None).len(), 1);
        let (again, displaced) = r.attach(
            "bridge",
            "s1",
            BrowserInfo::default(),
            ConnHandle::test(3),
            "t".into(),
        );
        assert_eq!(again, a);
        assert!(displaced.is_none());
        // A second connection with a live session displaces the first.
        let (_, displaced) = r.attach(
            "bridge",
            "s1",
            BrowserInfo::default(),
            ConnHandle::test(4),
            "t".into(),
        );
        assert_eq!(displaced.unwrap().id, 3);
        r.upsert_tab(a, 3, tab(5, &[], false), None).unwrap();
        assert!(
            r.tab_views(Some(a)).is_empty(),
            "the displaced connection no longer writes"
        );
    }

    #[test]
    fn events_are_sequenced_and_resumable() {
        let (mut r, a, _) = registry_with_two_browsers();
        let last = r.last_seq();
        r.tab_closed(a, 1, 2);
        r.set_tools(a, 1, 1, vec![tool("search"), tool("more")], None)
            .unwrap();
        r.set_tools(a, 1, 1, vec![tool("search"), tool("more")], None)
            .unwrap(); // no change, no event
        let (backlog, gap) = r.events_after(last);
        assert!(gap.is_none());
        let kinds: Vec<_> = backlog.iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            vec![event_kind::TAB_CLOSED, event_kind::TOOLS_CHANGED]
        );
        assert_eq!(backlog[0].seq, last + 1);
        // The ring holds 16; ask for something older and the gap is reported.
        for i in 0..20 {
            r.upsert_tab(a, 1, tab(100 + i, &[], false), None).unwrap();
        }
        let (_, gap) = r.events_after(0);
        let (from, to) = gap.unwrap();
        assert_eq!(from, 1);
        assert!(to >= 10);
    }

    #[test]
    fn page_events_are_published_for_known_tabs_only() {
        let (mut r, a, _) = registry_with_two_browsers();
        let last = r.last_seq();
        let data = json!({"id": 4, "text": "Uncaught boom"});
        assert!(r.tab_event(a, 1, 1, event_kind::CONSOLE_ERROR, data.clone()));
        assert!(
            !r.tab_event(a, 1, 99, event_kind::NAVIGATED, json!({})),
            "unknown tab"
        );
        assert!(
            !r.tab_event(a, 7, 1, event_kind::NAVIGATED, json!({})),
            "stale connection"
        );
        let (backlog, _) = r.events_after(last);
        assert_eq!(backlog.len(), 1);
        assert_eq!(backlog[0].kind, event_kind::CONSOLE_ERROR);
        assert_eq!(backlog[0].seq, last + 1);
        let event: Value = serde_json::from_slice(&backlog[0].line).unwrap();
        assert_eq!(event["data"], data);
        assert_eq!(event["type"], "consoleError");
        assert!(event["tab"].as_str().unwrap().ends_with(":1"), "{event}");
    }

    #[test]
    fn limits_refuse_tabs_and_tool_sets_beyond_them() {
        let mut r = Registry::new(64, 16);
        r.set_limits(Limits {
            tabs_per_browser: 2,
            tools_per_tab: 1,
        });
        let (a, _) = r.attach(
            "bridge",
            "s",
            BrowserInfo::default(),
            ConnHandle::test(1),
            "t".into(),
        );
        let e = r
            .replace_tabs(
                a,
                1,
                vec![
                    tab(1, &["x"], false),
                    tab(2, &["x", "y"], false),
                    tab(3, &[], false),
                ],
            )
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::LimitExceeded);
        let views = r.tab_views(Some(a));
        assert_eq!(views.len(), 2, "the third tab is refused");
        assert!(views[1].tools.is_empty(), "too many tools: none taken");
        assert!(r.upsert_tab(a, 1, tab(9, &[], false), None).is_err());
        assert!(r.tab_focused(a, 1, 9, None, None).is_err());
        assert!(r.tab_views(Some(a)).iter().all(|t| t.id != 9));
        let e = r
            .set_tools(a, 1, 1, vec![tool("p"), tool("q")], None)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::LimitExceeded);
        assert_eq!(
            r.tab_views(Some(a))[0].tools.len(),
            1,
            "the old set is kept"
        );
        assert!(r
            .set_browser_tools(a, 1, vec![tool("p"), tool("q")])
            .is_err());
        // Updating an existing tab at the limit is fine.
        r.upsert_tab(a, 1, tab(2, &["z"], true), None).unwrap();
    }

    #[test]
    fn departed_sessions_are_remembered_boundedly() {
        let mut r = Registry::new(16, 16);
        let (kept, _) = r.attach(
            "bridge",
            "kept",
            BrowserInfo::default(),
            ConnHandle::test(1),
            "t".into(),
        );
        for i in 0..(REMEMBERED_SESSIONS as u64 * 2) {
            let (k, _) = r.attach(
                "register",
                &format!("inst_{i}"),
                BrowserInfo::default(),
                ConnHandle::test(10 + i),
                "t".into(),
            );
            r.detach(k, 10 + i);
        }
        assert!(r.remembered_sessions() <= REMEMBERED_SESSIONS + 1);
        // A connected browser is never forgotten, and a recent one comes back with its key.
        let (again, _) = r.attach(
            "bridge",
            "kept",
            BrowserInfo::default(),
            ConnHandle::test(2),
            "t".into(),
        );
        assert_eq!(again, kept);
    }

    #[test]
    fn a_disconnected_browser_is_no_browser_not_a_missing_tab() {
        let (mut r, a, _) = registry_with_two_browsers();
        r.detach(a, 1);
        let e = r.parse_tab("b1:1").unwrap_err();
        assert_eq!(e.code, ErrorCode::NoBrowser, "{e:?}");
        assert!(e.retryable);
        assert_eq!(r.parse_tab("b1").unwrap_err().code, ErrorCode::NoBrowser);
        assert_eq!(
            r.parse_tab("b9:1").unwrap_err().code,
            ErrorCode::TabNotFound
        );
        assert_eq!(
            r.parse_tab("b2:9").unwrap_err().code,
            ErrorCode::TabNotFound
        );
    }

    #[test]
    fn a_session_that_keeps_coming_back_keeps_its_key() {
        let mut r = Registry::new(16, 16);
        let (first, _) = r.attach(
            "bridge",
            "flaky",
            BrowserInfo::default(),
            ConnHandle::test(1),
            "t".into(),
        );
        r.detach(first, 1);
        for i in 0..(REMEMBERED_SESSIONS as u64 + 100) {
            let (k, _) = r.attach(
                "bridge",
                "flaky",
                BrowserInfo::default(),
                ConnHandle::test(10 + i),
                "t".into(),
            );
            assert_eq!(k, first, "reconnect {i}");
            r.detach(k, 10 + i);
        }
        assert!(r.remembered_sessions() <= REMEMBERED_SESSIONS + 1);
    }
}
