//! Browsers the daemon launches and looks after (issue 32): what `POST /v1/browsers` asks for
//! and what the daemon tells of each one it launched. Wire types only; the daemon's
//! `managed` module does the launching.

use serde::{Deserialize, Serialize};

/// The browsers a launch can ask for, by their `--browser` names.
pub const KINDS: &[&str] = &["chromium", "chrome", "edge", "brave", "firefox"];

/// `POST /v1/browsers`: launch a browser with our extension, connected to this daemon.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LaunchRequest {
    /// One of [`KINDS`]; default: the daemon's `launch-browser`, else the first one found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<String>,
    /// Default: headless when the daemon has no display (`DISPLAY`, `WAYLAND_DISPLAY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headless: Option<bool>,
    /// A persistent profile by name (kept under the profiles directory); none: a temporary
    /// profile, removed when the browser is closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The page to open (default `about:blank`); an http(s) page once the extension is up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default)]
    pub restart: RestartPolicy,
    /// How long to wait for the browser's first tab (default: the daemon's `launch-timeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "InputChoice::is_trusted")]
    pub input: InputChoice,
}

/// The input a launched browser's hands make (issue 57).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputChoice {
    /// The browser's own, which a page cannot tell from a person's: Chromium's through the
    /// extension's DevTools session, Firefox's through the daemon's WebDriver BiDi session.
    #[default]
    Trusted,
    /// The extension's DOM events alone, as in a person's browser that did not grant it: the
    /// extension has no debugger permission in Chromium, and Firefox starts without its Remote
    /// Agent, so its pages see `navigator.webdriver` false.
    Synthetic,
}

impl InputChoice {
    pub fn is_trusted(&self) -> bool {
        *self == InputChoice::Trusted
    }

    pub fn as_str(self) -> &'static str {
        match self {
            InputChoice::Trusted => "trusted",
            InputChoice::Synthetic => "synthetic",
        }
    }
}

impl std::str::FromStr for InputChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "trusted" => Ok(InputChoice::Trusted),
            "synthetic" => Ok(InputChoice::Synthetic),
            _ => Err(format!("`{s}` is not an input: trusted or synthetic")),
        }
    }
}

/// What the daemon does when a browser it launched exits without being asked to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RestartPolicy {
    /// Report it (event `browserExited`, state `exited`) and leave it.
    #[default]
    Never,
    /// Report it and start it again on the same profile, a few times with growing pauses.
    OnFailure,
}

impl RestartPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            RestartPolicy::Never => "never",
            RestartPolicy::OnFailure => "on-failure",
        }
    }
}

/// The states of a managed browser, as [`ManagedView::state`] spells them.
pub mod state {
    /// Started; its extension has not listed a tab yet.
    pub const STARTING: &str = "starting";
    pub const RUNNING: &str = "running";
    /// It exited without being asked to (and is not restarted); `exit` says how.
    pub const EXITED: &str = "exited";
    /// It exited without being asked to and will be started again.
    pub const RESTARTING: &str = "restarting";
    /// Being closed, or closed (the answer of `DELETE /v1/browsers/{ref}`).
    pub const CLOSING: &str = "closing";
    pub const CLOSED: &str = "closed";
}

/// A browser this daemon launched: in `GET /v1/browsers` (`managed`), and the answer of a
/// launch or a close.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedView {
    /// Its browser ref, reserved at launch and kept across restarts: `b3`.
    pub browser: String,
    /// The session id its extension connects with.
    pub session_id: String,
    /// One of [`KINDS`].
    pub kind: String,
    pub executable: String,
    /// The browser's process (also its process group), while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub headless: bool,
    /// The persistent profile's name; none for a temporary one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    pub profile_dir: String,
    /// One of [`state`]'s.
    pub state: String,
    pub restart: RestartPolicy,
    /// The input its hands make; absent from a daemon before this field: trusted.
    #[serde(default)]
    pub input: InputChoice,
    pub restarts: u32,
    pub launched_at: String,
    /// How it last exited (`code 1`, `signal 9`), when it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<String>,
    /// In a launch's answer: the tab of the page it opened (`b3:1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab: Option<String>,
    /// Its stderr, for when it misbehaves (inside a temporary profile, gone with it).
    pub log: String,
}

/// `GET /v1/browsers/launchable`: the browsers this daemon can launch, as it finds them (its
/// config and its PATH, which under a service manager are not the shell's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Launchable {
    pub browsers: Vec<LaunchableBrowser>,
    /// The daemon's PATH.
    pub path: String,
    /// The extension a launched browser loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extension: Option<String>,
    /// Why there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extension_missing: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchableBrowser {
    pub kind: String,
    pub executable: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_request_shape() {
        let r: LaunchRequest =
            serde_json::from_str(r#"{"browser": "firefox", "restart": "on-failure"}"#).unwrap();
        assert_eq!(r.browser.as_deref(), Some("firefox"));
        assert_eq!(r.restart, RestartPolicy::OnFailure);
        assert_eq!(
            serde_json::to_value(LaunchRequest::default()).unwrap(),
            serde_json::json!({"restart": "never"})
        );
        let r: LaunchRequest = serde_json::from_str(r#"{"input": "synthetic"}"#).unwrap();
        assert_eq!(r.input, InputChoice::Synthetic);
        assert!(serde_json::from_str::<LaunchRequest>(r#"{"input": "fast"}"#).is_err());
    }
}
