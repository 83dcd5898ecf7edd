//! The tab commands: open, close, and discover a tab's tools afresh.

use super::exchange::{exchange, shutting_down, Scope};
use super::policy::checked_timeout;
use crate::daemon::conn::{next_id, Request};
use crate::daemon::context::Daemon;
use crate::daemon::registry::{LaneId, Target};
use crate::error::{Error, ErrorCode};
use crate::protocol::bridge::TabInfo;
use crate::protocol::control::{OpenTabRequest, TabGroup, TabView};
use std::time::Duration;
use tokio::sync::oneshot;

fn scope(d: &Daemon) -> Scope<'_> {
    Scope {
        stop: &d.shutdown,
        tasks: &d.tasks,
    }
}

fn timeout(d: &Daemon, ms: Option<u64>) -> Result<Duration, Error> {
    checked_timeout(ms, d.config().call_timeout)
}

/// Opens a tab for the person: see [`open_tab_as`].
pub async fn open_tab(d: &Daemon, req: OpenTabRequest) -> Result<TabView, Error> {
    open_tab_as(d, req, None).await
}

/// Opens a tab and answers once the browser reports it (tabCreated with our requestId). A tab
/// an agent's lane opens is its own (issue 60), and a focus it moves is not the person's.
pub async fn open_tab_as(
    d: &Daemon,
    req: OpenTabRequest,
    lane: Option<LaneId>,
) -> Result<TabView, Error> {
    if d.draining.is_cancelled() {
        return Err(shutting_down());
    }
    let (browser, conn) = d.registry.new_tab_route(req.browser.as_deref())?;
    let _moving = (lane.is_some() && req.focus).then(|| d.registry.focus_moving(browser));
    let id = next_id("open");
    let (reply, rx) = oneshot::channel();
    let request = Request::OpenTab {
        id: id.clone(),
        url: req.url.clone(),
        focus: req.focus,
        group: req.group,
        reply,
    };
    let what = format!("openTab {}", req.url);
    let limit = timeout(d, req.timeout_ms)?;
    let tab: TabInfo = exchange(scope(d), &conn, Some(id), request, rx, limit, &what).await?;
    if let Some(lane) = lane {
        d.registry.claim_tab(Target::tab(browser, tab.id), lane);
    }
    d.registry
        .tab_view(Target::tab(browser, tab.id))
        .ok_or_else(|| Error::new(ErrorCode::TabNotFound, "the new tab closed at once"))
}

/// Closes a tab for the person: see [`close_tab_as`].
pub async fn close_tab(d: &Daemon, tab: &str, timeout_ms: Option<u64>) -> Result<String, Error> {
    close_tab_as(d, tab, timeout_ms, None).await
}

/// Closes a tab and answers once the browser reports it closed; an agent closes only its own
/// tabs and nobody's (issue 60).
pub async fn close_tab_as(
    d: &Daemon,
    tab: &str,
    timeout_ms: Option<u64>,
    lane: Option<LaneId>,
) -> Result<String, Error> {
    let (target, tab_id, conn) = d.registry.tab_route(tab)?;
    d.registry
        .may_act(target, lane, d.config().share_agent_tabs)?;
    let (reply, rx) = oneshot::channel();
    let what = format!("closeTab {target}");
    let request = Request::CloseTab { tab: tab_id, reply };
    let limit = timeout(d, timeout_ms)?;
    exchange(scope(d), &conn, None, request, rx, limit, &what).await?;
    Ok(target.to_string())
}

/// How long a browser's queue may stay full before a grouping is given up: it is a courtesy,
/// and an MCP client's tool listing waits for it.
const GROUP_SEND: Duration = Duration::from_secs(2);

/// Puts existing tabs in a tab group (those an MCP client is scoped to); answers once the
/// browsers were told. A tab that is gone, or whose browser has no tab groups or does not
/// read, is skipped (and logged): grouping is a courtesy to the user, never a failure.
pub async fn group_tabs(d: &Daemon, tabs: &[String], group: &TabGroup) {
    for tab in tabs {
        let Ok((target, tab_id, conn)) = d.registry.tab_route(tab) else {
            continue;
        };
        let (reply, rx) = oneshot::channel();
        let request = Request::GroupTabs {
            tabs: vec![tab_id],
            group: group.clone(),
            reply,
        };
        let what = format!("groupTabs {target}");
        if let Err(e) = exchange(scope(d), &conn, None, request, rx, GROUP_SEND, &what).await {
            tracing::debug!(tab = %target, error = %e, "not grouped");
        }
    }
}

/// Asks a tab for its tools afresh (discoverTools) and returns the updated tab.
pub async fn discover(d: &Daemon, tab: &str, timeout_ms: Option<u64>) -> Result<TabView, Error> {
    let (target, tab_id, conn) = d.registry.tab_route(tab)?;
    let id = next_id("discover");
    let (reply, rx) = oneshot::channel();
    let request = Request::Discover {
        id: id.clone(),
        tab: tab_id,
        reply,
    };
    let what = format!("discoverTools on {target}");
    let limit = timeout(d, timeout_ms)?;
    exchange(scope(d), &conn, Some(id), request, rx, limit, &what).await?;
    d.registry
        .tab_view(target)
        .ok_or_else(|| Error::new(ErrorCode::TabNotFound, format!("tab {target} is gone")))
}
