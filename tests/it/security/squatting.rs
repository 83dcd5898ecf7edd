//! Socket squatting (issue 35, item 1): another user creates the control socket's path first
//! and listens on it, to read what browserctl sends and answer what it likes. browserctl
//! refuses such a daemon before it writes a byte, on every path (a plain request, the MCP
//! relay, pairing); and without `XDG_RUNTIME_DIR` the default socket is no longer a name under
//! the shared /tmp, so a squatter there neither stops the daemon nor catches its clients.

use crate::support::common::*;
use crate::support::impostor::{become_nobody, other_user_or_skip, NOBODY};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A listener of another uid on `path`: answers every connection with an HTTP 200 and counts
/// the bytes it was sent. Prints "listening" once bound, "got N" per read, "total N" at the end.
const SQUATTER: &str = r#"
import os, signal, socket, sys, time
# SIGINT ends the loop, not the print it lands in ("got" with no count, seen in CI).
stop = []
signal.signal(signal.SIGINT, lambda *_: stop.append(1))
path, secs = sys.argv[1], float(sys.argv[2])
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o777)
s.listen(64)
s.settimeout(0.2)
print("listening", flush=True)
total, end = 0, time.time() + secs
while time.time() < end and not stop:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.settimeout(0.5)
    try:
        d = c.recv(65536)
        total += len(d)
        print("got", len(d), flush=True)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
    except Exception:
        pass
    c.close()
print("total", total, flush=True)
"#;

struct Squatter {
    child: Child,
}

impl Squatter {
    /// Listens on `path` as uid `nobody` for `secs` seconds.
    fn start(path: &Path, secs: u32) -> Squatter {
        let mut cmd = become_nobody().expect("setpriv or runuser");
        // Debian's python3: another user may not enter a python in root's home (pyenv).
        cmd.extend(["/usr/bin/python3".into(), "-c".into(), SQUATTER.into()]);
        cmd.push(path.to_str().unwrap().into());
        cmd.push(secs.to_string());
        let mut child = Command::new(&cmd[0])
            .args(&cmd[1..])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the squatter");
        let mut first = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut first)
            .unwrap();
        assert_eq!(
            first.trim(),
            "listening",
            "the squatter did not bind {path:?}"
        );
        Squatter { child }
    }

    /// Everything it printed after binding; waits for it to end.
    fn report(self) -> String {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        );
        let out = self.child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// The squatter's report says it was sent nothing: no connection, or connections with no bytes.
fn assert_sent_nothing(report: &str) {
    assert!(
        report
            .lines()
            .all(|l| !l.starts_with("got") || l == "got 0"),
        "the squatter was sent something:\n{report}"
    );
}

