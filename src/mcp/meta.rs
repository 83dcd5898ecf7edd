//! The meta tools: offered beside the tab tools in every listing, under names that never
//! change, so an agent reaches every tab and tool whatever its client does with
//! `list_changed` (several popular clients list tools once per session).
//!
//! - `browserctl_list_tabs`, `browserctl_select_tab`, `browserctl_open_tab`,
//!   `browserctl_close_tab`: the tabs, and which one is the session's current tab.
//! - `browserctl_list_tools`: every tab's page tools, with tab, schema and annotations.
//! - `browserctl_call_tool`: calls one of them by name (and tab) with arguments.
//! - `browserctl_launch_browser`, `browserctl_close_browser`: a browser of the agent's own,
//!   which the daemon starts and stops (issue 32), so an agent with no browser open gets one.

use super::expose::{names_tab, Exposed};
use super::result::untrusted;

use crate::error::{Error, ErrorCode};
use crate::protocol::managed::LaunchRequest;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::sync::Arc;

pub const LIST_TABS: &str = "browserctl_list_tabs";
pub const SELECT_TAB: &str = "browserctl_select_tab";
pub const OPEN_TAB: &str = "browserctl_open_tab";
pub const CLOSE_TAB: &str = "browserctl_close_tab";
pub const LIST_TOOLS: &str = "browserctl_list_tools";
pub const CALL_TOOL: &str = "browserctl_call_tool";
pub const LAUNCH_BROWSER: &str = "browserctl_launch_browser";
pub const CLOSE_BROWSER: &str = "browserctl_close_browser";
pub const NAMES: &[&str] = &[
    LIST_TABS,
    SELECT_TAB,
    OPEN_TAB,
    CLOSE_TAB,
    LIST_TOOLS,
    CALL_TOOL,
    LAUNCH_BROWSER,
    CLOSE_BROWSER,
];

fn schema(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => unreachable!("meta tool schemas are objects"),
    }
}

/// The declarations, in the order of [`NAMES`].
pub fn tools() -> Vec<Tool> {
    let list = Tool::new(
        LIST_TABS,
        "List the browser tabs: ref (b1:7), title, URL, whether focused, which one is current, \
         and the page tools each offers. The current tab is the one you last opened or \
         selected here, else the focused one; browser_* tools act on it unless given `tab`, \
         and its page tools are listed by name.",
        schema(json!({"type": "object", "properties": {}})),
    )
    .with_title("List browser tabs")
    .with_annotations(
        ToolAnnotations::new()
            .read_only(true)
            .idempotent(true)
            .open_world(false),
    );
    let select = Tool::new(
        SELECT_TAB,
        "Make a tab the current tab of this session (without bringing it to the front).",
        schema(json!({"type": "object", "properties": {
            "tab": {"type": "string", "description": "The tab, e.g. b1:7"}
        }, "required": ["tab"]})),
    )
    .with_title("Select a browser tab")
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    );
    let open = Tool::new(
        OPEN_TAB,
        "Open a URL in a new browser tab, which becomes the current tab, and return it once \
         the browser reports it.",
        schema(json!({"type": "object", "properties": {
            "url": {"type": "string", "description": "The URL to open"},
            "focus": {"type": "boolean", "description": "Bring the new tab to the front", "default": false},
            "browser": {"type": "string", "description": "Browser id (b1) when several are connected"}
        }, "required": ["url"]})),
    )
    .with_title("Open a browser tab")
    .with_annotations(ToolAnnotations::new().read_only(false).destructive(false).open_world(true));
    let close = Tool::new(
        CLOSE_TAB,
        "Close a browser tab by its id (b1:7, as browserctl_list_tabs shows it).",
        schema(json!({"type": "object", "properties": {
            "tab": {"type": "string", "description": "The tab id, e.g. b1:7"}
        }, "required": ["tab"]})),
    )
    .with_title("Close a browser tab")
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(true)
            .idempotent(true),
    );
    let list_tools = Tool::new(
        LIST_TOOLS,
        "List the page tools of every browser tab, fresh each time: name, tab, title, URL, \
         description, input schema and annotations. Call one with browserctl_call_tool.",
        schema(json!({"type": "object", "properties": {
            "tab": {"type": "string", "description": "Only this tab's tools (b1:7)"}
        }})),
    )
    .with_title("List the tools of browser tabs")
    .with_annotations(
        ToolAnnotations::new()
            .read_only(true)
            .idempotent(true)
            .open_world(false),
    );
    let call = Tool::new(
        CALL_TOOL,
        "Call a tool of a browser tab: `name` as browserctl_list_tools shows it (or the \
         page's own name with `tab`), `arguments` as its input schema says.",
        schema(json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "The tool's name from browserctl_list_tools"},
            "tab": {"type": "string", "description": "The tab (b1:7), when the name is the page's own"},
            "arguments": {"type": "object", "description": "The tool's arguments"}
        }, "required": ["name"]})),
    )
    .with_title("Call a tool of a browser tab")
    .with_annotations(ToolAnnotations::new().read_only(false).open_world(true));
    let launch = Tool::new(
        LAUNCH_BROWSER,
        "Start a browser of your own (headless where there is no display), connected to this \
         daemon, and return it once its first tab is up; that tab becomes the current tab. \
         Use it when no browser is connected. Close it with browserctl_close_browser.",
        schema(json!({"type": "object", "properties": {
            "url": {"type": "string", "description": "The page its first tab opens (default about:blank)"},
            "browser": {"type": "string", "enum": crate::protocol::managed::KINDS, "description": "Which installed browser (default: the daemon's choice)"},
            "headless": {"type": "boolean", "description": "No window (default: headless when the daemon has no display)"},
            "profile": {"type": "string", "description": "A persistent profile by name (logins kept); default a temporary one"}
        }})),
    )
    .with_title("Launch a browser")
    .with_annotations(ToolAnnotations::new().read_only(false).destructive(false).open_world(true));
    let close_browser = Tool::new(
        CLOSE_BROWSER,
        "Close a browser started with browserctl_launch_browser, by its id (b3). The user's \
         own browsers cannot be closed.",
        schema(json!({"type": "object", "properties": {
            "browser": {"type": "string", "description": "The browser id, e.g. b3"}
        }, "required": ["browser"]})),
    )
    .with_title("Close a launched browser")
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(true)
            .idempotent(true),
    );
    vec![
        list,
        select,
        open,
        close,
        list_tools,
        call,
        launch,
        close_browser,
    ]
}

