//! Several users on one machine, each with a daemon on the default layout (issue 18, item 6),
//! with two real uids (1 and 65534, through setpriv): nobody can block, read or spoof another
//! user's discovery files. The shared directory lives in a sticky temp directory standing in
//! for /tmp, so the machine's real /tmp/browser-mcp is never touched.

use crate::support::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const ALICE: u32 = 1;
const BOB: u32 = 65534;

/// A machine in a temp directory: binaries others may run, a sticky "/tmp", and each user's
/// runtime directory (XDG_RUNTIME_DIR), as a login session would make it.
struct Machine {
    base: tempfile::TempDir,
    children: Vec<Child>,
}

impl Drop for Machine {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn chown(p: &Path, uid: u32) {
    nix::unistd::chown(
        p,
        Some(nix::unistd::Uid::from_raw(uid)),
        Some(nix::unistd::Gid::from_raw(uid)),
    )
    .unwrap();
}

impl Machine {
    /// `None` (with the reason printed) when this test cannot become another user.
    fn new() -> Option<Machine> {
        let why = if !nix::unistd::geteuid().is_root() {
            "not running as root, so no other user to become"
        } else if !Path::new("/usr/bin/setpriv").exists() {
            "setpriv is not installed"
        } else {
            let base = tempfile::Builder::new()
                .prefix("bmcp-users")
                .tempdir_in("/tmp")
                .unwrap();
            set_mode(base.path(), 0o755);
            let bin = base.path().join("bin");
            std::fs::create_dir(&bin).unwrap();
            for (from, name) in [(DAEMON, "browser-mcpd"), (CTL, "browserctl")] {
                // A hard link where the file system allows: a copy is a file open for writing,
                // which a child forked meanwhile by another test thread holds until its exec,
                // and exec'ing it then fails with "Text file busy".
                if std::fs::hard_link(from, bin.join(name)).is_err() {
                    std::fs::copy(from, bin.join(name)).unwrap();
                }
                set_mode(&bin.join(name), 0o755);
            }
            let tmp = base.path().join("tmp");
            std::fs::create_dir(&tmp).unwrap();
            set_mode(&tmp, 0o1777);
            for uid in [ALICE, BOB] {
                let run = base.path().join(format!("run-{uid}"));
                std::fs::create_dir(&run).unwrap();
                set_mode(&run, 0o700);
                chown(&run, uid);
            }
            return Some(Machine {
                base,
                children: Vec::new(),
            });
        };
        skip("a multi-user test", why, "CI runs as root with setpriv");
        None
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.base.path().join(rel)
    }

    fn run_dir(&self, uid: u32) -> PathBuf {
        self.path(&format!("run-{uid}"))
    }

    fn as_user(&self, uid: u32, program: &str) -> Command {
        let mut c = Command::new("/usr/bin/setpriv");
        c.arg(format!("--reuid={uid}"))
            .arg(format!("--regid={uid}"))
            .arg("--clear-groups")
            .arg(self.path("bin").join(program))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("XDG_RUNTIME_DIR", self.run_dir(uid))
            .env("XDG_CONFIG_HOME", self.path("no-config"))
            .env("HOME", self.path("no-home"))
            .stdin(Stdio::null());
        c
    }

    /// Starts `uid`'s daemon with the given discovery directory; waits for its discovery
    /// file in `expect_dir`.
    fn daemon(&mut self, uid: u32, discovery: &Path, expect_dir: &Path) -> (u32, u16) {
        let log = std::fs::File::create(self.path(&format!("daemon-{uid}.log"))).unwrap();
        let child = self
            .as_user(uid, "browser-mcpd")
            .args(["--port", "0", "--discovery-dir"])
            .arg(discovery)
            .stderr(log)
            .spawn()
            .unwrap();
        let pid = child.id();
        self.children.push(child);
        let file = expect_dir.join(format!("server-{pid}.json"));
        let info = wait_until(Duration::from_secs(20), "the discovery file", || {
            read_json(&file)
        });
        (pid, info["port"].as_u64().unwrap() as u16)
    }

    fn log(&self, uid: u32) -> String {
        std::fs::read_to_string(self.path(&format!("daemon-{uid}.log"))).unwrap_or_default()
    }

