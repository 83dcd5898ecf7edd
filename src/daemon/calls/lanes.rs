//! An agent's lane on the call path (issue 60): what a call does to tabs, whether the agent
//! may do it there, and what it leaves behind (a tab it opened is its own; a focus it moved is
//! not the person's). The person's calls (`lane` `None`: browserctl, the control API) are
//! never refused here.

use super::tabs::group_tabs;
use crate::daemon::context::Daemon;
use crate::daemon::registry::{FocusMoving, LaneId, Target};
use crate::error::Error;
use crate::protocol::bridge::TabId;
use crate::protocol::control::TabGroup;
use crate::protocol::Tool;
use serde_json::value::RawValue;
use serde_json::Value;

/// The built-in that lists, selects, opens and closes its browser's tabs.
const BROWSER_TABS: &str = "browser_tabs";

/// What a call does to tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Reads its tab: a tool marked read-only (a page's word for its own tools), and the
    /// network log unless the call starts or stops recording bodies.
    Read,
    /// Acts in its tab.
    Act,
    /// Acts in another tab of its browser (`browser_tabs` `select`, `close`).
    ActIn(TabId),
    /// Opens a tab (`browser_tabs` `open`): the new tab is the agent's.
    Opens,
}

impl Reach {
    /// Whether the call may share its tab's turn with other reads (see super::queues).
    pub fn reads(self) -> bool {
        matches!(self, Reach::Read)
    }
}

/// What a call of `tool` (named `name`) with these arguments does.
pub fn reach(name: &str, tool: &Tool, args: &RawValue) -> Reach {
    let args = || serde_json::from_str::<Value>(args.get()).unwrap_or(Value::Null);
    match name {
        BROWSER_TABS => {
            let args = args();
            match args.get("action").and_then(Value::as_str).unwrap_or("list") {
                "list" => Reach::Read,
                "open" => Reach::Opens,
                "select" | "close" => tab_id(&args).map_or(Reach::Act, Reach::ActIn),
                _ => Reach::Act,
            }
        }
        "browser_network_requests" => match args().get("captureBodies") {
            None | Some(Value::Null) => Reach::Read,
            Some(_) => Reach::Act,
        },
        _ if tool.read_only() => Reach::Read,
        _ => Reach::Act,
    }
}

/// `browser_tabs`'s `tabId`: 7, "7" or "b1:7" (its browser is the call's).
fn tab_id(args: &Value) -> Option<TabId> {
    match args.get("tabId")? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.rsplit(':').next()?.trim().parse().ok(),
        _ => None,
    }
}

/// Whether the call may bring another tab to the front, or its own (a screenshot does).
fn moves_focus(name: &str, reach: Reach) -> bool {
    name == "browser_screenshot" || (name == BROWSER_TABS && reach != Reach::Read)
}

/// Refuses with TAB_OWNED an agent's action in a tab another agent opened, unless the
/// person lets agents share their tabs (`share-agent-tabs`).
pub fn may(d: &Daemon, target: Target, reach: Reach, lane: Option<LaneId>) -> Result<(), Error> {
    let tab = match reach {
        Reach::Read | Reach::Opens => return Ok(()),
        Reach::Act => target,
        Reach::ActIn(id) => Target::tab(target.browser, id),
    };
    d.registry.may_act(tab, lane, d.config().share_agent_tabs)
}

/// While an agent's call that may move the focus runs: its focus changes are not the person's.
pub fn focus_guard<'a>(
    d: &'a Daemon,
    name: &str,
    target: Target,
    reach: Reach,
    lane: Option<LaneId>,
) -> Option<FocusMoving<'a>> {
    (lane.is_some() && moves_focus(name, reach)).then(|| d.registry.focus_moving(target.browser))
}

/// After an agent's `browser_tabs` `open`: the new tab (in the answer's
/// `structuredContent.tab.id`) is the agent's, in its tab group.
pub async fn opened(d: &Daemon, target: Target, reach: Reach, lane: Option<LaneId>, r: &RawValue) {
    let (Reach::Opens, Some(lane)) = (reach, lane) else {
        return;
    };
    let v: Value = serde_json::from_str(r.get()).unwrap_or(Value::Null);
    let Some(id) = v
        .pointer("/structuredContent/tab/id")
        .and_then(Value::as_i64)
    else {
        return;
    };
    claim(d, Target::tab(target.browser, id), lane).await;
}

/// Makes a tab the lane's own and puts it in the lane's tab group, which is named after it.
pub async fn claim(d: &Daemon, tab: Target, lane: LaneId) {
    d.registry.claim_tab(tab, lane);
    if let Some(title) = d.registry.lane_label(lane) {
        group_tabs(d, &[tab.to_string()], &TabGroup { title }).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(annotations: Value) -> Tool {
        serde_json::from_value(json!({"name": "t", "annotations": annotations})).unwrap()
    }

    fn raw(v: Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).unwrap()
    }

    #[test]
    fn reads_are_read_only_tools_and_the_tab_list() {
        let ro = tool(json!({"readOnlyHint": true}));
        let act = tool(json!({"readOnlyHint": false}));
        let none = raw(json!({}));
        assert_eq!(reach("browser_snapshot", &ro, &none), Reach::Read);
        assert_eq!(reach("search", &ro, &none), Reach::Read);
        assert_eq!(reach("browser_click", &act, &none), Reach::Act);
        assert_eq!(reach("anything", &tool(json!(null)), &none), Reach::Act);
        // The network log is read unless the call changes what it records.
        let net = "browser_network_requests";
        assert_eq!(reach(net, &act, &none), Reach::Read);
        let capture = raw(json!({"captureBodies": true}));
        assert_eq!(reach(net, &act, &capture), Reach::Act);
        let tabs = |a: Value| reach(BROWSER_TABS, &act, &raw(a));
        assert_eq!(tabs(json!({})), Reach::Read);
        assert_eq!(tabs(json!({"action": "open", "url": "x"})), Reach::Opens);
        let select = tabs(json!({"action": "select", "tabId": "b1:9"}));
        assert_eq!(select, Reach::ActIn(9));
        assert_eq!(
            tabs(json!({"action": "close", "tabId": 8})),
            Reach::ActIn(8)
        );
        assert_eq!(tabs(json!({"action": "close"})), Reach::Act);
        assert!(moves_focus(BROWSER_TABS, select));
        assert!(moves_focus("browser_screenshot", Reach::Read));
        assert!(!moves_focus(BROWSER_TABS, Reach::Read));
    }
}
