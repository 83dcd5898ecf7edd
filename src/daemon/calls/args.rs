//! Tool arguments: CLI-style flags typed from the tool's inputSchema, and validation of the
//! final arguments against that schema before anything is sent to a browser.

use crate::error::{Error, ErrorCode};
use crate::protocol::Tool;
use jsonschema::Validator;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Compiled validators by schema text: tabs of the same site share schemas, and compiling one
/// costs far more than validating with it.
#[derive(Default)]
pub struct ValidatorCache {
    // Why a std Mutex: lookups are short and never cross an await.
    map: Mutex<HashMap<Box<str>, Option<Arc<Validator>>>>,
}

const CACHE_LIMIT: usize = 4096;

impl ValidatorCache {
    /// The validator for a schema; `None` when the tool's schema itself is broken (the call
    /// then goes through unvalidated rather than making the tool unusable).
    fn get(&self, schema_text: &str) -> Option<Arc<Validator>> {
        if let Some(v) = self.map.lock().expect("validator cache").get(schema_text) {
            return v.clone();
        }
        let compiled = serde_json::from_str::<Value>(schema_text)
            .ok()
            .and_then(|schema| match jsonschema::validator_for(&schema) {
                Ok(v) => Some(Arc::new(v)),
                Err(e) => {
                    tracing::warn!(error = %e, "a tool declares an invalid inputSchema; not validating its arguments");
                    None
                }
            });
        let mut map = self.map.lock().expect("validator cache");
        if map.len() >= CACHE_LIMIT {
            map.clear();
        }
        map.insert(schema_text.into(), compiled.clone());
        compiled
    }
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidArguments, message)
}

