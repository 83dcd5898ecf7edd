//! The registry's unit tests, through the handle as its users see it.

use super::*;
use crate::protocol::bridge::{Hidden, TabInfo};
use crate::protocol::control::event_kind;
use crate::protocol::Tool;
use serde_json::json;
use sessions::REMEMBERED_SESSIONS;

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

/// A call of `tool`, at `tab` (a tab or browser reference) or wherever it is offered.
fn call(tool: &str, tab: Option<&str>) -> CallRequest {
    CallRequest {
        tool: tool.to_owned(),
        tab: tab.map(str::to_owned),
        ..CallRequest::default()
    }
}

fn attach(
    r: &Registry,
    dialect: &'static str,
    session: &str,
    conn: u64,
) -> (BrowserKey, Option<ConnHandle>) {
    let a = r.attach(
        dialect,
        session,
        BrowserInfo::default(),
        ConnHandle::test(conn),
        Initial::Nothing,
    );
    (a.key, a.displaced)
}

fn registry_with_two_browsers() -> (Registry, BrowserKey, BrowserKey) {
    let r = Registry::new(16, 16);
    let (a, _) = attach(&r, "bridge", "s1", 1);
    r.lock()
        .replace_tabs(
            a,
            1,
            vec![tab(1, &["search"], false), tab(2, &["click"], false)],
        )
        .unwrap();
    let (b, _) = attach(&r, "bridge", "s2", 2);
    r.lock()
        .replace_tabs(b, 2, vec![tab(1, &["search"], false)])
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
    let (r, a, b) = registry_with_two_browsers();
    assert_eq!(
        r.lock()
            .resolve_call("click", None, None, Focus::Browser)
            .unwrap()
            .target
            .tab,
        Some(2)
    );
    let e = r
        .lock()
        .resolve_call("search", None, None, Focus::Browser)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::AmbiguousTarget);
    assert_eq!(
        e.details.unwrap()["candidates"].as_array().unwrap().len(),
        2
    );
    r.lock().tab_focused(b, 2, 1, None, None).unwrap();
    assert_eq!(
        r.lock()
            .resolve_call("search", None, None, Focus::Browser)
            .unwrap()
            .target,
        Target {
            browser: b,
            tab: Some(1)
        }
    );
    assert_eq!(
        r.lock()
            .resolve_call("search", None, Some("b1"), Focus::Browser)
            .unwrap()
            .target
            .browser,
        a
    );
    assert_eq!(
        r.lock()
            .resolve_call("nope", None, None, Focus::Browser)
            .unwrap_err()
            .code,
        ErrorCode::ToolNotFound
    );
}

#[test]
fn a_hidden_tool_fails_with_the_extensions_reason() {
    let (r, a, b) = registry_with_two_browsers();
    let off = |reason: &str| Hidden {
        tools: vec!["browser_snapshot".into(), "search".into()],
        reason: reason.into(),
    };
    r.lock()
        .set_tools(a, 1, 1, vec![], Some(off("this site is turned off")))
        .unwrap();
    let e = r
        .lock()
        .resolve_call("search", Some("b1:1"), None, Focus::Browser)
        .unwrap_err();
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
        r.lock()
            .resolve_call("search", None, None, Focus::Browser)
            .unwrap()
            .target,
        Target {
            browser: b,
            tab: Some(1)
        }
    );
    // Nobody offers it and one tab hides it.
    let e = r
        .lock()
        .resolve_call("browser_snapshot", None, None, Focus::Browser)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolNotFound);
    assert!(
        e.message
            .starts_with("`browser_snapshot` on b1:1 is hidden"),
        "{}",
        e.message
    );
    // Two tabs hide it for different reasons: both named, the reasons in details.
    r.lock()
        .set_tools(b, 2, 1, vec![], Some(off("built-ins are off")))
        .unwrap();
    let e = r
        .lock()
        .resolve_call("search", None, None, Focus::Browser)
        .unwrap_err();
    assert!(
        e.message.starts_with("`search` on b1:1, b2:1 is hidden"),
        "{}",
        e.message
    );
    assert_eq!(e.details.unwrap()["tabs"][1]["reason"], "built-ins are off");
    // Limited to one browser, only its hidden list counts.
    let e = r
        .lock()
        .resolve_call("search", None, Some("b2"), Focus::Browser)
        .unwrap_err();
    assert!(
        e.message
            .ends_with("on b2:1 is hidden by the browser extension: built-ins are off"),
        "{}",
        e.message
    );
    // New tools without a hint: nothing is hidden any more, and the error is the plain one.
    r.lock().set_tools(a, 1, 1, vec![], None).unwrap();
    let e = r
        .lock()
        .resolve_call("search", Some("b1:1"), None, Focus::Browser)
        .unwrap_err();
    assert_eq!(e.message, "no tool `search` on b1:1");
    assert!(e.details.unwrap().get("hidden").is_none());
    // A tab update that carries tools replaces the hint; one without tools keeps it.
    r.lock()
        .upsert_tab(
            a,
            1,
            TabInfo {
                hidden: Some(off("off")),
                ..tab(1, &[], false)
            },
            None,
        )
        .unwrap();
    r.lock()
        .upsert_tab(
            a,
            1,
            TabInfo {
                tools: None,
                ..tab(1, &[], false)
            },
            None,
        )
        .unwrap();
    let e = r
        .lock()
        .resolve_call("search", Some("b1:1"), None, Focus::Browser)
        .unwrap_err();
    assert!(
        e.message.ends_with("hidden by the browser extension: off"),
        "{}",
        e.message
    );
    // Focus with tools replaces it too.
    r.lock()
        .tab_focused(a, 1, 1, Some(vec![tool("search")]), None)
        .unwrap();
    assert!(r
        .lock()
        .resolve_call("search", Some("b1:1"), None, Focus::Browser)
        .is_ok());
}

