//! Seed 002: the register/hello dialect.
//!
//! An extension first registers over HTTP (`POST /register {userAgent, windowId}` →
//! `{instanceId, port, websocketUrl}`), then opens a WebSocket and says `hello {instanceId}`;
//! the server answers `welcome {instanceId, serverVersion}`. Calls go out as
//! `tool_call {id, name, args}` and come back as `tool_result {id, result}` or
//! `tool_error {id, error: {code, message}}`.
//!
//! Such a browser has no tab list: it offers a fixed catalogue of consolidated tools
//! ([`catalogue`]) whose `action` argument selects the original tool the extension runs
//! (`browser_navigate` + `action: "wait"` → `browser_wait_for`). The catalogue is data, read
//! from `register_catalogue.json`.

use super::bridge::{BrowserInfo, ToolFailure};
use super::tool::Tool;
use super::{need, DecodeError};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// `POST /register` body. Both fields are informative; a missing one is not an error.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisterRequest {
    #[serde(default)]
    pub user_agent: String,
    #[serde(default)]
    pub window_id: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RegisterResponse {
    pub instance_id: String,
    pub port: u16,
    pub websocket_url: String,
}

/// An instance id in the seed's shape: `inst_<milliseconds>_<6 lowercase letters or digits>`.
pub fn instance_id(now_ms: u64, random: [u8; 6]) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let suffix: String = random
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect();
    format!("inst_{now_ms}_{suffix}")
}

/// The URL an extension is told to connect to: seed 002 always uses `localhost`.
pub fn websocket_url(port: u16) -> String {
    format!("ws://localhost:{port}")
}

/// The browser's name and version from a User-Agent string (the most specific product
/// token wins: Edge and Opera also say Chrome, Chrome also says Safari).
pub fn browser_info(user_agent: &str) -> BrowserInfo {
    const PRODUCTS: &[(&str, &str)] = &[
        ("Edg/", "Edge"),
        ("OPR/", "Opera"),
        ("Firefox/", "Firefox"),
        ("Chrome/", "Chrome"),
        ("Chromium/", "Chromium"),
        ("Version/", "Safari"),
    ];
    for (token, name) in PRODUCTS {
        if let Some(rest) = user_agent.split(token).nth(1) {
            let version = rest.split([' ', ';', ')']).next().unwrap_or_default();
            return BrowserInfo {
                name: (*name).to_owned(),
                version: version.to_owned(),
            };
        }
    }
    BrowserInfo {
        name: user_agent.chars().take(64).collect(),
        version: String::new(),
    }
}

/// Every field of every extension→server message, read in one pass.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Inbound {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    instance_id: Option<String>,
    #[serde(default, deserialize_with = "super::string_or_number::deserialize")]
    id: Option<String>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<Value>,
}

/// A checked extension→server message.
#[derive(Debug)]
pub enum ExtensionMessage {
    Hello {
        instance_id: String,
    },
    ToolResult {
        id: Option<String>,
        result: Box<RawValue>,
    },
    ToolError {
        id: Option<String>,
        error: ToolFailure,
    },
    /// A well-formed message of a type this daemon does not know: logged and ignored.
    Unknown {
        kind: String,
    },
}

pub fn decode(text: &str) -> Result<ExtensionMessage, DecodeError> {
    let m: Inbound = serde_json::from_str(text)?;
    Ok(match m.kind.as_str() {
        "hello" => ExtensionMessage::Hello {
            instance_id: need(m.instance_id, "hello", "instanceId")?,
        },
        "tool_result" => ExtensionMessage::ToolResult {
            id: m.id,
            result: m
                .result
                .unwrap_or_else(|| RawValue::from_string("null".into()).expect("JSON")),
        },
        "tool_error" => ExtensionMessage::ToolError {
            id: m.id,
            error: failure(m.error),
        },
        _ => ExtensionMessage::Unknown { kind: m.kind },
    })
}

