//! Browsers the daemon launches and looks after (issue 32), with the real extension in
//! headless Chromium and Firefox ESR, started by the daemon itself: launched, a page's WebMCP
//! tool and a built-in called through browserctl, a hand-off refused (NO_PERSON), closed with nothing left running (checked by
//! process group in /proc) and the temporary profile gone; a persistent profile keeps a cookie;
//! the daemon's SIGTERM stops what it launched; after a SIGKILL the next start cleans up.
//!
//! These tests do not take the machine-wide browser lock: it keeps port-scanning browsers
//! from seeing each other's daemons, and here no port is scanned (the browser reaches its
//! daemon only through the native host the daemon put into its profile; the daemon listens on
//! a random port outside the scanned range).

use crate::support::chromium::PageServer;
use crate::support::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod background;
mod input_choice;
pub(crate) mod rig;
mod tour;
use rig::*;

/// Launched, a page tool and a built-in called, closed: nothing of it is left.
fn launch_call_close(kind: Kind) {
    let test = format!(
        "browser::managed::{}_launch_call_close_leaves_nothing",
        kind.name()
    );
    let Some(exe) = kind.exe(&test) else { return };
    let d = daemon(tempfile::tempdir().unwrap(), kind, &exe);
    let pages = PageServer::pages();
    let url = pages.url("search.html");
    let v = launch(&d, kind, &["--url", &url]);
    let browser = v["browser"].as_str().unwrap().to_owned();
    let pid = v["pid"].as_u64().unwrap();
    let profile = PathBuf::from(v["profileDir"].as_str().unwrap());
    assert!(profile.starts_with(managed_dir(&d)), "{v}");
    assert!(!group(pid).is_empty());

    // It shows as the daemon's own, and its page's tool is called like any other.
    let listed = d.ctl_json(&["browsers"]);
    assert_eq!(listed["browsers"][0]["managed"], true, "{listed}");
    let waited = d.ctl_json(&["wait", "--tool", "search", "--timeout", "60s"]);
    let tab = waited["tools"][0]["tab"]
        .as_str()
        .unwrap_or_else(|| panic!("{waited}"))
        .to_owned();
    let out = d.ctl(&["call", "search", "--query", "pipelines"]);
    assert!(out.status.success(), "{}\n{}", stderr(&out), d.log());
    assert_eq!(stdout(&out).trim(), "results for pipelines");
    assert_eq!(v["tab"], tab.as_str(), "the launch names the page's tab");
    let snap = d.ctl(&["call", "browser_snapshot", "--tab", &tab]);
    assert!(snap.status.success(), "{}", stderr(&snap));
    assert!(
        stdout(&snap).contains("Search test page"),
        "{}",
        stdout(&snap)
    );
    // Headless: nobody to hand the tab to (issue 60), said at once.
    let out = d.ctl(&["handoff", "--tab", &tab, "--reason", "sign in"]);
    assert_eq!(exit_code(&out), 25, "{}", stderr(&out));
    assert!(stderr(&out).contains("NO_PERSON"), "{}", stderr(&out));

    let closed = d.ctl_json(&["browser", "close", &browser]);
    assert_eq!(closed["state"], "closed", "{closed}");
    gone(pid, &d);
    assert!(!profile.exists(), "the temporary profile is removed");
    let left: Vec<_> = std::fs::read_dir(managed_dir(&d))
        .unwrap()
        .flatten()
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let listed = d.ctl_json(&["browsers"]);
    assert!(listed.get("managed").is_none(), "{listed}");
}

#[test]
fn chromium_launch_call_close_leaves_nothing() {
    launch_call_close(Kind::Chromium);
}

#[test]
fn firefox_launch_call_close_leaves_nothing() {
    launch_call_close(Kind::Firefox);
}

