//! `browserctl mcp`'s relay: the client's MCP messages go, unchanged, over one control-socket
//! connection to the daemon's own MCP server (`GET /v1/mcp`), and its answers come back the
//! same way. Each message is parsed once, in the daemon; here a line is only peeked at for
//! its `id` and `method`, which is what it takes to stay a whole MCP server when the daemon
//! is not there:
//!
//! - no daemon at start: the relay waits [`FIRST_WAIT`] for one (a daemon starting with the
//!   session, or systemd's socket); then the client's `initialize` fails with
//!   DAEMON_UNAVAILABLE and the reason, and the relay exits 3, so that every client's health
//!   check shows it (Claude Code's `mcp list` and Gemini CLI's show only whether `initialize`
//!   succeeded, never a server's instructions or a tool's error; issue 59). Unless a forward's
//!   socket is here ([`Client::awaits_forward`]): the machine is lent a browser by another,
//!   whose `browserctl forward` reconnects by itself, so the relay answers alone as below and
//!   keeps looking (an editor opened at login, before the laptop's link is back);
//! - the daemon went away during a session: [`offline`] answers (meta tools only, calls fail
//!   with DAEMON_UNAVAILABLE), and the relay keeps trying to reach one (200 ms, doubling to
//!   5 s);
//! - a daemon appears (or comes back): the client's `initialize` is replayed to the new
//!   session (its answer dropped), and the client hears `notifications/tools/list_changed`;
//! - the daemon goes away with requests in flight: each gets the answer it would get
//!   without a daemon, and the client hears `list_changed` (its tab tools are gone);
//! - the client's input ends with requests in flight (`printf … | browserctl mcp`): their
//!   answers come first (the daemon's session drains, up to [`LAST_ANSWERS`]), then the end.
//!
//! Two plain threads and no async runtime: stdin → socket on the main thread, socket →
//! stdout on the other, each line written by the thread that read it. Lines that arrive
//! together are written together.

use crate::client::{Client, McpStream};
use crate::error::{Error, ErrorCode};
use crate::mcp::offline::{self, Kind};
use rmcp::model::{ProtocolVersion, RequestId};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How long a relay that finds no daemon at start waits for one before it fails `initialize`:
/// short of the clients' own start-up timeouts (Gemini CLI's `mcp list` gives a server 5 s).
const FIRST_WAIT: Duration = Duration::from_secs(2);

/// The id of the replayed `initialize`, whose answer the client never sees.
const REPLAY_ID: &str = "browserctl-mcp-replayed-initialize";

/// Read size; a longer line is read in several pieces.
const CHUNK: usize = 64 << 10;
/// Longest line kept; a longer one is dropped (as the daemon's MCP transport drops it), so a
/// client that never ends its line cannot make the relay grow without bound.
const MAX_LINE: usize = 128 << 20;
/// How long the relay waits, once the client's input has ended, for the answers still owed:
/// the daemon gives calls in flight 5 s to finish before it cancels them and ends the session.
const LAST_ANSWERS: Duration = Duration::from_secs(6);

/// What the relay needs to know of a line: enough to tell requests from answers.
#[derive(Deserialize)]
struct Peek<'a> {
    id: Option<RequestId>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    /// Read only for `notifications/cancelled`.
    #[serde(borrow)]
    params: Option<&'a serde_json::value::RawValue>,
}

/// The request a `notifications/cancelled` names.
fn cancelled(params: Option<&serde_json::value::RawValue>) -> Option<RequestId> {
    #[derive(Deserialize)]
    struct Cancel {
        #[serde(rename = "requestId")]
        request_id: RequestId,
    }
    serde_json::from_str::<Cancel>(params?.get())
        .ok()
        .map(|c| c.request_id)
}

fn peek(line: &[u8]) -> Option<Peek<'_>> {
    serde_json::from_slice(line).ok()
}

