//! The control socket's own security: a 0600 socket in a 0700 directory that belongs to us,
//! a stale socket replaced but a live daemon's never stolen, and the peer's uid checked on
//! every connection.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::Path;
use tokio::net::UnixListener;

/// Binds the control socket: creates its directory (0700), replaces a stale socket left by a
/// dead daemon, and refuses to steal the socket of a live one.
pub fn bind(path: &Path) -> io::Result<UnixListener> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        check_socket_dir(dir)?;
    }
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        format!(
                            "another browser-mcpd is already listening on {} (stop it first, or pass --socket)",
                            path.display()
                        ),
                    ))
                }
                Err(_) => {
                    tracing::info!(path = %path.display(), "removing a stale control socket");
                    fs::remove_file(path)?;
                }
            }
        }
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} exists and is not a socket; refusing to replace it",
                    path.display()
                ),
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    // Bound at a name of its own, made 0600, then moved to its path: the socket never stands
    // at its path with the umask's mode, not even for a moment.
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let staging = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let _ = fs::remove_file(&staging);
    let listener = UnixListener::bind(&staging)?;
    let placed = fs::set_permissions(&staging, fs::Permissions::from_mode(0o600))
        .and_then(|()| fs::rename(&staging, path));
    if let Err(e) = placed {
        let _ = fs::remove_file(&staging);
        return Err(e);
    }
    Ok(listener)
}

/// The socket's directory must not let another user swap our socket for theirs (browserctl
/// would then talk to an impostor): [`crate::trust::check`], which also refuses another
/// user's directory.
pub fn check_socket_dir(dir: &Path) -> io::Result<()> {
    crate::trust::check(dir)
        .map(|_| ())
        .map_err(io::Error::from)
}

pub fn unlink(path: &Path) {
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        let _ = fs::remove_file(path);
    }
}

pub use crate::trust::peer_uid;
