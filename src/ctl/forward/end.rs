//! `browserctl forward-end` (plumbing, hidden from help): what `browserctl forward` runs on
//! the far machine through ssh.
//!
//! - without `--hold`, before the forward: makes the directory of the well-known forwarded
//!   socket (this user's, 0700), removes a socket there that nothing answers on (sshd does
//!   not remove its forwarded sockets, and only its own `StreamLocalBindUnlink`, off by
//!   default, would), and prints the path as JSON;
//! - with `--hold`, as the forward's session command: checks that the forwarded socket
//!   answers as a daemon of this user should (the directory, the listener's uid, a status),
//!   prints one JSON line saying so, and stays until its stdin ends (the forward's ssh ends).

use crate::ctl::dial_stdio::check_api;
use crate::error::{Error, ErrorCode};
use serde_json::json;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, Clone, clap::Args)]
pub struct EndArgs {
    /// The control API version the caller speaks.
    #[arg(long, value_name = "N")]
    pub control_api: Option<u32>,
    /// Check the forwarded socket, say so, and wait for stdin to end.
    #[arg(long)]
    pub hold: bool,
}

pub fn end(args: &EndArgs) -> ExitCode {
    let done =
        check_api(args.control_api).and_then(|()| if args.hold { hold() } else { prepare() });
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            crate::ctl::output::print_error(&e, true);
            ExitCode::from(e.code.exit_code())
        }
    }
}

fn prepare() -> Result<(), Error> {
    let socket = crate::paths::forwarded_socket_path();
    let dir = socket
        .parent()
        .ok_or_else(|| Error::internal("the forwarded socket has no directory"))?;
    let refuse = |why: String| Error::new(ErrorCode::Unauthorized, why);
    crate::trust::ensure(dir).map_err(|u| {
        refuse(format!(
            "will not put the forwarded socket in {u}: {}",
            u.fix()
        ))
    })?;
    // Ours now; nobody else may even look inside (the socket is 0600 besides, sshd's
    // StreamLocalBindMask).
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| refuse(format!("cannot make {} 0700: {e}", dir.display())))?;
    if std::fs::symlink_metadata(&socket).is_ok() {
        match UnixStream::connect(&socket) {
            Ok(_) => {
                return Err(Error::new(
                    ErrorCode::LimitExceeded,
                    format!(
                        "another forward is up at {} (from another machine, or one not \
                         ended yet); stop it first",
                        socket.display()
                    ),
                )
                .retryable(true))
            }
            Err(_) => {
                let _ = std::fs::remove_file(&socket);
            }
        }
    }
    println!(
        "{}",
        json!({"socket": socket, "controlApi": crate::protocol::control::CONTROL_API,
               "version": env!("CARGO_PKG_VERSION")})
    );
    Ok(())
}

fn hold() -> Result<(), Error> {
    let socket = crate::paths::forwarded_socket_path();
    let version = status_through(&socket)?;
    println!(
        "{}",
        json!({"up": true, "socket": socket, "daemon": version})
    );
    let _ = std::io::stdout().flush();
    let mut sink = [0u8; 512];
    let mut stdin = std::io::stdin().lock();
    while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
    Ok(())
}

/// The version of the daemon answering on `socket`, checked as every client checks its
/// daemon. Blocking, with a deadline: a plain request and its answer.
pub fn status_through(socket: &Path) -> Result<String, Error> {
    let down = |e: &dyn std::fmt::Display| {
        Error::new(
            ErrorCode::DaemonUnavailable,
            format!("nothing answers on {}: {e}", socket.display()),
        )
    };
    crate::client::peer::check_dir(socket)?;
    let mut stream = UnixStream::connect(socket).map_err(|e| down(&e))?;
    crate::client::peer::check_stream(socket, &stream)?;
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .map_err(|e| down(&e))?;
    stream
        .write_all(b"GET /v1/status HTTP/1.1\r\nHost: browser-mcpd\r\nConnection: close\r\n\r\n")
        .map_err(|e| down(&e))?;
    let mut answer = Vec::new();
    let _ = (&mut stream).take(1 << 20).read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    let status: serde_json::Value = serde_json::from_str(body.trim())
        .map_err(|_| down(&"no status came back (is it a browser-mcpd?)"))?;
    Ok(status["version"].as_str().unwrap_or("?").to_owned())
}
