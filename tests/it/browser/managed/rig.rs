//! What the managed-browser tests share: the browser kinds, a daemon that launches them into
//! the test's directory and stops in order, and the process-group and launch helpers.

use crate::support::chromium::chromium_or_skip;
use crate::support::common::*;
use crate::support::firefox::firefox_or_skip;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which browser, and its executable (as the tests find it).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Chromium,
    Firefox,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Chromium => "chromium",
            Kind::Firefox => "firefox",
        }
    }

    pub(crate) fn exe(self, test: &str) -> Option<PathBuf> {
        match self {
            Kind::Chromium => chromium_or_skip(test),
            Kind::Firefox => firefox_or_skip(test),
        }
    }
}

/// A daemon of these tests, stopped in order when dropped: SIGTERM, so that it stops the
/// browsers it launched and removes their temporary profiles before its directory goes. A
/// SIGKILL (TestDaemon's drop) leaves a browser to its parent-death signal, and the browser,
/// still writing its profile, raced the directory's removal: `/tmp/.tmpXXXXXX` left behind.
pub(crate) struct Managed(TestDaemon);

impl std::ops::Deref for Managed {
    type Target = TestDaemon;
    fn deref(&self) -> &TestDaemon {
        &self.0
    }
}

impl std::ops::DerefMut for Managed {
    fn deref_mut(&mut self) -> &mut TestDaemon {
        &mut self.0
    }
}

impl Drop for Managed {
    fn drop(&mut self) {
        // The daemon gives its browsers at most twice close-grace and 10 s (20 s); past that,
        // TestDaemon's drop kills it.
        if matches!(self.0.child.try_wait(), Ok(None)) {
            self.0.stop(Duration::from_secs(30));
        }
    }
}

/// A daemon whose launches go to directories of `dir`, with `exe` as the browser of `kind`.
pub(crate) fn daemon(dir: tempfile::TempDir, kind: Kind, exe: &Path) -> Managed {
    let managed = dir.path().join("managed");
    let profiles = dir.path().join("profiles");
    // As under the systemd user service: no display, no D-Bus session.
    let d = TestDaemon::builder()
        .dir(dir)
        .env("DISPLAY", "")
        .env("WAYLAND_DISPLAY", "")
        .env("DBUS_SESSION_BUS_ADDRESS", "")
        .args(&[
            "--managed-dir",
            managed.to_str().unwrap(),
            "--profiles-dir",
            profiles.to_str().unwrap(),
            "--browser-path",
            &format!("{}={}", kind.name(), exe.display()),
        ])
        .start();
    Managed(d)
}

pub(super) fn managed_dir(d: &TestDaemon) -> PathBuf {
    d.dir.path().join("managed")
}

/// The live (not zombie) processes of process group `pgid`, from /proc.
pub(super) fn group(pgid: u64) -> Vec<u64> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u64>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let rest = &stat[stat.rfind(')').unwrap() + 1..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            f[0] != "Z" && f[2].parse::<u64>() == Ok(pgid)
        })
        .collect()
}

/// Until process group `pgid` is empty.
pub(super) fn gone(pgid: u64, d: &TestDaemon) {
    let limit = Duration::from_secs(20);
    let start = std::time::Instant::now();
    while !group(pgid).is_empty() {
        assert!(
            start.elapsed() < limit,
            "processes of group {pgid} left: {:?}\n{}",
            group(pgid),
            d.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `browserctl browser launch --json ARGS…`: the managed browser's view. Headless without
/// asking: the daemon has no display.
pub(crate) fn launch(d: &TestDaemon, kind: Kind, extra: &[&str]) -> Value {
    let mut args = vec!["browser", "launch", "--browser", kind.name()];
    args.extend_from_slice(extra);
    let v = d.ctl_json(&args);
    assert_eq!(v["state"], "running", "{v}");
    assert_eq!(v["headless"], true, "{v}");
    assert!(
        v["tab"]
            .as_str()
            .is_some_and(|t| t.starts_with(v["browser"].as_str().unwrap())),
        "{v}"
    );
    v
}
