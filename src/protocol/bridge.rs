//! Seed 001: the bridge protocol between the daemon and a browser extension.
//!
//! Every message is a JSON object with a `type` field and an optional `sessionId`. Inbound
//! frames are read in one pass into `Inbound` (a flat struct of every field any message
//! has) and then checked into a typed [`ExtensionMessage`]; this keeps a tool's result as raw
//! JSON text that is passed through, never re-parsed.

use super::tool::Tool;
use super::{need, DecodeError};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// The dialect name this protocol goes by in browser views (`BrowserView::dialect`).
pub const DIALECT: &str = "bridge";

/// The prefix of the tools the extension offers itself (`browser_snapshot`, …). The extension
/// never offers a page's tool under a name that has it once sanitized
/// (extension/shared/names.js), so on a bridge browser such a tool is the extension's own.
pub const BUILTIN_PREFIX: &str = "browser_";

/// The `features` entry of an extension that takes `watch` (issue 30).
pub const WATCH: &str = "watch";

/// A tab id as the browser reports it (Chrome's tab ids are integers).
pub type TabId = i64;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct BrowserInfo {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
}

/// A tab as the extension describes it. `tools` is optional in updates: absent means
/// "unchanged", present (even empty) replaces the tab's tools.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TabInfo {
    pub id: TabId,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// Additive: whether this tab is the focused (active) one.
    #[serde(default, alias = "active", skip_serializing_if = "Option::is_none")]
    pub focused: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_id: Option<i64>,
    /// Additive (our extension): tools the user's site policy keeps from the daemon.
    #[serde(
        default,
        deserialize_with = "Hidden::lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub hidden: Option<Hidden>,
}

/// Tools a tab has but the extension does not offer, and why (the user turned the site off,
/// or its built-ins, or `browser_evaluate`). It travels next to `tools` and is replaced with
/// them; a call to one of these gets the reason instead of a bare "no such tool".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hidden {
    pub tools: Vec<String>,
    pub reason: String,
}

impl Hidden {
    /// Never fails: the hint is optional, so a malformed one (wrong types, missing fields)
    /// counts as absent rather than costing the message it rides on. Non-string names are
    /// skipped; an empty list is no hint.
    fn lenient<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Hidden>, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(Hidden::from_value(&v))
    }

    fn from_value(v: &Value) -> Option<Hidden> {
        let tools: Vec<String> = v
            .get("tools")?
            .as_array()?
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect();
        if tools.is_empty() {
            return None;
        }
        let reason = v
            .get("reason")
            .and_then(Value::as_str)
            .filter(|r| !r.trim().is_empty())
            .unwrap_or("the extension does not say why")
            .to_owned();
        Some(Hidden { tools, reason })
    }

    pub fn names(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t == tool)
    }
}

/// Every field of every extension→server message, read in one pass.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Inbound<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default, deserialize_with = "super::string_or_number::deserialize")]
    call_id: Option<String>,
    #[serde(default, deserialize_with = "super::string_or_number::deserialize")]
    request_id: Option<String>,
    #[serde(default)]
    tab_id: Option<TabId>,
    #[serde(default)]
    tab: Option<TabInfo>,
    #[serde(default)]
    tabs: Option<Vec<TabInfo>>,
    #[serde(default)]
    tools: Option<Vec<Tool>>,
    #[serde(default, deserialize_with = "Hidden::lenient")]
    hidden: Option<Hidden>,
    #[serde(default)]
    browser: Option<BrowserInfo>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<Value>,
    /// `tabEvent` (additive): which page event, and its object, kept as raw text until its
    /// size is checked. Any JSON here: another message type's `event` must not cost it.
    #[serde(default)]
    event: Option<Value>,
    #[serde(default)]
    data: Option<Box<RawValue>>,
    /// `connected` (additive): what the extension understands beyond seed 001.
    #[serde(default)]
    features: Option<Vec<String>>,
}

/// The failure a tool reported: seed 001 sends a string; extensions that know a code send
/// `{"code": "...", "message": "..."}`, which is taken as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolFailure {
    pub code: Option<String>,
    pub message: String,
}

impl ToolFailure {
    fn from_value(v: Value) -> Option<ToolFailure> {
        match v {
            Value::Null => None,
            Value::String(message) => Some(ToolFailure {
                code: None,
                message,
            }),
            Value::Object(map) => {
                let code = map.get("code").and_then(|c| match c {
                    Value::String(s) => Some(s.clone()),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                });
                let message = map
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| Value::Object(map.clone()).to_string());
                Some(ToolFailure { code, message })
            }
            Value::Bool(false) => None,
            other => Some(ToolFailure {
                code: None,
                message: other.to_string(),
            }),
        }
    }
}

