//! Trusted input the daemon performs for its extension (issue 57), two additive messages of the
//! bridge protocol (seed 001; docs/dialects.md): in a browser the daemon launched and drives
//! over WebDriver BiDi (a Firefox), the extension cannot make input the page believes, and asks
//! the daemon to.
//!
//! ```text
//! extension → daemon  {"type":"input","requestId":"input_7","tabId":12,"actions":[…],"probe":"…"}
//! daemon → extension  {"type":"inputDone","requestId":"input_7"}
//!                     {"type":"inputDone","requestId":"input_7","error":{"code":"UNKNOWN_TAB","message":"…"}}
//! ```
//!
//! `actions` are WebDriver BiDi `input.performActions` sources, performed on the top-level
//! context of tab `tabId`. The daemon learns which context that is from a `probe`: while the
//! request is out, the tab's document carries the nonce in its `data-browser-mcp-input`
//! attribute, and the one context whose document does is the tab's.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The most `actions` may weigh (a drag's paced moves and a long text typed key by key fit).
pub const MAX_ACTIONS_BYTES: usize = 256 * 1024;

/// Answer codes an extension acts on.
pub mod code {
    /// The daemon does not know the tab's context (yet, or any more): ask again with a probe.
    pub const UNKNOWN_TAB: &str = "UNKNOWN_TAB";
    /// No trusted input from this daemon for this browser: synthetic input from now on.
    pub const UNSUPPORTED: &str = "UNSUPPORTED";
}

/// `input`, extension → daemon.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequest {
    pub request_id: String,
    /// The extension's id of the tab (`bridge::TabId`; not imported, bridge.rs imports this).
    pub tab_id: i64,
    pub actions: Box<RawValue>,
    #[serde(default)]
    pub probe: Option<String>,
}

/// Why an input was not performed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputError {
    pub code: String,
    pub message: String,
}

/// `inputDone`, daemon → extension.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename = "inputDone", rename_all = "camelCase")]
pub struct InputDone<'a> {
    pub session_id: &'a str,
    pub request_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<InputError>,
}

impl InputDone<'_> {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("inputDone always serializes")
    }
}