/// The page a launch opens is the agent's from its first line: opened once the extension is
/// up, so a subframe's console lines reach the log even when the frame moves on before any
/// read (the start-up tab, which loads with the extension, is closed).
#[test]
fn a_launched_page_is_watched_from_its_first_line() {
    let test = "browser::managed::a_launched_page_is_watched_from_its_first_line";
    let Some(exe) = Kind::Chromium.exe(test) else {
        return;
    };
    let d = daemon(tempfile::tempdir().unwrap(), Kind::Chromium, &exe);
    let pages = PageServer::pages();
    let v = launch(
        &d,
        Kind::Chromium,
        &["--url", &pages.url("eyes-console-moving.html")],
    );
    let tab = v["tab"].as_str().unwrap();
    assert_eq!(d.ctl_json(&["tabs"])["tabs"][1], Value::Null, "one tab");
    std::thread::sleep(Duration::from_secs(1));
    let click = [
        "call",
        "browser_click",
        "--tab",
        tab,
        "--selector",
        "#leave",
    ];
    let out = d.ctl(&click);
    assert!(out.status.success(), "{}", stderr(&out));
    // A Chromium the daemon launched has the debugger permission: the browser's own input
    // (issue 57).
    assert!(
        stdout(&out).contains("(input: trusted)"),
        "{}",
        stdout(&out)
    );
    let log = wait_until(Duration::from_secs(30), "the frame's new line", || {
        let log = stdout(&d.ctl(&["call", "browser_console_messages", "--tab", tab]));
        log.contains("frame second document").then_some(log)
    });
    assert!(log.contains("frame first document"), "{log}");
}

/// A page that shows in its title whether it found its cookie, and sets it if not.
const COOKIE_PAGE: &str = r#"<!doctype html><title>…</title><script>
  const before = document.cookie;
  document.title = before ? `cookie ${before}` : 'no cookie';
  if (!before) document.cookie = 'pipeline=kept; max-age=86400; path=/';
</script>"#;

