//! The fuzz targets: each takes arbitrary bytes, hands them to code that reads what a peer
//! sent, and checks what must hold whatever the input (no panic, no unbounded recursion, and
//! what decodes can be written back). The libFuzzer binaries in `fuzz_targets/` call these;
//! so does the main crate's `tests/it/daemon/fuzz_smoke.rs`, with a small mutational driver.

use browser_mcp::daemon::fuzzing as daemon;
use browser_mcp::protocol::{bridge, jsonrpc, register};
use serde_json::value::RawValue;
use serde_json::Value;

/// A fuzz target.
pub type Target = fn(&[u8]);

/// Every target, by name (for drivers).
pub const TARGETS: &[(&str, Target)] = &[
    ("bridge", bridge),
    ("register", register),
    ("jsonrpc", jsonrpc),
    ("control", control),
    ("args", args),
];

fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// Seed 001: a frame from an extension, and the sniffing of `GET /`'s first message.
pub fn bridge(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let _ = register::is_hello(t);
    if let Ok(d) = bridge::decode(t) {
        if let bridge::ExtensionMessage::Connected { tabs, .. } = d.message {
            // What the registry would store must serialize again (views, events).
            for tab in tabs {
                serde_json::to_string(&tab).expect("a decoded tab serializes");
            }
        }
    }
}

/// Seed 002: a frame from an extension; a line `tool\nargs` through the catalogue's mapping
/// of consolidated tools.
pub fn register(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let _ = register::decode(t);
    if let Some((tool, args)) = t.split_once('\n') {
        if let Ok(raw) = RawValue::from_string(args.to_owned()) {
            if let Ok(m) = register::catalogue().map(tool, &raw) {
                serde_json::to_string(&m.args).expect("mapped arguments serialize");
            }
        }
    }
    if let Ok(req) = serde_json::from_str::<register::RegisterRequest>(t) {
        let _ = register::browser_info(&req.user_agent);
    }
}

/// Seed 003: a frame (single or batch), each request's params as every method reads them,
/// the answers written back, and the upgrade's query string.
pub fn jsonrpc(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let _ = jsonrpc::connect_params(|name| daemon::query_param(Some(t), name));
    let Ok(frame) = jsonrpc::parse(t) else { return };
    let items = match frame {
        jsonrpc::Frame::Single(i) => vec![i],
        jsonrpc::Frame::Batch(items) => items,
    };
    let mut answers = Vec::new();
    for item in items {
        match item {
            Ok(jsonrpc::Incoming::Request { id, params, .. }) => {
                let _ = jsonrpc::params::<jsonrpc::HelloParams>(params.clone());
                let _ = jsonrpc::params::<jsonrpc::JoinParams>(params.clone());
                let _ = jsonrpc::params::<jsonrpc::RegisterParams>(params.clone());
                let _ = jsonrpc::params::<jsonrpc::CallParams>(params);
                answers.push(jsonrpc::result_value(&id, &Value::Null));
            }
            Ok(jsonrpc::Incoming::Notification { params, .. }) => {
                let _ = jsonrpc::params::<jsonrpc::CallParams>(params);
            }
            Ok(jsonrpc::Incoming::Response { id, outcome }) => {
                if let Err(e) = outcome {
                    answers.push(jsonrpc::error(&id, &e));
                }
            }
            Err(invalid) => {
                let e = jsonrpc::RpcError::new(-32600, invalid.message);
                answers.push(jsonrpc::error(&invalid.id, &e));
            }
        }
    }
    let batch = jsonrpc::batch(&answers);
    serde_json::from_str::<Value>(&batch).expect("our answers are JSON");
}

/// The control API: a first line `METHOD target` (path and query), the rest the body.
pub fn control(data: &[u8]) {
    let Some(t) = text(data) else { return };
    let (line, body) = t.split_once('\n').unwrap_or((t, ""));
    let (method, target) = line.split_once(' ').unwrap_or((line, "/"));
    let Ok(method) = hyper::Method::from_bytes(method.as_bytes()) else {
        return;
    };
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    match daemon::parse_route(&method, path, query) {
        Ok(daemon::Route::Call) => {
            let _ =
                daemon::parse_body::<browser_mcp::protocol::control::CallRequest>(body.as_bytes());
        }
        Ok(daemon::Route::OpenTab) => {
            let _ = daemon::parse_body::<browser_mcp::protocol::control::OpenTabRequest>(
                body.as_bytes(),
            );
        }
        Ok(_) => {}
        Err(e) => {
            // Every refusal has a code with an HTTP status.
            assert!(e.code.http_status() >= 400);
        }
    }
}

/// Tool arguments: a tool's inputSchema (from a browser), arguments and CLI-style flags (from
/// a caller), as JSON `{"schema": …, "args": …, "flags": [[name, value|null], …]}`, through
/// flag typing and schema validation.
pub fn args(data: &[u8]) {
    thread_local! {
        static CACHE: daemon::ValidatorCache = daemon::ValidatorCache::default();
    }
    let Some(t) = text(data) else { return };
    #[derive(serde::Deserialize)]
    struct Input {
        schema: Box<RawValue>,
        #[serde(default)]
        args: Option<Box<RawValue>>,
        #[serde(default)]
        flags: Vec<(String, Option<String>)>,
    }
    let Ok(input) = serde_json::from_str::<Input>(t) else {
        return;
    };
    let tool = browser_mcp::protocol::Tool {
        name: "t".into(),
        title: None,
        description: None,
        input_schema: input.schema,
        output_schema: None,
        annotations: None,
    };
    CACHE.with(|cache| {
        if let Ok(raw) = daemon::prepare(input.args, &input.flags, Some(&tool), cache) {
            serde_json::from_str::<Value>(raw.get()).expect("prepared arguments are JSON");
        }
    });
}
