//! The resumption priming event of Streamable HTTP (SEP-1699: an SSE event with an `id`, a
//! `retry` and an empty `data`), which rmcp puts at the head of every event stream, is a
//! 2025-11-25 feature: a client of an earlier revision parses each event's `data` as a
//! JSON-RPC message, and an empty one fails it (Gemini CLI's SDK, on 2025-06-18: `SyntaxError:
//! Unexpected end of JSON input`, and its tool discovery ends). Such clients get the stream
//! without it.

use bytes::Bytes;
use hyper::http::request::Parts;

/// The first revision whose clients expect the priming event.
const PRIMING_SINCE: &str = "2025-11-25";

/// The revision a request speaks: its `MCP-Protocol-Version` header; for an `initialize`,
/// the revision it asks for; else 2025-03-26, as the transport says a server must assume
/// when the header is missing.
fn revision(parts: &Parts, body: &[u8]) -> String {
    if let Some(v) = parts
        .headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
    {
        return v.to_owned();
    }
    #[derive(serde::Deserialize)]
    struct Init {
        method: Option<String>,
        params: Option<Params>,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "protocolVersion")]
        protocol_version: Option<String>,
    }
    match serde_json::from_slice::<Init>(body) {
        Ok(Init {
            method: Some(m),
            params: Some(Params {
                protocol_version: Some(v),
            }),
        }) if m == "initialize" => v,
        _ => "2025-03-26".to_owned(),
    }
}

/// Whether this request's event stream is to lose its priming event. Revisions are dates,
/// which compare as strings.
pub fn unwanted(parts: &Parts, body: &[u8]) -> bool {
    revision(parts, body).as_str() < PRIMING_SINCE
}

/// `chunk` of an event stream without its priming events (events whose data is empty; each
/// event ends with a blank line). A chunk with none comes back as it was.
pub fn strip(chunk: Bytes) -> Bytes {
    let Ok(text) = std::str::from_utf8(&chunk) else {
        return chunk;
    };
    let is_priming = |event: &str| {
        let mut data = event.lines().filter_map(|l| l.strip_prefix("data:"));
        let first = data.next();
        first.is_some_and(|d| d.trim().is_empty()) && data.all(|d| d.trim().is_empty())
    };
    if !text.split("\n\n").any(is_priming) {
        return chunk;
    }
    let kept: Vec<&str> = text
        .split_inclusive("\n\n")
        .filter(|e| !is_priming(e))
        .collect();
    Bytes::from(kept.concat())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(header: Option<&str>) -> Parts {
        let mut b = hyper::Request::post("/mcp");
        if let Some(v) = header {
            b = b.header("mcp-protocol-version", v);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn which_revisions_lose_it() {
        let init = |v: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{v}"}}}}"#
            )
        };
        assert!(unwanted(&parts(None), init("2025-06-18").as_bytes()));
        assert!(!unwanted(&parts(None), init("2025-11-25").as_bytes()));
        assert!(unwanted(&parts(Some("2025-06-18")), b"{}"));
        assert!(!unwanted(&parts(Some("2026-07-28")), b"{}"));
        assert!(unwanted(&parts(None), br#"{"method":"tools/list"}"#));
    }

    #[test]
    fn only_empty_events_go() {
        let priming = Bytes::from_static(b"data: \nid: 0\nretry: 3000\n\n");
        assert!(strip(priming).is_empty());
        let both =
            Bytes::from_static(b"data: \nid: 0/0\nretry: 3000\n\ndata: {\"id\":2}\nid: 0/1\n\n");
        assert_eq!(
            strip(both),
            Bytes::from_static(b"data: {\"id\":2}\nid: 0/1\n\n")
        );
        let message = Bytes::from_static(b"data: {\"id\":2}\n\n");
        assert_eq!(strip(message.clone()), message);
        let keep_alive = Bytes::from_static(b":\n\n");
        assert_eq!(strip(keep_alive.clone()), keep_alive);
    }
}
