//! Turning a tool failure reported by a browser into one of our errors.
//!
//! Structured codes are taken as they are. Bare text is classified by keywords, as seed 000
//! does, with one deliberate difference: text that matches nothing is NOT retryable, because
//! repeating a click or a form submission that failed for an unknown reason can run it twice.

use crate::error::{Error, ErrorCode};
use crate::protocol::bridge::ToolFailure;
use serde_json::json;

/// Extension codes that say "this will fail again" or "this may pass next time".
const KNOWN_CODES: &[(&str, bool)] = &[
    ("ELEMENT_NOT_FOUND", false),
    ("INVALID_SELECTOR", false),
    ("VALIDATION_ERROR", false),
    ("INVALID_ARGUMENT", false),
    ("PERMISSION_DENIED", false),
    ("NOT_ALLOWED", false),
    ("EVALUATE_DISABLED", false),
    ("SITE_DISABLED", false),
    ("NAVIGATION_FAILED", false),
    ("UNSUPPORTED", false),
    ("TIMEOUT", true),
    ("NETWORK_ERROR", true),
    ("DISCONNECTED", true),
    ("TAB_BUSY", true),
    ("TEMPORARILY_UNAVAILABLE", true),
];

const NOT_RETRYABLE_WORDS: &[&str] = &[
    "invalid",
    "selector",
    "not found",
    "no element",
    "validation",
    "permission",
    "denied",
    "not allowed",
    "forbidden",
    "unauthorized",
    "unsupported",
];

const RETRYABLE_WORDS: &[&str] = &[
    "network",
    "timeout",
    "timed out",
    "disconnected",
    "connection reset",
    "connection refused",
    "econnreset",
    "econnrefused",
    "temporarily",
    "try again",
    "unavailable",
];

/// Whether free-form error text describes a transient failure.
pub fn retryable_text(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    if NOT_RETRYABLE_WORDS.iter().any(|w| lower.contains(w)) {
        return false;
    }
    RETRYABLE_WORDS.iter().any(|w| lower.contains(w))
}

/// The error a tool failure becomes.
pub fn tool_failure(failure: ToolFailure) -> Error {
    match failure.code {
        Some(code) => {
            if let Some(ours) = ErrorCode::parse(&code) {
                return Error::new(ours, failure.message);
            }
            let retryable = KNOWN_CODES
                .iter()
                .find(|(c, _)| *c == code)
                .map_or_else(|| retryable_text(&failure.message), |(_, r)| *r);
            Error::new(ErrorCode::ToolError, format!("{code}: {}", failure.message))
                .retryable(retryable)
                .with_details(json!({"toolCode": code}))
        }
        None => {
            let retryable = retryable_text(&failure.message);
            Error::new(ErrorCode::ToolError, failure.message).retryable(retryable)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Error {
        tool_failure(ToolFailure {
            code: None,
            message: s.into(),
        })
    }

    #[test]
    fn text_is_classified_and_unknown_text_is_not_retried() {
        assert!(text("Network request failed").retryable);
        assert!(text("Operation timed out").retryable);
        assert!(text("Tab disconnected").retryable);
        assert!(!text("Invalid selector: ##").retryable);
        assert!(!text("Validation failed for field x").retryable);
        assert!(!text("Permission denied").retryable);
        assert!(!text("Tool execution failed: reason").retryable);
        assert_eq!(text("x").code, ErrorCode::ToolError);
    }

    #[test]
    fn structured_codes_are_kept() {
        let e = tool_failure(ToolFailure {
            code: Some("ELEMENT_NOT_FOUND".into()),
            message: "No element matches selector: #nonexistent".into(),
        });
        assert_eq!(e.code, ErrorCode::ToolError);
        assert!(!e.retryable);
        assert_eq!(e.details.unwrap()["toolCode"], "ELEMENT_NOT_FOUND");
        let e = tool_failure(ToolFailure {
            code: Some("TAB_NOT_FOUND".into()),
            message: "gone".into(),
        });
        assert_eq!(e.code, ErrorCode::TabNotFound);
        // "timed out" would read as transient; a prompt nobody answered is not.
        let e = tool_failure(ToolFailure {
            code: Some("USER_CONSENT_TIMEOUT".into()),
            message: "nobody answered the prompt: timed out".into(),
        });
        // The tool never ran: a code of its own (issue 59), not the tool's failure.
        assert_eq!(e.code, ErrorCode::UserConsentTimeout);
        assert!(!e.retryable);
    }
}