#[test]
fn a_session_sees_its_browsers_of_every_dialect_and_no_others() {
    let (r, a, _) = registry_with_two_browsers();
    let (c, _) = attach(&r, "jsonrpc", "s1", 5);
    r.lock()
        .set_browser_tools(c, 5, vec![tool("greet"), tool("search")])
        .unwrap();
    assert_eq!(r.session("s1").0, vec![a, c]);
    let mut names: Vec<String> = r
        .session("s1")
        .1
        .into_iter()
        .map(|v| format!("{}/{}", v.tab, v.name))
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec!["b1:1/search", "b1:2/click", "b3/greet", "b3/search"]
    );
    let t = r.resolve_in_session("s1", &call("greet", None)).unwrap();
    assert_eq!(
        t,
        Target {
            browser: c,
            tab: None
        }
    );
    let e = r
        .resolve_in_session("s1", &call("search", None))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::AmbiguousTarget);
    assert_eq!(
        r.resolve_in_session("s1", &call("search", Some("b3")))
            .unwrap(),
        Target {
            browser: c,
            tab: None
        }
    );
    // s2's tab is not reachable from s1, even when named.
    assert_eq!(
        r.resolve_in_session("s1", &call("search", Some("b2:1")))
            .unwrap_err()
            .code,
        ErrorCode::TabNotFound
    );
    let e = r.resolve_in_session("s1", &call("nope", None)).unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolNotFound);
    assert_eq!(
        e.details.unwrap()["available"],
        json!(["click", "greet", "search"])
    );
    assert_eq!(
        r.resolve_in_session("empty", &call("greet", None))
            .unwrap_err()
            .code,
        ErrorCode::NoBrowser
    );
}

#[test]
fn detach_removes_tabs_and_reconnect_keeps_the_key() {
    let (r, a, _) = registry_with_two_browsers();
    assert!(!r.detach(a, 99), "a stranger connection cannot detach");
    assert!(r.detach(a, 1));
    assert_eq!(r.tab_views(None).len(), 1);
    let (again, displaced) = attach(&r, "bridge", "s1", 3);
    assert_eq!(again, a);
    assert!(displaced.is_none());
    // A second connection with a live session displaces the first.
    let (_, displaced) = attach(&r, "bridge", "s1", 4);
    assert_eq!(displaced.unwrap().id, 3);
    r.lock().upsert_tab(a, 3, tab(5, &[], false), None).unwrap();
    assert!(
        r.tab_views(Some(a)).is_empty(),
        "the displaced connection no longer writes"
    );
}

#[test]
fn events_are_sequenced_and_resumable() {
    let (r, a, _) = registry_with_two_browsers();
    let last = r.summary().last_seq;
    r.lock().tab_closed(a, 1, 2);
    r.lock()
        .set_tools(a, 1, 1, vec![tool("search"), tool("more")], None)
        .unwrap();
    r.lock()
        .set_tools(a, 1, 1, vec![tool("search"), tool("more")], None)
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
        r.lock()
            .upsert_tab(a, 1, tab(100 + i, &[], false), None)
            .unwrap();
    }
    let (_, gap) = r.events_after(0);
    let (from, to) = gap.unwrap();
    assert_eq!(from, 1);
    assert!(to >= 10);
}

#[test]
fn page_events_are_published_for_known_tabs_only() {
    let (r, a, _) = registry_with_two_browsers();
    let last = r.summary().last_seq;
    let data = json!({"id": 4, "text": "Uncaught boom"});
    let page = |tab, kind, data| Update::PageEvent { tab, kind, data };
    let console = page(1, event_kind::CONSOLE_ERROR, data.clone());
    r.update(a, 1, console).unwrap();
    // An unknown tab, and a stale connection: nothing is published.
    r.update(a, 1, page(99, event_kind::NAVIGATED, json!({})))
        .unwrap();
    r.update(a, 7, page(1, event_kind::NAVIGATED, json!({})))
        .unwrap();
    let (backlog, _) = r.events_after(last);
    assert_eq!(backlog.len(), 1);
    assert_eq!(backlog[0].kind, event_kind::CONSOLE_ERROR);
    assert_eq!(backlog[0].seq, last + 1);
    let event: serde_json::Value = serde_json::from_slice(&backlog[0].line()).unwrap();
    assert_eq!(event["data"], data);
    assert_eq!(event["type"], "consoleError");
    assert_eq!(event["tab"], "b1:1", "{event}");
}

