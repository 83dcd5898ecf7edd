//! `browserctl setup`, `doctor` and `completions`.

use crate::common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// browserctl with HOME and XDG_CONFIG_HOME inside `home`.
fn ctl_in(home: &Path, socket: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(CTL);
    if let Some(s) = socket {
        cmd.arg("--socket").arg(s);
    }
    cmd.args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("BROWSER_MCP_SOCKET")
        .stdin(Stdio::null())
        .output()
        .expect("run browserctl")
}

#[test]
fn setup_writes_and_uninstall_removes_the_systemd_units() {
    let home = tempfile::tempdir().unwrap();
    let out = ctl_in(
        home.path(),
        None,
        &["setup", "--manager", "systemd", "--daemon", DAEMON],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let units = home.path().join(".config/systemd/user");
    let service = std::fs::read_to_string(units.join("browser-mcpd.service")).unwrap();
    let daemon = std::fs::canonicalize(DAEMON).unwrap();
    assert!(
        service.contains(&format!("\nExecStart={}\n", daemon.display())),
        "{service}"
    );
    assert!(service.contains("Type=notify") && service.contains("WatchdogSec="));
    assert!(units.join("browser-mcpd.socket").is_file());
    assert!(stdout(&out).contains("systemctl --user enable --now browser-mcpd.service"));

    // Enabled by systemctl meanwhile: uninstall removes the link too.
    std::fs::create_dir_all(units.join("default.target.wants")).unwrap();
    let link = units.join("default.target.wants/browser-mcpd.service");
    std::os::unix::fs::symlink(units.join("browser-mcpd.service"), &link).unwrap();
    let out = ctl_in(
        home.path(),
        None,
        &["setup", "--manager", "systemd", "--uninstall"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!units.join("browser-mcpd.service").exists());
    assert!(!units.join("browser-mcpd.socket").exists());
    assert!(
        std::fs::symlink_metadata(&link).is_err(),
        "no dangling link left"
    );
}

#[test]
fn setup_leaves_files_it_did_not_write_alone() {
    let home = tempfile::tempdir().unwrap();
    let units = home.path().join(".config/systemd/user");
    std::fs::create_dir_all(&units).unwrap();
    std::fs::write(units.join("browser-mcpd.service"), "# mine\n").unwrap();
    let out = ctl_in(
        home.path(),
        None,
        &["setup", "--manager", "systemd", "--daemon", DAEMON],
    );
    assert_eq!(exit_code(&out), 2, "{}", stdout(&out));
    assert!(
        stderr(&out).contains("not written by browserctl setup"),
        "{}",
        stderr(&out)
    );
    let out = ctl_in(
        home.path(),
        None,
        &["setup", "--manager", "systemd", "--uninstall"],
    );
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_to_string(units.join("browser-mcpd.service")).unwrap(),
        "# mine\n"
    );
}

#[test]
fn setup_writes_a_launch_agent_with_real_paths() {
    let home = tempfile::tempdir().unwrap();
    let out = ctl_in(
        home.path(),
        None,
        &["setup", "--manager", "launchd", "--daemon", DAEMON],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let plist_path = home
        .path()
        .join("Library/LaunchAgents/dev.browsermcp.browser-mcpd.plist");
    let plist = std::fs::read_to_string(&plist_path).unwrap();
    let daemon = std::fs::canonicalize(DAEMON).unwrap();
    assert!(plist.contains(&format!("<string>{}</string>", daemon.display())));
    assert!(plist.contains(&format!(
        "<string>{}/Library/Logs/browser-mcpd.log</string>",
        home.path().display()
    )));
    assert!(!plist.contains('@'), "every placeholder filled: {plist}");
    let out = ctl_in(
        home.path(),
        None,
        &["setup", "--manager", "launchd", "--uninstall"],
    );
    assert!(out.status.success());
    assert!(!plist_path.exists());
}

#[test]
fn completions_are_generated_for_each_shell() {
    let home = tempfile::tempdir().unwrap();
    // The static scripts name every command; the dynamic ones ask browserctl instead.
    for shell in ["bash", "zsh", "fish"] {
        let out = ctl_in(home.path(), None, &["completions", shell, "--static"]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(
            script.contains("doctor") && script.contains("events"),
            "{shell}"
        );
    }
    // The bash script at least parses.
    let out = ctl_in(home.path(), None, &["completions", "bash"]);
    let file = home.path().join("browserctl.bash");
    std::fs::write(&file, &out.stdout).unwrap();
    let check = Command::new("bash").arg("-n").arg(&file).output().unwrap();
    assert!(check.status.success(), "{}", stderr(&check));
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name} in {report}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_passes_what_is_right_and_names_a_fix_for_the_rest() {
    let d = TestDaemon::start();
    let _ext = FakeExtension::connect(&d, "s1", vec![tab(1, "One", vec![])]).await;
    d.wait_tabs("the tab", |t| t.len() == 1);
    let home = tempfile::tempdir().unwrap();
    // Chromium has our native host; Chrome has a profile but no host.
    std::fs::create_dir_all(home.path().join(".config/chromium")).unwrap();
    let out = ctl_in(
        home.path(),
        None,
        &["install-native-host", "--browser", "chromium"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::create_dir_all(home.path().join(".config/google-chrome")).unwrap();

    let out = ctl_in(home.path(), Some(&d.socket), &["--json", "doctor"]);
    assert_eq!(exit_code(&out), 1, "{}", stdout(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    for ok in [
        "control socket",
        "daemon reachable",
        "versions match",
        "discovery directory",
        "discovery file",
        "native host for Chromium",
        "extensions connected",
    ] {
        assert_eq!(check(&report, ok)["ok"], true, "{ok}: {report}");
    }
    let chrome = check(&report, "native host for Google Chrome");
    assert_eq!(chrome["ok"], false);
    assert_eq!(
        chrome["fix"],
        "browserctl install-native-host --browser chrome"
    );
    assert!(check(&report, "extensions connected")["detail"]
        .as_str()
        .unwrap()
        .contains("Chrome 120.0.0.0"));

    let text = stdout(&ctl_in(home.path(), Some(&d.socket), &["doctor"]));
    assert!(text.contains("✓ daemon reachable"), "{text}");
    assert!(text.contains("✗ native host for Google Chrome"), "{text}");
    assert!(
        text.contains("    fix: browserctl install-native-host --browser chrome"),
        "{text}"
    );
}

#[test]
fn doctor_without_a_daemon_says_how_to_start_it() {
    let home = tempfile::tempdir().unwrap();
    let socket = home.path().join("none.sock");
    let out = ctl_in(home.path(), Some(&socket), &["--json", "doctor"]);
    assert_eq!(exit_code(&out), 1);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let reachable = check(&report, "daemon reachable");
    assert_eq!(reachable["ok"], false);
    assert!(reachable["fix"]
        .as_str()
        .unwrap()
        .contains("systemctl --user start browser-mcpd"));
    assert_eq!(check(&report, "control socket")["ok"], false);
}
