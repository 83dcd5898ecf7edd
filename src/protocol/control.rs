//! The control API on the Unix socket: HTTP/1.1 + JSON, versioned under `/v1/`.
//!
//! | method | route | body / query | answer |
//! |---|---|---|---|
//! | GET | /v1/status | | [`Status`] |
//! | GET | /v1/browsers | | [`Browsers`] |
//! | POST | /v1/browsers | [`LaunchRequest`](super::managed::LaunchRequest) | [`ManagedView`](super::managed::ManagedView), once its first tab is listed |
//! | DELETE | /v1/browsers/{browser} | | [`ManagedView`](super::managed::ManagedView), closed |
//! | GET | /v1/tabs | `?browser=` | [`Tabs`] |
//! | GET | /v1/tabs/{tab} | | [`TabView`] |
//! | POST | /v1/tabs | [`OpenTabRequest`] | [`TabView`] of the new tab |
//! | DELETE | /v1/tabs/{tab} | | [`Closed`] |
//! | POST | /v1/tabs/{tab}/discover | | [`TabView`] with fresh tools |
//! | GET | /v1/tools | `?tab=&browser=&name=` | [`Tools`] |
//! | POST | /v1/call | [`CallRequest`] | [`CallResponse`] |
//! | DELETE | /v1/calls/{callId} | | [`Cancelled`]; the call ends with CANCELLED |
//! | GET | /v1/events | `?since=&type=&tab=` | NDJSON stream of [`Event`] |
//! | GET | /v1/consent | | [`PromptList`](super::consent::PromptList): the consent prompts that wait |
//! | POST | /v1/consent/{id} | [`AnswerRequest`](super::consent::AnswerRequest) | [`AnswerTaken`](super::consent::AnswerTaken) |
//! | POST | /v1/pairing/codes | | [`PairingCode`] |
//! | GET | /v1/pairing/codes/{codeId} | `?waitMs=` | [`PairingCodeState`] |
//! | GET | /v1/pairings | | [`PairingList`] |
//! | DELETE | /v1/pairings/{id} | | [`PairingRevoked`] |
//! | POST | /v1/token/rotate | | [`TokenRotated`], once the discovery file carries the new token |
//! | GET | /v1/mcp | `?tab=&url=&browser=&session=&own=1`, `Upgrade: mcp-stdio` | 101, then MCP ([`MCP_UPGRADE`]) |
//!
//! Errors: [`crate::error::ErrorBody`], `{"error": {"code", "message", "retryable",
//! "details"}}`, with a fitting status. The daemon writes and the client reads these very
//! types, so a shape is defined once.

/// The control API's version: the `/v1/` of its routes. A client on another machine
/// (`browserctl --host`) states it first, and a remote end that speaks another refuses.
pub const CONTROL_API: u32 = 1;

pub use super::bridge::TabGroup;
use super::tool::Tool;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub version: String,
    pub pid: u32,
    pub port: u16,
    pub socket: String,
    pub discovery_file: String,
    pub started_at: String,
    pub uptime_ms: u64,
    pub browsers: usize,
    pub tabs: usize,
    pub tools: usize,
    pub calls_in_flight: u64,
    /// Entries in the connections' pending-call tables (0 when nothing waits).
    pub pending_calls: u64,
    pub calls_total: u64,
    pub calls_failed: u64,
    /// Calls ended by `DELETE /v1/calls/{callId}`.
    #[serde(default)]
    pub calls_cancelled: u64,
    /// Responses that arrived after their call had timed out.
    pub late_responses: u64,
    /// Responses whose id matched no call this daemon made (or had no id).
    pub unknown_responses: u64,
    /// Frames from extensions that could not be decoded.
    pub bad_messages: u64,
    pub last_event_seq: u64,
    /// Connections open now on the extension port (WebSockets of every dialect, /register,
    /// /mcp) and on the control socket (this request's included).
    #[serde(default)]
    pub extension_connections: u64,
    #[serde(default)]
    pub control_connections: u64,
    /// MCP sessions live on /mcp (at most `--mcp-max-sessions`).
    #[serde(default)]
    pub mcp_sessions: u64,
    /// Tasks the daemon runs now (connections, calls, event streams); it returns to its idle
    /// value when clients leave.
    #[serde(default)]
    pub tasks: u64,
    /// Connections, messages and requests refused because a configured limit was reached.
    #[serde(default)]
    pub limits_exceeded: u64,
    /// Whether an agent is at work: the browsers have been told (`watch`) and put our
    /// extension's bridge into every page that loads; `--agent-idle` after the last agent's
    /// request, no longer.
    #[serde(default)]
    pub agent_at_work: bool,
}

/// The `Upgrade` token of `GET /v1/mcp`: after `101 Switching Protocols` the connection
/// carries MCP as on stdio (JSON-RPC messages, one per line, both ways), for one MCP session
/// with the daemon's own server. The query scopes it as `browserctl mcp`'s flags do
/// (`Scope::to_query` in the crate's `mcp` module).
pub const MCP_UPGRADE: &str = "mcp-stdio";

