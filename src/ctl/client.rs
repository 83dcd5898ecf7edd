//! A client of the daemon's control API over its Unix socket (hyperlocal).

use crate::error::{Error, ErrorBody, ErrorCode};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::TokioExecutor;
use hyperlocal::UnixConnector;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::{Path, PathBuf};

pub struct Client {
    socket: PathBuf,
    http: HttpClient<UnixConnector, Full<Bytes>>,
}

impl Client {
    pub fn new(socket: impl Into<PathBuf>) -> Client {
        Client {
            socket: socket.into(),
            http: HttpClient::builder(TokioExecutor::new()).build(UnixConnector),
        }
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    fn unavailable(&self, e: impl std::fmt::Display) -> Error {
        let exists = self.socket.exists();
        let why = if exists {
            format!("cannot connect to {} ({e})", self.socket.display())
        } else {
            format!("no daemon socket at {}", self.socket.display())
        };
        Error::new(
            ErrorCode::DaemonUnavailable,
            format!(
                "browser-mcpd is not running: {why}. Start it with `browser-mcpd` \
                 (or `systemctl --user start browser-mcpd`)"
            ),
        )
    }

    /// Sends a request and returns the response when its status is a success; an error
    /// response becomes its [`Error`].
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Response<Incoming>, Error> {
        let uri: hyper::Uri = hyperlocal::Uri::new(&self.socket, path).into();
        let mut builder = Request::builder().method(method).uri(uri);
        if body.is_some() {
            builder = builder.header(hyper::header::CONTENT_TYPE, "application/json");
        }
        let req = builder
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| Error::internal(format!("bad request: {e}")))?;
        let resp = self
            .http
            .request(req)
            .await
            .map_err(|e| self.unavailable(e))?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status();
        let bytes = body_bytes(resp).await?;
        Err(serde_json::from_slice::<ErrorBody>(&bytes)
            .map(|b| b.error)
            .unwrap_or_else(|_| {
                Error::internal(format!(
                    "daemon answered {status}: {}",
                    String::from_utf8_lossy(&bytes)
                ))
            }))
    }

    pub async fn json<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<T, Error> {
        let body = body.map(|b| serde_json::to_vec(b).expect("request bodies serialize"));
        let resp = self.send(method, path, body).await?;
        let bytes = body_bytes(resp).await?;
        serde_json::from_slice(&bytes)
            .map_err(|e| Error::internal(format!("unexpected answer from the daemon: {e}")))
    }

    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, Error> {
        self.json(Method::GET, path, None::<&()>).await
    }
}

pub async fn body_bytes(resp: Response<Incoming>) -> Result<Bytes, Error> {
    resp.into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .map_err(|e| {
            Error::new(
                ErrorCode::DaemonUnavailable,
                format!("the daemon hung up: {e}"),
            )
        })
}

/// Percent-encodes a query or path component.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b':' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
