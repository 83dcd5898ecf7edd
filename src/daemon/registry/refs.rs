//! How browsers and tabs are named: the daemon's keys (`b1`, `b1:12`) and the references a
//! caller may write, parsed with `FromStr` and printed with `Display`.
//!
//! Parsing is syntax only; whether a reference names something connected is the business of
//! [`super::resolve`].

use crate::protocol::bridge::TabId;
use std::fmt;
use std::str::FromStr;

/// A browser's daemon-assigned key, shown as `b1`; it stays the same when the same session
/// reconnects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BrowserKey(pub u64);

impl fmt::Display for BrowserKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b{}", self.0)
    }
}

/// Where a call or command goes: a tab of a browser, or the browser itself for dialects
/// without tabs. Shown as `b1:12` or `b1`, which is unambiguous even when two browsers both
/// have a tab 12.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    pub browser: BrowserKey,
    pub tab: Option<TabId>,
}

impl Target {
    pub fn browser(browser: BrowserKey) -> Target {
        Target { browser, tab: None }
    }

    pub fn tab(browser: BrowserKey, tab: TabId) -> Target {
        Target {
            browser,
            tab: Some(tab),
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.tab {
            Some(tab) => write!(f, "{}:{tab}", self.browser),
            None => self.browser.fmt(f),
        }
    }
}

/// A browser as a caller names it: by key (`b1`, or just `1`), or by its session id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrowserRef {
    Key(BrowserKey),
    Session(String),
}

impl FromStr for BrowserRef {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<BrowserRef, Self::Err> {
        Ok(match s.strip_prefix('b').unwrap_or(s).parse::<u64>() {
            Ok(n) => BrowserRef::Key(BrowserKey(n)),
            Err(_) => BrowserRef::Session(s.to_owned()),
        })
    }
}

impl fmt::Display for BrowserRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BrowserRef::Key(k) => k.fmt(f),
            BrowserRef::Session(s) => f.write_str(s),
        }
    }
}

/// A target as a caller names it: `b1:12` (a tab of a browser), `b1` (a browser, for its
/// browser-level tools), or a bare `12` (the tab 12 of whichever browser has one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetRef {
    Tab(BrowserRef, TabId),
    Browser(BrowserRef),
    BareTab(TabId),
}

/// The text is no target reference at all (`b1:x`, `x`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotATarget;

impl FromStr for TargetRef {
    type Err = NotATarget;

    fn from_str(s: &str) -> Result<TargetRef, NotATarget> {
        let tab = |t: &str| t.parse::<TabId>().map_err(|_| NotATarget);
        if let Some((b, t)) = s.split_once(':') {
            let Ok(browser) = b.parse();
            return Ok(TargetRef::Tab(browser, tab(t)?));
        }
        if s.starts_with('b') {
            let Ok(browser) = s.parse();
            return Ok(TargetRef::Browser(browser));
        }
        Ok(TargetRef::BareTab(tab(s)?))
    }
}

impl fmt::Display for TargetRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetRef::Tab(b, t) => write!(f, "{b}:{t}"),
            TargetRef::Browser(b) => b.fmt(f),
            TargetRef::BareTab(t) => t.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_and_print_back() {
        for s in ["b1:12", "b3", "12", "session-x:4"] {
            assert_eq!(s.parse::<TargetRef>().unwrap().to_string(), s);
        }
        assert_eq!(
            "1:2".parse::<TargetRef>().unwrap(),
            TargetRef::Tab(BrowserRef::Key(BrowserKey(1)), 2)
        );
        assert_eq!(
            "bee".parse::<TargetRef>().unwrap(),
            TargetRef::Browser(BrowserRef::Session("bee".into()))
        );
        assert_eq!("b1:x".parse::<TargetRef>(), Err(NotATarget));
        assert_eq!("x".parse::<TargetRef>(), Err(NotATarget));
        assert_eq!(Target::tab(BrowserKey(2), 7).to_string(), "b2:7");
        assert_eq!(Target::browser(BrowserKey(2)).to_string(), "b2");
    }
}