fn ctl_with(socket: &Path, args: &[&str]) -> std::process::Output {
    Command::new(CTL)
        .arg("--socket")
        .arg(socket)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn browserctl_sends_nothing_to_a_socket_another_user_listens_on() {
    if other_user_or_skip(
        "security::squatting::browserctl_sends_nothing_to_a_socket_another_user_listens_on",
    )
    .is_none()
    {
        return;
    }
    // A shared directory as /tmp is: root's and sticky, so anyone may create a name in it.
    let shared = tempfile::tempdir().unwrap();
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let socket = shared.path().join("browser-mcpd.sock");
    let squatter = Squatter::start(&socket, 20);
    for args in [
        &["call", "search", "--query", "my secret"][..],
        &["tabs"][..],
        &["pair"][..],
    ] {
        let out = ctl_with(&socket, args);
        assert_eq!(exit_code(&out), 10, "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("runs as uid {NOBODY}, not as you"))
                && stderr(&out).contains("nothing was sent to it"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // The MCP relay: an agent's requests never reach the squatter either.
    let mut mcp = Command::new(CTL)
        .arg("--socket")
        .arg(&socket)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"my secret"}}}"#;
    let mut stdin = mcp.stdin.take().unwrap();
    writeln!(stdin, "{init}\n{call}").unwrap();
    drop(stdin);
    let out = wait_output(mcp, Duration::from_secs(20));
    let answers = String::from_utf8_lossy(&out.stdout);
    assert!(
        answers.contains("\"id\":2"),
        "the agent gets its answer: {answers}"
    );
    assert!(
        !answers.contains("\"isError\":false"),
        "no call succeeded: {answers}"
    );
    assert_sent_nothing(&squatter.report());
}

#[test]
fn browserctl_refuses_a_socket_in_another_users_directory() {
    if other_user_or_skip(
        "security::squatting::browserctl_refuses_a_socket_in_another_users_directory",
    )
    .is_none()
    {
        return;
    }
    let parent = tempfile::tempdir().unwrap();
    std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let theirs = parent.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    nix::unistd::chown(&theirs, Some(NOBODY.into()), Some(NOBODY.into())).unwrap();
    let socket = theirs.join("browser-mcpd.sock");
    let squatter = Squatter::start(&socket, 10);
    let out = ctl_with(&socket, &["call", "search", "--query", "my secret"]);
    assert_eq!(exit_code(&out), 10, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("will not talk to the daemon at")
            && stderr(&out).contains(&format!("uid {NOBODY}")),
        "{}",
        stderr(&out)
    );
    let report = squatter.report();
    assert!(!report.contains("got"), "not even a connection: {report}");
}

/// Without `XDG_RUNTIME_DIR` the daemon and browserctl meet in the user's state directory:
/// a squatter on the old shared name under /tmp stops neither.
#[test]
fn without_a_runtime_dir_a_squatter_under_tmp_stops_nothing() {
    if other_user_or_skip(
        "security::squatting::without_a_runtime_dir_a_squatter_under_tmp_stops_nothing",
    )
    .is_none()
    {
        return;
    }
    let me = nix::unistd::getuid();
    let old_name = std::path::PathBuf::from(format!("/tmp/browser-mcp-{me}"));
    let made_here = !old_name.exists();
    if made_here {
        std::fs::create_dir(&old_name).unwrap();
        std::fs::set_permissions(&old_name, std::fs::Permissions::from_mode(0o777)).unwrap();
        nix::unistd::chown(&old_name, Some(NOBODY.into()), Some(NOBODY.into())).unwrap();
    }
    let squatter = made_here.then(|| Squatter::start(&old_name.join("browser-mcpd.sock"), 30));
    let home = tempfile::tempdir().unwrap();
    let env = |c: &mut Command| {
        c.env_remove("XDG_RUNTIME_DIR")
            .env_remove("XDG_STATE_HOME")
            .env_remove("BROWSER_MCP_SOCKET")
            .env("HOME", home.path());
    };
    let mut daemon = Command::new(DAEMON);
    env(&mut daemon);
    let mut daemon = KillOnDrop(
        daemon
            .args(["--port", "0", "--discovery-dir"])
            .arg(home.path().join("discovery"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    let status = loop {
        let mut c = Command::new(CTL);
        env(&mut c);
        let out = c.args(["--json", "status"]).output().unwrap();
        if out.status.success() {
            break String::from_utf8_lossy(&out.stdout).into_owned();
        }
        if let Ok(Some(code)) = daemon.0.try_wait() {
            panic!("the daemon did not start ({code}): {}", stderr(&out));
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "browserctl never reached the daemon: {}",
            stderr(&out)
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let socket = home
        .path()
        .join(".local/state/browser-mcp/browser-mcpd.sock");
    assert!(
        socket.exists(),
        "the socket in the state directory: {status}"
    );
    assert!(
        status.contains(&format!("\"pid\":{}", daemon.0.id())),
        "{status}"
    );
    if let Some(s) = squatter {
        assert_sent_nothing(&s.report());
        let _ = std::fs::remove_dir_all(&old_name);
    }
}

fn wait_output(child: Child, limit: Duration) -> std::process::Output {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let timer = std::thread::spawn(move || {
        std::thread::sleep(limit);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
    });
    let out = child.wait_with_output().unwrap();
    drop(timer);
    out
}