/// A persistent profile keeps a cookie from one launch to the next, set just before `browser
/// close`. (Chromium writes its cookies to disk every 30 s or so and not at a SIGTERM: the
/// daemon closes its tabs first, and it exits in order.)
fn persistent_profile(kind: Kind) {
    let test = format!(
        "browser::managed::{}_persistent_profile_keeps_a_cookie",
        kind.name()
    );
    let Some(exe) = kind.exe(&test) else { return };
    let d = daemon(tempfile::tempdir().unwrap(), kind, &exe);
    let page = PageServer::page(COOKIE_PAGE);
    let url = page.url("cookie");
    // A miss says what the tabs showed and how the daemon closed the last launch.
    let title = |d: &TestDaemon, want: &str| {
        let start = std::time::Instant::now();
        loop {
            let tabs = d.ctl_json(&["tabs"]);
            if tabs["tabs"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["title"] == want))
            {
                return;
            }
            if start.elapsed() > Duration::from_secs(30) {
                let log = d.log();
                let closing: Vec<_> = log
                    .lines()
                    .filter(|l| l.contains("launched browser") || l.contains("SIGKILL"))
                    .collect();
                panic!(
                    "no tab titled {want:?} in 30 s: {tabs}\n{}",
                    closing.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    for want in ["no cookie", "cookie pipeline=kept"] {
        let v = launch(&d, kind, &["--profile", "ci", "--url", &url]);
        assert_eq!(v["profile"], "ci", "{v}");
        let profile = PathBuf::from(v["profileDir"].as_str().unwrap());
        assert!(profile.starts_with(d.dir.path().join("profiles/ci")), "{v}");
        title(&d, want);
        let pid = v["pid"].as_u64().unwrap();
        d.ctl_json(&["browser", "close", v["browser"].as_str().unwrap()]);
        gone(pid, &d);
        assert!(profile.is_dir(), "a persistent profile stays");
    }
}

#[test]
fn chromium_persistent_profile_keeps_a_cookie() {
    persistent_profile(Kind::Chromium);
}

#[test]
fn firefox_persistent_profile_keeps_a_cookie() {
    persistent_profile(Kind::Firefox);
}

/// The daemon's SIGTERM stops the browsers it launched and removes their profiles; after a
/// SIGKILL (no chance to stop anything), the next start finds what was left and cleans up.
#[test]
fn the_daemon_stops_what_it_launched_even_after_a_sigkill() {
    let kind = Kind::Chromium;
    let Some(exe) =
        kind.exe("browser::managed::the_daemon_stops_what_it_launched_even_after_a_sigkill")
    else {
        return;
    };
    let mut d = daemon(tempfile::tempdir().unwrap(), kind, &exe);
    let v = launch(&d, kind, &[]);
    let pid = v["pid"].as_u64().unwrap();
    let profile = PathBuf::from(v["profileDir"].as_str().unwrap());
    assert!(d.terminate().success(), "{}", d.log());
    gone(pid, &d);
    assert!(!profile.exists());

    // A daemon killed outright: the browser dies with it (its parent-death signal), and
    // what the kernel does not clean, the next start does.
    let dir = std::mem::replace(&mut d.dir, tempfile::tempdir().unwrap());
    drop(d);
    let mut d = daemon(dir, kind, &exe);
    let v = launch(&d, kind, &[]);
    let pid = v["pid"].as_u64().unwrap();
    let profile = PathBuf::from(v["profileDir"].as_str().unwrap());
    d.child.kill().unwrap();
    d.child.wait().unwrap();
    gone(pid, &d);
    assert!(profile.exists(), "a killed daemon removes nothing");
    // A process group the killed daemon's record names, still running: a stand-in for a
    // browser that outlived it (a parent-death signal reaches only the browser's first
    // process, and only while the daemon's launcher thread lives).
    let mut survivor = std::process::Command::new("sleep");
    std::os::unix::process::CommandExt::process_group(&mut survivor, 0);
    let mut survivor = survivor.arg("600").spawn().unwrap();
    let record_path = managed_dir(&d).join(format!("{}.json", v["sessionId"].as_str().unwrap()));
    let mut record: Value = serde_json::from_slice(&std::fs::read(&record_path).unwrap()).unwrap();
    let start = |pid: u32| -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let rest = &stat[stat.rfind(')').unwrap() + 1..];
        rest.split_whitespace().nth(19).unwrap().parse().unwrap()
    };
    record["pid"] = survivor.id().into();
    record["pidStart"] = start(survivor.id()).into();
    std::fs::write(&record_path, record.to_string()).unwrap();

    let dir = std::mem::replace(&mut d.dir, tempfile::tempdir().unwrap());
    drop(d);
    let d = daemon(dir, kind, &exe);
    let reaped = wait_until(
        Duration::from_secs(10),
        "the survivor to be stopped",
        || survivor.try_wait().ok().flatten(),
    );
    assert!(!reaped.success(), "killed: {reaped:?}");
    assert!(
        !profile.exists(),
        "the temporary profile is removed at the next start"
    );
    assert!(!record_path.exists());
    assert!(
        d.log().contains("an earlier run of the daemon launched"),
        "{}",
        d.log()
    );
}

/// A browser that crashes is reported (event, state), and restarted only when asked.
#[test]
fn a_crash_is_reported_and_restarted_only_on_request() {
    let kind = Kind::Chromium;
    let Some(exe) = kind.exe("browser::managed::a_crash_is_reported_and_restarted_only_on_request")
    else {
        return;
    };
    let d = daemon(tempfile::tempdir().unwrap(), kind, &exe);
    let crash = |v: &Value| {
        let pid = v["pid"].as_u64().unwrap() as i32;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .unwrap();
    };
    let state = |browser: &str| {
        let list = d.ctl_json(&["browser", "list"]);
        list["managed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["browser"] == browser)
            .cloned()
            .unwrap_or_else(|| panic!("{browser} in {list}"))
    };
    let v = launch(&d, kind, &[]);
    let b = v["browser"].as_str().unwrap().to_owned();
    crash(&v);
    let events = d.ctl_spawn(&[
        "events",
        "--since",
        "0",
        "--type",
        "browserExited",
        "--count",
        "1",
    ]);
    let out = events.wait_with_output().unwrap();
    let event: Value = serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
    assert_eq!(event["browser"], b.as_str(), "{event}");
    assert_eq!(event["data"]["expected"], false, "{event}");
    assert_eq!(event["data"]["restarting"], false, "{event}");
    assert_eq!(event["data"]["exit"], "signal 9", "{event}");
    let m = wait_until(Duration::from_secs(10), "state exited", || {
        let m = state(&b);
        (m["state"] == "exited").then_some(m)
    });
    assert_eq!(m["exit"], "signal 9", "{m}");
    let table = stdout(&d.ctl(&["browsers"]));
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&b) && l.contains("exited")),
        "{table}"
    );
    d.ctl_json(&["browser", "close", &b]);

    let v = launch(&d, kind, &["--restart", "on-failure"]);
    let b = v["browser"].as_str().unwrap().to_owned();
    crash(&v);
    let m = wait_until(Duration::from_secs(60), "a restart", || {
        let m = state(&b);
        (m["restarts"] == 1 && m["state"] == "running").then_some(m)
    });
    assert_ne!(m["pid"], v["pid"], "{m}");
    let pid = m["pid"].as_u64().unwrap();
    d.ctl_json(&["browser", "close", &b]);
    gone(pid, &d);
}