/// `error: {code, message}` as the seed has it; a bare string or a missing error still
/// makes a failure with a message.
fn failure(error: Option<Value>) -> ToolFailure {
    match error {
        Some(Value::Object(map)) => ToolFailure {
            code: map.get("code").and_then(|c| match c {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            }),
            message: map
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| Value::Object(map.clone()).to_string()),
        },
        Some(Value::String(message)) => ToolFailure {
            code: None,
            message,
        },
        Some(other) => ToolFailure {
            code: None,
            message: other.to_string(),
        },
        None => ToolFailure {
            code: None,
            message: "the extension reported a tool_error without details".into(),
        },
    }
}

/// Whether a first WebSocket message is this dialect's `hello`: how `GET /` tells a seed-002
/// extension from a seed-001 one (whose first message is `connected`).
pub fn is_hello(text: &str) -> bool {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Probe {
        #[serde(rename = "type")]
        kind: String,
        instance_id: String,
    }
    serde_json::from_str::<Probe>(text)
        .is_ok_and(|p| p.kind == "hello" && !p.instance_id.is_empty())
}

/// Server→extension messages.
#[derive(Debug, Serialize)]
#[serde(tag = "type")]
pub enum ServerMessage<'a> {
    #[serde(rename = "welcome", rename_all = "camelCase")]
    Welcome {
        instance_id: &'a str,
        server_version: &'a str,
    },
    #[serde(rename = "tool_call")]
    ToolCall {
        id: &'a str,
        name: &'a str,
        args: &'a RawValue,
    },
    /// Not in the seed: why a `hello` was refused, sent just before the close frame.
    #[serde(rename = "error")]
    Error { error: ErrorBody<'a> },
}

#[derive(Debug, Serialize)]
pub struct ErrorBody<'a> {
    pub code: &'a str,
    pub message: &'a str,
}

impl ServerMessage<'_> {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("server messages always serialize")
    }
}

// ---- the tool catalogue ---------------------------------------------------------------------

/// Where one action of a consolidated tool goes: the original tool, and argument renames.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum ActionSpec {
    Tool(String),
    Full {
        tool: String,
        #[serde(default)]
        rename: BTreeMap<String, String>,
    },
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    name: String,
    description: String,
    input_schema: Box<RawValue>,
    #[serde(default)]
    annotations: Option<Value>,
    /// `action` value → original tool.
    #[serde(default)]
    actions: BTreeMap<String, ActionSpec>,
    /// For a tool without actions: the original tool it always maps to.
    #[serde(default)]
    tool: Option<String>,
}

#[derive(Debug, Deserialize)]
struct CatalogueFile {
    /// Arguments every tool accepts (they are added to each schema) that only pick the
    /// target inside the daemon and are not sent on, with their schemas.
    strip: Map<String, Value>,
    tools: Vec<Entry>,
}

/// The tools a seed-002 browser offers, and how each call maps to what the extension runs.
#[derive(Debug)]
pub struct Catalogue {
    tools: Vec<Tool>,
    strip: Vec<String>,
    routes: BTreeMap<String, Route>,
}

#[derive(Debug)]
struct Route {
    actions: BTreeMap<String, ActionSpec>,
    fixed: Option<String>,
}

/// A call as the extension wants it.
#[derive(Debug)]
pub struct Mapped {
    pub name: String,
    pub args: Box<RawValue>,
}