/// Builds the arguments of a call: `args` (a JSON object) with `flags` typed and merged over
/// it, validated against the tool's inputSchema. Untouched `args` are passed on as they came.
pub fn prepare(
    args: Option<Box<RawValue>>,
    flags: &[(String, Option<String>)],
    tool: Option<&Tool>,
    cache: &ValidatorCache,
) -> Result<Box<RawValue>, Error> {
    let parsed: Value = match &args {
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| invalid(format!("arguments are not valid JSON: {e}")))?,
        None => Value::Object(Map::new()),
    };
    let mut object = match parsed {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => {
            return Err(invalid(format!(
                "arguments must be a JSON object, not {}",
                type_name(&other)
            )))
        }
    };
    if !flags.is_empty() {
        let schema = tool.map(Tool::input_schema_value).unwrap_or(Value::Null);
        apply_flags(&mut object, flags, &schema)?;
    }
    let instance = Value::Object(object);
    if let Some(tool) = tool {
        if let Some(validator) = cache.get(tool.input_schema.get()) {
            let errors: Vec<Value> = validator
                .iter_errors(&instance)
                .take(8)
                .map(|e| {
                    let path = e.instance_path().to_string();
                    json!({"path": if path.is_empty() { "/".to_owned() } else { path }, "message": e.to_string()})
                })
                .collect();
            if let Some(first) = errors.first() {
                return Err(invalid(format!(
                    "arguments do not match the inputSchema of `{}`: {}: {}",
                    tool.name,
                    first["path"].as_str().unwrap_or("/"),
                    first["message"].as_str().unwrap_or("")
                ))
                .with_details(json!({"errors": errors})));
            }
        }
    }
    match (args, flags.is_empty()) {
        (Some(raw), true) if raw.get().trim_start().starts_with('{') => Ok(raw),
        _ => Ok(serde_json::value::to_raw_value(&instance).expect("JSON values serialize")),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `query-text`, `query_text` and `queryText` all name the property `queryText`.
fn normalize(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

fn apply_flags(
    object: &mut Map<String, Value>,
    flags: &[(String, Option<String>)],
    schema: &Value,
) -> Result<(), Error> {
    let properties = schema.get("properties").and_then(Value::as_object);
    for (flag, value) in flags {
        let (name, prop) = match properties {
            Some(props) => match props
                .get_key_value(flag.as_str())
                .or_else(|| props.iter().find(|(k, _)| normalize(k) == normalize(flag)))
            {
                Some((k, p)) => (k.clone(), p),
                None if schema.get("additionalProperties") == Some(&Value::Bool(false))
                    || !props.is_empty() =>
                {
                    let known: Vec<String> = props.keys().map(|k| format!("--{k}")).collect();
                    return Err(invalid(format!(
                        "unknown parameter --{flag}; this tool takes {}",
                        if known.is_empty() {
                            "no parameters".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ))
                    .with_details(
                        json!({"parameter": flag, "known": props.keys().collect::<Vec<_>>()}),
                    ));
                }
                None => (flag.clone(), &Value::Null),
            },
            None => (flag.clone(), &Value::Null),
        };
        let types = schema_types(prop);
        if types.contains(&"array") {
            let item_schema = prop.get("items").unwrap_or(&Value::Null);
            let text = value
                .as_deref()
                .ok_or_else(|| invalid(format!("--{flag} needs a value")))?;
            let slot = object
                .entry(name.clone())
                .or_insert_with(|| Value::Array(Vec::new()));
            match serde_json::from_str::<Value>(text) {
                Ok(Value::Array(items)) => *slot = Value::Array(items),
                _ => {
                    let item = typed_value(flag, Some(text), item_schema)?;
                    match slot {
                        Value::Array(list) => list.push(item),
                        other => *other = Value::Array(vec![item]),
                    }
                }
            }
        } else {
            object.insert(name, typed_value(flag, value.as_deref(), prop)?);
        }
    }
    Ok(())
}

fn schema_types(prop: &Value) -> Vec<&str> {
    match prop.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A flag's text typed by its property schema.
fn typed_value(flag: &str, text: Option<&str>, prop: &Value) -> Result<Value, Error> {
    let types = schema_types(prop);
    let Some(text) = text else {
        return if types.is_empty() || types.contains(&"boolean") {
            Ok(Value::Bool(true))
        } else {
            Err(invalid(format!("--{flag} needs a value")))
        };
    };
    let bad = |what: &str| invalid(format!("--{flag}: `{text}` is not {what}"));
    for t in &types {
        let typed = match *t {
            "string" => Some(Value::String(text.to_owned())),
            "integer" => text.parse::<i64>().ok().map(Value::from),
            "number" => text.parse::<f64>().ok().filter(|f| f.is_finite()).map(|f| {
                match text.parse::<i64>() {
                    Ok(i) => Value::from(i),
                    Err(_) => Value::from(f),
                }
            }),
            "boolean" => match text {
                "true" | "1" | "yes" | "on" => Some(Value::Bool(true)),
                "false" | "0" | "no" | "off" => Some(Value::Bool(false)),
                _ => None,
            },
            "object" => serde_json::from_str::<Value>(text)
                .ok()
                .filter(Value::is_object),
            "null" => (text == "null").then_some(Value::Null),
            _ => None,
        };
        if let Some(v) = typed {
            return Ok(v);
        }
    }
    match types.as_slice() {
        [] => Ok(serde_json::from_str::<Value>(text)
            .ok()
            .filter(|v| !v.is_string())
            .unwrap_or_else(|| Value::String(text.to_owned()))),
        ["integer"] => Err(bad("an integer")),
        ["number"] => Err(bad("a number")),
        ["boolean"] => Err(bad("a boolean (true/false)")),
        ["object"] => Err(bad("a JSON object")),
        _ => Err(bad(&format!("of type {}", types.join(" or ")))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(schema: Value) -> Tool {
        serde_json::from_value(json!({"name": "t", "inputSchema": schema})).unwrap()
    }

    fn flags(list: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_owned)))
            .collect()
    }

    fn run(schema: Value, args: Option<&str>, f: &[(&str, Option<&str>)]) -> Result<Value, Error> {
        let cache = ValidatorCache::default();
        let raw = args.map(|a| RawValue::from_string(a.to_owned()).unwrap());
        prepare(raw, &flags(f), Some(&tool(schema)), &cache)
            .map(|r| serde_json::from_str(r.get()).unwrap())
    }

    #[test]
    fn flags_are_typed_from_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "query": {"type": "string"}, "limit": {"type": "integer"}, "ratio": {"type": "number"},
            "exact": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
            "ids": {"type": "array", "items": {"type": "integer"}}, "opts": {"type": "object"},
            "maxResults": {"type": "integer"}}});
        let v = run(
            schema,
            None,
            &[
                ("query", Some("42")),
                ("limit", Some("5")),
                ("ratio", Some("0.5")),
                ("exact", None),
                ("tags", Some("a")),
                ("tags", Some("b")),
                ("ids", Some("[1,2]")),
                ("opts", Some(r#"{"x":1}"#)),
                ("max-results", Some("3")),
            ],
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"query": "42", "limit": 5, "ratio": 0.5, "exact": true,
            "tags": ["a", "b"], "ids": [1, 2], "opts": {"x": 1}, "maxResults": 3})
        );
    }

    #[test]
    fn wrong_values_and_unknown_flags_are_invalid_arguments() {
        let schema = json!({"type": "object", "properties": {"limit": {"type": "integer"}}});
        let e = run(schema.clone(), None, &[("limit", Some("five"))]).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArguments);
        assert!(e.message.contains("not an integer"), "{}", e.message);
        let e = run(schema, None, &[("nope", Some("1"))]).unwrap_err();
        assert!(e.message.contains("--limit"), "{}", e.message);
    }

    #[test]
    fn schema_violations_name_the_path() {
        let schema = json!({"type": "object", "properties": {"query": {"type": "string"},
            "n": {"type": "integer", "minimum": 1}}, "required": ["query"]});
        let e = run(schema.clone(), Some(r#"{"n": 0, "query": "x"}"#), &[]).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArguments);
        assert_eq!(e.details.unwrap()["errors"][0]["path"], "/n");
        let e = run(schema.clone(), None, &[]).unwrap_err();
        assert!(e.message.contains("query"), "{}", e.message);
        let ok = run(schema.clone(), Some(r#"{"query":"x"}"#), &[]).unwrap();
        assert_eq!(ok, json!({"query": "x"}));
        let e = run(schema, Some("[1]"), &[]).unwrap_err();
        assert!(e.message.contains("JSON object"));
    }
}
