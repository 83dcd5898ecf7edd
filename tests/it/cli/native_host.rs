//! `browserctl native-host` and `browserctl install-native-host`, driven the way Chrome drives
//! them (a subprocess on pipes, the origin as argument), against real daemons.

use crate::support::common::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const ORIGIN: &str = "chrome-extension://jldadifenendlhihnlmegbljijfhnffa/";

/// A host process as Chrome runs it; its frames arrive on `frames`. Killed on drop.
pub struct Host {
    child: Child,
    stdin: Option<ChildStdin>,
    frames: mpsc::Receiver<Value>,
}

impl Host {
    pub fn spawn(mut cmd: Command) -> Host {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the native host");
        let mut out = child.stdout.take().unwrap();
        let (tx, frames) = mpsc::channel();
        std::thread::spawn(move || loop {
            let mut len = [0u8; 4];
            if out.read_exact(&mut len).is_err() {
                return;
            }
            let mut body = vec![0u8; u32::from_ne_bytes(len) as usize];
            out.read_exact(&mut body).expect("a whole frame");
            let v: Value = serde_json::from_slice(&body).expect("a JSON frame");
            if tx.send(v).is_err() {
                return;
            }
        });
        Host {
            stdin: child.stdin.take(),
            child,
            frames,
        }
    }

    /// The next pushed server list.
    pub fn next(&self) -> Vec<Value> {
        let v = self
            .frames
            .recv_timeout(Duration::from_secs(20))
            .expect("a message from the host");
        assert_eq!(v["type"], "servers", "{v}");
        v["servers"].as_array().unwrap().clone()
    }

    /// Skips messages until one satisfies `pred`.
    pub fn until(&self, what: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        for _ in 0..20 {
            let servers = self.next();
            if pred(&servers) {
                return servers;
            }
        }
        panic!("the host never pushed {what}");
    }

