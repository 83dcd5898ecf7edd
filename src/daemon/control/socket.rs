//! The control socket's own security: a 0600 socket in a 0700 directory that belongs to us,
//! a stale socket replaced but a live daemon's never stolen, and the peer's uid checked on
//! every connection.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tokio::net::UnixListener;

/// The socket file this daemon placed: removed at exit only while it is still the one at its
/// path. A daemon started after this one stopped listening (its last connections still
/// closing) replaces the file as stale, and must not lose it to this one's exit.
#[derive(Debug)]
pub struct SocketFile {
    path: PathBuf,
    id: FileId,
}

/// A file's identity: the inode alone is not one, as a filesystem hands a freed inode number
/// to the next file it makes (the successor's socket may well get ours).
type FileId = (u64, u64, i64, i64);

fn file_id(m: &fs::Metadata) -> FileId {
    (m.dev(), m.ino(), m.ctime(), m.ctime_nsec())
}

impl SocketFile {
    pub fn remove(&self) {
        let same = fs::symlink_metadata(&self.path)
            .is_ok_and(|m| m.file_type().is_socket() && file_id(&m) == self.id);
        if same {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Binds the control socket: creates its directory (0700), replaces a stale socket left by a
/// dead daemon, and refuses to steal the socket of a live one.
pub fn bind(path: &Path) -> io::Result<(UnixListener, SocketFile)> {
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
        .and_then(|()| fs::rename(&staging, path))
        .and_then(|()| fs::symlink_metadata(path))
        .map(|m| file_id(&m));
    match placed {
        Ok(id) => Ok((
            listener,
            SocketFile {
                path: path.to_path_buf(),
                id,
            },
        )),
        Err(e) => {
            let _ = fs::remove_file(&staging);
            Err(e)
        }
    }
}

/// The socket's directory must not let another user swap our socket for theirs (browserctl
/// would then talk to an impostor): [`crate::trust::check`], which also refuses another
/// user's directory.
pub fn check_socket_dir(dir: &Path) -> io::Result<()> {
    crate::trust::check(dir)
        .map(|_| ())
        .map_err(io::Error::from)
}

pub use crate::trust::peer_uid;

#[cfg(test)]
mod tests {
    use super::*;

    /// A daemon that stopped listening but is still closing its last connections, while the
    /// next one found its socket stale and put its own in place: the first one's exit leaves
    /// the second one's socket alone, and removes its own.
    #[tokio::test]
    async fn a_stopping_daemon_leaves_its_successors_socket_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("control.sock");
        let (first, first_file) = bind(&path).unwrap();
        drop(first);
        let (_second, second_file) = bind(&path).expect("a stale socket is replaced");
        first_file.remove();
        assert!(
            std::os::unix::net::UnixStream::connect(&path).is_ok(),
            "the successor's socket is still there"
        );
        second_file.remove();
        assert!(
            !path.exists(),
            "its own socket goes with the daemon that placed it"
        );
    }
}
