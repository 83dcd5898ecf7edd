//! Whether a directory may be trusted with files others rely on (the discovery files, the
//! control socket): the one implementation, used by the daemon (discovery directory, control
//! socket directory), the native host (before it reads discovery files), doctor, and
//! anything else that must answer "can another user swap or hide what is in here?".
//!
//! A directory is trusted when it is a real directory (not a symlink), owned by us or by
//! root, and, if others may write in it, sticky (so only a file's owner can remove or rename
//! it, as in /tmp). The files in it are still checked one by one by whoever reads them (a
//! regular file, ours, not writable by others): a trusted directory only guarantees that
//! nobody else can take away or replace what we put there.
//!
//! The answer distinguishes what is unsafe (refuse, with a fix) from what is merely not ours
//! (another user's directory: use one of our own instead), so callers decide in one line.
//! A leaf module: std and nix only.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Why a directory is not trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// It does not exist.
    Missing,
    /// A symlink: whoever owns the link's target decides what we see.
    Symlink,
    /// Something else than a directory has the name.
    NotDirectory,
    /// Another user's (not root's): they can remove, rename or hide what we put there.
    Foreign { uid: u32 },
    /// Others may write in it and it is not sticky: anyone can replace our files.
    OpenToOthers { mode: u32 },
    /// Ours, but we cannot create files in it.
    NotWritable,
    /// It could not be examined at all.
    Io(String),
}

/// A directory that is not trusted, with what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untrusted {
    pub dir: PathBuf,
    pub reason: Reason,
}

impl Untrusted {
    /// Unsafe: using it would let others replace our files, whoever we are. (A foreign or
    /// read-only directory is merely unusable: someone else's business.)
    pub fn is_unsafe(&self) -> bool {
        matches!(
            self.reason,
            Reason::Symlink | Reason::NotDirectory | Reason::OpenToOthers { .. }
        )
    }

    /// What the person at the keyboard can do about it.
    pub fn fix(&self) -> String {
        let d = self.dir.display();
        match &self.reason {
            Reason::Missing => format!("create it: mkdir -m 700 {d}"),
            Reason::Symlink => format!("remove the symlink {d}, or choose another directory"),
            Reason::NotDirectory => format!("remove {d}, or choose another directory"),
            Reason::Foreign { uid } => format!(
                "it is uid {uid}'s: ask them (or root) to remove it, or choose another directory"
            ),
            Reason::OpenToOthers { .. } => {
                format!("chmod 700 {d} (or chmod +t {d} if others share it)")
            }
            Reason::NotWritable => format!("chmod u+w {d}"),
            Reason::Io(_) => format!("check {d}"),
        }
    }
}

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = self.dir.display();
        match &self.reason {
            Reason::Missing => write!(f, "{d} does not exist"),
            Reason::Symlink => write!(f, "{d} is a symlink; refusing to use it"),
            Reason::NotDirectory => write!(f, "{d} is not a directory"),
            Reason::Foreign { uid } => write!(
                f,
                "{d} belongs to uid {uid}, not to us (uid {})",
                nix::unistd::geteuid()
            ),
            Reason::OpenToOthers { mode } => write!(
                f,
                "{d} is writable by other users (mode {mode:o}) and not sticky, so anyone could replace the files in it"
            ),
            Reason::NotWritable => write!(f, "{d} is ours but not writable"),
            Reason::Io(e) => write!(f, "{d}: {e}"),
        }
    }
}

impl std::error::Error for Untrusted {}

impl From<Untrusted> for io::Error {
    fn from(u: Untrusted) -> io::Error {
        let kind = match u.reason {
            Reason::Missing => io::ErrorKind::NotFound,
            _ => io::ErrorKind::PermissionDenied,
        };
        io::Error::new(kind, format!("{u}; fix: {}", u.fix()))
    }
}

/// Who owns a trusted directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Us,
    /// Root's, e.g. a shared /tmp/browser-mcp made sticky at boot by systemd-tmpfiles.
    Root,
}

/// Whether `dir` may be trusted (see the module documentation).
pub fn check(dir: &Path) -> Result<Owner, Untrusted> {
    let untrusted = |reason| Untrusted {
        dir: dir.to_path_buf(),
        reason,
    };
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(untrusted(Reason::Missing)),
        Err(e) => return Err(untrusted(Reason::Io(e.to_string()))),
    };
    if meta.file_type().is_symlink() {
        return Err(untrusted(Reason::Symlink));
    }
    if !meta.is_dir() {
        return Err(untrusted(Reason::NotDirectory));
    }
    let me = nix::unistd::geteuid().as_raw();
    let owner = match meta.uid() {
        uid if uid == me => Owner::Us,
        0 => Owner::Root,
        uid => return Err(untrusted(Reason::Foreign { uid })),
    };
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Err(untrusted(Reason::OpenToOthers { mode }));
    }
    Ok(owner)
}

/// Whether what lies at `path` (a directory others' code is loaded from, such as the extension
/// launched browsers load: issue 58, item 2) is ours to trust: `path` and every directory above
/// it [`check`]ed, and `path` itself not writable by others even if sticky. Give it with its
/// links resolved (a link on the way is refused). Its entries can then only be ours or
/// root's own, or have been put there by us or root.
pub fn check_path(path: &Path) -> Result<Owner, Untrusted> {
    let mut owner = Owner::Root;
    for dir in path.ancestors().collect::<Vec<_>>().into_iter().rev() {
        owner = check(dir)?;
    }
    let mode = std::fs::metadata(path)
        .map_err(|e| Untrusted {
            dir: path.to_path_buf(),
            reason: Reason::Io(e.to_string()),
        })?
        .mode()
        & 0o7777;
    if mode & 0o022 != 0 {
        return Err(Untrusted {
            dir: path.to_path_buf(),
            reason: Reason::OpenToOthers { mode },
        });
    }
    Ok(owner)
}