    /// What `uid`'s native host tells its extension: the ports of the daemons it found.
    fn host_sees(&self, uid: u32, discovery: &Path) -> Vec<u16> {
        let out = self
            .as_user(uid, "browserctl")
            .args(["native-host", "--discovery-dir"])
            .arg(discovery)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let frame: Value = serde_json::from_slice(&out.stdout[4..]).unwrap();
        frame["servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["port"].as_u64().unwrap() as u16)
            .collect()
    }
}

/// The layout a cargo install gives: the first user's daemon makes /tmp/browser-mcp its own;
/// the second user's does not fail (as it did) but keeps its discovery file in its own
/// runtime directory, where its native host looks too.
#[test]
fn two_users_each_run_a_daemon_on_the_default_layout() {
    let Some(mut m) = Machine::new() else { return };
    let shared = m.path("tmp/browser-mcp");
    let (_, alice_port) = m.daemon(ALICE, &shared, &shared);
    let meta = std::fs::metadata(&shared).unwrap();
    assert_eq!(
        std::os::unix::fs::MetadataExt::uid(&meta),
        ALICE,
        "alice made it"
    );
    let bob_private = m.run_dir(BOB).join("browser-mcp/discovery");
    let (_, bob_port) = m.daemon(BOB, &shared, &bob_private);
    assert!(
        m.log(BOB).contains("belongs to uid 1"),
        "bob says why: {}",
        m.log(BOB)
    );
    assert_eq!(m.host_sees(ALICE, &shared), vec![alice_port]);
    assert_eq!(m.host_sees(BOB, &shared), vec![bob_port]);
    // Bob cannot read alice's directory, nor alice his.
    let out = m
        .as_user(BOB, "browserctl")
        .args(["native-host", "--discovery-dir"])
        .arg(m.run_dir(ALICE).join("browser-mcp/discovery"))
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&alice_port.to_string()));
}

/// What packages give (systemd-tmpfiles makes /tmp/browser-mcp root's and sticky at boot):
/// both users share it, and neither can read, remove or spoof the other's file.
#[test]
fn a_shared_sticky_directory_is_shared_safely() {
    let Some(mut m) = Machine::new() else { return };
    let shared = m.path("tmp/shared");
    std::fs::create_dir(&shared).unwrap();
    set_mode(&shared, 0o1777);
    let (alice_pid, alice_port) = m.daemon(ALICE, &shared, &shared);
    let (bob_pid, bob_port) = m.daemon(BOB, &shared, &shared);
    assert_eq!(m.host_sees(ALICE, &shared), vec![alice_port]);
    assert_eq!(m.host_sees(BOB, &shared), vec![bob_port]);
    let alice_file = shared.join(format!("server-{alice_pid}.json"));
    // Bob tries to read, remove, and replace alice's file, and to plant one of his own that
    // points at his daemon under a name of hers.
    let sh = |script: String| {
        Command::new("/usr/bin/setpriv")
            .args([
                &format!("--reuid={BOB}"),
                &format!("--regid={BOB}"),
                "--clear-groups",
            ])
            .args(["/bin/sh", "-c", &script])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let f = alice_file.display();
    assert!(!sh(format!("cat {f}")).status.success(), "read");
    assert!(!sh(format!("rm -f {f}")).status.success(), "remove");
    assert!(!sh(format!("mv -f {f} {f}.x")).status.success(), "rename");
    assert!(alice_file.exists());
    let fake = shared.join("server-1.json");
    let planted = sh(format!(
        "printf '{{\"port\": {bob_port}, \"pid\": {bob_pid}}}' > {}",
        fake.display()
    ));
    assert!(planted.status.success());
    assert_eq!(
        m.host_sees(ALICE, &shared),
        vec![alice_port],
        "bob's files are not alice's daemons"
    );
}

/// Anyone may create the shared name first; that blocks nobody. A directory that is truly
/// unsafe (writable by others, not sticky) is refused, with the fix.
#[test]
fn a_squatted_directory_blocks_nobody_and_an_unsafe_one_is_refused() {
    let Some(mut m) = Machine::new() else { return };
    let squat = m.path("tmp/squat");
    std::fs::create_dir(&squat).unwrap();
    chown(&squat, BOB);
    set_mode(&squat, 0o700);
    let alice_private = m.run_dir(ALICE).join("browser-mcp/discovery");
    let (_, port) = m.daemon(ALICE, &squat, &alice_private);
    assert_eq!(m.host_sees(ALICE, &squat), vec![port]);

    let open = m.path("tmp/open");
    std::fs::create_dir(&open).unwrap();
    chown(&open, BOB);
    set_mode(&open, 0o777);
    let out = m
        .as_user(BOB, "browser-mcpd")
        .args(["--port", "0", "--discovery-dir"])
        .arg(&open)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = stderr(&out);
    assert!(
        text.contains("writable by other users")
            && text.contains(&format!("chmod 700 {}", open.display())),
        "{text}"
    );
    // ... and that start left nothing behind in bob's runtime directory.
    let left: Vec<_> = std::fs::read_dir(m.run_dir(BOB))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
