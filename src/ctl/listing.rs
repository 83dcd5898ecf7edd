//! The read-and-act commands: status, browsers, tabs, tools, open, close, discover.

use super::client::{encode, Client};
use super::output::{clip, print, print_json, table, Stop};
use crate::protocol::control::{Browsers, OpenTabRequest, Status, TabView, Tabs, Tools};
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
         calls: {} in flight, {} total, {} failed; late answers {}, unknown answers {}, bad messages {}",
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
        s.late_responses,
        s.unknown_responses,
        s.bad_messages
    ))
}

pub async fn browsers(c: &Client, json: bool) -> Result<(), Stop> {
    let list: Browsers = c.get("/v1/browsers").await?;
    if json {
        return print_json(&list);
    }
    let rows: Vec<Vec<String>> = list
        .browsers
        .iter()
        .map(|b| {
            vec![
                b.id.clone(),
                format!("{} {}", b.name, b.version).trim().to_owned(),
                b.dialect.clone(),
                b.tabs.to_string(),
                b.tools.to_string(),
                b.connected_at.clone(),
                b.session_id.clone(),
            ]
        })
        .collect();
    print(&table(
        &[
            "ID",
            "BROWSER",
            "DIALECT",
            "TABS",
            "TOOLS",
            "CONNECTED",
            "SESSION",
        ],
        &rows,
    ))
}

fn tab_rows(tabs: &[TabView]) -> Vec<Vec<String>> {
    tabs.iter()
        .map(|t| {
            let names: Vec<&str> = t.tools.iter().map(|x| x.name.as_str()).collect();
            vec![
                format!("{}{}", t.tab_ref, if t.focused { "*" } else { "" }),
                clip(&t.title, 40),
                clip(&t.url, 60),
                clip(&names.join(","), 60),
            ]
        })
        .collect()
}

pub async fn tabs(c: &Client, browser: Option<&str>, json: bool) -> Result<(), Stop> {
    let path = match browser {
        Some(b) => format!("/v1/tabs?browser={}", encode(b)),
        None => "/v1/tabs".to_owned(),
    };
    let list: Tabs = c.get(&path).await?;
    if json {
        return print_json(&list);
    }
    print(&table(
        &["TAB", "TITLE", "URL", "TOOLS"],
        &tab_rows(&list.tabs),
    ))
}

pub async fn tools(
    c: &Client,
    tab: Option<&str>,
    browser: Option<&str>,
    json: bool,
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
    if json {
        return print_json(&list);
    }
    let rows: Vec<Vec<String>> = list
        .tools
        .iter()
        .map(|t| {
            let hints = t
                .annotations
                .as_ref()
                .and_then(Value::as_object)
                .map(|a| {
                    a.iter()
                        .filter(|(k, v)| k.ends_with("Hint") && v.as_bool() == Some(true))
                        .map(|(k, _)| k.trim_end_matches("Hint").to_owned())
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            vec![
                t.tab.clone(),
                t.name.clone(),
                hints,
                clip(t.description.as_deref().unwrap_or(""), 70),
            ]
        })
        .collect();
    print(&table(&["TAB", "TOOL", "HINTS", "DESCRIPTION"], &rows))
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

pub async fn discover(c: &Client, tab: &str, json: bool) -> Result<(), Stop> {
    let view: TabView = c
        .json(
            Method::POST,
            &format!("/v1/tabs/{}/discover", encode(tab)),
            None::<&()>,
        )
        .await?;
    if json {
        return print_json(&view);
    }
    let rows: Vec<Vec<String>> = view
        .tools
        .iter()
        .map(|t| {
            vec![
                t.name.clone(),
                clip(t.description.as_deref().unwrap_or(""), 70),
            ]
        })
        .collect();
    print(&table(&["TOOL", "DESCRIPTION"], &rows))
}
