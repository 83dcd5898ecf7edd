//! The discovery file `/tmp/browser-mcp/server-<pid>.json` that tells extensions where we are.
//!
//! Written atomically (a fresh temp file, then rename, which replaces a planted symlink rather
//! than following it), mode 0600, in a directory whose owner and mode are checked. A `notify`
//! watcher on the directory and its parent puts the file back when it is deleted, altered, or
//! its directory removed; a slow periodic check covers a missed notification.

use crate::daemon::context::Daemon;
use crate::daemon::dialect::{bridge, jsonrpc, register};
use crate::protocol::native::DiscoveryFile;
use notify::{RecursiveMode, Watcher};
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Creates the directory (0700) if missing, then checks it ([`crate::trust`]).
pub fn prepare_dir(dir: &Path) -> io::Result<()> {
    crate::trust::ensure(dir)
        .map(|_| ())
        .map_err(io::Error::from)
}

/// Where this daemon's discovery file goes, decided once at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub dir: PathBuf,
    /// This start created the directory (a failed start removes it again).
    pub created: bool,
    /// Why the configured directory was not used, when it was not.
    pub instead_of: Option<crate::trust::Untrusted>,
}

/// Several users share a machine and its /tmp: the configured directory (by default the
/// shared /tmp/browser-mcp) when it is trusted, ours or root's (packages make it root's and
/// sticky at boot); when it is another user's, or one we cannot write, our private
/// directory instead (`fallback`), where our native host looks too: nobody can block us by
/// creating the shared name first. A directory the user named (`is_default` false) that is
/// truly unsafe (a symlink, a file, writable by others without the sticky bit) is refused,
/// with the fix; the default one, whatever someone put at its name, is passed over.
pub fn choose_dir(
    configured: &Path,
    fallback: &Path,
    is_default: bool,
) -> Result<Chosen, crate::trust::Untrusted> {
    match crate::trust::ensure(configured) {
        Ok((_, created)) => Ok(Chosen {
            dir: configured.to_path_buf(),
            created,
            instead_of: None,
        }),
        Err(u) if (u.is_unsafe() && !is_default) || configured == fallback => Err(u),
        Err(u) => {
            let (_, created) = crate::trust::ensure(fallback)?;
            Ok(Chosen {
                dir: fallback.to_path_buf(),
                created,
                instead_of: Some(u),
            })
        }
    }
}

/// The directory our discovery file goes in: `dir`, unless something of another user's
/// already stands at our name there (`server-<pid>.json` planted for a pid one can guess, in a
/// sticky directory where we may not replace it); then `fallback`, saying why.
pub fn own_name_or_fallback(
    dir: &Path,
    fallback: &Path,
    pid: u32,
) -> Result<PathBuf, crate::trust::Untrusted> {
    let name = dir.join(format!("server-{pid}.json"));
    let ours = nix::unistd::geteuid().as_raw();
    match fs::symlink_metadata(&name) {
        Ok(m) if m.uid() != ours && dir != fallback => {
            tracing::warn!(
                "{} belongs to uid {}: planted at our name; our discovery file goes in {} \
                 instead (native hosts look there too)",
                name.display(),
                m.uid(),
                fallback.display()
            );
            crate::trust::ensure(fallback)?;
            Ok(fallback.to_path_buf())
        }
        _ => Ok(dir.to_path_buf()),
    }
}

/// Removes discovery files whose daemon is gone.
pub fn sweep_stale(dir: &Path, own_pid: u32) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("server-"))
            .and_then(|n| n.strip_suffix(".json"))
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid as u32 == own_pid || pid <= 0 {
            continue;
        }
        // In a shared directory, other users' files are theirs to clean up.
        let ours = entry
            .metadata()
            .is_ok_and(|m| m.uid() == nix::unistd::geteuid().as_raw());
        if !ours {
            continue;
        }
        let alive = !matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        );
        if !alive {
            match fs::remove_file(entry.path()) {
                Ok(()) => tracing::info!(pid, "removed the discovery file of a dead daemon"),
                Err(e) => {
                    tracing::warn!(pid, error = %e, "could not remove a stale discovery file")
                }
            }
        }
    }
}

