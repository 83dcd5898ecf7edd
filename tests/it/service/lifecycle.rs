//! Service life: sd_notify messages on a fake NOTIFY_SOCKET, socket activation, graceful
//! shutdown with calls in flight, SIGHUP reload, the config file and --print-config.

use crate::support::common::*;
use futures_util::StreamExt;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::json;
use std::os::unix::net::UnixDatagram;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

/// The service manager's end of NOTIFY_SOCKET: every datagram the daemon sends, in order.
struct FakeManager {
    socket: UnixDatagram,
    seen: Vec<String>,
}

impl FakeManager {
    fn bind(path: &Path) -> FakeManager {
        let socket = UnixDatagram::bind(path).expect("bind the notify socket");
        socket
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        FakeManager {
            socket,
            seen: Vec::new(),
        }
    }

    /// Reads datagrams until one satisfies `pred`; returns its index in `seen`.
    fn wait_for(&mut self, what: &str, pred: impl Fn(&str) -> bool) -> usize {
        if let Some(i) = self.seen.iter().position(|m| pred(m)) {
            return i;
        }
        wait_until(Duration::from_secs(10), what, || {
            let mut buf = [0u8; 4096];
            let n = self.socket.recv(&mut buf).ok()?;
            let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
            self.seen.push(msg);
            pred(self.seen.last().unwrap()).then(|| self.seen.len() - 1)
        })
    }

    /// Like `wait_for`, but only among messages after index `after`.
    fn wait_after(&mut self, after: usize, what: &str, pred: impl Fn(&str) -> bool) -> usize {
        if let Some(i) = self.seen.iter().skip(after + 1).position(|m| pred(m)) {
            return after + 1 + i;
        }
        wait_until(Duration::from_secs(10), what, || {
            let mut buf = [0u8; 4096];
            let n = self.socket.recv(&mut buf).ok()?;
            self.seen
                .push(String::from_utf8_lossy(&buf[..n]).into_owned());
            pred(self.seen.last().unwrap()).then(|| self.seen.len() - 1)
        })
    }
}

fn has_line(msg: &str, line: &str) -> bool {
    msg.lines().any(|l| l == line)
}

/// A daemon command on temp paths with a clean environment (no inherited service-manager
/// variables, no RUST_LOG).
fn daemon_command(dir: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(DAEMON);
    cmd.arg("--port")
        .arg("0")
        .arg("--socket")
        .arg(dir.join("ctl.sock"))
        .arg("--discovery-dir")
        .arg(dir.join("discovery"))
        .args(extra);
    clean_env(&mut cmd, dir);
    cmd
}

fn clean_env(cmd: &mut Command, dir: &Path) {
    for var in [
        "RUST_LOG",
        "NOTIFY_SOCKET",
        "WATCHDOG_USEC",
        "WATCHDOG_PID",
        "LISTEN_FDS",
        "LISTEN_PID",
        "LISTEN_FDNAMES",
        "JOURNAL_STREAM",
        "BROWSER_MCP_LOG_LEVEL",
    ] {
        cmd.env_remove(var);
    }
    // No stray config file from the machine's user.
    cmd.env("XDG_CONFIG_HOME", dir.join("no-config"));
    let log = std::fs::File::create(dir.join("daemon.log")).unwrap();
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
}

/// Spawns and waits for the discovery file, as `TestDaemon::start` does.
fn spawn(dir: tempfile::TempDir, mut cmd: Command, socket: &Path) -> TestDaemon {
    let child = cmd.spawn().expect("spawn browser-mcpd");
    let discovery_dir = dir.path().join("discovery");
    let discovery_file = discovery_dir.join(format!("server-{}.json", child.id()));
    let mut d = TestDaemon {
        child,
        dir,
        socket: socket.to_owned(),
        discovery_dir,
        port: 0,
        token: String::new(),
        discovery_file,
    };
    let info = wait_until(Duration::from_secs(20), "the discovery file", || {
        if let Ok(Some(status)) = d.child.try_wait() {
            panic!("browser-mcpd exited early ({status}):\n{}", d.log());
        }
        read_json(&d.discovery_file)
    });
    d.port = info["port"].as_u64().unwrap() as u16;
    d.token = info["token"].as_str().unwrap_or_default().to_owned();
    d
}

fn signal(d: &TestDaemon, sig: Signal) {
    kill(Pid::from_raw(d.child.id() as i32), sig).expect("signal the daemon");
}

