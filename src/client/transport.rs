//! The transport: a pool of HTTP/1.1 connections to the daemon's control socket, requests
//! and answers as JSON, and error answers as [`Error`]s.

use super::link::Link;
use super::ssh::SshTarget;
use crate::error::{Error, ErrorBody, ErrorCode};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::TokioExecutor;
use hyperlocal::UnixConnector;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A connection pool to one daemon's control socket. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    socket: PathBuf,
    http: HttpClient<UnixConnector, Full<Bytes>>,
    /// Set once the daemon behind the socket has been found to be ours ([`super::peer`]).
    verified: Arc<AtomicBool>,
    /// The link to another machine's daemon this client's socket stands for, if it does.
    link: Option<Arc<Link>>,
    /// The socket was found, not given ([`Client::found`]): it may be found elsewhere later.
    discovered: bool,
}

impl Client {
    /// A client of the daemon listening on `socket`.
    ///
    /// ```
    /// let client = browser_mcp::client::Client::new("/tmp/example.sock");
    /// assert_eq!(client.socket(), std::path::Path::new("/tmp/example.sock"));
    /// ```
    pub fn new(socket: impl Into<PathBuf>) -> Client {
        Client {
            socket: socket.into(),
            http: HttpClient::builder(TokioExecutor::new()).build(UnixConnector),
            verified: Arc::new(AtomicBool::new(false)),
            link: None,
            discovered: false,
        }
    }

    /// A client of the daemon found where browserctl looks when told no socket
    /// (`paths::client_socket_path`: this user's daemon, else a socket `browserctl forward`
    /// brought here).
    pub fn found() -> Client {
        Client {
            discovered: true,
            ..Client::new(crate::paths::client_socket_path())
        }
    }

    /// This client, or, when its socket was found rather than given and the search now
    /// finds another (a forward came up, or the local daemon started), a client of that one.
    /// For the long-lived: `browserctl mcp` asks before each reconnection.
    pub fn rediscovered(&self) -> Client {
        if self.discovered && crate::paths::client_socket_path() != self.socket {
            return Client::found();
        }
        self.clone()
    }

    /// A client of the daemon of another machine, through the system's ssh
    /// (`browserctl --host`): each connection runs `ssh HOST browserctl dial-stdio` there.
    /// Fails only when the link's local end cannot be made; ssh's own failures come with the
    /// first request, worded by [`super::ssh`].
    pub fn over_ssh(target: SshTarget, far_socket: Option<PathBuf>) -> Result<Client, Error> {
        let link = Link::open(target, far_socket)?;
        Ok(Client {
            socket: link.socket().to_path_buf(),
            http: HttpClient::builder(TokioExecutor::new()).build(UnixConnector),
            // The link's socket is ours, made a moment ago in our own 0700 directory; the
            // remote browserctl checks its daemon the same way before it joins us to it.
            verified: Arc::new(AtomicBool::new(true)),
            link: Some(Arc::new(link)),
            discovered: false,
        })
    }

    /// The other machine this client reaches, when it reaches one through ssh.
    /// Whether a `browserctl forward` may bring a daemon to this client later: it was told no
    /// socket (or the forwarded one), and a forward's socket is here. sshd leaves that socket
    /// behind when the link drops, and the forward, which reconnects by itself, replaces it.
    pub fn awaits_forward(&self) -> bool {
        use std::os::unix::fs::FileTypeExt;
        let far = crate::paths::forwarded_socket_path();
        self.link.is_none()
            && (self.discovered || self.socket == far)
            && std::fs::symlink_metadata(&far).is_ok_and(|m| m.file_type().is_socket())
    }

    pub fn host(&self) -> Option<&SshTarget> {
        self.link.as_ref().map(|l| l.target())
    }

