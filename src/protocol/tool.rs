//! The MCP tool schema (name, title, description, inputSchema, annotations), as tabs declare it.

/// The built-in whose `paths` the daemon reads from disk (daemon/calls/upload.rs), and whose
/// files browserctl names for the person (ctl/call.rs).
pub const FILE_UPLOAD: &str = "browser_file_upload";
/// The built-in that hands a tab to the person (issue 60).
pub const HANDOFF: &str = "browser_handoff";

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

/// One tool a tab (or a browser) offers. The input schema is kept as the raw JSON text the
/// browser sent: it is passed through to clients untouched and parsed only when needed, which
/// keeps a registry of thousands of tools small.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default = "default_input_schema")]
    pub input_schema: Box<RawValue>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Box<RawValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

fn default_input_schema() -> Box<RawValue> {
    RawValue::from_string(r#"{"type":"object"}"#.to_owned()).expect("valid JSON")
}

impl PartialEq for Tool {
    fn eq(&self, other: &Tool) -> bool {
        self.name == other.name
            && self.title == other.title
            && self.description == other.description
            && self.input_schema.get() == other.input_schema.get()
            && self.output_schema.as_ref().map(|s| s.get())
                == other.output_schema.as_ref().map(|s| s.get())
            && self.annotations == other.annotations
    }
}

impl Tool {
    fn hint(&self, name: &str) -> bool {
        self.annotations
            .as_ref()
            .and_then(|a| a.get(name))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// MCP `readOnlyHint`: the tool does not change its environment.
    pub fn read_only(&self) -> bool {
        self.hint("readOnlyHint")
    }

    /// MCP `idempotentHint`: calling it twice with the same arguments has no extra effect.
    pub fn idempotent(&self) -> bool {
        self.hint("idempotentHint")
    }

    /// Whether a call that timed out may be sent again without risk of running it twice.
    pub fn safe_to_repeat(&self) -> bool {
        self.read_only() || self.idempotent()
    }

    /// The input schema as a JSON value (parsed on demand).
    pub fn input_schema_value(&self) -> Value {
        serde_json::from_str(self.input_schema.get()).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_schema_defaults_to_object_and_hints_are_read() {
        let t: Tool = serde_json::from_str(
            r#"{"name":"search","annotations":{"readOnlyHint":true,"custom":1}}"#,
        )
        .unwrap();
        assert_eq!(t.input_schema.get(), r#"{"type":"object"}"#);
        assert!(t.read_only() && !t.idempotent() && t.safe_to_repeat());
        let back = serde_json::to_value(&t).unwrap();
        assert_eq!(back["annotations"]["custom"], 1);
    }
}
