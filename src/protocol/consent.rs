//! The consent prompts our extension reports (issue 59; additive to seed 001, ignored by a
//! daemon that does not know them): `consentRequested` when a call waits for the person's
//! answer in the browser, `consentAnswered` when it no longer does. The daemon publishes them
//! as the events of the same names, so that `browserctl call` can say what it waits for and
//! scripts (`browserctl events`) can see a waiting prompt.
//!
//! The daemon's `answerConsent {requestId, promptId, choice, by}` (issue 60) answers a waiting
//! prompt as a click in the popup would, for the person at a terminal (`browserctl consent
//! answer`); the extension says `answeredConsent {requestId, promptId, choice}`, or `error
//! {requestId, error}` with CONSENT_NOT_FOUND, CONSENT_ANSWERED or INVALID_ARGUMENTS (a
//! choice this prompt does not offer).

use serde::{Deserialize, Serialize};

/// A tab's id, as `bridge::TabId` (not imported: the bridge module decodes these notes).
type TabId = i64;

/// `consentRequested`: the call `callId` (the daemon's `callTool`) on tab `tabId` waits for
/// the person's answer to prompt `promptId`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Requested {
    #[serde(default, deserialize_with = "super::string_or_number::deserialize")]
    pub call_id: Option<String>,
    pub tab_id: TabId,
    pub prompt_id: String,
    #[serde(default)]
    pub agent: Option<String>,
    /// The site the call would act on (an origin; several with ` → ` between for frames).
    pub site: String,
    pub tool: String,
    /// The arguments, shortened for a person to read.
    #[serde(default)]
    pub args_summary: Option<String>,
    /// How long the prompt waits before the call fails unanswered.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The answers the prompt offers, in the extension's words (`once`, `always`, …; see
    /// [`CHOICES`]). Additive (issue 60); absent from an older extension.
    #[serde(default)]
    pub choices: Option<Vec<String>>,
}

/// `consentAnswered`: prompt `promptId` ended; `outcome` is `allowed`, `denied` or
/// `unanswered`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answered {
    #[serde(default, deserialize_with = "super::string_or_number::deserialize")]
    pub call_id: Option<String>,
    pub tab_id: TabId,
    pub prompt_id: String,
    pub outcome: String,
    /// Who answered (`browser`, `terminal`); absent when nobody did. Additive (issue 60).
    #[serde(default)]
    pub by: Option<String>,
}

/// The answers to a consent prompt: the name a person types (`browserctl consent answer ID
/// NAME`), and the extension's name of the same choice in its popup (`answerConsent`'s
/// `choice`): allow this call once; allow every agent on the site for good (*Always for this
/// site*); this agent, to read and act (*Always for this agent*); this agent, reading only;
/// every agent, reading only; deny.
pub const CHOICES: &[(&str, &str)] = &[
    ("allow-once", "once"),
    ("allow-site", "always"),
    ("allow-agent", "agent"),
    ("allow-agent-read", "agent-read"),
    ("allow-site-read", "site-read"),
    ("deny", "deny"),
];

/// The extension's name of the choice a person typed.
pub fn wire_choice(typed: &str) -> Option<&'static str> {
    CHOICES.iter().find(|(t, _)| *t == typed).map(|(_, w)| *w)
}

/// The name a person types for the extension's choice `wire`.
pub fn typed_choice(wire: &str) -> Option<&'static str> {
    CHOICES.iter().find(|(_, w)| *w == wire).map(|(t, _)| *t)
}

/// A waiting prompt, as `GET /v1/consent` lists it (`browserctl consent list`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptView {
    pub id: String,
    /// The tab the call waits on (`b1:12`).
    pub tab: String,
    pub agent: Option<String>,
    pub site: String,
    pub tool: String,
    pub args_summary: Option<String>,
    /// How long it has waited, and how long it still waits before the call fails unanswered
    /// (when the extension said).
    pub age_ms: u64,
    pub remaining_ms: Option<u64>,
    /// The answers it takes, as typed (`allow-once`, …); every one when the extension did not
    /// say.
    pub choices: Vec<String>,
    /// The caller's call, when it named one.
    pub call_id: Option<String>,
}

/// The answer of `GET /v1/consent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptList {
    pub prompts: Vec<PromptView>,
}

/// The body of `POST /v1/consent/{id}`: a choice as typed ([`CHOICES`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerRequest {
    pub choice: String,
}

/// The answer of `POST /v1/consent/{id}`: the browser took the answer; the call goes on (or
/// fails with USER_DENIED) as after a click in the popup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnswerTaken {
    pub id: String,
    pub choice: String,
    pub tab: String,
}

/// `answeredConsent`: the answer to the daemon's `answerConsent` of `requestId`: the browser
/// answered prompt `promptId` with `choice` (the extension's name).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Taken {
    #[serde(default, deserialize_with = "super::string_or_number::deserialize")]
    pub request_id: Option<String>,
    pub prompt_id: String,
    pub choice: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    Requested(Requested),
    Answered(Answered),
    Taken(Taken),
}

/// The message types of this module, all from the extension.
pub const KINDS: &[&str] = &["consentRequested", "consentAnswered", "answeredConsent"];

/// The message `text` of type `kind` (one of [`KINDS`]).
pub fn decode(kind: &str, text: &str) -> Result<Note, serde_json::Error> {
    Ok(match kind {
        "consentRequested" => Note::Requested(serde_json::from_str(text)?),
        "answeredConsent" => Note::Taken(serde_json::from_str(text)?),
        _ => Note::Answered(serde_json::from_str(text)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_notes_decode_and_a_missing_field_is_refused() {
        let r = decode(
            "consentRequested",
            r#"{"type":"consentRequested","sessionId":"s","callId":"call_3","tabId":7,"promptId":"p1","agent":"browserctl","site":"https://a.example","tool":"search","argsSummary":"{\"query\":\"x\"}","timeoutMs":25000}"#,
        )
        .unwrap();
        let Note::Requested(r) = r else { panic!() };
        assert_eq!(
            (r.call_id.as_deref(), r.tab_id, r.tool.as_str()),
            (Some("call_3"), 7, "search")
        );
        let a = decode(
            "consentAnswered",
            r#"{"type":"consentAnswered","callId":3,"tabId":7,"promptId":"p1","outcome":"denied"}"#,
        )
        .unwrap();
        assert_eq!(
            a,
            Note::Answered(Answered {
                call_id: Some("3".into()),
                tab_id: 7,
                prompt_id: "p1".into(),
                outcome: "denied".into(),
                by: None,
            })
        );
        assert!(decode("consentRequested", r#"{"tabId":7,"promptId":"p"}"#).is_err());
        for (typed, wire) in CHOICES {
            assert_eq!(
                (wire_choice(typed), typed_choice(wire)),
                (Some(*wire), Some(*typed))
            );
        }
        assert_eq!(wire_choice("always"), None, "typed names only");
    }
}
