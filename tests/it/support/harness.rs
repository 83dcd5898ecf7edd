//! Helpers for the hardening tests: the control API spoken directly (no browserctl process,
//! so timings measure the daemon), the daemon's memory and threads from /proc, and raw
//! HTTP/WebSocket handshakes for clients that misbehave on purpose.
#![allow(dead_code)]

use crate::support::common::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The status code of a raw HTTP/1.1 response; 0 when the daemon answered nothing.
pub fn status_of(text: &str) -> u16 {
    text.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// Splits a raw HTTP/1.1 response into (status, body as JSON or Null).
pub fn parse_response(text: &str) -> (u16, Value) {
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (
        status_of(text),
        serde_json::from_str(body).unwrap_or(Value::Null),
    )
}

/// A `POST` of a JSON body, written out by hand so a test controls every byte and the
/// connection closes after the answer.
pub fn post_request(path: &str, body: &Value) -> String {
    let body = body.to_string();
    format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// One raw HTTP/1.1 request over a Unix socket on a fresh connection, blocking:
/// (status, body as text).
pub fn raw_request_at(socket: &Path, request: &str) -> (u16, String) {
    let mut s = std::os::unix::net::UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status_of(&text), body)
}

/// One request to the control API on a fresh connection: (status, JSON body).
pub async fn api(d: &TestDaemon, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    api_at(&d.socket, method, path, body).await
}

/// `POST /v1/call` of `search` for `query`, wherever the daemon puts it.
pub async fn call_search(d: &TestDaemon, query: &str) -> (u16, Value) {
    let body = serde_json::json!({"tool": "search", "args": {"query": query}}).to_string();
    api(d, "POST", "/v1/call", Some(&body)).await
}

pub async fn api_at(
    socket: &std::path::Path,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, Value) {
    let mut s = tokio::net::UnixStream::connect(socket)
        .await
        .expect("connect to the control socket");
    let body = body.unwrap_or("");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: d\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    // The daemon may answer (413) and close before an oversize body is all written.
    let _ = s.write_all(req.as_bytes()).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut out))
        .await
        .expect("an answer from the control API");
    parse_response(&String::from_utf8_lossy(&out))
}

pub async fn status(d: &TestDaemon) -> Value {
    let (code, v) = api(d, "GET", "/v1/status", None).await;
    assert_eq!(code, 200, "{v}");
    v
}

/// Polls status until `pred` holds.
pub async fn status_until(d: &TestDaemon, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let s = status(d).await;
        if pred(&s) {
            return s;
        }
        if start.elapsed() > Duration::from_secs(20) {
            panic!("timed out waiting for {what}; last status {s}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Resident memory (kB) and thread count of a process, from /proc.
pub fn proc_status(pid: u32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("Threads:"))
}

/// A raw request on the extension port; reads one answer: its head and the body its
/// Content-Length announces (or up to the close), whether or not the connection stays open.
pub async fn raw_http(port: u16, request: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    // The daemon may answer and close before a large request is all written.
    let _ = s.write_all(request.as_bytes()).await;
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 65536];
    loop {
        if let Some(end) = out.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&out[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok());
            match length {
                Some(n) if out.len() >= end + 4 + n => break,
                None if head.starts_with("http/1.1 101") => break,
                _ => {}
            }
        }
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => out.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The request head of a WebSocket upgrade.
pub fn upgrade_request(path: &str, port: u16, extra: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{extra}\r\n"
    )
}

/// Waits until the peer closes `s` (read returns 0 or an error); the time it took.
pub async fn closed_within(s: &mut tokio::net::TcpStream, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(tokio::time::Instant::now() + limit, s.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(start.elapsed()),
            Ok(Ok(_)) => continue,
        }
    }
}

/// `[[[…]]]` nested `depth` deep.
pub fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// A JSON Schema nested `depth` levels deep through `properties`.
pub fn deep_schema(depth: usize) -> String {
    let mut s = r#"{"type":"string"}"#.to_owned();
    for _ in 0..depth {
        s = format!(r#"{{"type":"object","properties":{{"a":{s}}}}}"#);
    }
    s
}
