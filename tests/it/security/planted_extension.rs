//! Issue 58, item 2: the extension a launched browser loads must be one only the user (or
//! root) can change. The daemon takes it from beside its binaries
//! (`../share/browser-mcp/extension`); with the binaries in a directory others share, another
//! user (`nobody`, through setpriv) plants a copy of their own there before the person's first
//! launch. Loaded, it would receive the daemon's token from the native host, see every call and
//! read the profile's cookies. The launch is refused instead, naming the directory, its owner
//! and the fix; so is a configured `--extension-dir` of another user's. Real Chromium, launched
//! by the daemon.

use crate::support::chromium::chromium_or_skip;
use crate::support::common::*;
use crate::support::impostor::{become_nobody, other_user_or_skip, NOBODY};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn as_nobody(args: &[&str]) {
    let mut words = become_nobody().expect("setpriv or runuser");
    words.extend(args.iter().map(|a| a.to_string()));
    let out = Command::new(&words[0]).args(&words[1..]).output().unwrap();
    assert!(out.status.success(), "{words:?}: {}", stderr(&out));
}

/// Stops the daemon with SIGTERM, so a browser it did launch goes with it.
struct Stopping(TestDaemon);

impl Drop for Stopping {
    fn drop(&mut self) {
        self.0.stop(Duration::from_secs(30));
    }
}

#[test]
fn an_extension_another_user_planted_is_never_loaded() {
    let test = "security::planted_extension";
    let Some(exe) = chromium_or_skip(test) else {
        return;
    };
    if other_user_or_skip(test).is_none() {
        return;
    }
    // A directory everyone shares, as /tmp is: root's, sticky, open to all.
    let base = tempfile::Builder::new()
        .prefix("bmcp-planted")
        .tempdir_in("/tmp")
        .unwrap();
    set_mode(base.path(), 0o1777);
    let bin = base.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    set_mode(&bin, 0o755);
    for (from, name) in [(DAEMON, "browser-mcpd"), (CTL, "browserctl")] {
        // A hard link where the file system allows (see security/multi_user.rs).
        if std::fs::hard_link(from, bin.join(name)).is_err() {
            std::fs::copy(from, bin.join(name)).unwrap();
        }
        set_mode(&bin.join(name), 0o755);
    }
    // Another user gets there first: the real extension, copied, is theirs now.
    let share = base.path().join("share/browser-mcp");
    let planted = share.join("extension");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("extension");
    as_nobody(&["/bin/mkdir", "-p", share.to_str().unwrap()]);
    as_nobody(&[
        "/bin/cp",
        "-r",
        source.to_str().unwrap(),
        planted.to_str().unwrap(),
    ]);
    let owner = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&planted).unwrap());
    assert_eq!(owner, NOBODY);

    let dir = tempfile::tempdir().unwrap();
    let (managed, profiles) = (dir.path().join("managed"), dir.path().join("profiles"));
    let start = |extra: &[&str]| {
        let mut args = vec![
            "--managed-dir",
            managed.to_str().unwrap(),
            "--profiles-dir",
            profiles.to_str().unwrap(),
        ];
        let browser = format!("chromium={}", exe.display());
        args.extend(["--browser-path", &browser]);
        args.extend_from_slice(extra);
        Stopping(
            TestDaemon::builder()
                .daemon(&bin.join("browser-mcpd"))
                .env("DISPLAY", "")
                .env("WAYLAND_DISPLAY", "")
                .env("DBUS_SESSION_BUS_ADDRESS", "")
                .args(&args)
                .start(),
        )
    };

    let d = start(&[]);
    let out =
        d.0.ctl(&["--json", "browser", "launch", "--browser", "chromium"]);
    assert!(
        !out.status.success(),
        "a browser was launched with the extension uid {NOBODY} planted at {}: {}",
        planted.display(),
        stdout(&out)
    );
    let said = stderr(&out);
    for words in [
        planted.to_str().unwrap(),
        &format!("uid {NOBODY}"),
        "--extension-dir",
    ] {
        assert!(said.contains(words), "`{words}` in: {said}");
    }
    assert!(
        !managed.exists() || std::fs::read_dir(&managed).unwrap().next().is_none(),
        "no profile was made for it"
    );
    // The doctor says the same.
    let doctor = d.0.ctl(&["doctor"]);
    let text = format!("{}{}", stdout(&doctor), stderr(&doctor));
    assert!(
        text.contains(planted.to_str().unwrap()) && text.contains(&format!("uid {NOBODY}")),
        "{text}"
    );
    drop(d);

    // Named in the daemon's settings, another user's directory is refused the same way.
    let d = start(&["--extension-dir", planted.to_str().unwrap()]);
    let out =
        d.0.ctl(&["--json", "browser", "launch", "--browser", "chromium"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(&format!("uid {NOBODY}")),
        "{}",
        stderr(&out)
    );
}
