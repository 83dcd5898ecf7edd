//! The live picture, plain data: browsers → tabs → tools, the focus, remembered sessions and
//! the event log, with the mutations the dialect adapters make. Every mutation that changes
//! what a reader sees publishes its [`Change`].
//!
//! A browser's updates come from its connection; only the connection that owns the browser
//! now (`conn_id`) may change it, so a displaced connection's late messages change nothing.

use super::events::{Change, EventLog, PageEvent, TabChange};
use super::lanes::Lanes;
use super::refs::{BrowserKey, Target};
use super::sessions::Sessions;
use crate::daemon::conn::ConnHandle;
use crate::daemon::limits;
use crate::error::Error;
use crate::protocol::bridge::{BrowserInfo, Hidden, TabId, TabInfo};
use crate::protocol::Tool;
use serde_json::Value;
use std::collections::{btree_map, BTreeMap, BTreeSet};
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct Tab {
    pub id: TabId,
    pub title: String,
    pub url: String,
    pub tools: Arc<Vec<Tool>>,
    /// What the extension keeps from us and why; replaced together with `tools`.
    pub hidden: Option<Hidden>,
}

impl Browser {
    /// The browser focused a tab; the person did, unless an agent's action is moving the focus.
    fn focus(&mut self, id: TabId, agent_moving: bool) {
        self.focused = Some(id);
        if !agent_moving {
            self.person_focus = Some(id);
        }
    }
}

impl Tab {
    fn empty(id: TabId) -> Tab {
        Tab {
            id,
            title: String::new(),
            url: String::new(),
            tools: Arc::new(Vec::new()),
            hidden: None,
        }
    }
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
    /// The tab the person focused last: focus an agent's action moved does not count (see
    /// [`super::lanes`]). What MCP sessions follow.
    pub person_focus: Option<TabId>,
    /// Browser-level tools, for dialects that have no tabs.
    pub tools: Arc<Vec<Tool>>,
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

/// What a connection reports about its browser (see [`State::update`]).
#[derive(Debug)]
pub enum Update {
    /// `connected` again on a live connection: new browser info and a fresh tabs snapshot.
    Resync {
        info: BrowserInfo,
        tabs: Vec<TabInfo>,
    },
    /// tabCreated / tabUpdated: tools absent from `info` are kept; `request_id` says which
    /// openTab asked for the tab.
    Tab {
        info: TabInfo,
        request_id: Option<String>,
    },
    TabClosed(TabId),
    /// tabFocused, with the tab's tools when the extension sent them.
    TabFocused {
        tab: TabId,
        tools: Option<Vec<Tool>>,
        hidden: Option<Hidden>,
    },
    /// toolsChanged / toolsDiscovered: a tab's tools and what the extension hides.
    Tools {
        tab: TabId,
        tools: Vec<Tool>,
        hidden: Option<Hidden>,
    },
    /// Browser-level tools (dialects without tabs).
    BrowserTools(Vec<Tool>),
    /// Something a page did (`tabEvent`): published as an event of `kind` (one of
    /// [`crate::protocol::control::event_kind::PAGE`]) when the tab is known; nothing changes in the registry.
    PageEvent {
        tab: TabId,
        kind: &'static str,
        data: Value,
    },
}

/// What a new browser brings with it, stored with it at once.
pub enum Initial {
    /// A tabs snapshot (seed 001's `connected`).
    Tabs(Vec<TabInfo>),
    /// Browser-level tools (seed 002's catalogue).
    Tools(Vec<Tool>),
    Nothing,
}

pub struct State {
    pub browsers: BTreeMap<BrowserKey, Browser>,
    pub limits: Limits,
    pub sessions: Sessions,
    pub events: EventLog,
    pub lanes: Lanes,
}

fn names(tools: &[Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.clone()).collect()
}

impl State {
    pub fn new(ring_capacity: usize, broadcast_capacity: usize) -> State {
        State {
            browsers: BTreeMap::new(),
            limits: Limits::default(),
            sessions: Sessions::default(),
            events: EventLog::new(ring_capacity, broadcast_capacity),
            lanes: Lanes::default(),
        }
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
        let key = self.sessions.key(dialect, session_id);
        let displaced = self.remove_browser(key, None).map(|b| b.conn);
        let change = Change::BrowserConnected {
            dialect,
            session_id: session_id.to_owned(),
            name: info.name.clone(),
            version: info.version.clone(),
        };
        self.browsers.insert(
            key,
            Browser {
                key,
                conn,
                dialect,
                session_id: session_id.to_owned(),
                info,
                connected_at,
                tabs: BTreeMap::new(),
                focused: None,
                person_focus: None,
                tools: Arc::new(Vec::new()),
            },
        );
        self.events.publish(key, None, change);
        (key, displaced)
    }