struct State {
    /// The daemon session, while there is one (its write side).
    conn: Option<Arc<UnixStream>>,
    /// Requests sent on it and not answered yet.
    pending: HashMap<RequestId, Kind>,
    /// The client's `initialize`, replayed to each new daemon session.
    init: Option<Vec<u8>>,
    /// Whether the client said `notifications/initialized` (and so may hear notifications).
    initialized: bool,
    /// The client's input ended: the session that ends now is not to be replaced.
    closing: bool,
    /// Why there is no daemon session, for the answers given meanwhile.
    why: Error,
}

pub struct Relay {
    client: Client,
    query: String,
    state: Mutex<State>,
}

impl Relay {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Serves the client on stdin and stdout until it closes stdin.
    pub fn run(client: Client, query: String) -> Result<(), Error> {
        let (client, first) = first_session(client, &query);
        let mut why = Error::new(ErrorCode::DaemonUnavailable, "browser-mcpd is not running");
        if let Err(e) = &first {
            if e.code != ErrorCode::DaemonUnavailable || !client.awaits_forward() {
                tracing::error!("{e}");
                return refuse(e.clone());
            }
            why = Error::new(
                ErrorCode::DaemonUnavailable,
                format!(
                    "{}; waiting for the browser's machine to forward its daemon again \
                     (`browserctl forward ssh://THIS-MACHINE` there reconnects by itself)",
                    e.message
                ),
            );
            tracing::warn!("{}", why.message);
        }
        let relay = Arc::new(Relay {
            client,
            query,
            state: Mutex::new(State {
                conn: None,
                pending: HashMap::new(),
                init: None,
                initialized: false,
                closing: false,
                why,
            }),
        });
        let session = first.ok().inspect(|session| {
            relay.state().conn = Some(Arc::new(clone(&session.socket)));
        });
        let daemon_side = relay.clone();
        let (ended, daemon_side_ended) = std::sync::mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("mcp-daemon".into())
            .spawn(move || {
                daemon_side.daemon_to_client(session);
                let _ = ended.send(());
            })
            .expect("a thread for the daemon's side");
        relay.client_to_daemon();
        // The input ended (`printf … | browserctl mcp`, or a client done with us). Requests in
        // flight still get their answers, as from the daemon's own session: its sending side
        // is closed, the daemon answers what it owes and ends the session, and so do we.
        let (conn, owed) = {
            let mut s = relay.state();
            s.closing = true;
            (s.conn.take(), !s.pending.is_empty())
        };
        if let Some(conn) = conn {
            if owed {
                let _ = conn.shutdown(std::net::Shutdown::Write);
                let _ = daemon_side_ended.recv_timeout(LAST_ANSWERS);
            }
            let _ = conn.shutdown(std::net::Shutdown::Both);
        }
        Ok(())
    }

    /// stdin → the daemon session (or the offline answers), until stdin ends.
    fn client_to_daemon(&self) {
        let mut stdin = std::io::stdin().lock();
        let mut lines = Lines::default();
        loop {
            match lines.fill(&mut stdin) {
                Ok(true) => {}
                Ok(false) | Err(_) => return,
            }
            let mut to_daemon = Vec::new();
            let mut to_client = Vec::new();
            let conn = {
                let mut s = self.state();
                for line in lines.complete() {
                    s.take_line(line, &mut to_daemon, &mut to_client);
                }
                s.conn.clone()
            };
            lines.consume();
            if let (Some(conn), false) = (conn, to_daemon.is_empty()) {
                // A failed write means the session ended: its reader answers what is pending.
                let _ = (&*conn).write_all(&to_daemon);
            }
            if !to_client.is_empty() && write_out(&to_client).is_err() {
                return;
            }
        }
    }

