//! Property test (moved here from tests/it so the registry need not be public): any sequence of tab events from any connections (current or displaced)
//! leaves the registry as a simple model says: the same browsers, tabs, tools and focus, the
//! limits respected, and event sequence numbers that increase by one.

use super::{BrowserKey, Initial, Limits, Registry};
use crate::daemon::conn::ConnHandle;
use crate::protocol::bridge::{BrowserInfo, TabInfo};
use crate::protocol::Tool;
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};

const SESSIONS: usize = 3;
const TAB_IDS: i64 = 6;
const TOOL_NAMES: [&str; 4] = ["a", "b", "c", "d"];
const LIMITS: Limits = Limits {
    tabs_per_browser: 4,
    tools_per_tab: 3,
};

#[derive(Debug, Clone)]
enum Op {
    Attach(usize),
    Detach {
        s: usize,
        stale: bool,
    },
    ReplaceTabs {
        s: usize,
        stale: bool,
        tabs: Vec<(i64, Option<Vec<usize>>, bool)>,
    },
    Upsert {
        s: usize,
        stale: bool,
        id: i64,
        title: u8,
        tools: Option<Vec<usize>>,
        focused: bool,
    },
    Closed {
        s: usize,
        stale: bool,
        id: i64,
    },
    Focused {
        s: usize,
        stale: bool,
        id: i64,
        tools: Option<Vec<usize>>,
    },
    SetTools {
        s: usize,
        stale: bool,
        id: i64,
        tools: Vec<usize>,
    },
}

fn tool_set() -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::vec(0..TOOL_NAMES.len(), 0..5)
}

fn op() -> impl Strategy<Value = Op> {
    let s = 0..SESSIONS;
    let id = 0..TAB_IDS;
    prop_oneof![
        2 => s.clone().prop_map(Op::Attach),
        1 => (s.clone(), any::<bool>()).prop_map(|(s, stale)| Op::Detach { s, stale }),
        2 => (s.clone(), any::<bool>(), proptest::collection::vec((id.clone(), proptest::option::of(tool_set()), any::<bool>()), 0..7))
            .prop_map(|(s, stale, tabs)| Op::ReplaceTabs { s, stale, tabs }),
        4 => (s.clone(), any::<bool>(), id.clone(), 0..3u8, proptest::option::of(tool_set()), any::<bool>())
            .prop_map(|(s, stale, id, title, tools, focused)| Op::Upsert { s, stale, id, title, tools, focused }),
        2 => (s.clone(), any::<bool>(), id.clone()).prop_map(|(s, stale, id)| Op::Closed { s, stale, id }),
        2 => (s.clone(), any::<bool>(), id.clone(), proptest::option::of(tool_set()))
            .prop_map(|(s, stale, id, tools)| Op::Focused { s, stale, id, tools }),
        2 => (s, any::<bool>(), id, tool_set()).prop_map(|(s, stale, id, tools)| Op::SetTools { s, stale, id, tools }),
    ]
}

fn tools(set: &[usize]) -> Vec<Tool> {
    // A set, in order: duplicates would be two tools of one name.
    let mut names: Vec<&str> = set.iter().map(|&i| TOOL_NAMES[i]).collect();
    names.dedup();
    names
        .iter()
        .map(|n| serde_json::from_value(serde_json::json!({"name": n})).unwrap())
        .collect()
}

fn names(set: &[usize]) -> Vec<String> {
    tools(set).into_iter().map(|t| t.name).collect()
}

#[derive(Debug, Clone, PartialEq)]
struct MTab {
    title: String,
    tools: Vec<String>,
}

#[derive(Debug, Default)]
struct MBrowser {
    conn: u64,
    tabs: BTreeMap<i64, MTab>,
    focused: Option<i64>,
}

/// The model: what each session's browser should look like.
#[derive(Default)]
struct Model {
    browsers: HashMap<usize, MBrowser>,
    keys: HashMap<usize, BrowserKey>,
    next_key: u64,
    /// The last connection each session had (displaced or gone): its messages change nothing.
    stale: HashMap<usize, u64>,
}

