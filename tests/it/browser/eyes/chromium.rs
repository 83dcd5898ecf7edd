//! The agent's eyes in headless Chromium: the browser starts before the daemon, so its
//! start-up page logs before any daemon is there and the extension keeps those lines.

use super::every_scenario;
use crate::browser::drives::*;
use crate::support::chromium::*;
use crate::support::common::*;
use serde_json::json;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Browser steps (start-up, port scan, page loads) on a loaded two-core machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// Headless Chromium in its own process group, downloading into `downloads`; the group is
/// killed and the directories removed on drop.
struct Chromium {
    child: Child,
    log: PathBuf,
    downloads: tempfile::TempDir,
    profile: tempfile::TempDir,
    _logdir: tempfile::TempDir,
}

impl Chromium {
    fn launch(exe: &Path, url: &str) -> Chromium {
        let profile = tempfile::tempdir().unwrap();
        let downloads = tempfile::tempdir().unwrap();
        // Downloads land in our directory without asking, and a page may start more than one
        // (Chromium's "automatic downloads" permission; synthetic clicks carry no gesture).
        std::fs::create_dir_all(profile.path().join("Default")).unwrap();
        let prefs = json!({
            "download": {"default_directory": downloads.path(), "prompt_for_download": false,
                "directory_upgrade": true},
            "savefile": {"default_directory": downloads.path()},
            "profile": {"default_content_setting_values": {"automatic_downloads": 1}},
        });
        std::fs::write(
            profile.path().join("Default/Preferences"),
            prefs.to_string(),
        )
        .unwrap();
        let logdir = tempfile::tempdir().unwrap();
        let log = logdir.path().join("chromium.log");
        let out = File::create(&log).unwrap();
        let extension = Path::new(env!("CARGO_MANIFEST_DIR")).join("extension");
        let child = Command::new(exe)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--window-size=1000,700",
                "--remote-debugging-port=0",
                "--enable-logging=stderr",
                "--v=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            // Chromium leaves its singleton socket dir in TMPDIR when killed: keep it in the profile.
            .env("TMPDIR", profile.path())
            .arg(format!("--load-extension={}", extension.display()))
            .arg(url)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("launch {}: {e}", exe.display()));
        Chromium {
            child,
            log,
            downloads,
            profile,
            _logdir: logdir,
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

struct Eyes {
    d: TestDaemon,
    chromium: Chromium,
    tab: String,
    started: Instant,
}

impl DrivesTab for Eyes {
    fn daemon(&self) -> &TestDaemon {
        &self.d
    }

    fn tab(&self) -> &str {
        &self.tab
    }

    fn patience(&self) -> Duration {
        PATIENCE
    }

    fn firefox(&self) -> bool {
        false
    }

    fn downloads(&self) -> &Path {
        self.chromium.downloads.path()
    }

    fn step(&self, name: &str) {
        eprintln!("chromium eyes {:>6.1?} {name}", self.started.elapsed());
    }

    fn context(&self) -> String {
        let log = self.d.log();
        let lines: Vec<&str> = log.lines().collect();
        format!(
            "--- daemon log (tail) ---\n{}\n--- chromium log (tail) ---\n{}",
            lines[lines.len().saturating_sub(30)..].join("\n"),
            self.chromium.log_tail()
        )
    }
}

#[test]
fn in_chromium() {
    let Some(exe) = chromium_or_skip("browser::eyes::in_chromium") else {
        return;
    };
    let _lock = machine_wide_lock();
    let pages = PageServer::pages();
    // The browser first: its start-up page usually logs before any daemon is there, and the
    // extension keeps those lines until one is.
    let chromium = Chromium::launch(&exe, &pages.url("eyes-console.html?early"));
    let d = daemon_in_scan_range(&[]);
    // Found by the scan, trusted once paired (issue 21).
    pair_browser(chromium.profile.path(), &d);
    let mut eyes = Eyes {
        d,
        chromium,
        tab: String::new(),
        started: Instant::now(),
    };
    let out = eyes.d.ctl(&[
        "wait",
        "--tool",
        "browser_console_messages",
        "--timeout",
        "60s",
    ]);
    assert!(out.status.success(), "{}\n{}", stderr(&out), eyes.context());
    let tabs = eyes.d.ctl_json(&["tabs"]);
    let tab = tabs["tabs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["url"]
                .as_str()
                .unwrap_or("")
                .ends_with("/eyes-console.html?early")
        })
        .unwrap_or_else(|| panic!("no start-up tab in {tabs}"))
        .clone();
    eyes.tab = tab["ref"].as_str().unwrap().to_owned();
    // The start-up page has loaded (its navigation is behind us, not among the events below).
    eyes.call("browser_wait_for", json!({"selector": "#more"}));
    eyes.step("extension connected");
    let early = eyes.call("browser_console_messages", json!({}));
    for needle in [
        "early debug 1",
        "early warn",
        "thrown at load",
        "nobody caught me",
        "from the frame",
    ] {
        assert!(
            find(list(&early, "messages"), "text", needle).is_some(),
            "{needle:?} from before the daemon: {}",
            text(&early)
        );
    }

    // The new built-ins are offered like the others; only browser_evaluate is held back.
    let names = tool_names(&tab);
    for t in [
        "browser_console_messages",
        "browser_network_requests",
        "browser_downloads",
        "browser_screenshot",
        "browser_tabs",
    ] {
        assert!(names.contains(&t), "{t} in {names:?}");
    }
    assert_eq!(tab["hidden"]["tools"], json!(["browser_evaluate"]), "{tab}");

    every_scenario(&eyes, &pages);
}
