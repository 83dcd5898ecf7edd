//! `browserctl dial-stdio` (plumbing, hidden from help): joins stdin and stdout to this user's
//! daemon, as `docker system dial-stdio` does. `browserctl --host ssh://…` on another machine
//! runs it through ssh; the daemon then sees this process's uid, and this process checks the
//! daemon as every client does ([`crate::client::peer`]) before a byte passes.
//!
//! It connects to the daemon's relay socket ([`crate::paths::relay_socket_path`]), never to
//! its control socket, whatever socket it is told: what it carries comes from another machine,
//! and the daemon knows that by the socket alone (issue 58, item 1), so it reads no file for a
//! path from there.
//!
//! The caller's control API version comes first (`--control-api`): a mismatch is refused
//! with both versions before the socket is touched. Failures go to stderr as one JSON line
//! (`{"error": …}`), which the caller's side reads back into the same error.

use super::args::SocketArg;
use crate::error::{Error, ErrorCode};
use crate::protocol::control::CONTROL_API;
use serde_json::json;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Clone, clap::Args)]
pub struct DialStdioArgs {
    /// The control API version the caller speaks; another one than this browserctl's is
    /// refused, with both, before anything reaches the daemon.
    #[arg(long, value_name = "N")]
    pub control_api: Option<u32>,
    #[command(flatten)]
    pub socket: SocketArg,
}

/// The version check, on its own so the forward's far end makes the same one.
pub fn check_api(asked: Option<u32>) -> Result<(), Error> {
    match asked {
        Some(v) if v != CONTROL_API => Err(Error::new(
            ErrorCode::DaemonUnavailable,
            format!(
                "the browserctl here ({}) speaks control API {CONTROL_API}, and yours speaks \
                 {v}: install the same browser-mcp version on both machines",
                env!("CARGO_PKG_VERSION")
            ),
        )
        .with_details(json!({
            "link": "VERSION_MISMATCH",
            "controlApi": CONTROL_API,
            "asked": v,
            "version": env!("CARGO_PKG_VERSION"),
        }))),
        _ => Ok(()),
    }
}

pub fn run(args: &DialStdioArgs, socket: Option<PathBuf>) -> ExitCode {
    match join(args, socket) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            super::output::print_error(&e, true);
            ExitCode::from(e.code.exit_code())
        }
    }
}

fn join(args: &DialStdioArgs, socket: Option<PathBuf>) -> Result<(), Error> {
    check_api(args.control_api)?;
    let control = socket.unwrap_or_else(crate::paths::client_socket_path);
    let stream = connect_relay(&control)?;
    let up = stream
        .try_clone()
        .map_err(|e| Error::internal(format!("cannot share the socket: {e}")))?;
    std::thread::spawn(move || upstream(up));
    downstream(&stream);
    Ok(())
}

/// A connection to the relay socket of the daemon at `control`, checked as every client checks
/// its daemon. A daemon started by socket activation makes its relay socket once it runs: a
/// connection to the control socket starts it, and the relay socket is awaited a moment.
pub fn connect_relay(control: &Path) -> Result<UnixStream, Error> {
    let relay = crate::paths::relay_socket_path(control);
    crate::client::peer::check_dir(&relay)?;
    let mut connected = UnixStream::connect(&relay);
    if connected.is_err() && UnixStream::connect(control).is_ok() {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while connected.is_err() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(20));
            connected = UnixStream::connect(&relay);
        }
    }
    let stream = connected.map_err(|e| {
        Error::new(
            ErrorCode::DaemonUnavailable,
            format!(
                "browser-mcpd is not running for {} here (no answer on {}, the relay socket \
                 of {}: {e}; a daemon older than this browserctl has none); start it with \
                 `browser-mcpd` or `systemctl --user start browser-mcpd`",
                whoami(),
                relay.display(),
                control.display()
            ),
        )
    })?;
    crate::client::peer::check_stream(&relay, &stream)?;
    Ok(stream)
}

fn whoami() -> String {
    nix::unistd::User::from_uid(nix::unistd::geteuid())
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| format!("uid {}", nix::unistd::geteuid()))
}

/// stdin to the daemon; the end of stdin ends our side of the connection, and the daemon
/// finishes what it owes before it closes its side.
fn upstream(mut socket: UnixStream) {
    let mut stdin = std::io::stdin().lock();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match stdin.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if socket.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = socket.shutdown(std::net::Shutdown::Write);
}

/// The daemon to stdout, each piece flushed at once (stdout is line-buffered, and HTTP is
/// not lines).
fn downstream(mut socket: &UnixStream) {
    let mut stdout = std::io::stdout().lock();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match socket.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if stdout
                    .write_all(&buf[..n])
                    .and_then(|()| stdout.flush())
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}