    /// Removes a browser; with `conn_id`, only if that connection owns it.
    pub fn remove_browser(&mut self, key: BrowserKey, conn_id: Option<u64>) -> Option<Browser> {
        if let Some(want) = conn_id {
            if self.browsers.get(&key)?.conn.id != want {
                return None;
            }
        }
        let browser = self.browsers.remove(&key)?;
        let browsers = &self.browsers;
        self.sessions
            .departed(browser.dialect, &browser.session_id, |k| {
                browsers.contains_key(&k)
            });
        let closed_tabs = browser
            .tabs
            .keys()
            .map(|&t| Target::tab(key, t).to_string())
            .collect();
        self.events
            .publish(key, None, Change::BrowserDisconnected { closed_tabs });
        Some(browser)
    }

    /// Applies what a browser's connection reports; the first refusal by a limit is returned
    /// (what is within the limits is applied).
    pub fn update(&mut self, key: BrowserKey, conn_id: u64, u: Update) -> Result<(), Error> {
        match u {
            Update::Resync { info, tabs } => {
                self.set_browser_info(key, conn_id, info);
                self.replace_tabs(key, conn_id, tabs)
            }
            Update::Tab { info, request_id } => {
                self.upsert_tab(key, conn_id, info, request_id.as_deref())
            }
            Update::TabClosed(tab) => {
                self.tab_closed(key, conn_id, tab);
                Ok(())
            }
            Update::TabFocused { tab, tools, hidden } => {
                self.tab_focused(key, conn_id, tab, tools, hidden)
            }
            Update::Tools { tab, tools, hidden } => {
                self.set_tools(key, conn_id, tab, tools, hidden)
            }
            Update::BrowserTools(tools) => self.set_browser_tools(key, conn_id, tools),
            Update::PageEvent { tab, kind, data } => {
                self.tab_event(key, conn_id, tab, kind, data);
                Ok(())
            }
        }
    }

    fn browser_mut(&mut self, key: BrowserKey, conn_id: u64) -> Option<&mut Browser> {
        self.browsers.get_mut(&key).filter(|b| b.conn.id == conn_id)
    }

    fn set_browser_info(&mut self, key: BrowserKey, conn_id: u64, info: BrowserInfo) {
        if let Some(b) = self.browser_mut(key, conn_id) {
            b.info = info;
        }
    }