    /// What Chrome does when the extension disconnects: close the host's stdin.
    pub fn close_stdin(&mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        wait_until(Duration::from_secs(10), "the host to exit", || {
            self.child.try_wait().ok().flatten()
        })
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn host_cmd(discovery: &Path) -> Command {
    let mut cmd = Command::new(CTL);
    cmd.arg("native-host")
        .arg("--discovery-dir")
        .arg(discovery)
        .arg(ORIGIN);
    cmd
}

fn entry(d: &TestDaemon) -> Value {
    json!({"port": d.port, "pid": d.child.id(), "token": d.token, "version": env!("CARGO_PKG_VERSION")})
}

#[test]
fn host_pushes_live_daemons_and_exits_with_its_stdin() {
    let d = TestDaemon::start();
    let mut host = Host::spawn(host_cmd(&d.discovery_dir));
    assert_eq!(host.next(), vec![entry(&d)], "the list right after start");

    // A clean stop removes the file; a restart brings a new pid and token.
    let d = d.restart(&[]);
    host.until("the restarted daemon", |s| s == [entry(&d)]);

    // SIGKILL leaves the file behind: only the pid check can notice.
    let mut d = d;
    d.child.kill().unwrap();
    d.child.wait().unwrap();
    assert!(d.discovery_file.exists());
    assert_eq!(host.next(), Vec::<Value>::new());

    let status = host.close_stdin();
    assert!(status.success(), "{status}");
}

#[test]
fn host_sees_the_directory_appear_and_skips_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    let disco = dir.path().join("discovery");
    let mut host = Host::spawn(host_cmd(&disco));
    assert_eq!(host.next(), Vec::<Value>::new(), "no directory yet");
    std::fs::create_dir(&disco).unwrap();
    std::fs::set_permissions(&disco, std::fs::Permissions::from_mode(0o700)).unwrap();
    // Writable by others: not trusted, so not announced (a live pid: ours).
    let me = std::process::id();
    let staged = dir.path().join("staged");
    std::fs::write(&staged, format!(r#"{{"port": 1, "pid": {me}}}"#)).unwrap();
    std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::rename(&staged, disco.join(format!("server-{me}.json"))).unwrap();
    // A daemon using the same directory (it takes a directory that exists and is ours).
    let mut d = TestDaemon::builder().dir(dir).start();
    assert_eq!(host.next(), vec![entry(&d)]);
    d.terminate();
    assert_eq!(host.next(), Vec::<Value>::new());
    assert!(host.close_stdin().success());
}

#[test]
fn host_notices_a_dead_pid_without_any_file_event() {
    let dir = tempfile::tempdir().unwrap();
    let disco = dir.path().join("discovery");
    std::fs::create_dir(&disco).unwrap();
    std::fs::set_permissions(&disco, std::fs::Permissions::from_mode(0o700)).unwrap();
    // A stand-in daemon: a process we can kill, with a file in its name.
    let mut sleeper = Command::new("sleep").arg("60").spawn().unwrap();
    let pid = sleeper.id();
    std::fs::write(
        disco.join(format!("server-{pid}.json")),
        format!(r#"{{"port": 8799, "pid": {pid}, "startedAt": "x"}}"#),
    )
    .unwrap();
    let mut host = Host::spawn(host_cmd(&disco));
    assert_eq!(host.next(), vec![json!({"port": 8799, "pid": pid})]);
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    assert_eq!(host.next(), Vec::<Value>::new(), "the periodic pid check");
    assert!(host.close_stdin().success());
}

#[test]
fn host_ignores_what_the_extension_sends() {
    let d = TestDaemon::start();
    let mut host = Host::spawn(host_cmd(&d.discovery_dir));
    assert_eq!(host.next(), vec![entry(&d)]);
    let body = br#"{"type":"hello"}"#;
    let stdin = host.stdin.as_mut().unwrap();
    stdin.write_all(&(body.len() as u32).to_ne_bytes()).unwrap();
    stdin.write_all(body).unwrap();
    stdin.flush().unwrap();
    assert!(
        host.child.try_wait().unwrap().is_none(),
        "still running after a message"
    );
    assert!(host.close_stdin().success());
}

#[test]
fn install_writes_a_manifest_and_a_working_wrapper() {
    let d = TestDaemon::start();
    let profile = tempfile::tempdir().unwrap();
    let out = d.install_host(profile.path());
    let hosts = profile.path().join("NativeMessagingHosts");
    let manifest_path = hosts.join("dev.browsermcp.host.json");
    let wrapper = hosts.join("browser-mcp-native-host");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["installed"][0]["manifest"],
        manifest_path.to_str().unwrap()
    );
    let manifest = read_json(&manifest_path).expect("the manifest");
    assert_eq!(
        manifest,
        json!({"name": "dev.browsermcp.host",
            "description": manifest["description"], "path": wrapper.to_str().unwrap(),
            "type": "stdio", "allowed_origins": [ORIGIN]})
    );
    let mode = std::fs::metadata(&wrapper).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);

    // Run the wrapper as Chrome would: origin as the only argument, a bare environment.
    let mut cmd = Command::new(&wrapper);
    cmd.arg(ORIGIN).env_clear();
    let mut host = Host::spawn(cmd);
    assert_eq!(host.next(), vec![entry(&d)]);
    assert!(host.close_stdin().success());

    let out = ctl_plain(&[
        "install-native-host",
        "--uninstall",
        "--user-data-dir",
        profile.path().to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("removed"), "{}", stdout(&out));
    assert!(!manifest_path.exists() && !wrapper.exists());
}

#[test]
fn install_finds_per_browser_locations() {
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        Command::new(CTL)
            .arg("install-native-host")
            .args(args)
            .env("HOME", home.path())
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("BROWSER_MCP_DISCOVERY_DIR")
            .output()
            .unwrap()
    };
    // No browser profile at all: say so rather than guess.
    let out = run(&[]);
    assert_eq!(exit_code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("--browser"), "{}", stderr(&out));

    let out = run(&["--browser", "chromium", "--browser", "brave"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let config = home.path().join(".config");
    for dir in ["chromium", "BraveSoftware/Brave-Browser"] {
        let m = config
            .join(dir)
            .join("NativeMessagingHosts/dev.browsermcp.host.json");
        assert!(m.exists(), "{}", m.display());
    }
    // Without --browser: every browser whose profile exists (chromium and brave now do).
    std::fs::create_dir_all(config.join("google-chrome")).unwrap();
    let out = run(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.contains("chrome: wrote"), "{text}");
    let wrapper = std::fs::read_to_string(
        config.join("google-chrome/NativeMessagingHosts/browser-mcp-native-host"),
    )
    .unwrap();
    assert!(
        wrapper.contains(" native-host \"$@\""),
        "no discovery dir baked in by default: {wrapper}"
    );
}

/// Issue 59: `install-native-host` ignored the `discovery-dir` of the daemon's config file, so
/// the host looked in /tmp/browser-mcp and never found a daemon configured elsewhere.
#[test]
fn install_takes_the_discovery_dir_from_the_daemons_config_file() {
    let d = TestDaemon::start();
    let t = tempfile::tempdir().unwrap();
    let (config, profile) = (t.path().join("config"), t.path().join("profile"));
    std::fs::create_dir_all(config.join("browser-mcp")).unwrap();
    std::fs::write(
        config.join("browser-mcp/config.toml"),
        format!("discovery-dir = {:?}\n", d.discovery_dir.to_str().unwrap()),
    )
    .unwrap();
    let out = Command::new(CTL)
        .args(["--json", "install-native-host", "--user-data-dir"])
        .arg(&profile)
        .env("XDG_CONFIG_HOME", &config)
        .env_remove("BROWSER_MCP_DISCOVERY_DIR")
        .env_remove("BROWSER_MCP_CONFIG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let wrapper = profile.join("NativeMessagingHosts/browser-mcp-native-host");
    let mut cmd = Command::new(&wrapper);
    cmd.arg(ORIGIN).env_clear();
    let mut host = Host::spawn(cmd);
    assert_eq!(host.next(), vec![entry(&d)], "{}", stdout(&out));
    assert!(host.close_stdin().success());
}

/// Issue 59: a reinstall had no effect while the browser kept its old host running, and said
/// nothing of it. With a host running, it now says to restart the browser.
#[test]
fn a_reinstall_while_a_host_runs_says_to_restart_the_browser() {
    let d = TestDaemon::start();
    let profile = tempfile::tempdir().unwrap();
    d.install_host(profile.path());
    let restart = |v: &Value| v["warnings"].to_string().contains("restart the browser");
    let wrapper = profile
        .path()
        .join("NativeMessagingHosts/browser-mcp-native-host");
    let mut cmd = Command::new(&wrapper);
    cmd.arg(ORIGIN).env_clear();
    let mut host = Host::spawn(cmd);
    assert_eq!(host.next(), vec![entry(&d)]);
    let out = d.install_host(profile.path());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(restart(&report), "{report}");
    assert!(host.close_stdin().success());
}