/// A checked extension→server message.
#[derive(Debug)]
pub enum ExtensionMessage {
    Connected {
        browser: BrowserInfo,
        tabs: Vec<TabInfo>,
        /// Additive (our extension): what it understands beyond seed 001, e.g. [`WATCH`].
        features: Vec<String>,
    },
    Disconnected,
    TabCreated {
        tab: TabInfo,
        request_id: Option<String>,
    },
    TabUpdated {
        tab: TabInfo,
    },
    TabClosed {
        tab_id: TabId,
    },
    TabFocused {
        tab_id: TabId,
        tools: Option<Vec<Tool>>,
        /// Additive; only meaningful with `tools` (it is replaced with them).
        hidden: Option<Hidden>,
    },
    ToolsChanged {
        tab_id: TabId,
        tools: Vec<Tool>,
        /// Additive: what the user's site policy keeps from the daemon.
        hidden: Option<Hidden>,
    },
    ToolsDiscovered {
        call_id: String,
        tab_id: Option<TabId>,
        tools: Vec<Tool>,
        /// Additive, as in `toolsChanged`.
        hidden: Option<Hidden>,
        /// Additive: set when the tab could not be asked.
        error: Option<ToolFailure>,
    },
    /// Additive (our extension): a request that failed before it produced its normal answer,
    /// e.g. an openTab with a URL the browser refuses. Names the request it answers.
    Error {
        request_id: Option<String>,
        failure: ToolFailure,
    },
    ToolResult {
        call_id: Option<String>,
        outcome: Result<Box<RawValue>, ToolFailure>,
    },
    /// Additive (our extension): something a page did that scripts may react to — `event` is
    /// `consoleError`, `downloadFinished` or `navigated` (others are ignored by the daemon),
    /// `data` its JSON object.
    TabEvent {
        tab_id: TabId,
        event: String,
        data: Box<RawValue>,
    },
    /// Additive (our extension): a call waits for the person's answer in the browser, or no
    /// longer does, or the browser took a terminal's answer ([`super::consent`]).
    Consent(super::consent::Note),
    /// Additive (our extension): the answer to `watch`, once the extension did what it asks.
    Watching {
        request_id: Option<String>,
    },
    /// Additive (issue 57): trusted input for the daemon to perform ([`super::input`]).
    Input(super::input::InputRequest),
    Ping,
    Pong,
    /// A well-formed message of a type this daemon does not know: logged and ignored.
    Unknown {
        kind: String,
    },
}

/// A decoded frame together with the session it named (if any).
#[derive(Debug)]
pub struct Decoded {
    pub session_id: Option<String>,
    pub message: ExtensionMessage,
}

/// Why a frame was rejected; never fatal to the connection.
/// Decodes one text frame from an extension.
pub fn decode(text: &str) -> Result<Decoded, DecodeError> {
    let m: Inbound = serde_json::from_str(text)?;
    let message = match m.kind.as_ref() {
        "connected" => ExtensionMessage::Connected {
            browser: m.browser.unwrap_or_default(),
            tabs: m.tabs.unwrap_or_default(),
            features: m.features.unwrap_or_default(),
        },
        "disconnected" => ExtensionMessage::Disconnected,
        "tabCreated" => ExtensionMessage::TabCreated {
            tab: need(m.tab, "tabCreated", "tab")?,
            request_id: m.request_id,
        },
        "tabUpdated" => ExtensionMessage::TabUpdated {
            tab: need(m.tab, "tabUpdated", "tab")?,
        },
        "tabClosed" => ExtensionMessage::TabClosed {
            tab_id: need(m.tab_id, "tabClosed", "tabId")?,
        },
        "tabFocused" => ExtensionMessage::TabFocused {
            tab_id: need(m.tab_id, "tabFocused", "tabId")?,
            tools: m.tools,
            hidden: m.hidden,
        },
        "toolsChanged" => ExtensionMessage::ToolsChanged {
            tab_id: need(m.tab_id, "toolsChanged", "tabId")?,
            tools: need(m.tools, "toolsChanged", "tools")?,
            hidden: m.hidden,
        },
        "toolsDiscovered" => ExtensionMessage::ToolsDiscovered {
            call_id: need(m.call_id, "toolsDiscovered", "callId")?,
            tab_id: m.tab_id,
            tools: m.tools.unwrap_or_default(),
            hidden: m.hidden,
            error: m.error.and_then(ToolFailure::from_value),
        },
        "error" => ExtensionMessage::Error {
            request_id: m.request_id.or(m.call_id),
            failure: m
                .error
                .and_then(ToolFailure::from_value)
                .unwrap_or(ToolFailure {
                    code: None,
                    message: "the extension reported an error without details".to_owned(),
                }),
        },
        "toolResult" => {
            let outcome = match m.error.and_then(ToolFailure::from_value) {
                Some(failure) => Err(failure),
                None => Ok(m.result.unwrap_or_else(null_raw)),
            };
            ExtensionMessage::ToolResult {
                call_id: m.call_id,
                outcome,
            }
        }
        "tabEvent" => ExtensionMessage::TabEvent {
            tab_id: need(m.tab_id, "tabEvent", "tabId")?,
            event: need(
                m.event.and_then(|e| e.as_str().map(str::to_owned)),
                "tabEvent",
                "event",
            )?,
            data: m
                .data
                .unwrap_or_else(|| RawValue::from_string("{}".to_owned()).expect("valid JSON")),
        },
        kind @ ("consentRequested" | "consentAnswered" | "answeredConsent") => {
            ExtensionMessage::Consent(super::consent::decode(kind, text)?)
        }
        "watching" => ExtensionMessage::Watching {
            request_id: m.request_id,
        },
        "input" => ExtensionMessage::Input(serde_json::from_str(text)?),
        "ping" => ExtensionMessage::Ping,
        "pong" => ExtensionMessage::Pong,
        _ => ExtensionMessage::Unknown {
            kind: m.kind.into_owned(),
        },
    };
    Ok(Decoded {
        session_id: m.session_id,
        message,
    })
}