/// Where no browser is installed, a launch says what it looked for and where, and the doctor
/// says the daemon can launch none. (No browser is needed for this one.)
#[test]
fn no_browser_installed_is_a_clear_error() {
    let empty = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let managed = dir.path().join("managed");
    let d = TestDaemon::builder()
        .env("PATH", empty.path().to_str().unwrap())
        .args(&["--managed-dir", managed.to_str().unwrap()])
        .start();
    let out = d.ctl(&["browser", "launch"]);
    fails(&out, 15, "BROWSER_NOT_INSTALLED: no browser to launch: looked for chromium, chromium-browser, google-chrome");
    assert!(
        stderr(&out).contains("firefox-esr, firefox on PATH ("),
        "{}",
        stderr(&out)
    );
    let out = d.ctl(&["--json", "browser", "launch", "--browser", "firefox"]);
    assert_eq!(exit_code(&out), 15, "{}", stderr(&out));
    let e: Value = serde_json::from_str(&stderr(&out)).unwrap();
    assert_eq!(e["error"]["code"], "BROWSER_NOT_INSTALLED", "{e}");
    assert_eq!(
        e["error"]["details"]["lookedFor"],
        serde_json::json!(["firefox-esr", "firefox"])
    );
    assert_eq!(
        e["error"]["details"]["path"],
        empty.path().to_str().unwrap()
    );
    let out = d.ctl(&["--json", "doctor"]);
    let doctor: Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "browsers to launch")
        .cloned()
        .unwrap_or_else(|| panic!("{doctor}"));
    assert_eq!(check["ok"], false, "{check}");
    assert!(
        check["detail"].as_str().unwrap().contains("none found"),
        "{check}"
    );
    // A URL is never taken for one of the browser's flags.
    let out = d.ctl(&["browser", "launch", "--url=--remote-debugging-port=9222"]);
    fails(&out, 2, "is not a URL to open");
    assert!(!managed.exists(), "nothing was created");
}

/// The user's own browser is not the daemon's to close, from browserctl or MCP; an MCP
/// session scoped to some tabs launches and closes no browser.
#[tokio::test(flavor = "multi_thread")]
async fn only_what_the_daemon_launched_is_closed_and_scoped_sessions_launch_nothing() {
    let d = TestDaemon::start();
    let _own = FakeExtension::search_tab(&d).await;
    let out = d.ctl(&["browser", "close", "b1"]);
    fails(
        &out,
        2,
        "b1 is not a browser this daemon launched: it is the user's own",
    );
    assert_eq!(d.ctl_json(&["tabs"])["tabs"].as_array().unwrap().len(), 1);

    let (client, _) = crate::mcp::rmcp_client::stdio_client(&d, &["--tab", "b1:7"]).await;
    for (tool, args) in [
        ("browserctl_launch_browser", serde_json::json!({})),
        (
            "browserctl_close_browser",
            serde_json::json!({"browser": "b1"}),
        ),
    ] {
        let r = client
            .call_tool(crate::mcp::rmcp_client::params(tool, args))
            .await
            .unwrap();
        let text = crate::mcp::rmcp_client::text(&r);
        assert!(text.starts_with("UNAUTHORIZED: "), "{tool}: {text}");
    }
    client.cancel().await.unwrap();
    let (client, _) = crate::mcp::rmcp_client::stdio_client(&d, &[]).await;
    let r = client
        .call_tool(crate::mcp::rmcp_client::params(
            "browserctl_close_browser",
            serde_json::json!({"browser": "b1"}),
        ))
        .await
        .unwrap();
    let text = crate::mcp::rmcp_client::text(&r);
    assert!(
        text.starts_with("NOT_FOUND: b1 is not a browser this daemon launched"),
        "{text}"
    );
    client.cancel().await.unwrap();
    assert_eq!(d.ctl_json(&["tabs"])["tabs"].as_array().unwrap().len(), 1);
}

