//! Which tools an MCP client sees, and under which names.
//!
//! Tab tools are named by their pages, so two tabs often offer the same name (two search
//! pages both have `search`), and names may hold characters MCP clients refuse. Clients
//! accept `^[a-zA-Z0-9_-]{1,64}$`, so each name is sanitised to that, and names that still
//! collide all get their tab as a suffix (`search_b1_7`, `search_b1_9`): symmetric, so no
//! tab silently owns the plain name, and deterministic for a given set of tabs. The tab's
//! title and URL go into the description so a model can tell the tools apart.

use super::names;
use super::result;
use crate::pattern::url_matches;
use crate::protocol::control::{BrowserView, TabView, ToolView};
use rmcp::model::{JsonObject, MetaObject, Tool, ToolAnnotations};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Longest tool name MCP clients accept.
pub const MAX_NAME: usize = 64;

/// The daemon's picture, as the MCP front needs it.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub browsers: Vec<BrowserView>,
    pub tabs: Vec<TabView>,
    /// Every tool with where it lives (tab tools and browser-level tools).
    pub tools: Vec<ToolView>,
}

/// What `browserctl mcp` was told to expose. Empty lists mean "no restriction"; the lists
/// that are set must all match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// Tab references (`b1:7`, or a bare `7` for tab 7 of any browser).
    pub tabs: Vec<String>,
    /// URL patterns a tab's URL must match ([`url_matches`]: `*` matches any run of
    /// characters; a pattern without `*` matches anywhere in the URL).
    pub urls: Vec<String>,
    /// Browser ids (`b1` or `1`).
    pub browsers: Vec<String>,
    /// Browser session ids.
    pub sessions: Vec<String>,
    /// Only the tabs this MCP session opened (`--own-tabs`): those in [`Scope::opened`].
    pub own_tabs: bool,
    /// The tabs this session opened with `browserctl_open_tab`, as the server learns them;
    /// never on the wire.
    pub opened: Vec<String>,
}

impl Scope {
    pub fn is_everything(&self) -> bool {
        *self == Scope::default()
    }

    /// The scope as a query string (`tab=b1%3A7&url=…`), one pair per value, for the control
    /// API's `GET /v1/mcp`; [`Scope::from_query`] reads it back.
    pub fn to_query(&self) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        for (key, values) in self.fields() {
            for v in values {
                q.append_pair(key, v);
            }
        }
        if self.own_tabs {
            q.append_pair("own", "1");
        }
        q.finish()
    }

    /// Reads [`Scope::to_query`]'s form; a key it does not know is refused with its name.
    pub fn from_query(query: &str) -> Result<Scope, String> {
        let mut scope = Scope::default();
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            if key == "own" {
                scope.own_tabs = value != "0";
                continue;
            }
            let list = match key.as_ref() {
                "tab" => &mut scope.tabs,
                "url" => &mut scope.urls,
                "browser" => &mut scope.browsers,
                "session" => &mut scope.sessions,
                other => return Err(other.to_owned()),
            };
            list.push(value.into_owned());
        }
        Ok(scope)
    }

    fn fields(&self) -> [(&'static str, &Vec<String>); 4] {
        [
            ("tab", &self.tabs),
            ("url", &self.urls),
            ("browser", &self.browsers),
            ("session", &self.sessions),
        ]
    }

    /// Whether a browser is in scope (browser and session filters).
    pub fn browser_in_scope(&self, b: &BrowserView) -> bool {
        (self.browsers.is_empty()
            || self.browsers.iter().any(|want| {
                want.strip_prefix('b').unwrap_or(want) == b.id.strip_prefix('b').unwrap_or(&b.id)
            }))
            && (self.sessions.is_empty() || self.sessions.contains(&b.session_id))
    }

    /// Whether a tab is in scope; `browser` is its browser, if known.
    pub fn tab_in_scope(&self, tab: &TabView, browser: Option<&BrowserView>) -> bool {
        browser.is_some_and(|b| self.browser_in_scope(b))
            && (self.tabs.is_empty()
                || self.tabs.iter().any(|want| {
                    *want == tab.tab_ref
                        || (!want.contains(':') && want.parse::<i64>().ok() == Some(tab.id))
                }))
            && (self.urls.is_empty() || self.urls.iter().any(|p| url_matches(p, &tab.url)))
            && (!self.own_tabs || self.opened.contains(&tab.tab_ref))
    }

    /// Browser-level tools belong to no tab and no URL, so tab, URL and own-tab filters
    /// leave them out.
    fn browser_tools_in_scope(&self, browser: &BrowserView) -> bool {
        self.tabs.is_empty()
            && self.urls.is_empty()
            && !self.own_tabs
            && self.browser_in_scope(browser)
    }
}

