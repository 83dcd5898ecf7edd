//! The daemon as the systemd user service it ships as, under a real systemd user manager (PID 1
//! here is not systemd: the manager runs with a home and runtime directory of the test's own):
//! `browserctl setup` writes the units, the service starts, and `browserctl browser launch`
//! starts a Chromium inside the service's hardening, with no display and no D-Bus session
//! (issue 32); stopping the service stops the browser.

use crate::support::chromium::chromium_or_skip;
use crate::support::common::*;
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const MANAGER: &str = "/lib/systemd/systemd";
/// systemd's sign that it runs as PID 1; the user manager refuses to start without it. apt
/// takes it for a booted systemd, so it goes again once the test is over.
const BOOTED: &str = "/run/systemd/system";

/// A user manager of the test's own, stopped and its traces removed on drop.
struct UserManager {
    child: Child,
    home: tempfile::TempDir,
    made_booted: bool,
}

impl UserManager {
    fn start() -> UserManager {
        let made_booted = !Path::new(BOOTED).exists();
        if made_booted {
            std::fs::create_dir_all(BOOTED).unwrap();
        }
        let home = tempfile::tempdir().unwrap();
        let run = home.path().join("run");
        std::fs::create_dir(&run).unwrap();
        std::fs::set_permissions(&run, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .unwrap();
        // Where the service's daemon listens and writes its discovery file: away from the
        // shared defaults, which port-scanning browsers of other tests would find.
        let config = home.path().join(".config/browser-mcp");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("config.toml"),
            format!(
                "port = 0\ndiscovery-dir = \"{}\"\n",
                home.path().join("discovery").display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(home.path().join("manager.log")).unwrap();
        let child = Command::new(MANAGER)
            .arg("--user")
            .env("HOME", home.path())
            .env("XDG_RUNTIME_DIR", &run)
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .env_remove("DISPLAY")
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start the systemd user manager");
        let m = UserManager {
            child,
            home,
            made_booted,
        };
        wait_until(Duration::from_secs(30), "the user manager to run", || {
            let out = m.systemctl(&["is-system-running"]);
            let state = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            matches!(state.as_str(), "running" | "degraded").then_some(())
        });
        m
    }

    fn env(&self, cmd: &mut Command) {
        cmd.env("HOME", self.home.path())
            .env("XDG_RUNTIME_DIR", self.home.path().join("run"))
            .env("XDG_CONFIG_HOME", self.home.path().join(".config"))
            .env_remove("BROWSER_MCP_SOCKET")
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_DATA_HOME")
            .stdin(Stdio::null());
    }

    fn systemctl(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new("systemctl");
        cmd.arg("--user").args(args);
        self.env(&mut cmd);
        cmd.output().expect("run systemctl")
    }

    fn ctl(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(CTL);
        cmd.args(args);
        self.env(&mut cmd);
        cmd.output().expect("run browserctl")
    }

    fn log(&self) -> String {
        let mut cmd = Command::new("journalctl");
        cmd.args(["--user", "-u", "browser-mcpd", "--no-pager", "-n", "40"]);
        self.env(&mut cmd);
        let journal = cmd
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let status = self.systemctl(&["status", "browser-mcpd", "--no-pager"]);
        format!(
            "{}\n{journal}\n{}",
            String::from_utf8_lossy(&status.stdout),
            std::fs::read_to_string(self.home.path().join("manager.log")).unwrap_or_default()
        )
    }
}

impl Drop for UserManager {
    fn drop(&mut self) {
        let _ = self.systemctl(&["stop", "browser-mcpd.service"]);
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.child.wait();
        if self.made_booted {
            let _ = std::fs::remove_dir(BOOTED);
        }
    }
}

/// The processes whose command line names `needle`, from /proc.
fn running(needle: &str) -> Vec<PathBuf> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .map(|e| e.path())
        .collect()
}

#[test]
fn the_user_service_launches_a_browser_with_no_desktop() {
    let test = "service::user_manager::the_user_service_launches_a_browser_with_no_desktop";
    if chromium_or_skip(test).is_none() {
        return;
    }
    if !Path::new(MANAGER).exists() {
        skip(test, "no systemd user manager", "apt-get install systemd");
        return;
    }
    let m = UserManager::start();
    let out = m.ctl(&["setup"]);
    assert!(out.status.success(), "setup: {}", stderr(&out));
    let out = m.systemctl(&["daemon-reload"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = m.systemctl(&["start", "browser-mcpd.service"]);
    assert!(out.status.success(), "start: {}\n{}", stderr(&out), m.log());

    let out = m.ctl(&["--json", "browser", "launch", "--browser", "chromium"]);
    assert!(
        out.status.success(),
        "launch under the service: {}\n{}",
        stderr(&out),
        m.log()
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["headless"], true, "{v}");
    // (Chromium may move itself into a scope of its own through the user manager, out of the
    // service's cgroup: the daemon, not systemd, is what stops it.)
    let profile = v["profileDir"].as_str().unwrap().to_owned();

    // Stopping the service stops the browser it launched.
    assert!(!running(&profile).is_empty(), "the browser runs: {v}");
    let out = m.systemctl(&["stop", "browser-mcpd.service"]);
    assert!(out.status.success(), "{}", stderr(&out));
    wait_until(Duration::from_secs(30), "the browser to stop", || {
        running(&profile).is_empty().then_some(())
    });
}