#[derive(Clone)]
pub struct Discovery {
    dir: PathBuf,
    path: PathBuf,
    body: Arc<DiscoveryFile>,
    /// What the file holds: changed with the token (`browserctl token rotate`).
    contents: Arc<std::sync::Mutex<Arc<Vec<u8>>>>,
}

fn to_contents(body: &DiscoveryFile) -> Arc<Vec<u8>> {
    let mut contents = serde_json::to_vec_pretty(body).expect("JSON");
    contents.push(b'\n');
    Arc::new(contents)
}

impl Discovery {
    pub fn new(d: &Daemon) -> Discovery {
        let r = &d.runtime;
        let body = DiscoveryFile {
            port: r.port,
            pid: std::process::id(),
            started_at: Some(r.started_at.clone()),
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            token: Some(d.token().to_string()),
            socket: Some(r.socket.display().to_string()),
            protocols: [bridge::DIALECT, register::DIALECT, jsonrpc::DIALECT]
                .map(str::to_owned)
                .to_vec(),
        };
        Discovery {
            dir: r
                .discovery_file
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| d.config().discovery_dir.clone()),
            path: r.discovery_file.clone(),
            contents: Arc::new(std::sync::Mutex::new(to_contents(&body))),
            body: Arc::new(body),
        }
    }

    fn contents(&self) -> Arc<Vec<u8>> {
        self.contents
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The file with this token from now on (written by the caller).
    fn set_token(&self, token: &str) {
        let body = DiscoveryFile {
            token: Some(token.to_owned()),
            ..(*self.body).clone()
        };
        *self.contents.lock().unwrap_or_else(|e| e.into_inner()) = to_contents(&body);
    }

    pub fn write(&self) -> io::Result<()> {
        prepare_dir(&self.dir)?;
        let mut suffix = [0u8; 6];
        getrandom::fill(&mut suffix).map_err(|e| io::Error::other(e.to_string()))?;
        let suffix: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("server");
        let tmp = self.dir.join(format!(".{name}.{suffix}.tmp"));
        let result = (|| {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(nix::libc::O_NOFOLLOW)
                .open(&tmp)?;
            f.write_all(&self.contents())?;
            if fs::symlink_metadata(&self.path).is_ok_and(|m| m.file_type().is_symlink()) {
                tracing::warn!(path = %self.path.display(), "replacing a symlink planted at our discovery file's name (not following it)");
            }
            fs::rename(&tmp, &self.path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    /// Whether the file on disk is ours and intact: a regular file of ours, readable by us
    /// alone (it holds the token), with our contents.
    fn intact(&self) -> bool {
        let Ok(mut f) = OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(&self.path)
        else {
            return false;
        };
        let private = f.metadata().is_ok_and(|m| {
            m.is_file() && m.mode() & 0o777 == 0o600 && m.uid() == nix::unistd::geteuid().as_raw()
        });
        let contents = self.contents();
        let mut buf = Vec::with_capacity(contents.len() + 1);
        private
            && (&mut f)
                .take(contents.len() as u64 + 1)
                .read_to_end(&mut buf)
                .is_ok()
            && buf == *contents
    }

    fn repair(&self) {
        if self.intact() {
            return;
        }
        match self.write() {
            Ok(()) => tracing::info!(path = %self.path.display(), "restored the discovery file"),
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "could not restore the discovery file")
            }
        }
    }

    pub fn remove(&self) {
        if self.intact() {
            let _ = fs::remove_file(&self.path);
        }
    }

    /// Keeps the file in place, with the token in force, until `shutdown`.
    pub fn watch(
        self,
        tasks: &TaskTracker,
        shutdown: CancellationToken,
        mut token: tokio::sync::watch::Receiver<Arc<str>>,
        on_disk: tokio::sync::watch::Sender<Arc<str>>,
    ) -> tokio::task::JoinHandle<()> {
        tasks.spawn(async move {
            let (tx, mut rx) = mpsc::channel::<()>(1);
            let watched = [self.dir.clone(), self.path.clone()];
            let mut watcher = match notify::recommended_watcher(
                move |res: notify::Result<notify::Event>| {
                    if let Ok(event) = res {
                        // Our own check reads the file: reads must not trigger another check.
                        if matches!(event.kind, notify::EventKind::Access(_)) {
                            return;
                        }
                        if event.paths.iter().any(|p| watched.iter().any(|w| p == w)) {
                            // A full channel already has a check queued.
                            let _ = tx.try_send(());
                        }
                    }
                },
            ) {
                Ok(w) => Some(w),
                Err(e) => {
                    tracing::warn!(error = %e, "no file watcher; checking the discovery file every 2 s");
                    None
                }
            };
            let parent = self.dir.parent().map(Path::to_path_buf);
            let watch_all = |w: &mut notify::RecommendedWatcher| {
                if let Some(p) = &parent {
                    let _ = w.watch(p, RecursiveMode::NonRecursive);
                }
                let _ = w.watch(&self.dir, RecursiveMode::NonRecursive);
            };
            if let Some(w) = watcher.as_mut() {
                watch_all(w);
            }
            let mut tick = tokio::time::interval(Duration::from_secs(2));
            loop {
                let mut rotated = None;
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = rx.recv() => {}
                    Ok(()) = token.changed() => {
                        let t = token.borrow_and_update().clone();
                        self.set_token(&t);
                        rotated = Some(t);
                    }
                    _ = tick.tick() => {}
                }
                let dir_missing = !self.dir.is_dir();
                self.repair();
                if let Some(t) = rotated {
                    on_disk.send_replace(t);
                }
                if dir_missing {
                    if let Some(w) = watcher.as_mut() {
                        watch_all(w);
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_shared_directory_or_our_own() {
        let tmp = tempfile::tempdir().unwrap();
        let shared = tmp.path().join("browser-mcp");
        let private = tmp.path().join("run/browser-mcp/discovery");
        let chosen = choose_dir(&shared, &private, false).unwrap();
        assert_eq!(
            (chosen.dir.as_path(), chosen.created),
            (shared.as_path(), true)
        );
        assert!(chosen.instead_of.is_none());
        // Truly unsafe: refused, not worked around.
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
        let e = choose_dir(&shared, &private, false).unwrap_err();
        assert!(e.is_unsafe(), "{e}");
        // Sticky and root's (or ours): shared.
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(choose_dir(&shared, &private, false).unwrap().dir, shared);
        if nix::unistd::geteuid().is_root() {
            // Another user made it first: our own directory instead, and why.
            nix::unistd::chown(&shared, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
            let chosen = choose_dir(&shared, &private, false).unwrap();
            assert_eq!(chosen.dir, private);
            assert!(chosen.created);
            let why = chosen.instead_of.unwrap();
            assert_eq!(why.reason, crate::trust::Reason::Foreign { uid: 65534 });
        }
    }

    /// Issue 35, item 7: whatever someone put at the default directory's name (a symlink, a
    /// file, a directory open to all), the daemon starts in its own, and says why; a directory
    /// the user named is refused as before.
    #[test]
    fn the_default_directory_is_passed_over_whatever_stands_at_its_name() {
        let tmp = tempfile::tempdir().unwrap();
        let private = tmp.path().join("run/browser-mcp/discovery");
        let elsewhere = tmp.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        let file = tmp.path().join("file");
        fs::write(&file, "").unwrap();
        let open = tmp.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        for planted in [&link, &file, &open] {
            let chosen = choose_dir(planted, &private, true).unwrap();
            assert_eq!(chosen.dir, private, "{}", planted.display());
            assert!(chosen.instead_of.is_some_and(|u| u.is_unsafe()));
            assert!(choose_dir(planted, &private, false).is_err());
        }
        assert_eq!(
            fs::read_dir(&elsewhere).unwrap().count(),
            0,
            "nothing through the link"
        );
    }
}