#[test]
fn limits_refuse_tabs_and_tool_sets_beyond_them() {
    let r = Registry::new(64, 16);
    r.set_limits(Limits {
        tabs_per_browser: 2,
        tools_per_tab: 1,
    });
    let (a, _) = attach(&r, "bridge", "s", 1);
    let e = r
        .lock()
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
    assert!(r.lock().upsert_tab(a, 1, tab(9, &[], false), None).is_err());
    assert!(r.lock().tab_focused(a, 1, 9, None, None).is_err());
    assert!(r.tab_views(Some(a)).iter().all(|t| t.id != 9));
    let e = r
        .lock()
        .set_tools(a, 1, 1, vec![tool("p"), tool("q")], None)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::LimitExceeded);
    assert_eq!(
        r.tab_views(Some(a))[0].tools.len(),
        1,
        "the old set is kept"
    );
    assert!(r
        .lock()
        .set_browser_tools(a, 1, vec![tool("p"), tool("q")])
        .is_err());
    // Updating an existing tab at the limit is fine.
    r.lock()
        .upsert_tab(a, 1, tab(2, &["z"], true), None)
        .unwrap();
}

#[test]
fn departed_sessions_are_remembered_boundedly() {
    let r = Registry::new(16, 16);
    let (kept, _) = attach(&r, "bridge", "kept", 1);
    for i in 0..(REMEMBERED_SESSIONS as u64 * 2) {
        let (k, _) = attach(&r, "register", &format!("inst_{i}"), 10 + i);
        r.detach(k, 10 + i);
    }
    assert!(r.remembered_sessions() <= REMEMBERED_SESSIONS + 1);
    // A connected browser is never forgotten, and a recent one comes back with its key.
    let (again, _) = attach(&r, "bridge", "kept", 2);
    assert_eq!(again, kept);
}

#[test]
fn a_disconnected_browser_is_no_browser_not_a_missing_tab() {
    let (r, a, _) = registry_with_two_browsers();
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
    let r = Registry::new(16, 16);
    let (first, _) = attach(&r, "bridge", "flaky", 1);
    r.detach(first, 1);
    for i in 0..(REMEMBERED_SESSIONS as u64 + 100) {
        let (k, _) = attach(&r, "bridge", "flaky", 10 + i);
        assert_eq!(k, first, "reconnect {i}");
        r.detach(k, 10 + i);
    }
    assert!(r.remembered_sessions() <= REMEMBERED_SESSIONS + 1);
}

/// Issue 60: what an agent follows is the person's focus, which another agent's action (a tab
/// brought to the front) does not move; a tab an agent opened shows its owner, and another
/// agent is refused acting in it.
#[test]
fn an_agents_focus_change_is_not_the_persons_and_owned_tabs_say_whose() {
    let r = Registry::new(16, 16);
    let (a, _) = attach(&r, "bridge", "s1", 1);
    let tabs = vec![tab(1, &["search"], true), tab(2, &["search"], false)];
    r.lock().replace_tabs(a, 1, tabs).unwrap();
    let person = |r: &Registry| r.resolve_call(&call("search", None), Focus::Person);
    assert_eq!(person(&r).unwrap().target.tab, Some(1));
    {
        let _moving = r.focus_moving(a);
        r.lock().tab_focused(a, 1, 2, None, None).unwrap();
    }
    // Within the tail after the action too.
    r.lock().tab_focused(a, 1, 2, None, None).unwrap();
    assert_eq!(person(&r).unwrap().target.tab, Some(1));
    let browser = r.resolve_call(&call("search", None), Focus::Browser);
    assert_eq!(browser.unwrap().target.tab, Some(2));
    let seen = r.tab_views_by(None, Focus::Person);
    assert_eq!(
        seen.iter()
            .filter(|t| t.focused)
            .map(|t| t.id)
            .collect::<Vec<_>>(),
        vec![1]
    );
    // The person's tab closes: no tab is the person's until they focus one.
    r.lock().tab_closed(a, 1, 1);
    assert_eq!(
        person(&r).map(|r| r.target.tab),
        Ok(Some(2)),
        "the one tab left offering it"
    );

    let (me, other) = (r.begin_lane(), r.begin_lane());
    assert_eq!(r.name_lane(me, "cursor").as_deref(), Some("cursor"));
    r.claim_tab(Target::tab(a, 2), me);
    assert_eq!(r.tab_views(None)[0].owner.as_deref(), Some("cursor"));
    let e = r
        .may_act(Target::tab(a, 2), Some(other), false)
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::TabOwned);
    assert!(r.may_act(Target::tab(a, 2), None, false).is_ok());
    r.end_lane(me);
    assert_eq!(r.tab_views(None)[0].owner, None);
}