/// `browserctl_launch_browser`'s arguments as a launch request.
pub fn launch_request(args: &JsonObject) -> Result<LaunchRequest, Error> {
    let headless = match args.get("headless") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            return Err(Error::new(
                ErrorCode::InvalidArguments,
                "`headless` must be a boolean",
            ))
        }
    };
    Ok(LaunchRequest {
        browser: arg_str(args, "browser")?.map(str::to_owned),
        headless,
        profile: arg_str(args, "profile")?.map(str::to_owned),
        url: arg_str(args, "url")?.map(str::to_owned),
        ..LaunchRequest::default()
    })
}

pub(super) fn arg_str<'a>(args: &'a JsonObject, name: &str) -> Result<Option<&'a str>, Error> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Error::new(
            ErrorCode::InvalidArguments,
            format!("`{name}` must be a string"),
        )),
    }
}

/// Whether `want` (`b1:7`, or a bare `7`) names this target.
fn is_tab(e: &Exposed, want: &str) -> bool {
    names_tab(&e.target, want)
}

/// A tool's arguments as the call path takes them.
pub fn raw_args(args: &JsonObject) -> Result<Box<RawValue>, Error> {
    serde_json::value::to_raw_value(args)
        .map_err(|e| Error::new(ErrorCode::InvalidArguments, e.to_string()))
}