fn wait_exit(d: &mut TestDaemon) -> std::process::ExitStatus {
    wait_until(Duration::from_secs(10), "the daemon to exit", || {
        d.child.try_wait().ok().flatten()
    })
}

/// The close frame the daemon ends a WebSocket with (skipping other messages).
async fn close_code(ext: &mut FakeExtension) -> Option<CloseCode> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(deadline, ext.ws.next())
            .await
            .ok()??
        {
            Ok(Message::Close(frame)) => return frame.map(|f| f.code),
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_socket_sees_ready_status_watchdog_reloading_and_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let mut manager = FakeManager::bind(&dir.path().join("notify.sock"));
    let mut cmd = daemon_command(dir.path(), &[]);
    cmd.env("NOTIFY_SOCKET", dir.path().join("notify.sock"))
        .env("WATCHDOG_USEC", "100000");
    let socket = dir.path().join("ctl.sock");
    let mut d = spawn(dir, cmd, &socket);

    let ready = manager.wait_for("READY=1", |m| has_line(m, "READY=1"));
    assert_eq!(ready, 0, "READY comes first: {:?}", manager.seen);
    assert!(
        manager.seen[0].contains("STATUS=0 browsers, 0 tabs, 0 tools, 0 calls in flight"),
        "{:?}",
        manager.seen
    );
    let watchdog = manager.wait_for("WATCHDOG=1", |m| has_line(m, "WATCHDOG=1"));

    let _ext = FakeExtension::connect(&d, "s1", vec![tab(7, "Search", vec![search_tool()])]).await;
    let status = manager.wait_for("a STATUS with the browser", |m| {
        m.contains("STATUS=1 browser, 1 tab, 1 tool, 0 calls in flight")
    });

    signal(&d, Signal::SIGHUP);
    let reloading = manager.wait_for("RELOADING=1", |m| has_line(m, "RELOADING=1"));
    let usec: u64 = manager.seen[reloading]
        .lines()
        .find_map(|l| l.strip_prefix("MONOTONIC_USEC="))
        .expect("MONOTONIC_USEC with RELOADING")
        .parse()
        .unwrap();
    assert!(usec > 0);
    let ready_again = manager.wait_after(reloading, "READY=1 after the reload", |m| {
        has_line(m, "READY=1")
    });

    signal(&d, Signal::SIGTERM);
    let stopping = manager.wait_for("STOPPING=1", |m| has_line(m, "STOPPING=1"));
    assert!(wait_exit(&mut d).success(), "{}", d.log());
    assert!(
        ready < watchdog.min(status)
            && status < reloading
            && reloading < ready_again
            && ready_again < stopping,
        "order: {:?}",
        manager.seen
    );
    assert!(d.log().contains("watchdog enabled"), "{}", d.log());
}