impl Catalogue {
    pub fn parse(text: &str) -> Result<Catalogue, serde_json::Error> {
        let file: CatalogueFile = serde_json::from_str(text)?;
        let mut tools = Vec::new();
        let mut routes = BTreeMap::new();
        for e in file.tools {
            let mut schema: Value = serde_json::from_str(e.input_schema.get())?;
            if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
                for (name, prop) in &file.strip {
                    props.entry(name.clone()).or_insert_with(|| prop.clone());
                }
            }
            tools.push(Tool {
                name: e.name.clone(),
                title: None,
                description: Some(e.description),
                input_schema: serde_json::value::to_raw_value(&schema)?,
                output_schema: None,
                annotations: e.annotations,
            });
            routes.insert(
                e.name,
                Route {
                    actions: e.actions,
                    fixed: e.tool,
                },
            );
        }
        Ok(Catalogue {
            tools,
            strip: file.strip.keys().cloned().collect(),
            routes,
        })
    }

    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// Maps a consolidated call to the original tool and its arguments: `action` is removed,
    /// routing-only arguments are dropped, and the action's renames are applied.
    pub fn map(&self, tool: &str, args: &RawValue) -> Result<Mapped, String> {
        let route = self
            .routes
            .get(tool)
            .ok_or_else(|| format!("`{tool}` is not a tool of this browser"))?;
        let mut map: Map<String, Value> = match serde_json::from_str(args.get()) {
            Ok(Value::Object(m)) => m,
            Ok(Value::Null) => Map::new(),
            _ => return Err("arguments must be a JSON object".into()),
        };
        let action = map.remove("action");
        for key in &self.strip {
            map.remove(key);
        }
        let (name, rename) = match (&route.fixed, action) {
            (Some(fixed), _) => (fixed.clone(), None),
            (None, Some(Value::String(action))) => match route.actions.get(&action) {
                Some(ActionSpec::Tool(t)) => (t.clone(), None),
                Some(ActionSpec::Full { tool, rename }) => (tool.clone(), Some(rename)),
                None => {
                    return Err(format!(
                        "unknown action `{action}` for {tool}; one of: {}",
                        route.actions.keys().cloned().collect::<Vec<_>>().join(", ")
                    ))
                }
            },
            (None, _) => {
                return Err(format!(
                    "{tool} needs an `action`: one of {}",
                    route.actions.keys().cloned().collect::<Vec<_>>().join(", ")
                ))
            }
        };
        for (from, to) in rename.into_iter().flatten() {
            if let Some(v) = map.remove(from) {
                map.insert(to.clone(), v);
            }
        }
        let args = serde_json::value::to_raw_value(&Value::Object(map)).expect("JSON");
        Ok(Mapped { name, args })
    }
}