/// examples/pipeline.sh, the script README's "Pipelines" shows, run as a pipeline would: it
/// launches a headless browser on its page, waits for the page's tool, calls it and a
/// built-in, reads the answers with jq, and closes the browser.
#[test]
fn the_pipeline_example_runs_end_to_end() {
    let kind = Kind::Chromium;
    let Some(exe) = kind.exe("browser::managed::the_pipeline_example_runs_end_to_end") else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = std::fs::read_to_string(root.join("examples/pipeline.sh")).unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let body = &script[script.find("set -euo pipefail").unwrap()..];
    assert!(
        readme.contains(body),
        "README's Pipelines shows examples/pipeline.sh as it is"
    );
    if std::process::Command::new("jq")
        .arg("--version")
        .output()
        .is_err()
    {
        return skip(
            "browser::managed::the_pipeline_example_runs_end_to_end",
            "no jq",
            "apt-get install jq",
        );
    }
    let d = daemon(tempfile::tempdir().unwrap(), kind, &exe);
    let bin = Path::new(CTL).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("bash")
        .arg(root.join("examples/pipeline.sh"))
        .env("PATH", path)
        .env("BROWSER_MCP_SOCKET", &d.socket)
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        out.status.success(),
        "{text}\n{}\n{}",
        stderr(&out),
        d.log()
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "count_words: 4", "{text}");
    assert!(lines[1].contains("Word counter"), "{text}");
    assert_eq!(lines[2], "closed", "{text}");
    let left = d.ctl_json(&["browsers"]);
    assert!(left.get("managed").is_none(), "{left}");
}

/// examples/pipeline.sh with no daemon of the user's: it runs one meanwhile and, on its way
/// out, waits for it before removing its directory (issue 59: `rm: … Directory not empty`, 1
/// run in 15 with Firefox, the stopped daemon still writing there). Nothing is left: neither
/// its directory nor its daemon.
#[test]
fn the_pipeline_example_stops_its_own_daemon_before_cleaning_up() {
    let kind = Kind::Firefox;
    let test = "browser::managed::the_pipeline_example_stops_its_own_daemon_before_cleaning_up";
    let Some(exe) = kind.exe(test) else {
        return;
    };
    if std::process::Command::new("jq")
        .arg("--version")
        .output()
        .is_err()
    {
        return skip(test, "no jq", "apt-get install jq");
    }
    let t = tempfile::tempdir().unwrap();
    let (home, tmp, run) = (
        t.path().join("home"),
        t.path().join("tmp"),
        t.path().join("run"),
    );
    for dir in [&home, &tmp, &run] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::set_permissions(&run, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = Path::new(CTL).parent().unwrap();
    let out = std::process::Command::new("bash")
        .arg(root.join("examples/pipeline.sh"))
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env_remove("BROWSER_MCP_SOCKET")
        .env_remove("BROWSER_MCP_CONFIG")
        .env("HOME", &home)
        .env("XDG_RUNTIME_DIR", &run)
        .env("TMPDIR", &tmp)
        .env(
            "BROWSER_MCP_BROWSER_PATH",
            format!("{}={}", kind.name(), exe.display()),
        )
        .env("BROWSER", kind.name())
        .env("DISPLAY", "")
        .env("WAYLAND_DISPLAY", "")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(
        stdout(&out).lines().last(),
        Some("closed"),
        "{}",
        stdout(&out)
    );
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{left:?} {}", stderr(&out));
    let tmp_text = tmp.display().to_string();
    let alive: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            text.contains(&tmp_text).then_some(text)
        })
        .collect();
    assert!(alive.is_empty(), "still running: {alive:?}");
}

