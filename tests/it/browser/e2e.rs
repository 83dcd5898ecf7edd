//! End to end in a real browser: headless Chromium with our extension (extension/), the real
//! daemon, the test pages of tests/e2e/pages served from loopback, and browserctl as a
//! subprocess. Each scenario runs once per discovery path (native-messaging host, port scan)
//! and per WebMCP flavour (Chromium's own API, the extension's shim).
//!
//! Without Chromium the tests say SKIPPED loudly and pass, except in CI (`CI=true`), where a
//! missing browser is a failure. `BROWSER_MCP_CHROMIUM` names another binary.

use crate::support::chromium::*;
use crate::support::common::*;
use serde_json::Value;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a browser step may take on a loaded machine (passed to `browserctl wait`).
const WAIT: &str = "60s";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Discovery {
    NativeHost,
    PortScan,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum WebMcp {
    Native,
    Shim,
}

#[test]
fn native_host_with_native_webmcp() {
    scenario(
        "native_host_with_native_webmcp",
        Discovery::NativeHost,
        WebMcp::Native,
    );
}

#[test]
fn native_host_with_shim() {
    scenario("native_host_with_shim", Discovery::NativeHost, WebMcp::Shim);
}

#[test]
fn port_scan_with_native_webmcp() {
    scenario(
        "port_scan_with_native_webmcp",
        Discovery::PortScan,
        WebMcp::Native,
    );
}

#[test]
fn port_scan_with_shim() {
    scenario("port_scan_with_shim", Discovery::PortScan, WebMcp::Shim);
}

/// Headless Chromium in its own process group; the group is killed and the profile removed
/// on drop.
struct Chromium {
    child: Child,
    log: PathBuf,
    profile: tempfile::TempDir,
    _logdir: tempfile::TempDir,
}

impl Chromium {
    fn launch(exe: &Path, profile: tempfile::TempDir, webmcp: WebMcp, url: &str) -> Chromium {
        let logdir = tempfile::tempdir().unwrap();
        let log = logdir.path().join("chromium.log");
        let out = File::create(&log).unwrap();
        let extension = Path::new(env!("CARGO_MANIFEST_DIR")).join("extension");
        let mut cmd = Command::new(exe);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--remote-debugging-port=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        // Chromium leaves its singleton socket dir in TMPDIR when killed: keep it in the profile.
        .env("TMPDIR", profile.path())
        .arg(format!("--load-extension={}", extension.display()));
        if webmcp == WebMcp::Native {
            cmd.arg("--enable-features=WebMCP");
        }
        let child = cmd
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
            profile,
            _logdir: logdir,
        }
    }

    /// SIGKILL to the browser process alone, as in a crash: its helpers and the native host
    /// must notice by themselves.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        // The whole group: the browser and whatever helpers (zygote, renderers, the native
        // host) are left.
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// Live `browserctl native-host` processes whose command line mentions `needle`.
fn native_hosts_mentioning(needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let c = String::from_utf8_lossy(&c);
                c.contains("native-host") && c.contains(needle)
            })
        })
        .collect()
}

struct Run {
    daemon: Option<TestDaemon>,
    chromium: Chromium,
    what: String,
}

impl Run {
    fn d(&self) -> &TestDaemon {
        self.daemon.as_ref().unwrap()
    }

    fn context(&self) -> String {
        format!(
            "[{}]\n--- daemon log (tail) ---\n{}\n--- chromium log (tail) ---\n{}",
            self.what,
            tail(&self.d().log(), 40),
            self.chromium.log_tail()
        )
    }

    /// browserctl ARGS, which must succeed.
    fn ok(&self, args: &[&str]) -> Output {
        let out = self.d().ctl(args);
        assert!(
            out.status.success(),
            "browserctl {args:?} failed ({}): {}\n{}",
            out.status,
            stderr(&out),
            self.context()
        );
        out
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        serde_json::from_slice(&self.ok(&all).stdout).expect("JSON from browserctl")
    }

