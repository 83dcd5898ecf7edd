//! The one error type shared by the daemon, the control API and the CLI.
//!
//! Every failure a client can see is an [`Error`] with a stable string [`ErrorCode`], a
//! `retryable` flag and optional structured `details`. Scripts branch on the code (or on the
//! CLI's exit code, which is derived from it), so codes are never renamed.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// Stable error codes. The first four are the call-path codes of seed 000; the rest are ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// No answer from the browser within the call's timeout.
    MessageTimeout,
    /// The message could not be handed to the browser connection (it never left the daemon).
    SendError,
    /// The browser connection broke while the call was in flight.
    WebsocketError,
    /// Every attempt failed with a retryable error; `details` holds the history.
    MaxRetriesExceeded,
    /// The tool ran in the browser and reported a failure.
    ToolError,
    /// The call's tab was closed or its browser has no such tab (a tab closed mid-call says
    /// so in the message: the call did not finish).
    TabNotFound,
    ToolNotFound,
    /// Several tabs or browsers match; `details.candidates` lists them.
    AmbiguousTarget,
    InvalidArguments,
    NoBrowser,
    Unauthorized,
    ShuttingDown,
    /// A malformed request to the control API.
    BadRequest,
    /// An unknown route of the control API.
    NotFound,
    MethodNotAllowed,
    PayloadTooLarge,
    /// The call was cancelled by its caller.
    Cancelled,
    /// A configured limit was hit (calls in flight, connections, rate).
    LimitExceeded,
    /// The CLI could not reach the daemon.
    DaemonUnavailable,
    Internal,
    /// The page the call ran on navigated away before the call finished; retryable when the
    /// tool is read-only or idempotent.
    PageNavigated,
    /// A browser launch found no browser of the kind asked for on this machine;
    /// `details.lookedFor` names what was looked for, `details.path` where.
    BrowserNotInstalled,
    /// A launched browser exited, or its extension did not connect, before its first tab
    /// was listed; `details.log` is its log and `details.tail` the last lines.
    LaunchFailed,
    /// The tab is another agent's (its MCP session opened it): this agent may read it, not
    /// act in it, unless the person allows that (`share-agent-tabs`); `details.owner` names
    /// the agent, `details.tab` the tab.
    TabOwned,
    /// The tab already has as many calls waiting for their turn as `--tab-queue` allows;
    /// `details.retryAfterMs` says when trying again is likely to find room.
    Busy,
    /// An action's element is covered by another at the point where it would land (a dialog,
    /// a banner, an overlay): nothing was done. The message names what covers it (with a ref
    /// when it is something to act on); `force` acts anyway.
    ElementCovered,
    /// The person stopped trusted input (*Cancel* on the browser's debugging bar) in the middle
    /// of an action: the page saw part of it. Not retried; take a new snapshot first.
    InputCancelled,
    /// The tab is handed to the person (`browser_handoff`): no other call runs there until
    /// they answer; `details.tab` names it.
    HandoffInProgress,
    /// The person answered a hand-off with *I can't*.
    HandoffDeclined,
    /// Nobody answered a hand-off within its time (the person's extensions included).
    HandoffTimeout,
    /// A hand-off to a browser nobody sees: one the daemon launched headless.
    NoPerson,
    /// The person at the browser said no to the call in its consent prompt: the tool did not
    /// run.
    UserDenied,
    /// Nobody answered the browser's consent prompt in time: the tool did not run.
    UserConsentTimeout,
    /// A path (`browser_file_upload`'s `paths`, an MCP client's roots) from a client on another
    /// machine, through ssh: the daemon reads no file for it; the client sends the file's bytes.
    RemotePath,
    /// No consent prompt of that id waits (`browserctl consent answer`): never asked, or it
    /// lapsed unanswered or went with its browser; `details.state` says which it was.
    ConsentNotFound,
    /// The consent prompt was answered already (in the browser, or from another terminal):
    /// the first answer stands; `details.outcome` says what it was.
    ConsentAnswered,
}

