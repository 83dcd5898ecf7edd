//! Resolution: from what a caller wrote (a tool name, maybe a tab or browser reference) to a
//! target that is connected now, or a typed error that says why not.
//!
//! The errors here name no flag or parameter of any front end: the control API, the CLI, MCP
//! and JSON-RPC each ask for a target differently, so each adds its own hint (see
//! [`crate::error::Error::hint`]); the candidates are always in `details.candidates`.

use super::refs::{BrowserKey, BrowserRef, Target, TargetRef};
use super::state::{Browser, State};
use super::views::Focus;
use crate::daemon::conn::ConnHandle;
use crate::error::{Error, ErrorCode};
use crate::protocol::Tool;
use serde_json::{json, Value};
use std::sync::Arc;

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
    pub tool: ToolRef,
}

fn no_browser_at_all() -> Error {
    Error::new(
        ErrorCode::NoBrowser,
        "no browser is connected to browser-mcpd",
    )
}

impl State {
    /// The connected browser a reference names.
    pub fn browser_key(&self, r: &BrowserRef) -> Result<BrowserKey, Error> {
        let key = match r {
            BrowserRef::Key(k) => Some(*k),
            // A session id is a fine way to name a browser too.
            BrowserRef::Session(s) => self
                .browsers
                .values()
                .find(|b| b.session_id == *s)
                .map(|b| b.key),
        };
        match key {
            Some(k) if self.browsers.contains_key(&k) => Ok(k),
            _ => Err(Error::new(
                ErrorCode::NoBrowser,
                format!("no connected browser `{r}`"),
            )
            .with_details(json!({"browsers": self.browsers.keys().map(ToString::to_string).collect::<Vec<_>>()}))),
        }
    }

    /// Parses a browser reference: `b1`, `1` or a session id.
    pub fn parse_browser(&self, s: &str) -> Result<BrowserKey, Error> {
        let Ok(r) = s.parse::<BrowserRef>();
        self.browser_key(&r)
    }

    /// Parses a target: `b1:12`, `b1`, or a bare `12` when only one browser has tab 12.
    pub fn parse_tab(&self, s: &str) -> Result<Target, Error> {
        let not_found = || Error::new(ErrorCode::TabNotFound, format!("no tab `{s}`"));
        // A browser we know that is not connected now (reconnecting, or gone for good) is
        // NO_BROWSER, which a caller may retry; a name we never handed out is TAB_NOT_FOUND.
        let absent = |b: &BrowserRef| match b {
            BrowserRef::Key(k) if self.sessions.remembers(*k) => Error::new(
                ErrorCode::NoBrowser,
                format!("browser {k} is not connected (it may be reconnecting)"),
            ),
            _ => not_found(),
        };
        match s.parse::<TargetRef>().map_err(|_| not_found())? {
            TargetRef::Tab(b, id) => {
                let key = self.browser_key(&b).map_err(|_| absent(&b))?;
                match self.browsers[&key].tabs.contains_key(&id) {
                    true => Ok(Target::tab(key, id)),
                    false => Err(not_found()),
                }
            }
            // A browser used as a target: its browser-level tools.
            TargetRef::Browser(b) => {
                let key = self.browser_key(&b).map_err(|_| absent(&b))?;
                Ok(Target::browser(key))
            }
            TargetRef::BareTab(id) => {
                let hits: Vec<Target> = self
                    .browsers
                    .values()
                    .filter(|b| b.tabs.contains_key(&id))
                    .map(|b| Target::tab(b.key, id))
                    .collect();
                match hits.as_slice() {
                    [] => Err(not_found()),
                    [only] => Ok(*only),
                    many => Err(Error::new(
                        ErrorCode::AmbiguousTarget,
                        format!(
                            "tab id {id} exists in several browsers; name it as <browser>:{id}"
                        ),
                    )
                    .with_details(json!({"candidates": self.candidates(many)}))),
                }
            }
        }
    }

    /// `details.candidates` of AMBIGUOUS_TARGET: each target with its title and URL.
    fn candidates(&self, targets: &[Target]) -> Vec<Value> {
        targets
            .iter()
            .map(|t| {
                let (title, url) = self
                    .tab(*t)
                    .map(|tab| (tab.title.as_str(), tab.url.as_str()))
                    .unwrap_or_default();
                json!({"tab": t.to_string(), "title": title, "url": url})
            })
            .collect()
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
    pub fn connection(&self, target: Target) -> Result<ConnHandle, Error> {
        match self.browsers.get(&target.browser) {
            Some(b) => Ok(b.conn.clone()),
            None => Err(Error::new(
                ErrorCode::NoBrowser,
                format!("browser {} is not connected", target.browser),
            )),
        }
    }

    /// Chooses where a call goes. With a tab (or browser): that one, which must offer the
    /// tool. Without: see [`State::choose_among`].
    pub fn resolve_call(
        &self,
        tool: &str,
        tab: Option<&str>,
        browser: Option<&str>,
        focus: Focus,
    ) -> Result<Resolved, Error> {
        if self.browsers.is_empty() {
            return Err(no_browser_at_all());
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
                target
            }
            None => {
                let keep = |b: &Browser| only_browser.is_none_or(|k| k == b.key);
                self.choose_among(tool, keep, focus, || {
                    let base = self.tool_not_found(tool, None);
                    self.hidden_not_found(tool, keep, base)
                })?
            }
        };
        self.resolve_target(target, tool)
    }

