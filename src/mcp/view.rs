//! The tool list one MCP session sees: as small with a hundred tabs as with one.
//!
//! - Each built-in `browser_*` tool once. Where a call goes is its `tab` argument, else the
//!   session's current tab ([`current_tab`]), else the rule `browserctl call` uses.
//! - The page (WebMCP) tools of the current tab by their own names; a scoped session (`--tab`,
//!   `--url`, `--own-tabs`) lists those of every tab in its scope. Every tab's page tools stay
//!   reachable through `browserctl_list_tools` and `browserctl_call_tool`.
//! - At most [`MAX_TOOLS`] tools and [`MAX_BYTES`] of definitions: page tools past either
//!   cap are left to the meta tools.
//!
//! So opening, closing or navigating tabs other than the current one leaves the list as it is,
//! and `list_changed` quiet.

use super::expose::{expose, names_tab, Exposed, Scope, Snapshot};
use super::meta;
use crate::error::{Error, ErrorCode};
use crate::protocol::bridge::{BUILTIN_PREFIX, DIALECT};
use crate::protocol::control::{BrowserView, TabView, ToolView};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// The most tools a listing holds (some clients stop at about 40).
pub const MAX_TOOLS: usize = 40;
/// The most bytes of tool definitions a listing holds, serialized.
pub const MAX_BYTES: usize = 40 * 1024;
/// The argument every built-in gains over MCP: the tab it acts on.
pub const TAB_ARG: &str = "tab";
/// The built-in that reaches every tab of its browser (list, select, open, close): a scoped
/// session does not offer it; its own meta tools keep to the scope.
pub const BROWSER_TABS: &str = "browser_tabs";

/// A built-in as listed: once, whatever the number of tabs offering it.
#[derive(Debug, Clone)]
pub struct Builtin {
    /// The extension's declaration, from the current tab when it offers the tool.
    pub view: ToolView,
    /// Whether the listing added [`TAB_ARG`] (a built-in with an argument of that name of its
    /// own keeps it, and is routed by the session alone).
    pub takes_tab: bool,
}

/// One listed tool and where its calls go.
#[derive(Debug, Clone)]
pub enum Listed {
    /// A page tool (or a browser-level tool): one target, fixed when listed.
    Page(Exposed),
    /// A built-in: the target is chosen at call time.
    Builtin(Builtin),
}

impl Listed {
    pub fn name(&self) -> &str {
        match self {
            Listed::Page(e) => &e.name,
            Listed::Builtin(b) => &b.view.name,
        }
    }

    /// The tool its calls send to the daemon (a page tool's own name, unsuffixed).
    pub fn tool(&self) -> &str {
        match self {
            Listed::Page(e) => &e.view.name,
            Listed::Builtin(b) => &b.view.name,
        }
    }
}

/// What one look at the browsers shows a session.
pub struct View {
    /// The tools/list answer: meta tools, built-ins, then page tools.
    pub tools: Vec<Tool>,
    /// The tools behind that answer, meta tools aside, in the same order.
    pub listed: Vec<Listed>,
    /// Every page tool in scope, named as `browserctl_list_tools` shows them.
    pub pages: Vec<Exposed>,
    /// The session's current tab, if it has one.
    pub current: Option<String>,
    pub snapshot: Snapshot,
}

/// Whether a tool is one of the extension's own (see [`BUILTIN_PREFIX`]); other dialects
/// make no such promise, so their tools are all page tools.
pub fn is_builtin(view: &ToolView, browsers: &HashMap<&str, &BrowserView>) -> bool {
    view.name.starts_with(BUILTIN_PREFIX)
        && view.tab != view.browser
        && browsers
            .get(view.browser.as_str())
            .is_some_and(|b| b.dialect == DIALECT)
}

/// The tabs in scope, in the snapshot's order.
pub fn tabs_in_scope<'a>(snapshot: &'a Snapshot, scope: &Scope) -> Vec<&'a TabView> {
    snapshot
        .tabs
        .iter()
        .filter(|t| {
            let b = snapshot.browsers.iter().find(|b| b.id == t.browser);
            scope.tab_in_scope(t, b)
        })
        .collect()
}