impl Model {
    fn upsert(b: &mut MBrowser, id: i64, title: String, tools: Option<Vec<String>>, focused: bool) {
        if !b.tabs.contains_key(&id) && b.tabs.len() >= LIMITS.tabs_per_browser {
            return;
        }
        let tools = tools.filter(|t| t.len() <= LIMITS.tools_per_tab);
        let tab = b.tabs.entry(id).or_insert(MTab {
            title: String::new(),
            tools: vec![],
        });
        tab.title = title;
        if let Some(t) = tools {
            tab.tools = t;
        }
        if focused {
            b.focused = Some(id);
        }
    }
}

fn info(id: i64, title: String, tools: Option<Vec<Tool>>, focused: bool) -> TabInfo {
    TabInfo {
        id,
        title,
        url: format!("https://x/{id}"),
        tools,
        focused: Some(focused),
        window_id: None,
        hidden: None,
    }
}

fn check(r: &Registry, m: &Model) -> Result<(), TestCaseError> {
    let views = r.browser_views();
    prop_assert_eq!(views.len(), m.browsers.len());
    for (s, b) in &m.browsers {
        let key = m.keys[s];
        let v = views.iter().find(|v| v.id == key.to_string());
        prop_assert!(v.is_some(), "browser b{} of session {} missing", key, s);
        let v = v.unwrap();
        prop_assert_eq!(&v.session_id, &format!("s{s}"));
        prop_assert_eq!(v.tabs, b.tabs.len());
        prop_assert!(b.tabs.len() <= LIMITS.tabs_per_browser);
        let tabs = r.tab_views(Some(key));
        let got: BTreeMap<i64, MTab> = tabs
            .iter()
            .map(|t| {
                (
                    t.id,
                    MTab {
                        title: t.title.clone(),
                        tools: t.tools.iter().map(|x| x.name.clone()).collect(),
                    },
                )
            })
            .collect();
        prop_assert_eq!(&got, &b.tabs);
        let focused: Vec<i64> = tabs.iter().filter(|t| t.focused).map(|t| t.id).collect();
        prop_assert_eq!(focused, b.focused.into_iter().collect::<Vec<_>>());
        let tool_count: usize = b.tabs.values().map(|t| t.tools.len()).sum();
        prop_assert_eq!(v.tools, tool_count);
        prop_assert_eq!(r.tool_views(None, Some(key), None).len(), tool_count);
    }
    prop_assert_eq!(
        r.summary().tabs,
        m.browsers.values().map(|b| b.tabs.len()).sum::<usize>()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_sequence_of_tab_events_matches_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        let r = Registry::new(100_000, 16);
        r.set_limits(LIMITS);
        let mut m = Model { next_key: 1, ..Model::default() };
        let mut next_conn = 1u64;
        let mut seq = r.summary().last_seq;
        for op in ops {
            // The connection a message comes from: the session's current one, or a stale one.
            let conn = |m: &Model, s: usize, stale: bool| -> Option<u64> {
                if stale { m.stale.get(&s).copied() } else { m.browsers.get(&s).map(|b| b.conn) }
            };
            let key = |m: &Model, s: usize| m.keys.get(&s).copied().unwrap_or(BrowserKey(999));
            match op {
                Op::Attach(s) => {
                    let id = next_conn;
                    next_conn += 1;
                    let a = r.attach("bridge", &format!("s{s}"), BrowserInfo::default(), ConnHandle::test(id), Initial::Nothing);
                    let want = *m.keys.entry(s).or_insert_with(|| { let k = m.next_key; m.next_key += 1; BrowserKey(k) });
                    prop_assert_eq!(a.key, want, "a session keeps its key");
                    let old = m.browsers.insert(s, MBrowser { conn: id, ..MBrowser::default() });
                    prop_assert_eq!(a.displaced.map(|c| c.id), old.as_ref().map(|b| b.conn));
                    if let Some(old) = old {
                        m.stale.insert(s, old.conn);
                    }
                }
                Op::Detach { s, stale } => {
                    if let Some(c) = conn(&m, s, stale) {
                        let removed = r.detach(key(&m, s), c);
                        let current = m.browsers.get(&s).is_some_and(|b| b.conn == c);
                        prop_assert_eq!(removed, current);
                        if current {
                            let b = m.browsers.remove(&s).unwrap();
                            m.stale.insert(s, b.conn);
                        }
                    }
                }
                Op::ReplaceTabs { s, stale, tabs } => {
                    if let Some(c) = conn(&m, s, stale) {
                        let list: Vec<TabInfo> = tabs.iter().map(|(id, t, f)| info(*id, format!("t{id}"), t.as_deref().map(tools), *f)).collect();
                        let _ = r.lock().replace_tabs(key(&m, s), c, list);
                        if let Some(b) = m.browsers.get_mut(&s).filter(|b| b.conn == c) {
                            let fresh: Vec<i64> = tabs.iter().map(|t| t.0).collect();
                            b.tabs.retain(|id, _| fresh.contains(id));
                            if b.focused.is_some_and(|f| !fresh.contains(&f)) {
                                b.focused = None;
                            }
                            for (id, t, f) in &tabs {
                                Model::upsert(b, *id, format!("t{id}"), t.as_deref().map(names), *f);
                            }
                        }
                    }
                }
                Op::Upsert { s, stale, id, title, tools: t, focused } => {
                    if let Some(c) = conn(&m, s, stale) {
                        let title = format!("title{title}");
                        let r1 = r.lock().upsert_tab(key(&m, s), c, info(id, title.clone(), t.as_deref().map(tools), focused), None);
                        if let Some(b) = m.browsers.get_mut(&s).filter(|b| b.conn == c) {
                            let refused = (!b.tabs.contains_key(&id) && b.tabs.len() >= LIMITS.tabs_per_browser)
                                || t.as_ref().is_some_and(|t| names(t).len() > LIMITS.tools_per_tab);
                            prop_assert_eq!(r1.is_err(), refused);
                            Model::upsert(b, id, title, t.as_deref().map(names), focused);
                        }
                    }
                }
                Op::Closed { s, stale, id } => {
                    if let Some(c) = conn(&m, s, stale) {
                        let closed = r.lock().tab_closed(key(&m, s), c, id);
                        let mut want = false;
                        if let Some(b) = m.browsers.get_mut(&s).filter(|b| b.conn == c) {
                            want = b.tabs.remove(&id).is_some();
                            if want && b.focused == Some(id) {
                                b.focused = None;
                            }
                        }
                        prop_assert_eq!(closed, want);
                    }
                }
                Op::Focused { s, stale, id, tools: t } => {
                    if let Some(c) = conn(&m, s, stale) {
                        let _ = r.lock().tab_focused(key(&m, s), c, id, t.as_deref().map(tools), None);
                        if let Some(b) = m.browsers.get_mut(&s).filter(|b| b.conn == c) {
                            if b.tabs.contains_key(&id) || b.tabs.len() < LIMITS.tabs_per_browser {
                                b.tabs.entry(id).or_insert(MTab { title: String::new(), tools: vec![] });
                                b.focused = Some(id);
                                if let Some(t) = t.as_deref().map(names).filter(|t| t.len() <= LIMITS.tools_per_tab) {
                                    b.tabs.get_mut(&id).unwrap().tools = t;
                                }
                            }
                        }
                    }
                }
                Op::SetTools { s, stale, id, tools: t } => {
                    if let Some(c) = conn(&m, s, stale) {
                        let _ = r.lock().set_tools(key(&m, s), c, id, tools(&t), None);
                        if let Some(b) = m.browsers.get_mut(&s).filter(|b| b.conn == c) {
                            let n = names(&t);
                            if let Some(tab) = b.tabs.get_mut(&id).filter(|_| n.len() <= LIMITS.tools_per_tab) {
                                tab.tools = n;
                            }
                        }
                    }
                }
            }
            // Events: gapless, strictly increasing, and each one a valid JSON line.
            let (events, gap) = r.events_after(seq);
            prop_assert!(gap.is_none());
            for e in &events {
                prop_assert_eq!(e.seq, seq + 1);
                seq = e.seq;
                let v: serde_json::Value = serde_json::from_slice(&e.line()).unwrap();
                prop_assert_eq!(v["seq"].as_u64(), Some(e.seq));
            }
            prop_assert_eq!(r.summary().last_seq, seq);
            check(&r, &m)?;
        }
    }
}
