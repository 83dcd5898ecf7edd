//! The daemon's record of the browsers it launched, one file per launch in the managed
//! directory, so that what a killed daemon (SIGKILL, a crash, a power cut) left behind is
//! stopped and removed at the next start: its browsers' process groups and temporary profiles.

use super::process;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The daemon that launched it, and when that daemon started (a pid alone may be reused).
    pub daemon_pid: u32,
    pub daemon_start: u64,
    /// The browser (its process group has the same id), and its start; 0 before it started.
    pub pid: u32,
    pub pid_start: u64,
    pub root: PathBuf,
    /// The root is a temporary profile, removed with the browser.
    pub temporary: bool,
}

fn file(dir: &Path, session: &str) -> PathBuf {
    dir.join(format!("{session}.json"))
}

/// The managed directory, 0700.
pub fn ensure_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
}

/// Writes (or rewrites) the record of one launch, atomically.
pub fn write(dir: &Path, session: &str, r: &Record) -> io::Result<()> {
    let path = file(dir, session);
    let tmp = path.with_extension("tmp");
    let _ = fs::remove_file(&tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(&serde_json::to_vec(r).map_err(io::Error::other)?)?;
    drop(f);
    fs::rename(&tmp, &path)
}

pub fn remove(dir: &Path, session: &str) {
    let _ = fs::remove_file(file(dir, session));
}

/// Whether the daemon that wrote a record is still running (and so still looks after it).
fn daemon_alive(r: &Record) -> bool {
    r.daemon_pid != std::process::id()
        && process::start_time(r.daemon_pid).is_some_and(|s| s == r.daemon_start)
}

/// Stops what earlier runs of the daemon left: every recorded browser whose daemon is gone
/// is killed (its whole process group), and its temporary profile removed. Returns how many
/// launches were cleaned up.
pub async fn sweep(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut cleaned = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Some(record) = fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Record>(&b).ok())
        else {
            let _ = fs::remove_file(&path);
            continue;
        };
        if daemon_alive(&record) {
            continue;
        }
        if record.pid > 1 {
            let left = process::members(record.pid, record.pid_start);
            for pid in &left {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(*pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            if !left.is_empty() {
                tracing::warn!(
                    pid = record.pid,
                    processes = left.len(),
                    "stopped a browser an earlier run of the daemon launched and left running"
                );
                // They are not our children: wait until the kernel has them gone.
                let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
                while !process::members(record.pid, record.pid_start).is_empty()
                    && tokio::time::Instant::now() < deadline
                {
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
            }
        }
        if record.temporary && record.root.starts_with(dir) {
            let _ = fs::remove_dir_all(&record.root);
        }
        let _ = fs::remove_file(&path);
        cleaned += 1;
    }
    cleaned
}