    /// The daemon session → stdout; when it ends, the offline answers and a new session.
    fn daemon_to_client(&self, mut session: Option<McpStream>) {
        let mut backoff = Duration::from_millis(200);
        loop {
            let Some(s) = session.take() else {
                if self.state().closing {
                    return;
                }
                match self.client.rediscovered().mcp_session(&self.query) {
                    Ok(s) => {
                        backoff = Duration::from_millis(200);
                        if self.resume(&s).is_err() {
                            return;
                        }
                        session = Some(s);
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "no daemon yet");
                        self.state().why = e;
                        std::thread::sleep(backoff);
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                    }
                }
                continue;
            };
            if self.relay_answers(s).is_err() {
                return;
            }
            if self.state().closing {
                // What the session ended without answering is answered here; no one listens
                // for tools any more.
                let _ = self.went_away(false);
                return;
            }
            tracing::warn!("browser-mcpd went away; answering without it until it is back");
            if self.went_away(true).is_err() {
                return;
            }
        }
    }

    /// Copies the session's lines to stdout until it ends; `Err` when stdout is gone.
    fn relay_answers(&self, s: McpStream) -> std::io::Result<()> {
        let mut socket = s.socket;
        let mut lines = Lines {
            buf: s.early,
            ..Lines::default()
        };
        loop {
            let mut out = Vec::new();
            {
                let mut st = self.state();
                for line in lines.complete() {
                    let answer = peek(line).and_then(|p| match (p.id, p.method) {
                        (Some(id), None) => Some(id),
                        _ => None,
                    });
                    if let Some(id) = answer {
                        if matches!(&id, RequestId::String(s) if &**s == REPLAY_ID) {
                            continue;
                        }
                        st.pending.remove(&id);
                    }
                    out.extend_from_slice(line);
                    out.push(b'\n');
                }
            }
            lines.consume();
            if !out.is_empty() {
                write_out(&out)?;
            }
            if wait_for_input(&socket).is_err() {
                return Ok(());
            }
            match lines.fill(&mut socket) {
                Ok(true) => {}
                Ok(false) | Err(_) => return Ok(()),
            }
        }
    }

    /// The session ended: answer what was pending on it, and (with `notify`) tell the client
    /// its tab tools are gone.
    fn went_away(&self, notify: bool) -> std::io::Result<()> {
        let why = Error::new(
            ErrorCode::DaemonUnavailable,
            "browser-mcpd went away before answering (stopped or restarting); \
             try again once it is back",
        );
        let mut out = Vec::new();
        {
            let mut s = self.state();
            s.conn = None;
            let version = s.init.as_deref().and_then(requested_version);
            for (id, kind) in s.pending.drain() {
                out.extend(offline::answer(kind, id, version.clone(), &why));
            }
            if s.initialized && notify {
                out.extend_from_slice(offline::LIST_CHANGED);
            }
            s.why = why;
        }
        write_out(&out)
    }

    /// A new session: replay the client's handshake to it, then use it.
    fn resume(&self, session: &McpStream) -> std::io::Result<()> {
        let mut s = self.state();
        let mut replay = Vec::new();
        if let Some(init) = s.init.as_deref().and_then(with_replay_id) {
            replay.extend(init);
            if s.initialized {
                replay.extend_from_slice(
                    b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
                );
            }
        }
        // A fresh socket takes these few bytes at once; under the lock, so no line of the
        // client's can go ahead of them.
        if (&session.socket).write_all(&replay).is_err() {
            return Ok(());
        }
        s.conn = Some(Arc::new(clone(&session.socket)));
        let notify = s.initialized;
        drop(s);
        tracing::warn!("browser-mcpd is back");
        if notify {
            write_out(offline::LIST_CHANGED)?;
        }
        Ok(())
    }
}

/// The first daemon session, waiting [`FIRST_WAIT`] for a daemon to appear (the search
/// runs again each time: its socket may show up at any of the places looked at).
fn first_session(client: Client, query: &str) -> (Client, Result<McpStream, Error>) {
    let start = std::time::Instant::now();
    let mut client = client;
    loop {
        match client.mcp_session(query) {
            Ok(s) => return (client, Ok(s)),
            // A refusal (another user's socket) is no matter of waiting.
            Err(e) if e.code != ErrorCode::DaemonUnavailable => return (client, Err(e)),
            Err(e) if start.elapsed() >= FIRST_WAIT => return (client, Err(e)),
            Err(_) => {
                std::thread::sleep(Duration::from_millis(100));
                client = client.rediscovered();
            }
        }
    }
}