impl ErrorCode {
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::MessageTimeout,
        ErrorCode::SendError,
        ErrorCode::WebsocketError,
        ErrorCode::MaxRetriesExceeded,
        ErrorCode::ToolError,
        ErrorCode::TabNotFound,
        ErrorCode::ToolNotFound,
        ErrorCode::AmbiguousTarget,
        ErrorCode::InvalidArguments,
        ErrorCode::NoBrowser,
        ErrorCode::Unauthorized,
        ErrorCode::ShuttingDown,
        ErrorCode::BadRequest,
        ErrorCode::NotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::PayloadTooLarge,
        ErrorCode::Cancelled,
        ErrorCode::LimitExceeded,
        ErrorCode::DaemonUnavailable,
        ErrorCode::Internal,
        ErrorCode::PageNavigated,
        ErrorCode::BrowserNotInstalled,
        ErrorCode::LaunchFailed,
        ErrorCode::TabOwned,
        ErrorCode::Busy,
        ErrorCode::ElementCovered,
        ErrorCode::InputCancelled,
        ErrorCode::HandoffInProgress,
        ErrorCode::HandoffDeclined,
        ErrorCode::HandoffTimeout,
        ErrorCode::NoPerson,
        ErrorCode::UserDenied,
        ErrorCode::UserConsentTimeout,
        ErrorCode::RemotePath,
        ErrorCode::ConsentNotFound,
        ErrorCode::ConsentAnswered,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::MessageTimeout => "MESSAGE_TIMEOUT",
            ErrorCode::SendError => "SEND_ERROR",
            ErrorCode::WebsocketError => "WEBSOCKET_ERROR",
            ErrorCode::MaxRetriesExceeded => "MAX_RETRIES_EXCEEDED",
            ErrorCode::ToolError => "TOOL_ERROR",
            ErrorCode::TabNotFound => "TAB_NOT_FOUND",
            ErrorCode::ToolNotFound => "TOOL_NOT_FOUND",
            ErrorCode::AmbiguousTarget => "AMBIGUOUS_TARGET",
            ErrorCode::InvalidArguments => "INVALID_ARGUMENTS",
            ErrorCode::NoBrowser => "NO_BROWSER",
            ErrorCode::Unauthorized => "UNAUTHORIZED",
            ErrorCode::ShuttingDown => "SHUTTING_DOWN",
            ErrorCode::BadRequest => "BAD_REQUEST",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ErrorCode::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorCode::Cancelled => "CANCELLED",
            ErrorCode::LimitExceeded => "LIMIT_EXCEEDED",
            ErrorCode::DaemonUnavailable => "DAEMON_UNAVAILABLE",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::PageNavigated => "PAGE_NAVIGATED",
            ErrorCode::BrowserNotInstalled => "BROWSER_NOT_INSTALLED",
            ErrorCode::LaunchFailed => "LAUNCH_FAILED",
            ErrorCode::TabOwned => "TAB_OWNED",
            ErrorCode::Busy => "BUSY",
            ErrorCode::ElementCovered => "ELEMENT_COVERED",
            ErrorCode::InputCancelled => "INPUT_CANCELLED",
            ErrorCode::HandoffInProgress => "HANDOFF_IN_PROGRESS",
            ErrorCode::HandoffDeclined => "HANDOFF_DECLINED",
            ErrorCode::HandoffTimeout => "HANDOFF_TIMEOUT",
            ErrorCode::NoPerson => "NO_PERSON",
            ErrorCode::UserDenied => "USER_DENIED",
            ErrorCode::UserConsentTimeout => "USER_CONSENT_TIMEOUT",
            ErrorCode::RemotePath => "REMOTE_PATH",
            ErrorCode::ConsentNotFound => "CONSENT_NOT_FOUND",
            ErrorCode::ConsentAnswered => "CONSENT_ANSWERED",
        }
    }

    /// Whether repeating the same request may succeed. Seed 000: timeouts, send failures and
    /// broken sockets are retryable; validation-type failures are not.
    pub fn default_retryable(self) -> bool {
        matches!(
            self,
            ErrorCode::MessageTimeout
                | ErrorCode::SendError
                | ErrorCode::WebsocketError
                | ErrorCode::NoBrowser
                | ErrorCode::LimitExceeded
                | ErrorCode::DaemonUnavailable
                | ErrorCode::Busy
        )
    }

    /// HTTP status used by the control API for this code.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::BadRequest | ErrorCode::InvalidArguments | ErrorCode::RemotePath => 400,
            ErrorCode::Unauthorized => 401,
            ErrorCode::TabOwned | ErrorCode::UserDenied => 403,
            ErrorCode::UserConsentTimeout => 408,
            ErrorCode::TabNotFound
            | ErrorCode::ToolNotFound
            | ErrorCode::NoBrowser
            | ErrorCode::NotFound
            | ErrorCode::ConsentNotFound
            | ErrorCode::BrowserNotInstalled => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::PageNavigated => 410,
            ErrorCode::AmbiguousTarget
            | ErrorCode::HandoffInProgress
            | ErrorCode::ConsentAnswered => 409,
            ErrorCode::HandoffDeclined | ErrorCode::NoPerson => 422,
            ErrorCode::HandoffTimeout => 504,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::ToolError | ErrorCode::ElementCovered | ErrorCode::InputCancelled => 422,
            ErrorCode::LimitExceeded | ErrorCode::Busy => 429,
            ErrorCode::Cancelled => 499,
            ErrorCode::Internal => 500,
            ErrorCode::SendError
            | ErrorCode::WebsocketError
            | ErrorCode::MaxRetriesExceeded
            | ErrorCode::LaunchFailed => 502,
            ErrorCode::ShuttingDown | ErrorCode::DaemonUnavailable => 503,
            ErrorCode::MessageTimeout => 504,
        }
    }

    /// browserctl's exit code for this code; documented in docs/browserctl.md and `browserctl --help`.
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorCode::Internal => 1,
            ErrorCode::BadRequest | ErrorCode::NotFound | ErrorCode::MethodNotAllowed => 2,
            ErrorCode::DaemonUnavailable => 3,
            ErrorCode::NoBrowser | ErrorCode::TabNotFound | ErrorCode::ToolNotFound => 4,
            ErrorCode::AmbiguousTarget => 5,
            ErrorCode::InvalidArguments | ErrorCode::PayloadTooLarge | ErrorCode::RemotePath => 6,
            ErrorCode::ToolError => 7,
            ErrorCode::MessageTimeout => 8,
            ErrorCode::SendError | ErrorCode::WebsocketError | ErrorCode::MaxRetriesExceeded => 9,
            ErrorCode::Unauthorized => 10,
            ErrorCode::ShuttingDown => 11,
            ErrorCode::LimitExceeded => 12,
            ErrorCode::Cancelled => 13,
            ErrorCode::PageNavigated => 14,
            ErrorCode::BrowserNotInstalled => 15,
            ErrorCode::LaunchFailed => 16,
            ErrorCode::TabOwned => 17,
            ErrorCode::Busy => 18,
            ErrorCode::ElementCovered => 19,
            ErrorCode::InputCancelled => 26,
            ErrorCode::HandoffInProgress => 22,
            ErrorCode::HandoffDeclined => 23,
            ErrorCode::HandoffTimeout => 24,
            ErrorCode::NoPerson => 25,
            ErrorCode::UserDenied => 20,
            ErrorCode::UserConsentTimeout => 21,
            ErrorCode::ConsentNotFound => 27,
            ErrorCode::ConsentAnswered => 28,
        }
    }

    pub fn parse(s: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error as it travels: inside the daemon, on the wire (`{"error": {...}}`) and in the CLI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Error {
    pub code: ErrorCode,
    pub message: String,
    pub retryable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl Error {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
            retryable: code.default_retryable(),
            details: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Error {
        self.details = Some(details);
        self
    }

    pub fn retryable(mut self, retryable: bool) -> Error {
        self.retryable = retryable;
        self
    }

    /// Says what to do about it, in the words of the front end that shows the error (a flag
    /// for the CLI, a parameter for an API), when the error has this code: `"…; {hint}"`.
    /// The layers below word their errors for no front end in particular.
    pub fn hint(mut self, code: ErrorCode, hint: &str) -> Error {
        if self.code == code {
            self.message = format!("{}; {hint}", self.message);
        }
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::BadRequest, message)
    }

    pub fn internal(message: impl Into<String>) -> Error {
        Error::new(ErrorCode::Internal, message)
    }
}

/// The body of every error response of the control API.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: Error,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_through_their_strings() {
        for &code in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }

    #[test]
    fn wire_shape_is_code_message_retryable_details() {
        let e = Error::new(ErrorCode::MessageTimeout, "no answer")
            .with_details(serde_json::json!({"attempts": 1}));
        let v = serde_json::to_value(ErrorBody { error: e }).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"error": {"code": "MESSAGE_TIMEOUT", "message": "no answer",
                "retryable": true, "details": {"attempts": 1}}})
        );
    }
}