    /// Stores what a new browser brings; the first refusal is returned.
    pub fn initial(
        &mut self,
        key: BrowserKey,
        conn_id: u64,
        initial: Initial,
    ) -> Result<(), Error> {
        match initial {
            Initial::Tabs(tabs) => self.replace_tabs(key, conn_id, tabs),
            Initial::Tools(tools) => self.set_browser_tools(key, conn_id, tools),
            Initial::Nothing => Ok(()),
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
        let fresh: BTreeSet<TabId> = tabs.iter().map(|t| t.id).collect();
        // After a reconnect the browser's old tabs are no longer listed: those it still has
        // keep their owners.
        let ids: Vec<TabId> = fresh.iter().copied().collect();
        let gone: Vec<TabId> = b
            .tabs
            .keys()
            .copied()
            .filter(|id| !fresh.contains(id))
            .collect();
        for id in gone {
            self.tab_closed(key, conn_id, id);
        }
        self.lanes.browser_tabs(key, &ids);
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
        mut info: TabInfo,
        request_id: Option<&str>,
    ) -> Result<(), Error> {
        let limits = self.limits;
        let agent_moving = self.lanes.agent_moving(key);
        let Some(b) = self.browser_mut(key, conn_id) else {
            return Ok(());
        };
        let id = info.id;
        let existed = b.tabs.contains_key(&id);
        if !existed && b.tabs.len() >= limits.tabs_per_browser {
            return Err(limits::too_many_tabs(&key, id, limits.tabs_per_browser));
        }
        let mut refused = Ok(());
        if let Some(n) = info.tools.as_ref().map(Vec::len) {
            if n > limits.tools_per_tab {
                info.tools = None;
                let place = format!("tab {}", Target::tab(key, id));
                refused = Err(limits::too_many_tools(&place, n, limits.tools_per_tab));
            }
        }
        let focused = info.focused == Some(true);
        let tab = b.tabs.entry(id).or_insert_with(|| Tab::empty(id));
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
        let data = TabChange {
            title: tab.title.clone(),
            url: tab.url.clone(),
            tools: names(&tab.tools),
            request_id: Some(request_id.map(str::to_owned)),
        };
        if focused {
            b.focus(id, agent_moving);
        }
        if !existed {
            self.events.publish(key, Some(id), Change::TabCreated(data));
        } else if changed || tools_changed {
            self.events.publish(key, Some(id), Change::TabUpdated(data));
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
        if b.person_focus == Some(id) {
            b.person_focus = None;
        }
        self.lanes.tab_closed(Target::tab(key, id));
        self.events.publish(key, Some(id), Change::TabClosed {});
        true
    }

    /// A page event on a tab the registry knows is published; false (nothing published)
    /// otherwise.
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
            self.events
                .publish(key, Some(id), Change::Page(PageEvent { kind, data }));
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
            return Err(limits::too_many_tabs(&key, id, limits.tabs_per_browser));
        }
        if let btree_map::Entry::Vacant(slot) = b.tabs.entry(id) {
            // Focus on a tab we were never told about: know it from now on.
            slot.insert(Tab::empty(id));
            let data = TabChange {
                title: String::new(),
                url: String::new(),
                tools: Vec::new(),
                request_id: None,
            };
            self.events.publish(key, Some(id), Change::TabCreated(data));
        }
        let agent_moving = self.lanes.agent_moving(key);
        let Some(b) = self.browser_mut(key, conn_id) else {
            return Ok(());
        };
        b.focus(id, agent_moving);
        let refused = match tools {
            Some(tools) => self.set_tools(key, conn_id, id, tools, hidden),
            None => Ok(()),
        };
        self.events.publish(key, Some(id), Change::TabFocused {});
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
        let max = self.limits.tools_per_tab;
        let Some(b) = self.browser_mut(key, conn_id) else {
            return Ok(());
        };
        let Some(tab) = b.tabs.get_mut(&id) else {
            return Ok(());
        };
        if tools.len() > max {
            let place = format!("tab {}", Target::tab(key, id));
            return Err(limits::too_many_tools(&place, tools.len(), max));
        }
        tab.hidden = hidden;
        if tab.tools.as_slice() == tools.as_slice() {
            return Ok(());
        }
        tab.tools = Arc::new(tools);
        let tools = names(&tab.tools);
        self.events
            .publish(key, Some(id), Change::ToolsChanged { tools });
        Ok(())
    }

    /// Browser-level tools (dialects without tabs).
    pub fn set_browser_tools(
        &mut self,
        key: BrowserKey,
        conn_id: u64,
        tools: Vec<Tool>,
    ) -> Result<(), Error> {
        let max = self.limits.tools_per_tab;
        let Some(b) = self.browser_mut(key, conn_id) else {
            return Ok(());
        };
        if tools.len() > max {
            let place = format!("browser {key}");
            return Err(limits::too_many_tools(&place, tools.len(), max));
        }
        if b.tools.as_slice() == tools.as_slice() {
            return Ok(());
        }
        b.tools = Arc::new(tools);
        let tools = names(&b.tools);
        self.events
            .publish(key, None, Change::ToolsChanged { tools });
        Ok(())
    }

    // ---- reading ------------------------------------------------------------------------

    /// Every (target, tools) pair: each tab, and each browser that has browser-level tools.
    pub fn tool_sets(&self) -> impl Iterator<Item = (Target, &Arc<Vec<Tool>>)> {
        self.browsers.values().flat_map(|b| {
            let own = (!b.tools.is_empty()).then_some((Target::browser(b.key), &b.tools));
            own.into_iter().chain(
                b.tabs
                    .values()
                    .map(move |t| (Target::tab(b.key, t.id), &t.tools)),
            )
        })
    }

    pub fn tab(&self, target: Target) -> Option<&Tab> {
        self.browsers.get(&target.browser)?.tabs.get(&target.tab?)
    }
}
