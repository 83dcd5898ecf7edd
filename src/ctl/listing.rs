//! The read-and-act commands: status, browsers, tabs, tools, open, close, discover.

use super::client::{encode, Client};
use super::output::{print, print_json, print_listing, Column, ListOutput, Stop};
use crate::protocol::control::{Browsers, OpenTabRequest, Status, TabView, Tabs, ToolView, Tools};
use hyper::Method;
use serde_json::Value;

pub async fn status(c: &Client, json: bool) -> Result<(), Stop> {
    let s: Status = c.get("/v1/status").await?;
    if json {
        return print_json(&s);
    }
    print(&format!(
        "browser-mcpd {} (pid {}), up {}s\n\
         extension port  127.0.0.1:{}\n\
         control socket  {}\n\
         discovery file  {}\n\
         browsers {}  tabs {}  tools {}\n\
         calls: {} in flight, {} total, {} failed, {} cancelled; late answers {}, unknown answers {}, bad messages {}\n\
         mcp sessions {}; an agent at work: {}",
        s.version,
        s.pid,
        s.uptime_ms / 1000,
        s.port,
        s.socket,
        s.discovery_file,
        s.browsers,
        s.tabs,
        s.tools,
        s.calls_in_flight,
        s.calls_total,
        s.calls_failed,
        s.calls_cancelled,
        s.late_responses,
        s.unknown_responses,
        s.bad_messages,
        s.mcp_sessions,
        if s.agent_at_work {
            "yes (the browsers put the extension's bridge into every page)"
        } else {
            "no"
        }
    ))
}

const NO_BROWSER: &str = "no browser connected — run `browserctl doctor`";