/// Runs the daemon the way systemd does with socket activation: listeners on fds 3 and 4,
/// LISTEN_FDS=2 and LISTEN_PID set to the daemon's own pid (by a shell that then execs it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_handed_over_through_listen_fds_are_used() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let activated = dir.path().join("activated.sock");
    let control = std::os::unix::net::UnixListener::bind(&activated).unwrap();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let own_socket = dir.path().join("ctl.sock");

    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("export LISTEN_PID=$$; exec \"$0\" \"$@\"")
        .arg(DAEMON)
        .arg("--port")
        .arg("0")
        .arg("--socket")
        .arg(&own_socket)
        .arg("--discovery-dir")
        .arg(dir.path().join("discovery"));
    clean_env(&mut cmd, dir.path());
    cmd.env("LISTEN_FDS", "2")
        .env("LISTEN_FDNAMES", "control:extension");
    let (a, b) = (control.as_raw_fd(), tcp.as_raw_fd());
    // Safety: only async-signal-safe calls (fcntl, dup2) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            use nix::libc;
            // Move both out of the way first, so placing one cannot clobber the other.
            let a = libc::fcntl(a, libc::F_DUPFD, 100);
            let b = libc::fcntl(b, libc::F_DUPFD, 100);
            if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut d = spawn(dir, cmd, &activated);
    assert_eq!(
        d.port, port,
        "the handed-over port is in the discovery file"
    );
    let status = d.status();
    assert_eq!(status["socket"], activated.display().to_string());
    assert!(!own_socket.exists(), "did not bind its own socket");

    let _ext = FakeExtension::connect(&d, "s1", vec![tab(1, "One", vec![])]).await;
    d.wait_tabs("the tab over the handed-over port", |t| t.len() == 1);

    signal(&d, Signal::SIGTERM);
    assert!(wait_exit(&mut d).success(), "{}", d.log());
    assert!(!d.discovery_file.exists());
    assert!(
        activated.exists(),
        "a handed-over socket belongs to the service manager and stays"
    );
    drop((control, tcp));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_a_call_in_flight_finish_then_exits_clean() {
    let dir = tempfile::tempdir().unwrap();
    let mut manager = FakeManager::bind(&dir.path().join("notify.sock"));
    let mut cmd = daemon_command(dir.path(), &[]);
    cmd.env("NOTIFY_SOCKET", dir.path().join("notify.sock"));
    let socket = dir.path().join("ctl.sock");
    let mut d = spawn(dir, cmd, &socket);
    let mut ext = FakeExtension::search_tab(&d).await;

    let call = ctl_async(&d, &["--json", "call", "search", "--query", "slow"]);
    let request = ext.expect("callTool").await;
    signal(&d, Signal::SIGTERM);
    manager.wait_for("STOPPING=1", |m| has_line(m, "STOPPING=1"));
    assert!(d.child.try_wait().unwrap().is_none(), "still draining");

    ext.send(
        json!({"type": "toolResult", "sessionId": "s1", "callId": request["callId"],
        "result": {"content": [{"type": "text", "text": "done"}]}, "error": null}),
    )
    .await;
    let out = call.await.unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("done"), "{}", stdout(&out));

    assert_eq!(close_code(&mut ext).await, Some(CloseCode::Away));
    let status = wait_exit(&mut d);
    assert_eq!(status.code(), Some(0), "{}", d.log());
    assert!(!d.discovery_file.exists(), "discovery file removed");
    assert!(!d.socket.exists(), "socket removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_left_after_the_grace_period_fail_with_shutting_down() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = daemon_command(dir.path(), &["--shutdown-grace", "300ms"]);
    let socket = dir.path().join("ctl.sock");
    let mut d = spawn(dir, cmd, &socket);
    let mut ext = FakeExtension::search_tab(&d).await;

    let call = ctl_async(&d, &["call", "search", "--query", "never answered"]);
    ext.expect("callTool").await;
    signal(&d, Signal::SIGTERM);
    let out = call.await.unwrap();
    assert_eq!(exit_code(&out), 11, "{}", stderr(&out));
    assert!(stderr(&out).contains("SHUTTING_DOWN"), "{}", stderr(&out));
    assert_eq!(close_code(&mut ext).await, Some(CloseCode::Away));
    assert_eq!(wait_exit(&mut d).code(), Some(0), "{}", d.log());
    assert!(!d.discovery_file.exists() && !d.socket.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_exits_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut manager = FakeManager::bind(&dir.path().join("notify.sock"));
    let mut cmd = daemon_command(dir.path(), &["--shutdown-grace", "1m"]);
    cmd.env("NOTIFY_SOCKET", dir.path().join("notify.sock"));
    let socket = dir.path().join("ctl.sock");
    let mut d = spawn(dir, cmd, &socket);
    let mut ext = FakeExtension::search_tab(&d).await;
    let call = ctl_async(&d, &["call", "search", "--query", "never answered"]);
    ext.expect("callTool").await;

    signal(&d, Signal::SIGINT);
    manager.wait_for("STOPPING=1", |m| has_line(m, "STOPPING=1"));
    signal(&d, Signal::SIGINT);
    let status = wait_exit(&mut d);
    assert_eq!(status.code(), Some(128 + 2), "{}", d.log());
    assert!(!d.discovery_file.exists() && !d.socket.exists());
    let _ = call.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_log_level_and_origins_without_dropping_connections() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "log-level = \"info\"\n").unwrap();
    let cmd = daemon_command(dir.path(), &["--config", config.to_str().unwrap()]);
    let socket = dir.path().join("ctl.sock");
    let d = spawn(dir, cmd, &socket);
    let mut ext = FakeExtension::search_tab(&d).await;
    let trusted = [("Origin", "https://trusted.example")];
    assert!(FakeExtension::raw(&d.ws_url(), &trusted).await.is_err());
    assert!(
        !d.log().contains("extension connected"),
        "debug lines are off at info:\n{}",
        d.log()
    );

    std::fs::write(
        &config,
        "log-level = \"debug\"\nallow-origin = [\"chrome-extension://*\", \"https://trusted.example\"]\n",
    )
    .unwrap();
    signal(&d, Signal::SIGHUP);
    wait_until(Duration::from_secs(10), "the reload", || {
        d.log().contains("configuration reloaded").then_some(())
    });

    // The new origin list applies, and the new level shows debug lines.
    let _second = FakeExtension::raw(&d.ws_url(), &trusted)
        .await
        .expect("the reloaded origin list admits the new origin");
    wait_until(Duration::from_secs(10), "a debug line", || {
        d.log().contains("extension connected").then_some(())
    });

    // The first extension's connection is the same one, and it still carries calls.
    let call = ctl_async(
        &d,
        &["--json", "call", "search", "--tab", "b1:7", "--query", "q"],
    );
    ext.answer_call(json!({"content": [{"type": "text", "text": "still here"}]}))
        .await;
    let out = call.await.unwrap();
    assert!(out.status.success(), "{}\n{}", stderr(&out), d.log());
    let browsers = d.ctl_json(&["browsers"]);
    assert_eq!(browsers["browsers"][0]["id"], "b1", "{browsers}");
}