/// The session's current tab: the one it last opened or selected while that tab is there and
/// in scope; else the focused tab when exactly one in scope is; else the only tab in scope.
pub fn current_tab(snapshot: &Snapshot, scope: &Scope, selected: Option<&str>) -> Option<String> {
    let tabs = tabs_in_scope(snapshot, scope);
    if let Some(s) = selected.and_then(|s| tabs.iter().find(|t| t.tab_ref == s)) {
        return Some(s.tab_ref.clone());
    }
    let focused: Vec<&TabView> = tabs.iter().copied().filter(|t| t.focused).collect();
    match (focused.as_slice(), tabs.as_slice()) {
        ([one], _) | ([], [one]) => Some(one.tab_ref.clone()),
        _ => None,
    }
}

/// The built-ins of the tabs in scope, each once: the current tab's declarations first (in
/// its order), then any other tab's that it lacks.
fn builtins(snapshot: &Snapshot, scope: &Scope, current: Option<&str>) -> Vec<Builtin> {
    let browsers: HashMap<&str, &BrowserView> = snapshot
        .browsers
        .iter()
        .map(|b| (b.id.as_str(), b))
        .collect();
    let in_scope: BTreeSet<&str> = tabs_in_scope(snapshot, scope)
        .into_iter()
        .map(|t| t.tab_ref.as_str())
        .collect();
    let mut views: Vec<&ToolView> = snapshot
        .tools
        .iter()
        .filter(|v| in_scope.contains(v.tab.as_str()) && is_builtin(v, &browsers))
        .filter(|v| scope.is_everything() || v.name != BROWSER_TABS)
        .collect();
    // Stable: the current tab first, then by tab, each tab's own order kept.
    views.sort_by_key(|v| {
        (
            Some(v.tab.as_str()) != current,
            super::expose::order_key(&v.tab),
        )
    });
    let mut seen = BTreeSet::new();
    views
        .into_iter()
        .filter(|v| seen.insert(v.name.as_str()))
        .map(|v| Builtin {
            takes_tab: !declares_arg(v, TAB_ARG),
            view: v.clone(),
        })
        .collect()
}

fn declares_arg(v: &ToolView, name: &str) -> bool {
    serde_json::from_str::<Value>(v.input_schema.get())
        .ok()
        .and_then(|s| s.get("properties")?.get(name).cloned())
        .is_some()
}

/// Splits a snapshot: its page tools only (built-ins left out).
fn pages_only(snapshot: &Snapshot) -> Snapshot {
    let browsers: HashMap<&str, &BrowserView> = snapshot
        .browsers
        .iter()
        .map(|b| (b.id.as_str(), b))
        .collect();
    Snapshot {
        browsers: snapshot.browsers.clone(),
        tabs: snapshot.tabs.clone(),
        tools: snapshot
            .tools
            .iter()
            .filter(|v| !is_builtin(v, &browsers))
            .cloned()
            .collect(),
    }
}

impl Builtin {
    /// The declaration: the extension's own, with [`TAB_ARG`] added to its arguments.
    pub fn to_mcp(&self) -> Tool {
        let v = &self.view;
        let mut schema = match serde_json::from_str::<Value>(v.input_schema.get()) {
            Ok(Value::Object(m)) => m,
            _ => JsonObject::from_iter([("type".to_owned(), json!("object"))]),
        };
        if self.takes_tab {
            let props = schema.entry("properties").or_insert_with(|| json!({}));
            if let Value::Object(props) = props {
                props.insert(
                    TAB_ARG.into(),
                    json!({"type": "string", "description": "Tab to act on (b1:7); default: the current tab"}),
                );
            }
        }
        let mut tool = Tool::new_with_raw(
            v.name.clone(),
            v.description.clone().map(Into::into),
            Arc::new(schema),
        );
        tool.title = v.title.clone();
        tool.annotations = v
            .annotations
            .as_ref()
            .and_then(|a| serde_json::from_value::<ToolAnnotations>(a.clone()).ok());
        tool
    }
}

impl View {
    /// The session's view of `snapshot`: see the module's notes.
    pub fn new(snapshot: Snapshot, scope: &Scope, selected: Option<&str>) -> View {
        let current = current_tab(&snapshot, scope, selected);
        let builtins = builtins(&snapshot, scope, current.as_deref());
        let mut reserved: Vec<&str> = meta::NAMES.to_vec();
        reserved.extend(builtins.iter().map(|b| b.view.name.as_str()));
        let page_snapshot = pages_only(&snapshot);
        let pages = expose(&page_snapshot, scope, &reserved);
        // Unscoped, only the current tab's page tools (and browser-level tools) are listed
        // by name; a scoped session lists its tabs'.
        let shown = if scope.is_everything() {
            let mut one = page_snapshot;
            one.tools
                .retain(|v| v.tab == v.browser || current.as_deref() == Some(v.tab.as_str()));
            expose(&one, scope, &reserved)
        } else {
            pages.clone()
        };

        let mut tools = meta::tools();
        let mut bytes: usize = tools.iter().map(size).sum();
        let mut listed = Vec::new();
        for b in builtins {
            let tool = b.to_mcp();
            bytes += size(&tool);
            tools.push(tool);
            listed.push(Listed::Builtin(b));
        }
        for e in shown {
            let tool = e.to_mcp(&snapshot.browsers);
            let more = size(&tool);
            if tools.len() >= MAX_TOOLS || bytes + more > MAX_BYTES {
                continue;
            }
            bytes += more;
            tools.push(tool);
            listed.push(Listed::Page(e));
        }
        View {
            tools,
            listed,
            pages,
            current,
            snapshot,
        }
    }
}