/// No daemon: every request is answered with `why` as a JSON-RPC error until the client's
/// `initialize` is, then the relay ends (exit 3, DAEMON_UNAVAILABLE's).
fn refuse(why: Error) -> Result<(), Error> {
    let mut stdin = std::io::stdin().lock();
    let mut lines = Lines::default();
    loop {
        match lines.fill(&mut stdin) {
            Ok(true) => {}
            Ok(false) | Err(_) => return Err(why),
        }
        let mut out = Vec::new();
        let mut done = false;
        for line in lines.complete() {
            if let Some(Peek {
                id: Some(id),
                method: Some(method),
                ..
            }) = peek(line)
            {
                out.extend(offline::refusal(id, &why));
                done |= method == "initialize";
            }
        }
        lines.consume();
        if write_out(&out).is_err() || done {
            return Err(why);
        }
    }
}

impl State {
    /// One line from the client: to the daemon session, or answered here without one.
    fn take_line(&mut self, line: &[u8], to_daemon: &mut Vec<u8>, to_client: &mut Vec<u8>) {
        let p = peek(line);
        if let Some(p) = &p {
            match p.method.as_deref() {
                Some("initialize") => self.init = Some(line.to_vec()),
                Some("notifications/initialized") => self.initialized = true,
                // A cancelled request gets no answer: none is owed if the daemon goes away.
                Some("notifications/cancelled") => {
                    if let Some(id) = cancelled(p.params) {
                        self.pending.remove(&id);
                    }
                }
                _ => {}
            }
        }
        if self.conn.is_some() {
            if let Some(Peek {
                id: Some(id),
                method: Some(method),
                ..
            }) = p
            {
                self.pending.insert(id, Kind::of(&method));
            }
            to_daemon.extend_from_slice(line);
            to_daemon.push(b'\n');
        } else if let Some(answer) = offline::answer_line(line, &self.why) {
            to_client.extend(answer);
        }
    }
}

/// The protocol version an `initialize` line asks for.
fn requested_version(init: &[u8]) -> Option<ProtocolVersion> {
    let v: serde_json::Value = serde_json::from_slice(init).ok()?;
    serde_json::from_value(v.get("params")?.get("protocolVersion")?.clone()).ok()
}

/// The client's `initialize` line under [`REPLAY_ID`].
fn with_replay_id(init: &[u8]) -> Option<Vec<u8>> {
    let mut v: serde_json::Value = serde_json::from_slice(init).ok()?;
    v["id"] = serde_json::Value::String(REPLAY_ID.to_owned());
    let mut line = serde_json::to_vec(&v).ok()?;
    line.push(b'\n');
    Some(line)
}

fn clone(socket: &UnixStream) -> UnixStream {
    socket
        .try_clone()
        .expect("a second handle on the daemon socket")
}