/// Why a listing came back empty, in words: the daemon's counts tell whether any browser
/// is connected at all.
async fn why_empty(c: &Client, what: &str, filtered: Option<&str>) -> String {
    let counts = c.get::<Status>("/v1/status").await.ok();
    match counts {
        Some(s) if s.browsers == 0 => NO_BROWSER.to_owned(),
        Some(s) => {
            let scope = filtered.map(|f| format!(" for {f}")).unwrap_or_default();
            format!(
                "no {what}{scope} ({} browser{} connected, {} tab{} open, {} tool{} offered)",
                s.browsers,
                plural(s.browsers),
                s.tabs,
                plural(s.tabs),
                s.tools,
                plural(s.tools)
            )
        }
        None => format!("no {what}"),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

pub async fn browsers(c: &Client, out: &ListOutput) -> Result<(), Stop> {
    let list: Browsers = c.get("/v1/browsers").await?;
    const COLUMNS: [Column; 8] = [
        Column::new("ID"),
        Column::new("BROWSER").clip(30),
        Column::new("DIALECT"),
        Column::new("TABS"),
        Column::new("TOOLS"),
        Column::new("MANAGED"),
        Column::new("CONNECTED"),
        Column::new("SESSION").clip(36),
    ];
    // MANAGED: the daemon launched it (its state), or `-` for the user's own browser.
    let state = |id: &str| {
        list.managed
            .iter()
            .find(|m| m.browser == id)
            .map(|m| m.state.clone())
    };
    let mut rows: Vec<Vec<String>> = list
        .browsers
        .iter()
        .map(|b| {
            vec![
                b.id.clone(),
                format!("{} {}", b.name, b.version).trim().to_owned(),
                b.dialect.clone(),
                b.tabs.to_string(),
                b.tools.to_string(),
                state(&b.id).unwrap_or_else(|| "-".into()),
                b.connected_at.clone(),
                b.session_id.clone(),
            ]
        })
        .collect();
    // Launched browsers that are not connected (starting, exited) show too.
    for m in &list.managed {
        if !list.browsers.iter().any(|b| b.id == m.browser) {
            rows.push(vec![
                m.browser.clone(),
                m.kind.clone(),
                "-".into(),
                "0".into(),
                "0".into(),
                m.state.clone(),
                "-".into(),
                m.session_id.clone(),
            ]);
        }
    }
    print_listing(
        "browsers",
        &list.browsers,
        &COLUMNS,
        &rows,
        out.format(),
        !out.no_headers,
        || NO_BROWSER.to_owned(),
    )
}

const TAB_COLUMNS: [Column; 5] = [
    Column::new("TAB"),
    Column::new("TITLE").clip(40),
    Column::new("URL").clip(60),
    Column::new("TOOLS").clip(60),
    Column::new("HIDDEN").wide(),
];

fn tab_rows(tabs: &[TabView]) -> Vec<Vec<String>> {
    tabs.iter()
        .map(|t| {
            let names: Vec<&str> = t.tools.iter().map(|x| x.name.as_str()).collect();
            let hidden = t
                .hidden
                .as_ref()
                .map(|h| format!("{} ({})", h.tools.join(","), h.reason))
                .unwrap_or_default();
            vec![
                format!("{}{}", t.tab_ref, if t.focused { "*" } else { "" }),
                t.title.clone(),
                t.url.clone(),
                names.join(","),
                hidden,
            ]
        })
        .collect()
}

pub async fn tabs(c: &Client, browser: Option<&str>, out: &ListOutput) -> Result<(), Stop> {
    let path = match browser {
        Some(b) => format!("/v1/tabs?browser={}", encode(b)),
        None => "/v1/tabs".to_owned(),
    };
    let list: Tabs = c.get(&path).await?;
    let why = if list.tabs.is_empty() {
        why_empty(c, "tabs", browser).await
    } else {
        String::new()
    };
    print_listing(
        "tabs",
        &list.tabs,
        &TAB_COLUMNS,
        &tab_rows(&list.tabs),
        out.format(),
        !out.no_headers,
        || why,
    )
}

/// The annotations a tool sets to true, without the `Hint` suffix (readOnly, destructive, …).
fn hints(t: &ToolView) -> String {
    t.annotations
        .as_ref()
        .and_then(Value::as_object)
        .map(|a| {
            a.iter()
                .filter(|(k, v)| k.ends_with("Hint") && v.as_bool() == Some(true))
                .map(|(k, _)| k.trim_end_matches("Hint").to_owned())
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

/// The parameter names of a tool's inputSchema, required ones first and marked with `*`.
fn params(t: &ToolView) -> String {
    let schema: Value = serde_json::from_str(t.input_schema.get()).unwrap_or(Value::Null);
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut names: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| {
            p.keys()
                .map(|k| {
                    if required.contains(&k.as_str()) {
                        format!("{k}*")
                    } else {
                        k.clone()
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort_by_key(|n| !n.ends_with('*'));
    names.join(",")
}

pub async fn tools(
    c: &Client,
    tab: Option<&str>,
    browser: Option<&str>,
    out: &ListOutput,
) -> Result<(), Stop> {
    let mut query = Vec::new();
    if let Some(t) = tab {
        query.push(format!("tab={}", encode(t)));
    }
    if let Some(b) = browser {
        query.push(format!("browser={}", encode(b)));
    }
    let path = format!(
        "/v1/tools{}{}",
        if query.is_empty() { "" } else { "?" },
        query.join("&")
    );
    let list: Tools = c.get(&path).await?;
    const COLUMNS: [Column; 5] = [
        Column::new("TAB"),
        Column::new("TOOL"),
        Column::new("HINTS"),
        Column::new("DESCRIPTION").clip(70),
        Column::new("PARAMETERS").wide(),
    ];
    let rows: Vec<Vec<String>> = list
        .tools
        .iter()
        .map(|t| {
            vec![
                t.tab.clone(),
                t.name.clone(),
                hints(t),
                t.description.clone().unwrap_or_default(),
                params(t),
            ]
        })
        .collect();
    let why = if rows.is_empty() {
        why_empty(c, "tools", tab.or(browser)).await
    } else {
        String::new()
    };
    print_listing(
        "tools",
        &list.tools,
        &COLUMNS,
        &rows,
        out.format(),
        !out.no_headers,
        || why,
    )
}

pub async fn open(
    c: &Client,
    url: String,
    focus: bool,
    browser: Option<String>,
    json: bool,
) -> Result<(), Stop> {
    let req = OpenTabRequest {
        url,
        focus,
        browser,
        timeout_ms: None,
        group: None,
    };
    let tab: TabView = c.json(Method::POST, "/v1/tabs", Some(&req)).await?;
    if json {
        return print_json(&tab);
    }
    print(&tab.tab_ref)
}

pub async fn close(c: &Client, tab: &str, json: bool) -> Result<(), Stop> {
    let answer: Value = c
        .json(
            Method::DELETE,
            &format!("/v1/tabs/{}", encode(tab)),
            None::<&()>,
        )
        .await?;
    if json {
        return print_json(&answer);
    }
    print(&format!(
        "closed {}",
        answer["closed"].as_str().unwrap_or(tab)
    ))
}

pub async fn discover(c: &Client, tab: &str, out: &ListOutput) -> Result<(), Stop> {
    let view: TabView = c
        .json(
            Method::POST,
            &format!("/v1/tabs/{}/discover", encode(tab)),
            None::<&()>,
        )
        .await?;
    if out.format() == super::output::Format::Json {
        return print_json(&view);
    }
    const COLUMNS: [Column; 3] = [
        Column::new("TOOL"),
        Column::new("DESCRIPTION").clip(70),
        Column::new("PARAMETERS").wide(),
    ];
    let views: Vec<ToolView> = view
        .tools
        .iter()
        .map(|t| ToolView::new(view.tab_ref.clone(), view.browser.clone(), t))
        .collect();
    let rows: Vec<Vec<String>> = views
        .iter()
        .map(|t| {
            vec![
                t.name.clone(),
                t.description.clone().unwrap_or_default(),
                params(t),
            ]
        })
        .collect();
    print_listing(
        "tools",
        &views,
        &COLUMNS,
        &rows,
        out.format(),
        !out.no_headers,
        || format!("{} offers no tools", view.tab_ref),
    )
}