/// `browserctl_call_tool`'s `arguments`: an object, or nothing.
pub fn arguments(args: &JsonObject) -> Result<JsonObject, Error> {
    match args.get("arguments") {
        None | Some(Value::Null) => Ok(JsonObject::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(_) => Err(Error::new(
            ErrorCode::InvalidArguments,
            "`arguments` must be an object",
        )),
    }
}

/// `browserctl_list_tools`: the rows, optionally for one tab.
pub fn list_tools(exposed: &[Exposed], args: &JsonObject) -> Result<Value, Error> {
    let tab = arg_str(args, "tab")?;
    let rows: Vec<Value> = exposed
        .iter()
        .filter(|e| tab.is_none_or(|t| is_tab(e, t)))
        .map(|e| {
            let v = &e.view;
            let mut row = json!({
                "name": e.name, "tab": e.target, "tool": v.name,
                "title": v.title, "description": v.description,
                "inputSchema": serde_json::from_str::<Value>(v.input_schema.get()).unwrap_or(Value::Null),
                "annotations": v.annotations,
                "untrustedContent": untrusted(v),
            });
            if let Some(url) = &e.tab_url {
                row["url"] = json!(url);
                row["tabTitle"] = json!(e.tab_title);
            }
            row
        })
        .collect();
    Ok(json!({ "tools": rows }))
}

/// `browserctl_call_tool`: which tool, and its arguments.
pub fn resolve_call(
    exposed: Vec<Exposed>,
    args: &JsonObject,
) -> Result<(Exposed, JsonObject), Error> {
    let name = arg_str(args, "name")?
        .filter(|n| !n.is_empty())
        .ok_or_else(|| Error::new(ErrorCode::InvalidArguments, "`name` is required"))?;
    let tab = arg_str(args, "tab")?;
    let arguments = arguments(args)?;
    let in_tab = |e: &Exposed| tab.is_none_or(|t| is_tab(e, t));
    // The name as listed wins; else the page's own name (unique, or within `tab`).
    let mut hits: Vec<Exposed> = exposed
        .iter()
        .filter(|e| e.name == name && in_tab(e))
        .cloned()
        .collect();
    if hits.is_empty() {
        hits = exposed
            .into_iter()
            .filter(|e| e.view.name == name && in_tab(e))
            .collect();
    }
    match hits.len() {
        1 => Ok((hits.remove(0), arguments)),
        0 => Err(Error::new(
            ErrorCode::ToolNotFound,
            match tab {
                Some(t) => format!("no tool `{name}` in tab `{t}`; browserctl_list_tools lists them"),
                None => format!("no tool `{name}`; browserctl_list_tools lists them"),
            },
        )),
        _ => Err(Error::new(
            ErrorCode::AmbiguousTarget,
            format!("several tabs offer `{name}`; name one as `tab`, or use the name browserctl_list_tools shows"),
        )
        .with_details(json!({"candidates": hits.iter().map(|e| json!({
            "name": e.name, "tab": e.target, "url": e.tab_url,
        })).collect::<Vec<_>>()}))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::expose::sanitize;

    fn exposed(name: &str, target: &str, tool: &str) -> Exposed {
        Exposed {
            name: name.into(),
            target: target.into(),
            view: serde_json::from_value(json!({"tab": target, "browser": "b1", "name": tool,
                "inputSchema": {"type": "object"}}))
            .unwrap(),
            tab_title: Some("T".into()),
            tab_url: Some("https://example.com/".into()),
        }
    }

    fn args(v: Value) -> JsonObject {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn names_are_valid_and_distinct() {
        let tools = tools();
        assert_eq!(tools.len(), NAMES.len());
        for (t, name) in tools.iter().zip(NAMES) {
            assert_eq!(t.name, *name);
            assert_eq!(sanitize(name), *name);
        }
    }

    #[test]
    fn calls_resolve_by_listed_name_or_page_name_and_tab() {
        let all = || {
            vec![
                exposed("search_b1_7", "b1:7", "search"),
                exposed("search_b1_9", "b1:9", "search"),
                exposed("fill", "b1:7", "fill"),
            ]
        };
        let (e, a) = resolve_call(
            all(),
            &args(json!({"name": "search_b1_9",
            "arguments": {"q": 1}})),
        )
        .unwrap();
        assert_eq!((e.target.as_str(), a["q"].clone()), ("b1:9", json!(1)));
        let (e, _) = resolve_call(all(), &args(json!({"name": "search", "tab": "7"}))).unwrap();
        assert_eq!(e.name, "search_b1_7");
        let e = resolve_call(all(), &args(json!({"name": "search"}))).unwrap_err();
        assert_eq!(e.code, ErrorCode::AmbiguousTarget);
        let e = resolve_call(all(), &args(json!({"name": "nope"}))).unwrap_err();
        assert_eq!(e.code, ErrorCode::ToolNotFound);
        let e = resolve_call(all(), &args(json!({"name": "fill", "arguments": [1]}))).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArguments);
    }
}