/// Sleeps until the daemon session has something to read (or has ended).
///
/// A blocking `read` would wait too, but on the socket's one wait queue, where the kernel
/// also signals "room to write" each time the daemon reads one of our requests: every
/// request would wake this thread for nothing, and make the daemon pay for the wake-up.
/// `poll` for input only sleeps through those.
fn wait_for_input(socket: &UnixStream) -> std::io::Result<()> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(socket.as_fd(), PollFlags::POLLIN)];
    loop {
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

fn write_out(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// Newline-delimited lines read in chunks: every complete line of a read is handled at once.
struct Lines {
    buf: Vec<u8>,
    /// Where the complete lines end (just past the last newline).
    done: usize,
    scratch: Box<[u8]>,
    /// Dropping the rest of an over-long line.
    skipping: bool,
}

impl Default for Lines {
    fn default() -> Lines {
        Lines {
            buf: Vec::new(),
            done: 0,
            scratch: vec![0; CHUNK].into_boxed_slice(),
            skipping: false,
        }
    }
}

impl Lines {
    /// Reads more; false at the end of the input.
    fn fill(&mut self, r: &mut impl Read) -> std::io::Result<bool> {
        let n = loop {
            match r.read(&mut self.scratch) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        let mut read = &self.scratch[..n];
        if self.skipping {
            match read.iter().position(|b| *b == b'\n') {
                Some(i) => {
                    read = &read[i + 1..];
                    self.skipping = false;
                }
                None => read = &[],
            }
        }
        self.buf.extend_from_slice(read);
        if self.buf.len() > MAX_LINE && !self.buf.contains(&b'\n') {
            tracing::warn!("dropped an MCP message over {MAX_LINE} bytes");
            self.buf.clear();
            self.skipping = true;
        }
        Ok(n > 0)
    }

    /// The complete lines buffered now (without their newlines; empty lines skipped).
    fn complete(&mut self) -> impl Iterator<Item = &[u8]> {
        self.done = self
            .buf
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        self.buf[..self.done]
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty() && *l != b"\r")
    }

    /// Drops the lines [`Lines::complete`] gave.
    fn consume(&mut self) {
        self.buf.drain(..self.done);
        self.done = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_whole_however_they_are_read() {
        let mut lines = Lines::default();
        let mut input: &[u8] = b"{\"a\":1}\n\n{\"b\"";
        assert!(lines.fill(&mut input).unwrap());
        assert_eq!(
            lines.complete().collect::<Vec<_>>(),
            vec![&b"{\"a\":1}"[..]]
        );
        lines.consume();
        let mut rest: &[u8] = b":2}\n";
        assert!(lines.fill(&mut rest).unwrap());
        assert_eq!(
            lines.complete().collect::<Vec<_>>(),
            vec![&b"{\"b\":2}"[..]]
        );
        lines.consume();
        assert!(!lines.fill(&mut rest).unwrap());
        assert!(lines.buf.is_empty());
    }

    #[test]
    fn a_cancelled_request_is_owed_no_answer() {
        let (a, _b) = UnixStream::pair().unwrap();
        let mut s = State {
            conn: Some(Arc::new(a)),
            pending: HashMap::new(),
            init: None,
            initialized: true,
            closing: false,
            why: Error::new(ErrorCode::DaemonUnavailable, "gone"),
        };
        let (mut to_daemon, mut to_client) = (Vec::new(), Vec::new());
        s.take_line(
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}"#,
            &mut to_daemon,
            &mut to_client,
        );
        assert!(s.pending.contains_key(&RequestId::Number(7)));
        s.take_line(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#,
            &mut to_daemon,
            &mut to_client,
        );
        assert!(s.pending.is_empty());
        assert_eq!(to_daemon.iter().filter(|b| **b == b'\n').count(), 2);
    }

    #[test]
    fn requests_and_answers_are_told_apart() {
        let p = peek(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}"#).unwrap();
        assert_eq!(p.id, Some(RequestId::Number(7)));
        assert_eq!(p.method.as_deref(), Some("tools/call"));
        let a = peek(br#"{"jsonrpc":"2.0","id":"x","result":{"content":[]}}"#).unwrap();
        assert_eq!(a.id, Some(RequestId::String("x".into())));
        assert!(a.method.is_none());
        let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#;
        let replayed: serde_json::Value =
            serde_json::from_slice(&with_replay_id(init).unwrap()).unwrap();
        assert_eq!(replayed["id"], REPLAY_ID);
        assert_eq!(replayed["params"]["protocolVersion"], "2025-06-18");
        assert_eq!(requested_version(init).unwrap().to_string(), "2025-06-18");
    }
}
