//! Views: the registry as the control API, MCP and JSON-RPC show it. Under the lock only
//! cheap copies are taken (strings and shared tool lists); the views, with their copies of
//! every tool, are built after the lock is released, and serialized by the caller.

use super::refs::{BrowserKey, Target};
use super::state::{Browser, State, Tab};
use crate::protocol::bridge::{Hidden, TabId};
use crate::protocol::control::{BrowserView, TabView, ToolView};
use crate::protocol::Tool;
use std::sync::Arc;

pub fn browser_view(b: &Browser) -> BrowserView {
    BrowserView {
        id: b.key.to_string(),
        dialect: b.dialect.to_owned(),
        session_id: b.session_id.clone(),
        name: b.info.name.clone(),
        version: b.info.version.clone(),
        connected_at: b.connected_at.clone(),
        tabs: b.tabs.len(),
        tools: b.tools.len() + b.tabs.values().map(|t| t.tools.len()).sum::<usize>(),
        managed: false,
    }
}

/// Which tab a view calls focused: the browser's, or the person's (what MCP sessions follow,
/// see [`super::lanes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Browser,
    Person,
}

/// A tab as taken under the lock.
pub struct TabCopy {
    browser: BrowserKey,
    id: TabId,
    title: String,
    url: String,
    focused: bool,
    tools: Arc<Vec<Tool>>,
    hidden: Option<Hidden>,
    owner: Option<String>,
}

impl TabCopy {
    pub fn of(s: &State, b: &Browser, t: &Tab, focus: Focus) -> TabCopy {
        let focused = match focus {
            Focus::Browser => b.focused,
            Focus::Person => b.person_focus,
        };
        let owner = s.lanes.owner(Target::tab(b.key, t.id));
        TabCopy {
            browser: b.key,
            id: t.id,
            title: t.title.clone(),
            url: t.url.clone(),
            focused: focused == Some(t.id),
            tools: t.tools.clone(),
            hidden: t.hidden.clone(),
            owner: owner.map(|(_, label)| label.to_owned()),
        }
    }

    pub fn view(self) -> TabView {
        TabView {
            tab_ref: Target::tab(self.browser, self.id).to_string(),
            browser: self.browser.to_string(),
            id: self.id,
            title: self.title,
            url: self.url,
            focused: self.focused,
            tools: self.tools.as_ref().clone(),
            hidden: self.hidden,
            owner: self.owner,
        }
    }
}

/// The tool lists of some targets, as taken under the lock.
pub struct ToolsCopy(Vec<(Target, Arc<Vec<Tool>>)>);

impl ToolsCopy {
    pub fn of(state: &State, keep: impl Fn(Target) -> bool) -> ToolsCopy {
        ToolsCopy(
            state
                .tool_sets()
                .filter(|(t, _)| keep(*t))
                .map(|(t, tools)| (t, tools.clone()))
                .collect(),
        )
    }

    /// Every tool, or those named `name`.
    pub fn views(&self, name: Option<&str>) -> Vec<ToolView> {
        self.0
            .iter()
            .flat_map(|(target, tools)| {
                tools
                    .iter()
                    .filter(move |t| name.is_none_or(|n| t.name == n))
                    .map(move |t| ToolView::new(target.to_string(), target.browser.to_string(), t))
            })
            .collect()
    }
}
