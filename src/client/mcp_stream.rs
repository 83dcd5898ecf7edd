//! The client side of `GET /v1/mcp`: one control-socket connection upgraded to an MCP session
//! in stdio framing (a JSON-RPC message per line, both ways).
//!
//! Blocking on purpose: `browserctl mcp` copies lines between this socket and its stdin and
//! stdout on two plain threads, which is the shortest path a message can take through a
//! relay (no runtime, no hand-over between threads).

use super::transport::Client;
use crate::error::{Error, ErrorBody, ErrorCode};
use crate::protocol::control::MCP_UPGRADE;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// How long the daemon may take to answer the upgrade.
const HANDSHAKE: Duration = Duration::from_secs(10);
/// Longest answer head (and error body) read from the daemon.
const MAX_HEAD: usize = 64 << 10;

/// An MCP session on the control socket. `early` holds bytes of the session that arrived with
/// the daemon's answer (read them before the socket).
pub struct McpStream {
    pub socket: UnixStream,
    pub early: Vec<u8>,
}

impl Client {
    /// Opens an MCP session with the daemon's own server, scoped by `query` (`tab=b1%3A7&…`,
    /// the flags of `browserctl mcp`). Blocking. DAEMON_UNAVAILABLE when no daemon answers.
    pub fn mcp_session(&self, query: &str) -> Result<McpStream, Error> {
        super::peer::check_dir(self.socket())?;
        let mut socket = UnixStream::connect(self.socket()).map_err(|e| self.unavailable(e))?;
        super::peer::check_stream(self.socket(), &socket)?;
        let path = if query.is_empty() {
            "/v1/mcp".to_owned()
        } else {
            format!("/v1/mcp?{query}")
        };
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: browser-mcpd\r\nConnection: Upgrade\r\n\
             Upgrade: {MCP_UPGRADE}\r\n\r\n"
        );
        socket
            .set_read_timeout(Some(HANDSHAKE))
            .and_then(|()| socket.write_all(request.as_bytes()))
            .map_err(|e| self.unavailable(e))?;
        let mut buf = Vec::with_capacity(1024);
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            if buf.len() > MAX_HEAD {
                return Err(Error::internal("the daemon's answer to /v1/mcp has no end"));
            }
            let mut chunk = [0u8; 4096];
            match socket.read(&mut chunk) {
                Ok(0) => {
                    return Err(self.unavailable("the daemon closed the connection"));
                }
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Err(self.unavailable(e)),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if status == 101 {
            socket
                .set_read_timeout(None)
                .map_err(|e| self.unavailable(e))?;
            return Ok(McpStream {
                socket,
                early: buf.split_off(head_end),
            });
        }
        Err(self.refusal(status, &head, &mut socket, buf.split_off(head_end)))
    }

    /// The error of a refused upgrade: the daemon's own error body when it sent one.
    fn refusal(
        &self,
        status: u16,
        head: &str,
        socket: &mut UnixStream,
        mut body: Vec<u8>,
    ) -> Error {
        let length = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse::<usize>().ok())
            .unwrap_or(0)
            .min(MAX_HEAD);
        while body.len() < length {
            let mut chunk = [0u8; 4096];
            match socket.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => body.extend_from_slice(&chunk[..n]),
            }
        }
        match serde_json::from_slice::<ErrorBody>(&body) {
            // A daemon older than this route answers 404: it is there, but serves no MCP here.
            Ok(b) if status == 404 && b.error.code == ErrorCode::NotFound => Error::new(
                ErrorCode::DaemonUnavailable,
                format!(
                    "browser-mcpd at {} serves no MCP on its socket (it is older than this \
                     browserctl); restart it",
                    self.socket().display()
                ),
            ),
            Ok(b) => b.error,
            Err(_) => Error::internal(format!("the daemon answered /v1/mcp with {status}")),
        }
    }
}