#[test]
fn a_broken_config_file_refuses_to_start_and_a_broken_reload_keeps_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "retries = \"lots\"\n").unwrap();
    let out = daemon_command(dir.path(), &["--config", config.to_str().unwrap()])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(78));
    let err = stderr(&out);
    assert!(err.contains("config.toml") && err.contains("lots"), "{err}");

    std::fs::write(&config, "retries = 3\n").unwrap();
    let cmd = daemon_command(dir.path(), &["--config", config.to_str().unwrap()]);
    let socket = dir.path().join("ctl.sock");
    let d = spawn(dir, cmd, &socket);
    std::fs::write(&config, "retries = [\n").unwrap();
    signal(&d, Signal::SIGHUP);
    wait_until(Duration::from_secs(10), "the failed reload", || {
        d.log().contains("reload failed").then_some(())
    });
    assert!(d.status()["pid"].is_number(), "still serving");
}

#[test]
fn print_config_names_the_source_of_each_value() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "retries = 5\ncall-timeout = \"3s\"\nport = 1\n").unwrap();
    let mut cmd = Command::new(DAEMON);
    clean_env(&mut cmd, dir.path());
    let out = cmd
        .args([
            "--config",
            config.to_str().unwrap(),
            "--print-config",
            "--port",
            "9",
        ])
        .env("BROWSER_MCP_CALL_TIMEOUT", "4s")
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = stdout(&out);
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key} in\n{text}"))
            .to_owned()
    };
    assert!(
        line("retries").contains("= 5") && line("retries").ends_with("# file"),
        "{text}"
    );
    assert!(
        line("call-timeout").contains("\"4s\"")
            && line("call-timeout").contains("# env BROWSER_MCP_CALL_TIMEOUT"),
        "{text}"
    );
    assert!(
        line("port").contains("= 9") && line("port").contains("# flag"),
        "{text}"
    );
    assert!(line("backoff-max").contains("# default"), "{text}");
    assert!(
        text.contains(&format!("# config file: {}", config.display())),
        "{text}"
    );
}

/// Under systemd stderr is the journal stream (JOURNAL_STREAM names its device:inode); with no
/// journal socket to write to, the daemon says so once and logs to stderr.
#[test]
fn an_unreachable_journal_falls_back_to_stderr_and_says_so_once() {
    use std::os::unix::fs::MetadataExt;
    if Path::new("/run/systemd/journal/socket").exists() {
        eprintln!("a journal runs on this machine; the fallback cannot be provoked here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = daemon_command(dir.path(), &[]);
    let meta = std::fs::metadata(dir.path().join("daemon.log")).unwrap();
    cmd.env("JOURNAL_STREAM", format!("{}:{}", meta.dev(), meta.ino()));
    let socket = dir.path().join("ctl.sock");
    let mut d = spawn(dir, cmd, &socket);
    signal(&d, Signal::SIGTERM);
    assert!(wait_exit(&mut d).success());
    let log = d.log();
    assert_eq!(
        log.matches("stderr is the journal but its socket cannot be reached")
            .count(),
        1,
        "{log}"
    );
    assert!(
        log.contains(" logs=stderr\n") || log.ends_with(" logs=stderr"),
        "{log}"
    );
}