    /// A client of the daemon found the way browserctl finds it: `$BROWSER_MCP_SOCKET`, else
    /// `$XDG_RUNTIME_DIR/browser-mcp/browser-mcpd.sock` (or the per-uid path under /tmp).
    ///
    /// ```
    /// std::env::set_var("BROWSER_MCP_SOCKET", "/tmp/other.sock");
    /// let client = browser_mcp::client::Client::from_env();
    /// assert_eq!(client.socket(), std::path::Path::new("/tmp/other.sock"));
    /// ```
    pub fn from_env() -> Client {
        match std::env::var_os(crate::paths::SOCKET_ENV).filter(|s| !s.is_empty()) {
            Some(socket) => Client::new(PathBuf::from(socket)),
            None => Client::found(),
        }
    }

    /// Refuses a daemon that is not ours before the first request is sent to it; checked
    /// once per client, on a connection of its own (hyperlocal's connector opens the
    /// request's). Our socket's directory is ours, so the socket cannot change owner after.
    fn ensure_ours(&self) -> Result<(), Error> {
        if self.verified.load(Ordering::Relaxed) {
            return Ok(());
        }
        super::peer::check_dir(&self.socket)?;
        if let Ok(stream) = std::os::unix::net::UnixStream::connect(&self.socket) {
            super::peer::check_stream(&self.socket, &stream)?;
            self.verified.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The socket this client talks to.
    ///
    /// ```
    /// let client = browser_mcp::client::Client::new("/run/user/1000/browser-mcp/browser-mcpd.sock");
    /// assert!(client.socket().ends_with("browser-mcpd.sock"));
    /// ```
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// DAEMON_UNAVAILABLE, saying whether the socket is missing or refused us and how to start
    /// the daemon.
    pub(crate) fn unavailable(&self, e: impl std::fmt::Display) -> Error {
        if let Some(link) = &self.link {
            return link.failure().unwrap_or_else(|| {
                Error::new(
                    ErrorCode::DaemonUnavailable,
                    format!("the link to {} broke: {e}", link.target()),
                )
            });
        }
        let exists = self.socket.exists();
        let why = if exists {
            format!("cannot connect to {} ({e})", self.socket.display())
        } else if self.discovered {
            let looked: Vec<String> = crate::paths::socket_candidates()
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            format!("no daemon socket at {}", looked.join(", nor at "))
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

    /// Sends a raw request (path relative to the socket, e.g. `/v1/status`) and returns the
    /// response when its status is a success; an error response becomes its [`Error`].
    /// For routes the typed methods do not cover.
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// let resp = client.send(hyper::Method::GET, "/v1/status", None).await?;
    /// let body = browser_mcp::client::body_bytes(resp).await?;
    /// println!("{}", String::from_utf8_lossy(&body));
    /// # Ok(()) }
    /// ```
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Response<Incoming>, Error> {
        self.ensure_ours()?;
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

    /// Sends a request with an optional JSON body and parses the JSON answer.
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon with a connected browser.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// let tab: serde_json::Value = client
    ///     .json(hyper::Method::POST, "/v1/tabs", Some(&serde_json::json!({"url": "https://example.com"})))
    ///     .await?;
    /// println!("opened {}", tab["ref"]);
    /// # Ok(()) }
    /// ```
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

    /// `GET path`, parsed as JSON.
    ///
    /// ```no_run
    /// # // no_run: needs a running daemon.
    /// # async fn demo(client: browser_mcp::client::Client) -> Result<(), browser_mcp::Error> {
    /// let status: serde_json::Value = client.get("/v1/status").await?;
    /// println!("{} browsers", status["browsers"]);
    /// # Ok(()) }
    /// ```
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, Error> {
        self.json(Method::GET, path, None::<&()>).await
    }
}

/// The whole body of a response (see [`Client::send`] for an example).
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

/// What [`encode`] leaves as it is: RFC 3986's unreserved characters, and `:` (tab references).
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b':');

/// Percent-encodes a query or path component.
///
/// ```
/// assert_eq!(browser_mcp::client::encode("b1:2 x&y"), "b1:2%20x%26y");
/// ```
pub fn encode(s: &str) -> String {
    utf8_percent_encode(s, COMPONENT).to_string()
}
