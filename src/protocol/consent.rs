//! The consent prompts our extension reports (issue 59; additive to seed 001, ignored by a
//! daemon that does not know them): `consentRequested` when a call waits for the person's
//! answer in the browser, `consentAnswered` when it no longer does. The daemon publishes them
//! as the events of the same names, so that `browserctl call` can say what it waits for and
//! scripts (`browserctl events`) can see a waiting prompt.

use serde::Deserialize;

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
}

#[derive(Debug, Clone, PartialEq)]
pub enum Note {
    Requested(Requested),
    Answered(Answered),
}

/// The message `text` of type `kind` (one of the two above).
pub fn decode(kind: &str, text: &str) -> Result<Note, serde_json::Error> {
    Ok(match kind {
        "consentRequested" => Note::Requested(serde_json::from_str(text)?),
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
                outcome: "denied".into()
            })
        );
        assert!(decode("consentRequested", r#"{"tabId":7,"promptId":"p"}"#).is_err());
    }
}
