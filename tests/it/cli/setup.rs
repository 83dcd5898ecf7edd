//! `browserctl setup`, `doctor` and `completions`.

use crate::support::common::*;
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

/// Firefox: one host manifest per user in ~/.mozilla/native-messaging-hosts, naming our gecko
/// id; found by default when a Firefox profile exists (old layout or XDG), checked by doctor.
#[test]
fn firefox_gets_its_own_host_manifest_and_doctor_checks_it() {
    let home = tempfile::tempdir().unwrap();
    let socket = home.path().join("none.sock");
    let manifest = home
        .path()
        .join(".mozilla/native-messaging-hosts/dev.browsermcp.host.json");
    let doctor = |home: &Path| -> Value {
        let out = ctl_in(home, Some(&socket), &["--json", "doctor"]);
        serde_json::from_slice(&out.stdout).unwrap()
    };

    // No Firefox profile yet: no Firefox check, and nothing detected to install into.
    let report = doctor(home.path());
    assert!(
        !report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "native host for Firefox"),
        "{report}"
    );
    // A Firefox that keeps its profiles under XDG_CONFIG_HOME (no ~/.mozilla yet).
    std::fs::create_dir_all(home.path().join(".config/mozilla/firefox")).unwrap();
    let missing = doctor(home.path());
    let firefox = check(&missing, "native host for Firefox");
    assert_eq!(firefox["ok"], false, "{firefox}");
    assert_eq!(
        firefox["fix"],
        "browserctl install-native-host --browser firefox"
    );

    // Installed by default (it is detected), with Firefox's own keys.
    let out = ctl_in(home.path(), None, &["install-native-host", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let done: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(done["installed"][0]["browser"], "firefox", "{done}");
    let m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    assert_eq!(m["name"], "dev.browsermcp.host");
    assert_eq!(m["type"], "stdio");
    assert_eq!(
        m["allowed_extensions"],
        serde_json::json!(["browser-mcp@browsermcp.dev"])
    );
    assert!(
        m.get("allowed_origins").is_none(),
        "Firefox rejects Chromium's key: {m}"
    );
    let wrapper = m["path"].as_str().unwrap();
    assert!(std::fs::read_to_string(wrapper)
        .unwrap()
        .contains("native-host"));
    let report = doctor(home.path());
    assert_eq!(
        check(&report, "native host for Firefox")["ok"],
        true,
        "{report}"
    );

    // A manifest that does not let our extension in is caught.
    let mut wrong = m.clone();
    wrong["allowed_extensions"] = serde_json::json!(["someone-else@example.org"]);
    std::fs::write(&manifest, wrong.to_string()).unwrap();
    let report = doctor(home.path());
    let firefox = check(&report, "native host for Firefox");
    assert_eq!(firefox["ok"], false, "{firefox}");
    assert!(
        firefox["detail"]
            .as_str()
            .unwrap()
            .contains("browser-mcp@browsermcp.dev"),
        "{firefox}"
    );

    // The ESR and Developer Edition names are the same install; --user-data-dir is Chromium's.
    let out = ctl_in(
        home.path(),
        None,
        &["install-native-host", "--browser", "firefox-esr"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        check(&doctor(home.path()), "native host for Firefox")["ok"],
        true
    );
    let out = ctl_in(
        home.path(),
        None,
        &[
            "install-native-host",
            "--browser",
            "firefox",
            "--user-data-dir",
            "/tmp/x",
        ],
    );
    assert_eq!(exit_code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("not per profile"), "{}", stderr(&out));

    // And uninstalled.
    let out = ctl_in(
        home.path(),
        None,
        &["install-native-host", "--browser", "firefox", "--uninstall"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!manifest.exists());
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

/// Issue 59: `man browserctl` was missing after `cargo install`. `setup` puts the pages in
/// `share/man/man1` beside the `bin` browserctl runs from (for cargo, ~/.cargo/share/man),
/// where man looks for a PATH directory's pages, and `--uninstall` takes them away again.
#[test]
fn setup_installs_the_man_pages_where_man_finds_them() {
    let t = tempfile::tempdir().unwrap();
    let (bin, home) = (t.path().join("bin"), t.path().join("home"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    for (from, name) in [(CTL, "browserctl"), (DAEMON, "browser-mcpd")] {
        if std::fs::hard_link(from, bin.join(name)).is_err() {
            std::fs::copy(from, bin.join(name)).unwrap();
        }
    }
    let run = |args: &[&str]| {
        Command::new(bin.join("browserctl"))
            .args(args)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(&["setup", "--manager", "systemd"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = t.path().join("share/man/man1/browserctl.1");
    assert!(page.is_file(), "{}", stdout(&out));
    assert!(t.path().join("share/man/man1/browser-mcpd.1").is_file());
    if Path::new("/usr/bin/man").exists() {
        let found = Command::new("/usr/bin/man")
            .args(["-w", "browserctl"])
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("HOME", &home)
            .output()
            .unwrap();
        assert_eq!(stdout(&found).trim(), page.display().to_string());
    }
    let out = run(&["setup", "--manager", "systemd", "--uninstall"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!page.exists(), "{}", stdout(&out));
}

/// Issue 59: doctor showed ✗ for a native host that worked in a `--user-data-dir` profile,
/// and proposed a fix for the default profile. Named with `--user-data-dir`, that profile is
/// checked, and its fix names it.
#[test]
fn doctor_checks_the_native_host_of_a_user_data_dir() {
    let d = TestDaemon::start();
    let home = tempfile::tempdir().unwrap();
    let (with, without) = (home.path().join("with"), home.path().join("without"));
    d.install_host(&with);
    let (w, wo) = (with.to_str().unwrap(), without.to_str().unwrap());
    let out = ctl_in(
        home.path(),
        Some(&d.socket),
        &[
            "--json",
            "doctor",
            "--user-data-dir",
            w,
            "--user-data-dir",
            wo,
        ],
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let found = check(&report, &format!("native host for {w}"));
    assert_eq!(found["ok"], true, "{report} {}", stderr(&out));
    let missing = check(&report, &format!("native host for {wo}"));
    assert_eq!(missing["ok"], false, "{report}");
    assert_eq!(
        missing["fix"],
        format!("browserctl install-native-host --user-data-dir {wo}")
    );
}