    /// The call's route to a known target, re-checked on every attempt (the browser may have
    /// reconnected, or the tab may have gone).
    pub fn resolve_target(&self, target: Target, tool: &str) -> Result<Resolved, Error> {
        let conn = self.connection(target)?;
        if target.tab.is_some() && self.tab(target).is_none() {
            return Err(Error::new(
                ErrorCode::TabNotFound,
                format!("tab {target} is gone"),
            ));
        }
        match self.find_tool(target, tool) {
            Some(tool) => Ok(Resolved { target, conn, tool }),
            None => Err(self.tool_not_found(tool, Some(target))),
        }
    }

    /// The default target rule, the same for every caller: the candidates are the targets
    /// offering `tool` in the browsers `keep` accepts. One candidate: it. Several: the one
    /// that is its browser's focused tab, if exactly one is; otherwise AMBIGUOUS_TARGET
    /// listing them. Nothing depends on which browser connected or was focused last, so two
    /// browsers each with a focused tab offering the tool are ambiguous, not a race. An
    /// agent's call goes by the tab the person focused (`focus`), which no other agent's
    /// action moves.
    fn choose_among(
        &self,
        tool: &str,
        keep: impl Fn(&Browser) -> bool,
        focus: Focus,
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
            .filter(|t| {
                let b = &self.browsers[&t.browser];
                let focused = match focus {
                    Focus::Browser => b.focused,
                    Focus::Person => b.person_focus,
                };
                t.tab.is_some() && focused == t.tab
            })
            .collect();
        match (candidates.as_slice(), focused.as_slice()) {
            ([], _) => Err(not_found()),
            ([only], _) | (_, [only]) => Ok(*only),
            (many, _) => {
                let refs: Vec<String> = many.iter().map(Target::to_string).collect();
                let why = match focused.len() {
                    0 => "none of them is focused".to_owned(),
                    n => format!("{n} of them are focused"),
                };
                Err(Error::new(
                    ErrorCode::AmbiguousTarget,
                    format!(
                        "tool `{tool}` is offered by {} tabs ({}) and {why}",
                        many.len(),
                        refs.join(", ")
                    ),
                )
                .with_details(json!({"candidates": self.candidates(many)})))
            }
        }
    }

    fn tool_names(&self, keep: impl Fn(Target) -> bool) -> Vec<String> {
        let mut names: Vec<String> = self
            .tool_sets()
            .filter(|(t, _)| keep(*t))
            .flat_map(|(_, tools)| tools.iter().map(|t| t.name.clone()))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    fn tool_not_found(&self, tool: &str, target: Option<Target>) -> Error {
        let available = self.tool_names(|t| target.is_none_or(|want| want == t));
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
                format!("`{tool}` on {t} is hidden by the browser extension: {reason}"),
            )
            .with_details(json!({"available": available, "hidden": true, "reason": reason})),
            None => Error::new(ErrorCode::ToolNotFound, format!("no tool `{tool}` on {t}"))
                .with_details(json!({"available": available})),
        }
    }

    /// Why the extension keeps `tool` of `target` from us, if it said so.
    fn hidden_reason(&self, target: Target, tool: &str) -> Option<&str> {
        let hidden = self.tab(target)?.hidden.as_ref()?;
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
                    Some((Target::tab(b.key, t.id).to_string(), h.reason.as_str()))
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
        let keep = |b: &Browser| b.session_id == session;
        self.choose_among(tool, keep, Focus::Browser, || {
            let available = self.tool_names(|t| self.in_session(t.browser, session));
            let base = Error::new(
                ErrorCode::ToolNotFound,
                format!("no tool `{tool}` in session `{session}`"),
            )
            .with_details(json!({"available": available}));
            self.hidden_not_found(tool, keep, base)
        })
    }

    /// The browser a new tab opens in: the one named, else the only one connected; with
    /// several, AMBIGUOUS_TARGET (a new tab must not land in a browser the caller did not
    /// expect).
    pub fn browser_for_new_tab(&self, named: Option<&str>) -> Result<BrowserKey, Error> {
        if let Some(b) = named {
            return self.parse_browser(b);
        }
        let keys: Vec<BrowserKey> = self.browsers.keys().copied().collect();
        match keys.as_slice() {
            [] => Err(no_browser_at_all()),
            [only] => Ok(*only),
            many => Err(Error::new(
                ErrorCode::AmbiguousTarget,
                format!("{} browsers are connected", many.len()),
            )
            .with_details(json!({"candidates": many.iter().map(|&k| {
                let b = &self.browsers[&k];
                json!({"browser": k.to_string(), "name": b.info.name, "version": b.info.version})
            }).collect::<Vec<_>>()}))),
        }
    }
}