/// Whether `want` (`b1:7`, or a bare `7`) names this tab.
pub fn names_tab(tab_ref: &str, want: &str) -> bool {
    tab_ref == want
        || (!want.contains(':') && tab_ref.split_once(':').is_some_and(|(_, id)| id == want))
}

/// Replaces every character outside `[a-zA-Z0-9_-]` with `_` and cuts to [`MAX_NAME`].
pub fn sanitize(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        })
        .take(MAX_NAME)
        .collect();
    if out.is_empty() {
        out.push_str("tool");
    }
    out
}

fn with_suffix(base: &str, suffix: &str) -> String {
    let keep = MAX_NAME.saturating_sub(suffix.len());
    // `base` is ASCII after sanitize, so byte and char positions agree.
    format!("{}{suffix}", &base[..base.len().min(keep)])
}

/// One tool as exposed: its MCP name and where calls to it go.
#[derive(Debug, Clone)]
pub struct Exposed {
    pub name: String,
    /// Call target: a tab ref (`b1:7`) or a browser id for browser-level tools.
    pub target: String,
    pub view: ToolView,
    pub tab_title: Option<String>,
    pub tab_url: Option<String>,
}

/// A tab reference's sort key: browser number, then tab id (browser-level first).
pub(super) fn order_key(target: &str) -> (u64, Option<i64>) {
    let (b, t) = match target.split_once(':') {
        Some((b, t)) => (b, t.parse().ok()),
        None => (target, None),
    };
    (b.trim_start_matches('b').parse().unwrap_or(u64::MAX), t)
}

/// The tools in scope, named uniquely. A tool whose name reads as one of `reserved` (the meta
/// tools and the built-ins), with or without a target's suffix, is left out (see
/// [`names::poses`]); and names are unique as a model reads them ([`names::fold`]), not only
/// byte for byte.
pub fn expose(snapshot: &Snapshot, scope: &Scope, reserved: &[&str]) -> Vec<Exposed> {
    let browsers: HashMap<&str, &BrowserView> = snapshot
        .browsers
        .iter()
        .map(|b| (b.id.as_str(), b))
        .collect();
    let tabs: HashMap<&str, &TabView> = snapshot
        .tabs
        .iter()
        .map(|t| (t.tab_ref.as_str(), t))
        .collect();
    let mut picked: Vec<Exposed> = Vec::new();
    for view in &snapshot.tools {
        let browser = browsers.get(view.browser.as_str()).copied();
        let tab = tabs.get(view.tab.as_str()).copied();
        let in_scope = match (tab, browser) {
            (Some(tab), b) => scope.tab_in_scope(tab, b),
            (None, Some(b)) if view.tab == b.id => scope.browser_tools_in_scope(b),
            // A tab that closed between the two reads, or a browser that just left.
            _ => false,
        };
        // Issue 58, item 5: not suffixed but left out, since any name it got would still
        // read as ours (`browser-type_b1_9` is the built-in's call on another tab).
        if !in_scope || names::poses(&view.name, reserved) {
            continue;
        }
        picked.push(Exposed {
            name: sanitize(&view.name),
            target: view.tab.clone(),
            view: view.clone(),
            tab_title: tab.map(|t| t.title.clone()),
            tab_url: tab.map(|t| t.url.clone()),
        });
    }
    // Stable: within one target the page's own order of tools is kept.
    picked.sort_by_key(|e| order_key(&e.target));

    let fold = |e: &Exposed| names::fold(&e.name);
    let mut count: HashMap<String, usize> = HashMap::new();
    for e in &picked {
        *count.entry(fold(e)).or_default() += 1;
    }
    let mut clashes: BTreeSet<String> = count
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(name, _)| name)
        .collect();
    // A tool whose own name is the name a clashing tool gets with its tab (a page's
    // `search.x_b2_7`, sanitized, is the other tab's `search_x_b2_7`) clashes too: it must not
    // take that name from the tool it points at, whatever the order.
    let suffixed: BTreeSet<String> = picked
        .iter()
        .filter(|e| clashes.contains(&fold(e)))
        .map(|e| names::fold(&with_suffix(&e.name, &format!("_{}", sanitize(&e.target)))))
        .collect();
    for e in &picked {
        if suffixed.contains(&fold(e)) {
            clashes.insert(fold(e));
        }
    }
    let mut used: BTreeSet<String> = reserved.iter().map(|s| names::fold(s)).collect();
    // Plain names first, so a suffixed name never takes a name a tool has by right.
    for e in picked.iter().filter(|e| !clashes.contains(&fold(e))) {
        used.insert(fold(e));
    }
    for e in picked.iter_mut().filter(|e| clashes.contains(&fold(e))) {
        let base = with_suffix(&e.name, &format!("_{}", sanitize(&e.target)));
        let mut name = base.clone();
        let mut n = 2;
        while used.contains(&names::fold(&name)) {
            name = with_suffix(&base, &format!("_{n}"));
            n += 1;
        }
        used.insert(names::fold(&name));
        e.name = name;
    }
    picked
}

