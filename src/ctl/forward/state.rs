//! What `browserctl doctor` knows of links, on both machines: each running `browserctl
//! forward` keeps a small state file (this user's 0700 directory, `forwards/<pid>.json`), and
//! the far machine has the forwarded socket, which answers or does not.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One forward's state, as its process last wrote it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForwardState {
    pub pid: u32,
    pub host: String,
    pub local_socket: String,
    #[serde(default)]
    pub remote_socket: Option<String>,
    /// `connecting`, `up` or `down`.
    pub state: String,
    pub since: String,
    #[serde(default)]
    pub last_error: Option<String>,
}

/// A doctor's line about a link (doctor words it like its own checks).
pub struct LinkCheck {
    pub name: String,
    pub ok: bool,
    pub detail: String,
    pub fix: Option<String>,
}

pub fn dir() -> PathBuf {
    crate::paths::default_socket_path().with_file_name("forwards")
}

/// The state file of this process; removed when dropped.
pub struct StateFile {
    path: PathBuf,
    pub state: ForwardState,
}

impl StateFile {
    pub fn new(host: String, local_socket: &Path) -> StateFile {
        let pid = std::process::id();
        let dir = dir();
        let _ = crate::trust::ensure(&dir);
        StateFile {
            path: dir.join(format!("{pid}.json")),
            state: ForwardState {
                pid,
                host,
                local_socket: local_socket.display().to_string(),
                remote_socket: None,
                state: "connecting".into(),
                since: crate::time::now_rfc3339(),
                last_error: None,
            },
        }
    }

    /// Writes the new state (atomically: a temp file renamed over the old one).
    pub fn set(&mut self, state: &str, error: Option<String>) {
        if self.state.state != state {
            self.state.since = crate::time::now_rfc3339();
        }
        self.state.state = state.to_owned();
        if error.is_some() || state == "up" {
            self.state.last_error = error;
        }
        let tmp = self.path.with_extension("tmp");
        let text = serde_json::to_vec(&self.state).expect("JSON");
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, &self.path);
        }
    }
}

impl Drop for StateFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

/// The forwards running from this machine (files of dead processes are removed).
pub fn forwards() -> Vec<ForwardState> {
    let Ok(entries) = std::fs::read_dir(dir()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Some(state) = std::fs::read(&path)
            .ok()
            .and_then(|t| serde_json::from_slice::<ForwardState>(&t).ok())
        else {
            continue;
        };
        if alive(state.pid) {
            out.push(state);
        } else {
            let _ = std::fs::remove_file(&path);
        }
    }
    out.sort_by_key(|s| s.pid);
    out
}

/// The doctor's lines about links: each forward from here, and a forward into here.
pub fn checks() -> Vec<LinkCheck> {
    let mut out = Vec::new();
    for f in forwards() {
        let name = format!("forward to {}", f.host);
        out.push(match f.state.as_str() {
            "up" => LinkCheck {
                name,
                ok: true,
                detail: format!(
                    "up since {} (pid {}): {} there is this machine's browser",
                    f.since,
                    f.pid,
                    f.remote_socket.as_deref().unwrap_or("the forwarded socket")
                ),
                fix: None,
            },
            other => LinkCheck {
                name,
                ok: false,
                detail: format!(
                    "{other} since {} (pid {}){}",
                    f.since,
                    f.pid,
                    f.last_error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default()
                ),
                fix: Some(
                    "it keeps trying by itself; see its own output for why it is down".into(),
                ),
            },
        });
    }
    let forwarded = crate::paths::forwarded_socket_path();
    if std::fs::symlink_metadata(&forwarded).is_ok() {
        let name = "forward from the browser's machine".to_owned();
        out.push(match super::end::status_through(&forwarded) {
            Ok(version) => LinkCheck {
                name,
                ok: true,
                detail: format!(
                    "up: browser-mcpd {version} answers on {}",
                    forwarded.display()
                ),
                fix: None,
            },
            Err(e) => LinkCheck {
                name,
                ok: false,
                detail: format!("down: {}", e.message),
                fix: Some(
                    "on the browser's machine, run (or restart) `browserctl forward \
                     ssh://THIS-MACHINE`"
                        .into(),
                ),
            },
        });
    }
    out
}
