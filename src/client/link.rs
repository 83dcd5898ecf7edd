//! `browserctl --host ssh://…`: a private Unix socket in this process that stands for the
//! other machine's control socket. Each connection made to it becomes one `ssh host
//! browserctl dial-stdio`, whose stdin and stdout carry the connection's bytes unchanged
//! (HTTP, the event stream, an MCP session), so every command works over it as it does on
//! the local socket, and the remote daemon checks the remote browserctl's uid as it checks
//! any client's.
//!
//! Plain threads, no runtime: `browserctl mcp` has none (see `ctl::mcp_relay`). When an ssh
//! fails, its error is kept before the connection is closed, so the client that sees the
//! connection end finds the reason ([`Link::failure`]) instead of a bare hang-up.

use super::ssh::{Sharing, SshTarget};
use crate::error::Error;
use crate::protocol::control::CONTROL_API;
use std::io::{Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ChildStdout, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Most of an ssh's stderr kept for its error.
const MAX_STDERR: usize = 64 << 10;

/// The local stand-in for a remote daemon's socket; removed when dropped.
pub struct Link {
    target: SshTarget,
    dir: PathBuf,
    socket: PathBuf,
    shared: Arc<Shared>,
}

struct Shared {
    target: SshTarget,
    /// The daemon's socket on the far side, when not the one it finds itself.
    far_socket: Option<PathBuf>,
    /// The last ssh's failure, until an ssh ends well.
    failure: Mutex<Option<Error>>,
    closed: AtomicBool,
}

impl Link {
    /// Makes the socket (in a new 0700 directory beside the user's own daemon socket) and
    /// starts accepting; no ssh runs until a connection is made.
    pub fn open(target: SshTarget, far_socket: Option<PathBuf>) -> Result<Link, Error> {
        let base = crate::paths::default_socket_path()
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(std::env::temp_dir);
        let io = |what: &str, e: &dyn std::fmt::Display| {
            Error::internal(format!(
                "cannot make the local end of the link ({what}): {e}"
            ))
        };
        crate::trust::ensure(&base).map_err(|e| io("its directory", &e))?;
        sweep(&base);
        let mut nonce = [0u8; 6];
        getrandom::fill(&mut nonce).map_err(|e| io("randomness", &e))?;
        let name: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        let dir = base.join(format!("link-{}-{name}", std::process::id()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| io("directory", &e))?;
        let socket = dir.join("s");
        let listener = UnixListener::bind(&socket).map_err(|e| {
            let _ = std::fs::remove_dir(&dir);
            io("socket", &e)
        })?;
        let shared = Arc::new(Shared {
            target: target.clone(),
            far_socket,
            failure: Mutex::new(None),
            closed: AtomicBool::new(false),
        });
        let accepting = shared.clone();
        std::thread::Builder::new()
            .name("link-accept".into())
            .spawn(move || accept(listener, accepting))
            .map_err(|e| io("thread", &e))?;
        Ok(Link {
            target,
            dir,
            socket,
            shared,
        })
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    pub fn target(&self) -> &SshTarget {
        &self.target
    }

    /// Why the last ssh failed, if it did.
    pub fn failure(&self) -> Option<Error> {
        self.shared
            .failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees `closed` and ends.
        let _ = UnixStream::connect(&self.socket);
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Removes the link directories of processes that are gone (killed before their drop ran).
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("link-"))
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let gone = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
            == Err(nix::errno::Errno::ESRCH);
        if gone {
            let _ = std::fs::remove_file(entry.path().join("s"));
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

fn accept(listener: UnixListener, shared: Arc<Shared>) {
    for conn in listener.incoming() {
        if shared.closed.load(Ordering::SeqCst) {
            return;
        }
        let Ok(conn) = conn else { continue };
        let shared = shared.clone();
        let _ = std::thread::Builder::new()
            .name("link-conn".into())
            .spawn(move || carry(conn, &shared));
    }
}

/// One connection: one ssh, bytes both ways, and its failure kept before the connection ends.
fn carry(conn: UnixStream, shared: &Shared) {
    let api = CONTROL_API.to_string();
    let mut remote = vec!["browserctl", "dial-stdio", "--control-api", &api];
    // ssh hands the far side's shell one line: the path goes quoted.
    let far_socket = shared
        .far_socket
        .as_ref()
        .map(|p| crate::client::ssh::shell_quote(&p.to_string_lossy()));
    if let Some(path) = &far_socket {
        remote.extend(["--socket", path]);
    }
    let mut cmd = shared.target.command(Sharing::Shared, &[], &remote);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            shared.record(Some(shared.target.spawn_error(&e)));
            return;
        }
    };
    let (Some(stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return;
    };
    let said = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = (&mut stderr).take(MAX_STDERR as u64).read_to_end(&mut text);
        // Whatever is past the limit is drained, so ssh never blocks on a full pipe.
        let _ = std::io::copy(&mut stderr, &mut std::io::sink());
        String::from_utf8_lossy(&text).into_owned()
    });
    if let Ok(up) = conn.try_clone() {
        std::thread::spawn(move || upstream(up, stdin));
    }
    downstream(stdout, &conn);
    let status = child.wait();
    let said = said.join().unwrap_or_default();
    match status {
        Ok(s) if s.success() => shared.record(None),
        Ok(s) => {
            let e = shared.target.exit_error(s, &said);
            tracing::debug!("ssh ended: {e}");
            shared.record(Some(e));
        }
        Err(e) => shared.record(Some(shared.target.spawn_error(&e))),
    }
    let _ = conn.shutdown(std::net::Shutdown::Both);
}

impl Shared {
    fn record(&self, failure: Option<Error>) {
        *self.failure.lock().unwrap_or_else(|e| e.into_inner()) = failure;
    }
}

/// The client's bytes to ssh; its end of input closes ssh's stdin (so the remote side sees
/// the end too).
fn upstream(mut conn: UnixStream, mut stdin: ChildStdin) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if stdin.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}

/// ssh's bytes to the client, until ssh's output ends.
fn downstream(mut stdout: ChildStdout, mut conn: &UnixStream) {
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match stdout.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if conn.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}