/// [`check`], and that we can create files in it.
pub fn check_writable(dir: &Path) -> Result<Owner, Untrusted> {
    let owner = check(dir)?;
    match nix::unistd::access(
        dir,
        nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
    ) {
        Ok(()) => Ok(owner),
        Err(_) => Err(Untrusted {
            dir: dir.to_path_buf(),
            reason: Reason::NotWritable,
        }),
    }
}

/// Makes `dir` (and missing parents) with mode 0700 if it is missing, then
/// [`check_writable`]s it. Returns whether this call created it, so a start that fails can
/// take it away again.
pub fn ensure(dir: &Path) -> Result<(Owner, bool), Untrusted> {
    let mut created = false;
    if let Err(Untrusted {
        reason: Reason::Missing,
        ..
    }) = check(dir)
    {
        match std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
        {
            Ok(()) => created = true,
            // Someone made it meanwhile: judge what is there.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(Untrusted {
                    dir: dir.to_path_buf(),
                    reason: Reason::Io(e.to_string()),
                })
            }
        }
    }
    check_writable(dir).map(|owner| (owner, created))
}

/// Writes `contents` to `path`, mode 0600, through a temporary file and a rename (never
/// through a symlink), making its directory (0700) if needed; the directory must be
/// trusted ([`ensure`]). With `replace` false an existing file is kept, and `Ok(false)` says
/// so (two writers that race agree on the first one's file).
pub fn write_private(path: &Path, contents: &[u8], replace: bool) -> io::Result<bool> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    ensure(dir)?;
    let mut suffix = [0u8; 6];
    getrandom::fill(&mut suffix).map_err(|e| io::Error::other(e.to_string()))?;
    let suffix: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
    let tmp = dir.join(format!(".write.{suffix}.tmp"));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
        if replace {
            std::fs::rename(&tmp, path)
        } else {
            std::fs::hard_link(&tmp, path)
        }
    })();
    let _ = std::fs::remove_file(&tmp);
    match result {
        Ok(()) => Ok(true),
        Err(e) if !replace && e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// The uid of the process at the other end of a Unix socket (the daemon checks its clients
/// with it, browserctl its daemon).
pub fn peer_uid(stream: &impl std::os::fd::AsFd) -> io::Result<u32> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
        let cred = getsockopt(stream, PeerCredentials).map_err(io::Error::from)?;
        Ok(cred.uid())
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let (uid, _gid) = nix::unistd::getpeereid(stream).map_err(io::Error::from)?;
        Ok(uid.as_raw())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path, m: u32) {
        fs::set_permissions(p, fs::Permissions::from_mode(m)).unwrap();
    }

    #[test]
    fn a_path_is_trusted_only_if_its_last_directory_is_closed_to_others() {
        let tmp = tempfile::tempdir().unwrap();
        let ext = tmp.path().join("share/extension");
        fs::create_dir_all(&ext).unwrap();
        let ext = fs::canonicalize(&ext).unwrap();
        mode(&ext, 0o755);
        assert!(check_path(&ext).is_ok());
        // Sticky does not do for the directory itself: others could add files to it.
        mode(&ext, 0o1777);
        let e = check_path(&ext).unwrap_err();
        assert!(matches!(e.reason, Reason::OpenToOthers { .. }), "{e}");
        mode(&ext, 0o755);
        // Nor for a directory above it that others may write in, unless sticky.
        mode(ext.parent().unwrap(), 0o777);
        let e = check_path(&ext).unwrap_err();
        assert_eq!(e.dir, ext.parent().unwrap());
        mode(ext.parent().unwrap(), 0o1777);
        assert!(check_path(&ext).is_ok());
    }

    #[test]
    fn what_is_trusted_and_why_not() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("d");
        assert_eq!(check(&dir).unwrap_err().reason, Reason::Missing);
        let (owner, created) = ensure(&dir).unwrap();
        assert_eq!((owner, created), (Owner::Us, true));
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert!(!ensure(&dir).unwrap().1, "made only once");
        mode(&dir, 0o755);
        assert!(check(&dir).is_ok(), "others may read, not write");
        mode(&dir, 0o777);
        let e = check(&dir).unwrap_err();
        assert_eq!(e.reason, Reason::OpenToOthers { mode: 0o777 });
        assert!(e.is_unsafe());
        assert!(e.to_string().contains("writable by other users"), "{e}");
        mode(&dir, 0o1777);
        assert!(check(&dir).is_ok(), "sticky: nobody can replace our files");
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert_eq!(check(&link).unwrap_err().reason, Reason::Symlink);
        let file = tmp.path().join("f");
        fs::write(&file, "").unwrap();
        assert_eq!(check(&file).unwrap_err().reason, Reason::NotDirectory);
        if nix::unistd::geteuid().is_root() {
            nix::unistd::chown(&dir, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
            let e = check(&dir).unwrap_err();
            assert_eq!(e.reason, Reason::Foreign { uid: 65534 });
            assert!(!e.is_unsafe(), "someone else's, not unsafe");
            assert!(e.to_string().contains("belongs to uid 65534"));
        }
    }
}