/// A definition's size as `tools/list` carries it.
pub fn size(tool: &Tool) -> usize {
    serde_json::to_string(tool).map_or(0, |s| s.len())
}

/// The one tab in scope that `want` (`b1:7`, or a bare `7`) names.
/// Why a scoped session has no `browser_tabs`, for the agent that calls it anyway.
pub fn browser_tabs_out_of_scope() -> Error {
    Error::new(
        ErrorCode::ToolNotFound,
        format!(
            "{BROWSER_TABS} reaches every tab of the browser, so a scoped session (--tab, --url, \
             --own-tabs) does not offer it; browserctl_list_tabs, browserctl_select_tab, \
             browserctl_open_tab and browserctl_close_tab keep to this session's tabs"
        ),
    )
}

pub fn one_tab(snapshot: &Snapshot, scope: &Scope, want: &str) -> Result<String, Error> {
    let hits: Vec<&TabView> = tabs_in_scope(snapshot, scope)
        .into_iter()
        .filter(|t| names_tab(&t.tab_ref, want))
        .collect();
    match hits.as_slice() {
        [one] => Ok(one.tab_ref.clone()),
        [] => Err(Error::new(
            ErrorCode::TabNotFound,
            format!("no tab `{want}` among the tabs this server exposes"),
        )),
        many => Err(Error::new(
            ErrorCode::AmbiguousTarget,
            format!("tab id `{want}` exists in several browsers; name it as <browser>:{want}"),
        )
        .with_details(candidates_of(many))),
    }
}

