//! Small HTTP helpers shared by the loopback port and the control socket: JSON answers, error
//! answers, bounded request bodies and query strings.

use crate::error::{Error, ErrorBody, ErrorCode};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use std::convert::Infallible;
use std::time::Duration;

pub type Body = BoxBody<Bytes, Infallible>;

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

pub fn json(status: StatusCode, value: &impl serde::Serialize) -> Response<Body> {
    let mut r = Response::new(full(serde_json::to_vec(value).expect("JSON")));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

pub fn ok(value: &impl serde::Serialize) -> Response<Body> {
    json(StatusCode::OK, value)
}

/// `{"error": …}` with the status its code calls for.
pub fn error(e: Error) -> Response<Body> {
    let status = StatusCode::from_u16(e.code.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    json(status, &ErrorBody { error: e })
}

/// A request's whole body: at most `max` bytes (PAYLOAD_TOO_LARGE beyond), and within `limit`
/// (a client that stops halfway through its body must not hold the connection).
pub async fn read_body(
    req: Request<Incoming>,
    max: usize,
    limit: Duration,
) -> Result<Bytes, Error> {
    let collect = Limited::new(req.into_body(), max).collect();
    let collected = tokio::time::timeout(limit, collect).await.map_err(|_| {
        Error::bad_request(format!(
            "the request body did not arrive within {} ms",
            limit.as_millis()
        ))
    })?;
    match collected {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(Error::new(
            ErrorCode::PayloadTooLarge,
            format!("request body over {max} bytes"),
        )),
        Err(e) => Err(Error::bad_request(format!(
            "could not read the request body: {e}"
        ))),
    }
}

/// A request body as JSON of the route's type.
pub fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|e| Error::bad_request(format!("invalid JSON body: {e}")))
}

/// Whether header `name` lists `token`: its values split at commas, each compared without its
/// parameters (after `;`) and without regard to case, so `Accept: application/json,
/// text/event-stream;q=0.9` lists `text/event-stream`.
pub fn lists(headers: &hyper::HeaderMap, name: header::HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| {
            let essence = t.split(';').next().unwrap_or("");
            essence.trim().eq_ignore_ascii_case(token)
        })
}

/// The value of one query parameter, decoded (`%XX` escapes, `+` as a space).
pub fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// A path's segments, each percent-decoded.
pub fn path_segments(path: &str) -> Vec<String> {
    path.trim_matches('/')
        .split('/')
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lists() {
        let mut h = hyper::HeaderMap::new();
        h.append(
            header::ACCEPT,
            HeaderValue::from_static("Application/JSON ; q=1"),
        );
        h.append(
            header::ACCEPT,
            HeaderValue::from_static("text/html, text/event-stream;q=0.5"),
        );
        assert!(lists(&h, header::ACCEPT, "application/json"));
        assert!(lists(&h, header::ACCEPT, "text/event-stream"));
        assert!(!lists(&h, header::ACCEPT, "text/plain"));
        assert!(!lists(&h, header::CONTENT_TYPE, "application/json"));
    }

    #[test]
    fn query() {
        assert_eq!(
            query_param(Some("a=1&token=x%2By&b"), "token").as_deref(),
            Some("x+y")
        );
        assert_eq!(query_param(Some("a=x+y"), "a").as_deref(), Some("x y"));
        assert_eq!(query_param(Some("b"), "b").as_deref(), Some(""));
        assert_eq!(
            query_param(Some("%74oken=t"), "token").as_deref(),
            Some("t")
        );
        assert_eq!(query_param(None, "b"), None);
        assert_eq!(path_segments("/v1/tabs/b1%3A2/")[2], "b1:2");
        assert_eq!(path_segments("/%zz%4")[0], "%zz%4");
    }
}