/// The built-in catalogue (`register_catalogue.json`), parsed once.
pub fn catalogue() -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        Catalogue::parse(include_str!("register_catalogue.json"))
            .expect("register_catalogue.json is valid")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(v: Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&v).unwrap()
    }

    fn map(tool: &str, args: Value) -> Result<(String, Value), String> {
        catalogue()
            .map(tool, &raw(args))
            .map(|m| (m.name, serde_json::from_str(m.args.get()).unwrap()))
    }

    #[test]
    fn consolidated_actions_map_to_original_tools() {
        assert_eq!(
            map(
                "browser_navigate",
                json!({"action": "goto", "url": "https://example.com"})
            )
            .unwrap(),
            (
                "browser_navigate".into(),
                json!({"url": "https://example.com"})
            )
        );
        assert_eq!(
            map(
                "browser_navigate",
                json!({"action": "wait", "selector": "#x", "instanceId": "inst_1_a"})
            )
            .unwrap(),
            ("browser_wait_for".into(), json!({"selector": "#x"}))
        );
        assert_eq!(
            map(
                "browser_interact",
                json!({"action": "click", "selector": "#b"})
            )
            .unwrap()
            .0,
            "browser_mouse_click"
        );
        assert_eq!(
            map(
                "browser_debug",
                json!({"action": "dialog", "dialogAction": "accept"})
            )
            .unwrap(),
            ("browser_handle_dialog".into(), json!({"action": "accept"}))
        );
        assert_eq!(
            map("browser_execute", json!({"expression": "1+1"})).unwrap(),
            ("browser_evaluate".into(), json!({"expression": "1+1"}))
        );
        assert!(map("browser_navigate", json!({"action": "fly"}))
            .unwrap_err()
            .contains("goto"));
        assert!(map("browser_navigate", json!({})).is_err());
        assert!(map("nope", json!({})).is_err());
    }

    #[test]
    fn every_catalogue_tool_is_routable_and_its_schema_lists_its_actions() {
        let c = catalogue();
        assert!(c.tools().len() >= 8);
        for t in c.tools() {
            let route = &c.routes[&t.name];
            let schema = t.input_schema_value();
            assert_eq!(schema["type"], "object", "{}", t.name);
            if route.fixed.is_none() {
                let listed: Vec<&str> = schema["properties"]["action"]["enum"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{} has no action enum", t.name))
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect();
                let known: Vec<&str> = route.actions.keys().map(String::as_str).collect();
                let mut listed_sorted = listed.clone();
                listed_sorted.sort();
                assert_eq!(listed_sorted, known, "{}", t.name);
            }
        }
    }

    #[test]
    fn wire_shapes_follow_the_seed() {
        let args = raw(json!({"url": "https://example.com"}));
        let v: Value = serde_json::from_str(
            &ServerMessage::ToolCall {
                id: "call_1",
                name: "browser_navigate",
                args: &args,
            }
            .to_json(),
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"type": "tool_call", "id": "call_1", "name": "browser_navigate", "args": {"url": "https://example.com"}})
        );
        let v: Value = serde_json::from_str(
            &ServerMessage::Welcome {
                instance_id: "inst_1_abc123",
                server_version: "2.0.0",
            }
            .to_json(),
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"type": "welcome", "instanceId": "inst_1_abc123", "serverVersion": "2.0.0"})
        );
        let id = instance_id(1706234567890, [0, 1, 2, 35, 36, 200]);
        assert_eq!(id, "inst_1706234567890_abc9au");
        let r = RegisterResponse {
            instance_id: id,
            port: 3301,
            websocket_url: websocket_url(3301),
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"instanceId": "inst_1706234567890_abc9au", "port": 3301, "websocketUrl": "ws://localhost:3301"})
        );
    }

    #[test]
    fn user_agents_name_the_browser() {
        let chrome = browser_info("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36");
        assert_eq!(
            (chrome.name.as_str(), chrome.version.as_str()),
            ("Chrome", "120.0.0.0")
        );
        let edge = browser_info("Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 Edg/120.0.2210.91");
        assert_eq!(
            (edge.name.as_str(), edge.version.as_str()),
            ("Edge", "120.0.2210.91")
        );
        assert_eq!(browser_info("curl/8").name, "curl/8");
        assert_eq!(browser_info("").name, "");
    }

    #[test]
    fn decodes_extension_messages() {
        assert!(is_hello(r#"{"type":"hello","instanceId":"inst_1_a"}"#));
        assert!(!is_hello(r#"{"type":"hello"}"#));
        assert!(!is_hello(r#"{"type":"connected","browser":{}}"#));
        assert!(!is_hello("nope"));
        match decode(r#"{"type":"tool_result","id":"call_1","result":{"success":true}}"#).unwrap() {
            ExtensionMessage::ToolResult { id, result } => {
                assert_eq!(id.as_deref(), Some("call_1"));
                assert_eq!(result.get(), r#"{"success":true}"#);
            }
            other => panic!("{other:?}"),
        }
        match decode(r#"{"type":"tool_error","id":"call_1","error":{"code":"ELEMENT_NOT_FOUND","message":"No element matches selector: #nonexistent"}}"#).unwrap() {
            ExtensionMessage::ToolError { id, error } => {
                assert_eq!(id.as_deref(), Some("call_1"));
                assert_eq!(error.code.as_deref(), Some("ELEMENT_NOT_FOUND"));
                assert_eq!(error.message, "No element matches selector: #nonexistent");
            }
            other => panic!("{other:?}"),
        }
        assert!(decode(r#"{"type":"hello"}"#).is_err());
        assert!(matches!(
            decode(r#"{"type":"status","x":1}"#).unwrap(),
            ExtensionMessage::Unknown { .. }
        ));
    }
}