pub fn candidates_of(tabs: &[&TabView]) -> Value {
    json!({"candidates": tabs.iter().map(|t| json!({
        "tab": t.tab_ref, "title": t.title, "url": t.url,
    })).collect::<Vec<_>>()})
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    fn browser(id: &str, dialect: &str) -> BrowserView {
        BrowserView {
            id: id.into(),
            dialect: dialect.into(),
            session_id: format!("s-{id}"),
            name: "Chromium".into(),
            version: "156".into(),
            connected_at: String::new(),
            tabs: 0,
            tools: 0,
            managed: false,
        }
    }

    fn tool(tab: &str, name: &str) -> ToolView {
        ToolView {
            tab: tab.into(),
            browser: tab.split(':').next().unwrap().into(),
            name: name.into(),
            title: None,
            description: Some(format!("{name}, described at some length so that sizes add up")),
            input_schema: RawValue::from_string(
                r#"{"type":"object","properties":{"ref":{"type":"string"}},"additionalProperties":false}"#
                    .into(),
            )
            .unwrap(),
            output_schema: None,
            annotations: None,
        }
    }

    const BUILTINS: [&str; 19] = [
        "browser_navigate",
        "browser_navigate_back",
        "browser_navigate_forward",
        "browser_reload",
        "browser_snapshot",
        "browser_click",
        "browser_hover",
        "browser_drag",
        "browser_type",
        "browser_select",
        "browser_press_key",
        "browser_file_upload",
        "browser_handle_dialog",
        "browser_wait_for",
        "browser_evaluate",
        "browser_console_messages",
        "browser_network_requests",
        "browser_screenshot",
        "browser_tabs",
    ];

    /// `n` tabs of one bridge browser, each with every built-in and a page tool `search`;
    /// the focused one is `focused`.
    fn tabs(n: i64, focused: Option<i64>) -> Snapshot {
        let mut s = Snapshot {
            browsers: vec![browser("b1", DIALECT)],
            ..Snapshot::default()
        };
        for id in 1..=n {
            s.tabs.push(TabView {
                tab_ref: format!("b1:{id}"),
                browser: "b1".into(),
                id,
                title: format!("Tab {id}"),
                url: format!("https://site{id}.example/"),
                focused: focused == Some(id),
                tools: vec![],
                hidden: None,
                owner: None,
            });
            for name in BUILTINS {
                s.tools.push(tool(&format!("b1:{id}"), name));
            }
            s.tools.push(tool(&format!("b1:{id}"), "search"));
        }
        s
    }

    fn names(v: &View) -> Vec<String> {
        v.tools.iter().map(|t| t.name.to_string()).collect()
    }

    #[test]
    fn the_list_does_not_grow_with_the_tabs() {
        let one = View::new(tabs(1, Some(1)), &Scope::default(), None);
        for n in [20, 100] {
            let many = View::new(tabs(n, Some(1)), &Scope::default(), None);
            assert_eq!(names(&many), names(&one), "{n} tabs");
            let bytes: usize = many.tools.iter().map(size).sum();
            assert!(
                many.tools.len() <= MAX_TOOLS && bytes <= MAX_BYTES,
                "{n}: {bytes}"
            );
            assert_eq!(
                many.pages.len(),
                n as usize,
                "every tab's page tool stays reachable"
            );
        }
        let listed = names(&one);
        assert_eq!(listed.iter().filter(|n| *n == "browser_click").count(), 1);
        assert!(listed.contains(&"search".to_owned()), "{listed:?}");
    }

    #[test]
    fn the_current_tab_is_the_selected_one_else_the_focused_one() {
        let s = tabs(3, Some(2));
        let all = Scope::default();
        assert_eq!(current_tab(&s, &all, None).as_deref(), Some("b1:2"));
        assert_eq!(current_tab(&s, &all, Some("b1:3")).as_deref(), Some("b1:3"));
        // A selected tab that closed: the focused one again.
        assert_eq!(current_tab(&s, &all, Some("b1:9")).as_deref(), Some("b1:2"));
        // No focused tab among several: none; one tab: that one.
        assert_eq!(current_tab(&tabs(3, None), &all, None), None);
        assert_eq!(
            current_tab(&tabs(1, None), &all, None).as_deref(),
            Some("b1:1")
        );
        // Out of scope is never current.
        let scoped = Scope {
            tabs: vec!["b1:3".into()],
            ..Scope::default()
        };
        assert_eq!(
            current_tab(&s, &scoped, Some("b1:1")).as_deref(),
            Some("b1:3")
        );
    }

    #[test]
    fn built_ins_get_a_tab_argument_and_page_tools_their_names() {
        let v = View::new(tabs(3, Some(2)), &Scope::default(), None);
        let click = v.tools.iter().find(|t| t.name == "browser_click").unwrap();
        assert!(click.input_schema["properties"].get(TAB_ARG).is_some());
        let search = v
            .listed
            .iter()
            .find_map(|l| match l {
                Listed::Page(e) if e.name == "search" => Some(e),
                _ => None,
            })
            .unwrap();
        assert_eq!(search.target, "b1:2");
        // With no current tab, no page tool by name, built-ins still there.
        let none = View::new(tabs(3, None), &Scope::default(), None);
        assert!(!names(&none).contains(&"search".to_owned()));
        assert!(names(&none).contains(&"browser_snapshot".to_owned()));
    }

    #[test]
    fn a_scoped_session_has_no_browser_tabs() {
        let names = |scope: &Scope| names(&View::new(tabs(3, Some(1)), scope, None));
        assert!(names(&Scope::default()).contains(&BROWSER_TABS.to_owned()));
        let scoped = Scope {
            tabs: vec!["b1:2".into()],
            ..Scope::default()
        };
        let listed = names(&scoped);
        assert!(!listed.contains(&BROWSER_TABS.to_owned()), "{listed:?}");
        assert!(listed.contains(&"browser_click".to_owned()), "{listed:?}");
    }

    #[test]
    fn only_a_bridge_browser_has_built_ins() {
        let mut s = tabs(1, Some(1));
        s.browsers[0].dialect = "jsonrpc".into();
        let v = View::new(s, &Scope::default(), None);
        assert!(v.listed.iter().all(|l| matches!(l, Listed::Page(_))));
    }

    #[test]
    fn page_tools_past_the_caps_are_left_to_the_meta_tools() {
        let mut s = tabs(1, Some(1));
        for i in 0..60 {
            s.tools.push(tool("b1:1", &format!("page_tool_{i}")));
        }
        let v = View::new(s, &Scope::default(), None);
        assert_eq!(v.tools.len(), MAX_TOOLS);
        assert_eq!(v.pages.len(), 61);
    }
}