/// `GET /v1/browsers`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Browsers {
    pub browsers: Vec<BrowserView>,
    /// The browsers this daemon launched (`POST /v1/browsers`), connected or not: one that
    /// crashed shows here with state `exited`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub managed: Vec<super::managed::ManagedView>,
}

/// `GET /v1/tabs`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tabs {
    pub tabs: Vec<TabView>,
}

/// `GET /v1/tools`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tools {
    pub tools: Vec<ToolView>,
}

/// `DELETE /v1/tabs/{tab}`: the tab closed, as `b1:12`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Closed {
    pub closed: String,
}

/// `DELETE /v1/calls/{callId}`: the call cancelled.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cancelled {
    pub cancelled: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BrowserView {
    /// Daemon-assigned, stable across reconnects of the same session: `b1`, `b2`, …
    pub id: String,
    pub dialect: String,
    pub session_id: String,
    pub name: String,
    pub version: String,
    pub connected_at: String,
    pub tabs: usize,
    pub tools: usize,
    /// Launched by this daemon (`browserctl browser launch`): the agent's own browser.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub managed: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TabView {
    /// Unambiguous across browsers: `<browser>:<tab id>`, e.g. `b1:123`.
    #[serde(rename = "ref")]
    pub tab_ref: String,
    pub browser: String,
    pub id: i64,
    pub title: String,
    pub url: String,
    pub focused: bool,
    pub tools: Vec<Tool>,
    /// Tools the browser extension keeps from the daemon (the user's site policy), and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<super::bridge::Hidden>,
    /// The agent whose tab it is (issue 60): the MCP client that opened it, by its name
    /// (`claude-code`, `claude-code (2)` for a second session of it). Another agent may read
    /// the tab, not act in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// A tool together with where it lives. The tool's fields are spelled out (not flattened)
/// so its schema stays raw JSON text end to end.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolView {
    /// The tab that offers it (`b1:123`), or the browser id for browser-level tools.
    pub tab: String,
    pub browser: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub input_schema: Box<RawValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Box<RawValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

impl ToolView {
    pub fn new(tab: String, browser: String, t: &Tool) -> ToolView {
        ToolView {
            tab,
            browser,
            name: t.name.clone(),
            title: t.title.clone(),
            description: t.description.clone(),
            input_schema: t.input_schema.clone(),
            output_schema: t.output_schema.clone(),
            annotations: t.annotations.clone(),
        }
    }

    pub fn tool(&self) -> Tool {
        Tool {
            name: self.name.clone(),
            title: self.title.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
            output_schema: self.output_schema.clone(),
            annotations: self.annotations.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenTabRequest {
    pub url: String,
    #[serde(default)]
    pub focus: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The tab group the tab joins (the MCP front names it after its client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<TabGroup>,
}

/// CLI-style tool parameters: `--query test` → `("query", Some("test"))`, `--flag` → `("flag", None)`.
pub type Flags = Vec<(String, Option<String>)>;

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct CallRequest {
    pub tool: String,
    /// `b1:123`, a bare tab id when it is unique, or absent (see target selection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<String>,
    /// Arguments as a JSON object, passed through to the tab.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Box<RawValue>>,
    /// CLI-style arguments (`--query test` → `["query", "test"]`; a bare `--flag` has a null
    /// value), typed by the daemon from the target tool's inputSchema and merged over `args`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Flags,
    /// The whole call's time budget in ms: every attempt, and the waits between them, end
    /// within it; a retry that cannot fit is not tried. Absent: no budget beyond the
    /// attempts' own timeouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// The time one attempt may take, in ms [default: the daemon's `--call-timeout`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// Retry after MESSAGE_TIMEOUT even when the tool is not marked read-only or idempotent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retry_on_timeout: bool,
    /// A caller-chosen id, unique among the calls in flight, that `DELETE /v1/calls/{callId}`
    /// cancels the call by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Directories `browser_file_upload`'s `paths` may be read from for this call, besides the
    /// daemon's `--upload-root`s: an MCP client's roots (`roots/list`), passed on by the MCP
    /// front. Absolute paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upload_roots: Vec<String>,
    /// Who asks, in words a person knows: an MCP client's name, `browserctl`. The browser
    /// names it when it asks the person whether this call may act on a site (issue 31).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallResponse {
    pub tab: String,
    pub tool: String,
    pub attempts: u32,
    pub elapsed_ms: u64,
    pub result: Box<RawValue>,
}

/// One entry of the event stream. `seq` increases by one per event, so a client that saw
/// `seq = n` resumes with `?since=n`.
///
/// Generic so the daemon can write an event from borrowed strings and typed data while a
/// client reads the same shape into owned strings and JSON: `Event` is `Event<String, Value>`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Event<S = String, D = Value> {
    pub seq: u64,
    #[serde(rename = "type")]
    pub kind: S,
    /// Milliseconds since the Unix epoch.
    pub time: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<S>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab: Option<S>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<D>,
}

/// The `data` of a `lagged` event: sequence numbers `from..=to` are lost to this reader.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct Lagged {
    pub from: u64,
    pub to: u64,
    pub missed: u64,
}

/// Event types, as they appear in `Event::kind`.
pub mod event_kind {
    pub const BROWSER_CONNECTED: &str = "browserConnected";
    pub const BROWSER_DISCONNECTED: &str = "browserDisconnected";
    pub const TAB_CREATED: &str = "tabCreated";
    pub const TAB_UPDATED: &str = "tabUpdated";
    pub const TAB_CLOSED: &str = "tabClosed";
    pub const TAB_FOCUSED: &str = "tabFocused";
    pub const TOOLS_CHANGED: &str = "toolsChanged";
    /// Events were lost to this reader; `data` says `{"from", "to"}` (inclusive seqs).
    pub const LAGGED: &str = "lagged";
    /// What a page did, as our extension reports it (`tabEvent` on the bridge); `data` is the
    /// extension's object, documented in docs/built-in-tools.md ("Page events").
    /// An uncaught error, unhandled rejection, CSP violation or `console.error` in a tab.
    pub const CONSOLE_ERROR: &str = "consoleError";
    /// A download the tab started completed or was interrupted.
    pub const DOWNLOAD_FINISHED: &str = "downloadFinished";
    /// The tab's top frame committed a navigation (or failed one).
    pub const NAVIGATED: &str = "navigated";
    /// A browser the daemon launched exited; `data` says how (`exit`), whether it was asked
    /// to (`expected`) and whether it is started again (`restarting`).
    pub const BROWSER_EXITED: &str = "browserExited";
    /// A call waits for the person's answer in the browser (issue 59): `data` is `{id, agent,
    /// site, tool, argsSummary, timeoutMs, callId}` (`callId`: the caller's, when it named one).
    pub const CONSENT_REQUESTED: &str = "consentRequested";
    /// The prompt `data.id` ended: `outcome` is `allowed`, `denied` or `unanswered`; `by`
    /// who answered (`browser`, `terminal`), absent when nobody did.
    pub const CONSENT_ANSWERED: &str = "consentAnswered";
    /// The page events, which an extension may send and which change no tab's tools.
    pub const PAGE: &[&str] = &[CONSOLE_ERROR, DOWNLOAD_FINISHED, NAVIGATED];
    pub const ALL: &[&str] = &[
        BROWSER_CONNECTED,
        BROWSER_DISCONNECTED,
        TAB_CREATED,
        TAB_UPDATED,
        TAB_CLOSED,
        TAB_FOCUSED,
        TOOLS_CHANGED,
        LAGGED,
        CONSOLE_ERROR,
        DOWNLOAD_FINISHED,
        NAVIGATED,
        BROWSER_EXITED,
        CONSENT_REQUESTED,
        CONSENT_ANSWERED,
    ];

    /// Whether an event of this kind may change the tools an MCP client sees (page events do
    /// not; `lagged` is answered separately). Focus may: the focused tab is a session's
    /// current tab until it selects one.
    pub fn changes_tools(kind: &str) -> bool {
        kind != LAGGED
            && !PAGE.contains(&kind)
            && kind != CONSENT_REQUESTED
            && kind != CONSENT_ANSWERED
    }

    /// The page event named `name`, as the constant (events hold `&'static str` kinds).
    pub fn page(name: &str) -> Option<&'static str> {
        PAGE.iter().copied().find(|k| *k == name)
    }
}

/// Pairing (issue 21): `POST /v1/pairing/codes` answers a fresh one-time code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingCode {
    /// `ABCD-EFGH-JKMN-PQRS`, for the person to enter in the browser.
    pub code: String,
    /// Its public id, for `GET /v1/pairing/codes/{codeId}`.
    pub code_id: String,
    pub expires_in_ms: u64,
}

/// `GET /v1/pairing/codes/{codeId}[?waitMs=N]`: what became of a code (waiting up to `waitMs`
/// while it is pending).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingCodeState {
    /// `pending`, `paired`, `expired`, `burned` (a browser failed to prove it, or too many
    /// tries) or `unknown`.
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairing: Option<PairingInfo>,
}

/// One pairing, without its key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingInfo {
    pub id: String,
    pub created_at: String,
    pub browser: crate::protocol::auth::BrowserLabel,
}

/// `GET /v1/pairings`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingList {
    pub pairings: Vec<PairingInfo>,
    /// The user's pairing file, shared by all of the user's daemons.
    pub file: String,
}

/// `POST /v1/token/rotate`: the daemon's token was replaced (issue 59); the old one no longer
/// opens `/mcp`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenRotated {
    /// Where the new token is kept.
    pub token_file: String,
    /// The port whose `/mcp` takes it.
    pub port: u16,
}

/// `DELETE /v1/pairings/{id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairingRevoked {
    pub revoked: String,
    /// Connections that had proved this pairing, closed now.
    pub closed: usize,
}
