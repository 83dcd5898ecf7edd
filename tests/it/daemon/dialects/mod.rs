//! The register (seed 002) and JSON-RPC (seed 003) dialects through the real daemon, alone
//! and together with the bridge dialect on the same port.

mod jsonrpc;
mod mixed;
mod register;

use crate::support::common::*;
use crate::support::peers::*;
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

pub(crate) fn browsers(d: &TestDaemon) -> Vec<Value> {
    d.ctl_json(&["browsers"])["browsers"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

pub(crate) fn wait_browsers(
    d: &TestDaemon,
    what: &str,
    pred: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    wait_until(Duration::from_secs(10), what, || {
        let b = browsers(d);
        pred(&b).then_some(b)
    })
}

pub(crate) fn id_of(browsers: &[Value], field: &str, value: &str) -> String {
    browsers
        .iter()
        .find(|b| b[field] == value)
        .unwrap_or_else(|| panic!("no browser with {field}={value} in {browsers:?}"))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub(crate) fn names(tools: &Value) -> BTreeSet<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

pub(crate) fn err_json(out: &std::process::Output) -> Value {
    serde_json::from_str(&stderr(out)).unwrap_or_else(|_| panic!("stderr: {}", stderr(out)))
}