fn null_raw() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).expect("valid JSON")
}

/// Server→extension messages.
/// The tab group a new tab joins (an additive `group` on `openTab`): the browser puts the tab
/// in the group of that title in its window, making one if there is none, so the user sees
/// which tabs an agent opened. Browsers without tab groups (Firefox) ignore it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TabGroup {
    pub title: String,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ServerMessage<'a> {
    #[serde(rename_all = "camelCase")]
    Connect {
        session_id: &'a str,
    },
    #[serde(rename_all = "camelCase")]
    OpenTab {
        session_id: &'a str,
        url: &'a str,
        focus: bool,
        request_id: &'a str,
        /// Put the new tab in this tab group; absent for tabs nobody claims.
        #[serde(skip_serializing_if = "Option::is_none")]
        group: Option<&'a TabGroup>,
    },
    #[serde(rename_all = "camelCase")]
    CloseTab {
        session_id: &'a str,
        tab_id: TabId,
        /// Not in seed 001 (additive): names the close in an `error` the browser answers
        /// with when it refuses (a tab of a site the user turned off). Done is `tabClosed`.
        request_id: &'a str,
    },
    /// Not in seed 001 (additive; old extensions ignore unknown types): the hand-off on this
    /// tab lost its caller, or (`answer`: `done`, `cant`) the person answered it in the agent's
    /// client (issue 60); the browser stops asking the person. No answer.
    #[serde(rename_all = "camelCase")]
    EndHandoff {
        session_id: &'a str,
        tab_id: TabId,
        #[serde(skip_serializing_if = "Option::is_none")]
        answer: Option<&'a str>,
    },
    /// Not in seed 001 (additive, issue 60): the person answered consent prompt `promptId`
    /// at a terminal (`browserctl consent answer`): the extension answers it as a click in
    /// its popup would, with `choice` (its own name of it: `once`, `always`, `agent`,
    /// `agent-read`, `site-read`, `deny`) and `by` (`terminal`) in its activity log, and says
    /// `answeredConsent` or `error` with the same `requestId`. An older extension ignores
    /// it, and the daemon's wait ends in MESSAGE_TIMEOUT.
    #[serde(rename_all = "camelCase")]
    AnswerConsent {
        session_id: &'a str,
        request_id: &'a str,
        prompt_id: &'a str,
        choice: &'a str,
        by: &'a str,
    },
    /// Not in seed 001 (additive; old extensions ignore unknown types): puts existing tabs
    /// an agent is scoped to in its tab group, as `openTab`'s `group` does for new ones. No
    /// answer.
    #[serde(rename_all = "camelCase")]
    GroupTabs {
        session_id: &'a str,
        tab_ids: &'a [TabId],
        group: &'a TabGroup,
    },
    #[serde(rename_all = "camelCase")]
    CallTool {
        session_id: &'a str,
        call_id: &'a str,
        tab_id: TabId,
        tool_name: &'a str,
        args: &'a RawValue,
        /// Not in seed 001 (additive): who asks (an MCP client's name, `browserctl`), for the
        /// person the browser asks before the call acts on a site.
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<&'a str>,
    },
    #[serde(rename_all = "camelCase")]
    DiscoverTools {
        session_id: &'a str,
        call_id: &'a str,
        tab_id: TabId,
    },
    /// Not in seed 001 (additive; sent only to extensions whose `connected` named [`WATCH`]):
    /// whether an agent is at work. While one is, our extension puts its isolated-world bridge
    /// into the person's pages (their page tools reach us); until then a page pays for none
    /// (issue 30). Answered with `watching` and the same `requestId` once done.
    #[serde(rename_all = "camelCase")]
    Watch {
        session_id: &'a str,
        request_id: &'a str,
        watching: bool,
    },
    Pong,
}

impl ServerMessage<'_> {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("server messages always serialize")
    }
}

#[cfg(test)]
mod tests;
