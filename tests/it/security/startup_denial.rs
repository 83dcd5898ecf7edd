//! Start-up denial by another uid (issue 35, item 7): what another user can put in the daemon's
//! way before it starts (the default port taken, files planted at the discovery file's name)
//! does not keep it from starting; it starts elsewhere and says why. (A symlink or a file at
//! the default discovery directory's name: `daemon::service::discovery`'s unit tests, since the
//! real /tmp/browser-mcp belongs to the machine, not to a test.)

use crate::support::chromium::machine_wide_lock;
use crate::support::common::*;
use crate::support::impostor::{become_nobody, other_user_or_skip};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A TCP listener of uid `nobody` on 127.0.0.1:PORT for SECS seconds; prints "listening".
const PORT_SQUATTER: &str = r#"
import socket, sys, time
s = socket.socket()
# A probe's connection of an earlier run may linger in TIME_WAIT on this port.
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
print("listening", flush=True)
time.sleep(float(sys.argv[2]))
"#;

/// The daemon with its own socket and runtime directory under `root` and `extra` flags; its
/// output goes to `root/log`.
fn daemon(root: &Path, extra: &[&str]) -> KillOnDrop {
    let log = std::fs::File::create(root.join("log")).unwrap();
    let child = Command::new(DAEMON)
        .args(extra)
        .arg("--socket")
        .arg(root.join("run/browser-mcp/s.sock"))
        .env("XDG_RUNTIME_DIR", root.join("run"))
        .env("XDG_CONFIG_HOME", root.join("no-config"))
        .env_remove("NOTIFY_SOCKET")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    KillOnDrop(child)
}

/// Its discovery file in `dir`, once written.
fn discovery_file(dir: &Path, pid: u32) -> serde_json::Value {
    let file = dir.join(format!("server-{pid}.json"));
    wait_until(Duration::from_secs(20), "the discovery file", || {
        read_json(&file)
    })
}

#[test]
fn a_default_port_another_user_holds_sends_the_daemon_to_the_next_scanned_one() {
    let test = "security::startup_denial::port";
    let Some(()) = other_user_or_skip(test) else {
        return;
    };
    // The scan range is the browser tests' too.
    let _lock = machine_wide_lock();
    if std::net::TcpListener::bind(("127.0.0.1", 8765)).is_err() {
        return skip(
            test,
            "port 8765 is in use on this machine",
            "stop what holds it",
        );
    }
    let mut cmd = become_nobody().expect("setpriv or runuser");
    cmd.extend(["/usr/bin/python3".into(), "-c".into(), PORT_SQUATTER.into()]);
    cmd.extend(["8765".into(), "60".into()]);
    let mut squatter: Child = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(squatter.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "listening");
    let _squatter = KillOnDrop(squatter);

    let root = tempfile::tempdir().unwrap();
    let disco = root.path().join("disco");
    let d = daemon(root.path(), &["--discovery-dir", disco.to_str().unwrap()]);
    let port = discovery_file(&disco, d.0.id())["port"].as_u64().unwrap();
    assert!((8766..=8785).contains(&port), "port {port}");
    let log = std::fs::read_to_string(root.path().join("log")).unwrap();
    assert!(
        log.contains("port 8765 is held by another user (uid 65534)")
            && log.contains(&format!("listening on {port} instead")),
        "{log}"
    );
}

#[test]
fn a_discovery_file_planted_at_the_daemons_name_sends_it_to_its_own_directory() {
    let test = "security::startup_denial::planted";
    let Some(()) = other_user_or_skip(test) else {
        return;
    };
    // The shared directory as packages make it: root's, sticky, open to all.
    let root = tempfile::tempdir().unwrap();
    let shared = root.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    // Another user plants a file at every name the next pids would give. (As root, the next
    // pid can be set, to where a run of them fits below pid_max; where it cannot, the next ones
    // from where the counter is, wrapping past pid_max to 300 as the kernel does.)
    let read = |f: &str| -> u32 { std::fs::read_to_string(f).unwrap().trim().parse().unwrap() };
    let pid_max = read("/proc/sys/kernel/pid_max");
    let last_pid = "/proc/sys/kernel/ns_last_pid";
    let last = read(last_pid);
    let mut next = last + 1000;
    if next + 2000 >= pid_max {
        next = 1000;
    }
    if std::fs::write(last_pid, (next - 1).to_string()).is_err() {
        next = last + 1;
    }
    let planted: Vec<u32> = (next..next + 2000)
        .map(|p| if p >= pid_max { 300 + p - pid_max } else { p })
        .collect();
    let nobody = Some(nix::unistd::Uid::from_raw(65534));
    for &pid in &planted {
        let f = shared.join(format!("server-{pid}.json"));
        std::fs::write(&f, "{\"port\": 1}").unwrap();
        nix::unistd::chown(&f, nobody, None).unwrap();
    }
    let d = daemon(
        root.path(),
        &["--port", "0", "--discovery-dir", shared.to_str().unwrap()],
    );
    let pid = d.0.id();
    assert!(
        planted.contains(&pid),
        "pid {pid} was not among the planted names"
    );
    let own = root.path().join("run/browser-mcp/discovery");
    let written = discovery_file(&own, pid);
    assert_eq!(written["pid"], pid, "{written}");
    let theirs = std::fs::read_to_string(shared.join(format!("server-{pid}.json"))).unwrap();
    assert_eq!(
        theirs, "{\"port\": 1}",
        "the planted file is left as it was"
    );
    let log = std::fs::read_to_string(root.path().join("log")).unwrap();
    assert!(
        log.contains("belongs to uid 65534: planted at our name"),
        "{log}"
    );
}