/// An MCP client with no browser gets one: `browserctl_launch_browser` starts headless
/// Chromium, its first tab (not the focused tab of the user's own browser) becomes the
/// session's current tab, `browser_snapshot` through MCP
/// reads that page, and `browserctl_close_browser` leaves nothing running.
#[test]
fn an_mcp_client_launches_reads_and_closes_a_browser() {
    use crate::mcp::rmcp_client::{params, stdio_client, text};
    let kind = Kind::Chromium;
    let Some(exe) = kind.exe("browser::managed::an_mcp_client_launches_reads_and_closes_a_browser")
    else {
        return;
    };
    let d = daemon(tempfile::tempdir().unwrap(), kind, &exe);
    let page = PageServer::page(
        "<!doctype html><title>Agent's own</title><p>Launched for an agent, read over MCP.</p>",
    );
    let url = page.url("own");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (pid, profile) = rt.block_on(async {
        // The user's own browser, with a focused tab: the current tab until one is chosen.
        let mut own = tab(7, "Search", vec![search_tool()]);
        own["focused"] = true.into();
        let _own = FakeExtension::single(&d, own).await;
        let (client, _) = stdio_client(&d, &[]).await;
        let call = async |tool: &str, args: Value| {
            client
                .call_tool(params(tool, args))
                .await
                .unwrap_or_else(|e| panic!("{tool}: {e}"))
        };
        let r = call("browserctl_launch_browser", serde_json::json!({"url": url})).await;
        assert_ne!(r.is_error, Some(true), "{}\n{}", text(&r), d.log());
        let v = r.structured_content.clone().expect("structured");
        assert_eq!(v["kind"], "chromium", "{v}");
        assert_eq!(v["headless"], true, "{v}");
        let browser = v["browser"].as_str().unwrap().to_owned();
        let tab = v["tab"].as_str().unwrap().to_owned();
        assert!(tab.starts_with(&format!("{browser}:")), "{v}");
        let managed = d.ctl_json(&["browser", "list"]);
        let m = managed["managed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["browser"] == browser.as_str())
            .cloned()
            .unwrap_or_else(|| panic!("{managed}"));
        let pid = m["pid"].as_u64().unwrap();
        let profile = PathBuf::from(m["profileDir"].as_str().unwrap());
        assert!(!group(pid).is_empty());

        // The new tab, not the user's focused one, is the session's current tab…
        let r = call("browserctl_list_tabs", serde_json::json!({})).await;
        let tabs = r.structured_content.clone().expect("structured");
        let current: Vec<&Value> = tabs["tabs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["current"] == true)
            .collect();
        assert_eq!(current.len(), 1, "{tabs}");
        assert_eq!(current[0]["tab"], tab.as_str(), "{tabs}");
        // …so a built-in without `tab` reads its page.
        let r = call("browser_snapshot", serde_json::json!({})).await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        let snap = text(&r);
        assert!(
            snap.contains("Launched for an agent, read over MCP."),
            "{snap}"
        );
        let meta = r.meta.as_ref().expect("_meta");
        assert_eq!(meta.0["dev.browsermcp/tab"], tab.as_str());

        let r = call(
            "browserctl_close_browser",
            serde_json::json!({"browser": browser}),
        )
        .await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        let v = r.structured_content.clone().expect("structured");
        assert_eq!(v["closed"], browser.as_str(), "{v}");
        client.cancel().await.unwrap();
        (pid, profile)
    });
    gone(pid, &d);
    assert!(!profile.exists(), "the temporary profile is removed");
    let listed = d.ctl_json(&["browsers"]);
    assert!(listed.get("managed").is_none(), "{listed}");
}

/// Chromium makes its singleton socket in a new directory of TMPDIR and aborts when that name
/// passes the 108 bytes of a Unix socket's, as it does for a profile under a home's
/// `~/.local/share/browser-mcp/profiles/NAME`. Two launches of such a profile: each starts,
/// and what the first left of its socket directory is cleared by the second.
#[test]
fn chromium_starts_from_a_profile_with_a_long_path() {
    let test = "browser::managed::chromium_starts_from_a_profile_with_a_long_path";
    let Some(exe) = Kind::Chromium.exe(test) else {
        return;
    };
    let d = daemon(tempfile::tempdir().unwrap(), Kind::Chromium, &exe);
    let name = "x".repeat(64);
    let socket_dirs = |profile: &Path| -> Vec<String> {
        std::fs::read_dir(profile)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("org.chromium.Chromium."))
            .collect()
    };
    for _ in 0..2 {
        let v = launch(&d, Kind::Chromium, &["--profile", &name]);
        let profile = PathBuf::from(v["profileDir"].as_str().unwrap());
        let socket = profile.join("org.chromium.Chromium.XXXXXX/SingletonSocket");
        assert!(
            socket.as_os_str().len() > 108,
            "a path long enough to matter: {}",
            socket.display()
        );
        assert_eq!(socket_dirs(&profile).len(), 1, "{v}");
        let pid = v["pid"].as_u64().unwrap();
        d.ctl_json(&["browser", "close", v["browser"].as_str().unwrap()]);
        gone(pid, &d);
    }
}