/// Where a tool comes from, in words, for its description.
fn provenance(e: &Exposed, browsers: &[BrowserView]) -> String {
    match (&e.tab_title, &e.tab_url) {
        (Some(title), Some(url)) => {
            let title = if title.is_empty() {
                "(untitled)"
            } else {
                title
            };
            format!(
                "[tab {} \"{title}\" {url}; page tool `{}`]",
                e.target, e.view.name
            )
        }
        _ => {
            let name = browsers
                .iter()
                .find(|b| b.id == e.target)
                .map(|b| format!(" ({} {})", b.name, b.version))
                .unwrap_or_default();
            format!("[browser {}{name}; tool `{}`]", e.target, e.view.name)
        }
    }
}

/// A schema as a JSON object; anything else (absent, `true`, garbage) becomes `{"type":"object"}`.
fn schema_object(raw: &str) -> JsonObject {
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => map,
        _ => {
            let mut m = JsonObject::new();
            m.insert("type".into(), json!("object"));
            m
        }
    }
}

impl Exposed {
    /// The MCP tool declaration: the page's schema, title and annotations as they are, the
    /// description with the tab it comes from, and `_meta` saying where calls go.
    pub fn to_mcp(&self, browsers: &[BrowserView]) -> Tool {
        let v = &self.view;
        let mut origin = provenance(self, browsers);
        let untrusted = result::untrusted(v);
        if untrusted {
            origin.push_str(" Its results are untrusted page content.");
        }
        let description = match v.description.as_deref() {
            Some(d) if !d.is_empty() => format!("{d}\n\n{origin}"),
            _ => origin,
        };
        let mut tool = Tool::new_with_raw(
            self.name.clone(),
            Some(description.into()),
            Arc::new(schema_object(v.input_schema.get())),
        );
        tool.title = v.title.clone();
        if let Some(out) = &v.output_schema {
            if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(out.get()) {
                // Untrusted results come wrapped with their notice (super::result).
                let map = if untrusted {
                    result::wrap_output_schema(map)
                } else {
                    map
                };
                tool.output_schema = Some(Arc::new(map));
            }
        }
        tool.annotations = v
            .annotations
            .as_ref()
            .and_then(|a| serde_json::from_value::<ToolAnnotations>(a.clone()).ok());
        let mut meta = JsonObject::new();
        meta.insert("browser-mcp/target".into(), json!(self.target));
        meta.insert("browser-mcp/tool".into(), json!(v.name));
        if let Some(url) = &self.tab_url {
            meta.insert("browser-mcp/url".into(), json!(url));
        }
        // Every hint the page gave, its own included (WebMCP's untrustedContentHint): MCP's
        // annotation type keeps only the hints MCP defines.
        if let Some(a) = &v.annotations {
            meta.insert(result::ANNOTATIONS_META.into(), a.clone());
        }
        if untrusted {
            meta.insert(result::UNTRUSTED_META.into(), json!(true));
        }
        tool.meta = Some(MetaObject(meta));
        tool
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    #[test]
    fn a_scope_survives_its_query_string() {
        let scope = Scope {
            tabs: vec!["b1:7".into(), "9".into()],
            urls: vec!["https://example.com/a?b=c&d=*".into()],
            browsers: vec![],
            sessions: vec!["s 1+2".into()],
            own_tabs: true,
            opened: vec![],
        };
        assert_eq!(Scope::from_query(&scope.to_query()), Ok(scope));
        assert_eq!(Scope::from_query(""), Ok(Scope::default()));
        assert_eq!(Scope::from_query("tabs=1"), Err("tabs".to_owned()));
    }

    fn browser(id: &str, session: &str) -> BrowserView {
        BrowserView {
            id: id.into(),
            dialect: "bridge".into(),
            session_id: session.into(),
            name: "Chrome".into(),
            version: "120".into(),
            connected_at: String::new(),
            tabs: 0,
            tools: 0,
            managed: false,
        }
    }

    fn tab(b: &str, id: i64, url: &str) -> TabView {
        TabView {
            tab_ref: format!("{b}:{id}"),
            browser: b.into(),
            id,
            title: format!("Tab {id}"),
            url: url.into(),
            focused: false,
            tools: vec![],
            hidden: None,
            owner: None,
        }
    }

    fn tool(target: &str, name: &str) -> ToolView {
        ToolView {
            tab: target.into(),
            browser: target.split(':').next().unwrap().into(),
            name: name.into(),
            title: Some(format!("{name} title")),
            description: Some(format!("does {name}")),
            input_schema: RawValue::from_string(
                r#"{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}"#.into(),
            )
            .unwrap(),
            output_schema: None,
            annotations: Some(json!({"readOnlyHint": true, "custom": 1})),
        }
    }

    fn snapshot() -> Snapshot {
        Snapshot {
            browsers: vec![browser("b1", "s1"), browser("b2", "s2")],
            tabs: vec![
                tab("b1", 9, "https://b.example/x"),
                tab("b1", 7, "https://a.example/search"),
                tab("b2", 7, "https://a.example/other"),
            ],
            tools: vec![
                tool("b1:9", "search"),
                tool("b1:7", "search"),
                tool("b1:7", "page.read"),
                tool("b2:7", "click"),
                tool("b2:7", "list_tabs"),
                tool("b2:7", "browserctl_list_tabs"),
                tool("b2", "screenshot"),
            ],
        }
    }

    fn names(e: &[Exposed]) -> Vec<(&str, &str)> {
        e.iter()
            .map(|e| (e.name.as_str(), e.target.as_str()))
            .collect()
    }

    #[test]
    fn names_are_sanitised_and_collisions_get_their_tab() {
        // The page's `browserctl_list_tabs` reads as the meta tool: left out (issue 58).
        let e = expose(&snapshot(), &Scope::default(), &["browserctl_list_tabs"]);
        assert_eq!(
            names(&e),
            vec![
                ("search_b1_7", "b1:7"),
                ("page_read", "b1:7"),
                ("search_b1_9", "b1:9"),
                ("screenshot", "b2"),
                ("click", "b2:7"),
                ("list_tabs", "b2:7"),
            ]
        );
        // The same picture in another order gives the same names.
        let mut s = snapshot();
        s.tools.reverse();
        s.tabs.reverse();
        let again = expose(&s, &Scope::default(), &["browserctl_list_tabs"]);
        let mut a: Vec<_> = names(&e);
        let mut b: Vec<_> = names(&again);
        a.sort();
        b.sort();
        assert_eq!(a, b);
    }

    /// Issue 35, item 2: a page names its tool like another tab's suffixed built-in, to
    /// receive what an agent meant for that tab. The name stays the other tab's.
    #[test]
    fn a_tool_cannot_take_the_name_another_tab_s_tool_gets() {
        let mut s = snapshot();
        s.tabs.push(tab("b1", 11, "https://bank.example/"));
        s.tabs.push(tab("b1", 12, "https://evil.example/"));
        s.tools.push(tool("b1:11", "browser_type"));
        s.tools.push(tool("b1:12", "browser_type"));
        s.tools.push(tool("b1:12", "browser.type_b1_11"));
        for order in [false, true] {
            if order {
                s.tools.reverse();
            }
            let e = expose(&s, &Scope::default(), &[]);
            let to = |name: &str| e.iter().find(|x| x.name == name).map(|x| x.target.as_str());
            assert_eq!(to("browser_type_b1_11"), Some("b1:11"), "{:?}", names(&e));
            assert_eq!(to("browser_type_b1_12"), Some("b1:12"), "{:?}", names(&e));
            let page = e
                .iter()
                .find(|x| x.view.name == "browser.type_b1_11")
                .unwrap();
            assert_eq!(page.target, "b1:12");
            assert_eq!(page.name, "browser_type_b1_11_b1_12", "{:?}", names(&e));
        }
    }

    #[test]
    fn every_name_is_one_mcp_clients_accept() {
        let long = "x".repeat(200);
        let mut s = snapshot();
        s.tools = vec![
            tool("b1:7", &long),
            tool("b1:9", &long),
            tool("b1:9", "ünïcødé tool"),
            tool("b1:9", ""),
            tool("b1:9", "a.b"),
            tool("b1:9", "a_b"),
        ];
        let e = expose(&s, &Scope::default(), &[]);
        let mut seen = BTreeSet::new();
        for x in &e {
            assert!(
                !x.name.is_empty()
                    && x.name.len() <= MAX_NAME
                    && x.name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{}",
                x.name
            );
            assert!(seen.insert(x.name.clone()), "duplicate {}", x.name);
        }
        // Two different names that sanitise alike in the same tab still come apart.
        assert!(seen.contains("a_b_b1_9") && seen.contains("a_b_b1_9_2"));
    }

    #[test]
    fn scope_filters_by_tab_url_browser_and_session() {
        let s = snapshot();
        let only = |scope: Scope| -> Vec<String> {
            expose(&s, &scope, &[])
                .into_iter()
                .map(|e| format!("{}@{}", e.view.name, e.target))
                .collect()
        };
        assert_eq!(
            only(Scope {
                tabs: vec!["b1:9".into()],
                ..Scope::default()
            }),
            vec!["search@b1:9"]
        );
        // A bare tab id matches that tab in any browser; the name is unique again.
        let bare = expose(
            &s,
            &Scope {
                tabs: vec!["7".into()],
                browsers: vec!["1".into()],
                ..Scope::default()
            },
            &[],
        );
        assert_eq!(
            names(&bare),
            vec![("search", "b1:7"), ("page_read", "b1:7")]
        );
        assert_eq!(
            only(Scope {
                urls: vec!["https://a.example/*".into()],
                ..Scope::default()
            }),
            vec![
                "search@b1:7",
                "page.read@b1:7",
                "click@b2:7",
                "list_tabs@b2:7"
            ]
        );
        assert_eq!(
            only(Scope {
                sessions: vec!["s2".into()],
                ..Scope::default()
            }),
            vec!["screenshot@b2", "click@b2:7", "list_tabs@b2:7"]
        );
        assert!(only(Scope {
            browsers: vec!["b3".into()],
            ..Scope::default()
        })
        .is_empty());
        // Own tabs: only those opened, never browser-level tools; none opened, nothing.
        assert_eq!(
            only(Scope {
                own_tabs: true,
                opened: vec!["b2:7".into()],
                ..Scope::default()
            }),
            vec!["click@b2:7", "list_tabs@b2:7"]
        );
        assert!(only(Scope {
            own_tabs: true,
            ..Scope::default()
        })
        .is_empty());
    }

    #[test]
    fn declarations_keep_schema_title_annotations_and_say_where_they_come_from() {
        let s = snapshot();
        let e = expose(&s, &Scope::default(), &[]);
        let t = e[0].to_mcp(&s.browsers);
        assert_eq!(t.name, "search_b1_7");
        assert_eq!(t.title.as_deref(), Some("search title"));
        assert_eq!(
            Value::Object((*t.input_schema).clone()),
            json!({"type":"object","properties":{"q":{"type":"string"}},"required":["q"]})
        );
        assert_eq!(t.annotations.unwrap().read_only_hint, Some(true));
        let d = t.description.unwrap();
        assert!(
            d.starts_with("does search\n\n[tab b1:7 \"Tab 7\" https://a.example/search"),
            "{d}"
        );
        let browser_level = e.iter().find(|x| x.target == "b2").unwrap();
        let d = browser_level.to_mcp(&s.browsers).description.unwrap();
        assert!(d.contains("[browser b2 (Chrome 120)"), "{d}");
    }
}
