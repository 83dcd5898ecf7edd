//! Whether the daemon at the other end of the control socket is ours. A socket another user
//! created first (a squatter on a shared path) would read what we send it and answer what it
//! likes, so nothing is sent before two checks pass: the socket's directory is one only we
//! (or root) can change ([`crate::trust::check`]), and the process listening on it runs as us
//! (or root), by the kernel's word (`SO_PEERCRED`).

use crate::error::{Error, ErrorCode};
use std::os::unix::net::UnixStream;
use std::path::Path;

/// The directory check, before connecting. A directory that does not exist is not a
/// refusal: the connection then fails in the usual words.
pub fn check_dir(socket: &Path) -> Result<(), Error> {
    let Some(dir) = socket.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    match crate::trust::check(dir) {
        Err(u) if u.reason != crate::trust::Reason::Missing => Err(Error::new(
            ErrorCode::Unauthorized,
            format!(
                "will not talk to the daemon at {}: {u}, so another user could have put \
                 their own socket there; fix: {}",
                socket.display(),
                u.fix()
            ),
        )),
        _ => Ok(()),
    }
}

/// The listener's uid, on a connected stream, before anything is written to it.
pub fn check_stream(socket: &Path, stream: &UnixStream) -> Result<(), Error> {
    let me = nix::unistd::geteuid().as_raw();
    match crate::trust::peer_uid(stream) {
        Ok(uid) if uid == me || uid == 0 => Ok(()),
        Ok(uid) => Err(Error::new(
            ErrorCode::Unauthorized,
            format!(
                "the daemon at {} runs as uid {uid}, not as you (uid {me}): it is not your \
                 browser-mcpd, and nothing was sent to it. Another user created that socket; \
                 remove it, or point browserctl at yours (--socket, BROWSER_MCP_SOCKET)",
                socket.display()
            ),
        )),
        Err(e) => Err(Error::new(
            ErrorCode::Unauthorized,
            format!(
                "cannot tell who runs the daemon at {}: {e}",
                socket.display()
            ),
        )),
    }
}

/// Both checks, with a connection of their own (for clients whose connector opens the
/// connection itself). Unreachable is not a refusal: the request says so in the usual words.
pub fn ensure_ours(socket: &Path) -> Result<(), Error> {
    check_dir(socket)?;
    match UnixStream::connect(socket) {
        Ok(stream) => check_stream(socket, &stream),
        Err(_) => Ok(()),
    }
}