    fn tabs(&self) -> Vec<Value> {
        self.json(&["tabs"])["tabs"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn wait_tabs(&self, what: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let tabs = self.tabs();
            if pred(&tabs) {
                return tabs;
            }
            if start.elapsed() > Duration::from_secs(60) {
                panic!(
                    "timed out waiting for {what}; tabs: {tabs:?}\n{}",
                    self.context()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn url_of(tab: &Value) -> &str {
    tab["url"].as_str().unwrap_or_default()
}

fn scenario(test: &str, discovery: Discovery, webmcp: WebMcp) {
    let what = format!("{discovery:?} + {webmcp:?} WebMCP");
    let Some(exe) = chromium_or_skip(&format!("e2e::{test}")) else {
        return;
    };
    let _lock = machine_wide_lock();
    let started = Instant::now();
    let pages = PageServer::pages();

    // Native host: the daemon is on a port the scan never tries and demands its token, so
    // only the host's list can have brought the extension to it.
    let token_flag: &[&str] = match discovery {
        Discovery::NativeHost => &["--require-token"],
        Discovery::PortScan => &[],
    };
    let d = match discovery {
        Discovery::NativeHost => TestDaemon::builder().args(token_flag).start(),
        Discovery::PortScan => daemon_in_scan_range(&[]),
    };
    let profile = tempfile::tempdir().unwrap();
    if discovery == Discovery::NativeHost {
        let out = ctl_plain(&[
            "install-native-host",
            "--user-data-dir",
            profile.path().to_str().unwrap(),
            "--discovery-dir",
            d.discovery_dir.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "install: {}", stderr(&out));
        assert!(!SCAN_PORTS.contains(&d.port), "port {} is scanned", d.port);
    }
    let host_marker = d.discovery_dir.to_str().unwrap().to_owned();
    let chromium = Chromium::launch(&exe, profile, webmcp, &pages.url("search.html"));
    if discovery == Discovery::PortScan {
        // Found by the scan, trusted once paired (issue 21).
        pair_browser(chromium.profile.path(), &d);
    }
    let mut run = Run {
        daemon: Some(d),
        chromium,
        what: what.clone(),
    };
    // Shown with the failure (or with --nocapture): where the time went.
    let step = |name: &str| eprintln!("e2e [{what}] {:>6.1?} {name}", started.elapsed());

    // The page's WebMCP tool shows up on its tab.
    run.ok(&["wait", "--tool", "search", "--timeout", WAIT]);
    step("search tool up");
    let tabs = run.tabs();
    let search_tab = tabs
        .iter()
        .find(|t| url_of(t).ends_with("/search.html"))
        .unwrap_or_else(|| panic!("no search.html tab in {tabs:?}\n{}", run.context()));
    let names = tool_names(search_tab);
    assert!(
        names.contains(&"search") && names.contains(&"browser_snapshot"),
        "{names:?}"
    );
    let tools = run.json(&["tools", "--tab", search_tab["ref"].as_str().unwrap_or("")]);
    let search = tools["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "search"))
        .cloned()
        .unwrap_or_else(|| panic!("no search tool in {tools}"));
    assert_eq!(search["inputSchema"]["required"][0], "query", "{search}");
    assert_eq!(
        search["annotations"]["idempotentHint"], true,
        "annotations intact: {search}"
    );

    // The flavour asked for is the one the page got (the page prints its API object's class).
    let snap = stdout(&run.ok(&[
        "call",
        "browser_snapshot",
        "--tab",
        search_tab["ref"].as_str().unwrap_or(""),
    ]));
    let expected = match webmcp {
        WebMcp::Native => "WebMCP object: [object ModelContext]",
        WebMcp::Shim => "WebMCP object: [object Object]",
    };
    assert!(snap.contains(expected), "wanted {expected:?} in {snap}");

    // The page answers a call.
    let out = run.ok(&["call", "search", "--query", "test"]);
    assert!(
        stdout(&out).contains("results for test"),
        "{}",
        stdout(&out)
    );
    step("page call answered");

    // open, a built-in tool on a page without WebMCP, close.
    let opened = run.json(&["open", &pages.url("plain.html")]);
    let plain = opened["ref"]
        .as_str()
        .unwrap_or_else(|| panic!("open gave {opened}"))
        .to_owned();
    run.ok(&[
        "wait",
        "--tool",
        "browser_snapshot",
        "--tab",
        &plain,
        "--timeout",
        WAIT,
    ]);
    run.ok(&[
        "call",
        "browser_wait_for",
        "--tab",
        &plain,
        "--selector",
        "#button",
    ]);
    let snap = stdout(&run.ok(&["call", "browser_snapshot", "--tab", &plain]));
    assert!(
        snap.contains("Plain test page") && snap.contains("Click me"),
        "{snap}"
    );
    run.ok(&[
        "call",
        "browser_click",
        "--tab",
        &plain,
        "--selector",
        "#button",
    ]);
    let snap = stdout(&run.ok(&["call", "browser_snapshot", "--tab", &plain]));
    assert!(snap.contains("Clicked!"), "the click landed: {snap}");
    step("built-ins done");
    run.ok(&["close", &plain]);
    run.wait_tabs("the plain tab to close", |tabs| {
        !tabs.iter().any(|t| t["ref"] == plain.as_str())
    });
    step("plain tab closed");

    // A daemon restart on the same port: the extension comes back with its tabs.
    let d = run.daemon.take().unwrap().restart(token_flag);
    run.daemon = Some(d);
    step("daemon restarted");
    run.ok(&["wait", "--tool", "search", "--timeout", WAIT]);
    let tabs = run.tabs();
    assert!(
        tabs.iter().any(|t| url_of(t).ends_with("/search.html")),
        "{tabs:?}"
    );
    step("reconnected");
    let out = run.ok(&["call", "search", "--query", "again"]);
    assert!(stdout(&out).contains("results for again"));

    // Killing the browser takes its tabs away.
    if discovery == Discovery::NativeHost {
        assert!(
            !native_hosts_mentioning(&host_marker).is_empty(),
            "Chromium runs the host we installed\n{}",
            run.context()
        );
    }
    step("before kill");
    run.chromium.kill();
    run.wait_tabs("the tabs to go with the browser", |tabs| tabs.is_empty());
    let browsers = run.json(&["browsers"]);
    assert_eq!(browsers["browsers"], serde_json::json!([]), "{browsers}");
    if discovery == Discovery::NativeHost {
        // The browser is gone, so is the host's stdin: it must not linger.
        wait_until(Duration::from_secs(20), "the native host to exit", || {
            native_hosts_mentioning(&host_marker)
                .is_empty()
                .then_some(())
        });
    }
    step("done");
}
