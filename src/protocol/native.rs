//! Chrome native messaging between `browserctl native-host` and our extension, and the
//! discovery file the host reads.
//!
//! Framing (both directions): a 4-byte length in native byte order, then that many bytes of
//! UTF-8 JSON. The host speaks first and only: it pushes the complete list of live daemons
//! at start and after every change; the extension sends nothing. In a browser the daemon
//! launched (issue 32), the list names that daemon alone, and says so with `managed`.

use serde::{Deserialize, Serialize};

/// The manifest name of our host; the extension calls `chrome.runtime.connectNative` with it.
pub const HOST_NAME: &str = "dev.browsermcp.host";

/// The only extension allowed to start the host (its id is fixed by the `key` in
/// extension/manifest.json).
pub const EXTENSION_ORIGIN: &str = "chrome-extension://jldadifenendlhihnlmegbljijfhnffa/";

/// The same extension in Firefox: its id is `browser_specific_settings.gecko.id` in
/// extension/manifest.json (Firefox host manifests name extensions by id, not by origin; the
/// `moz-extension://UUID/` origin differs per installation).
pub const GECKO_EXTENSION_ID: &str = "browser-mcp@browsermcp.dev";

/// Chrome refuses host → extension messages larger than this.
pub const MAX_TO_EXTENSION: usize = 1024 * 1024;

/// Host → extension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum HostMessage {
    /// Every live daemon; a port missing here (or with a new token) is one to disconnect.
    Servers {
        servers: Vec<Server>,
        /// Set in a browser a daemon launched (`browserctl browser launch`): the session id
        /// its extension connects with, so the daemon knows it as the one it launched. Such a
        /// browser is the agent's own: nothing in it waits for a person.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        managed: Option<String>,
        /// With `managed`: the input the launch asked for (`browserctl browser launch
        /// --input`); absent, trusted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<super::managed::InputChoice>,
    },
}

/// `'…'` for sh, with embedded single quotes spliced in.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The host manifest that registers `wrapper` (an executable that runs `browserctl
/// native-host`) with a browser: Chromium's names our extension by origin, Firefox's by id,
/// and each browser rejects the other's key.
pub fn host_manifest(wrapper: &std::path::Path, firefox: bool) -> serde_json::Value {
    let mut m = serde_json::json!({
        "name": HOST_NAME,
        "description": "browser-mcp: tells the browser-mcp extension where the local browser-mcpd daemons are",
        "path": wrapper,
        "type": "stdio",
    });
    if firefox {
        m["allowed_extensions"] = serde_json::json!([GECKO_EXTENSION_ID]);
    } else {
        m["allowed_origins"] = serde_json::json!([EXTENSION_ORIGIN]);
    }
    m
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Server {
    pub port: u16,
    pub pid: u32,
    /// Absent for daemons whose discovery file has none (plain seed-001 servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// `server-<pid>.json` in the discovery directory: seed 001's `{port, pid, startedAt}` plus our
/// additive fields. The daemon writes it and browserctl reads it through this one type; a
/// reader ignores unknown fields and takes a plain seed-001 file (only the three).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveryFile {
    pub port: u16,
    pub pid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The daemon's token (agents and `/mcp` must present it); the file is mode 0600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The control socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<String>,
    /// The dialects served on `port`: `bridge`, `register`, `jsonrpc`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protocols: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_message_shape() {
        let m = HostMessage::Servers {
            managed: None,
            input: None,
            servers: vec![
                Server {
                    port: 8765,
                    pid: 12,
                    token: Some("t".into()),
                    version: Some("0.1.0".into()),
                },
                Server {
                    port: 8766,
                    pid: 13,
                    token: None,
                    version: None,
                },
            ],
        };
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            serde_json::json!({"type": "servers", "servers": [
                {"port": 8765, "pid": 12, "token": "t", "version": "0.1.0"},
                {"port": 8766, "pid": 13}]})
        );
    }

    #[test]
    fn seed_discovery_file_parses() {
        let f: DiscoveryFile = serde_json::from_str(
            r#"{"port": 8765, "pid": 12345, "startedAt": "2024-01-01T00:00:00.000Z"}"#,
        )
        .unwrap();
        assert_eq!((f.port, f.pid, f.token), (8765, 12345, None));
    }
}
