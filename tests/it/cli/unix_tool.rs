//! browserctl as a newcomer and a script author meet it (issue 18): flags in every position
//! `--help` shows them, output formats, how `events` ends, usage errors in JSON, completions
//! from the live daemon, and the messages of the commands that do not talk to the daemon.

use crate::support::common::*;
use crate::support::harness::status;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

fn ctl_env(d: &TestDaemon, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    Command::new(CTL)
        .args(args)
        .env("BROWSER_MCP_SOCKET", &d.socket)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run browserctl")
}

#[tokio::test(flavor = "multi_thread")]
async fn json_and_socket_work_after_the_tool_name_and_name_the_tab() {
    let d = TestDaemon::start();
    let mut ext =
        FakeExtension::connect(&d, "s1", vec![tab(1, "Search", vec![search_tool()])]).await;
    d.wait_tabs("tab 1", |t| t.len() == 1);
    let socket = d.socket.to_str().unwrap().to_owned();
    // The README's example, and --socket after the tool name too (no --socket before it).
    let cli = tokio::task::spawn_blocking(move || {
        Command::new(CTL)
            .args([
                "call",
                "search",
                "--tab",
                "b1:1",
                "--args",
                r#"{"query":"test"}"#,
            ])
            .args(["--json", "--socket", &socket, "-v"])
            .env_remove("BROWSER_MCP_SOCKET")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    });
    let call = ext.answer_call(json!("results for test")).await;
    assert_eq!(call["args"], json!({"query": "test"}));
    let out = cli.await.unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON for jq");
    assert_eq!(v["tab"], "b1:1");
    assert_eq!(v["tool"], "search");
    assert_eq!(v["attempts"], 1);
    assert_eq!(v["result"], "results for test");
    // -v: the tab that answered, on stderr.
    assert!(
        stderr(&out).contains("b1:1 answered `search` (1 attempt"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_flag_a_command_ignores_is_refused_not_ignored() {
    let d = TestDaemon::start();
    // setup does not talk to the daemon: --socket before it is a usage error, not ignored.
    let out = d.ctl(&["setup", "--manager", "systemd"]);
    fails(&out, 2, "`browserctl setup` does not take --socket");
    // native-host takes no --json.
    let out = ctl_env(&d, &["--json", "native-host"], &[]);
    assert_eq!(exit_code(&out), 2);
    let e: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(e["error"]["code"], "BAD_REQUEST");
    // ... and its help does not offer either.
    let help = stdout(&ctl_env(&d, &["native-host", "--help"], &[]));
    assert!(
        !help.contains("--json") && !help.contains("--socket"),
        "{help}"
    );
    // The socket from the environment is no reason to refuse setup.
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(CTL)
        .args([
            "setup",
            "--manager",
            "launchd",
            "--daemon",
            DAEMON,
            "--json",
        ])
        .env("BROWSER_MCP_SOCKET", &d.socket)
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["manager"], "launchd");
    assert_eq!(report["wrote"].as_array().unwrap().len(), 1);
    assert!(report["next"][0].as_str().unwrap().contains("launchctl"));
}

#[test]
fn usage_errors_honour_json() {
    let d = TestDaemon::start();
    for argv in [
        vec!["--json", "tabs", "--bogus"],
        vec!["tabs", "--bogus", "--json"],
        vec!["tools", "-o", "json", "--tab"],
        vec!["call", "x", "--json", "--timeout", "soon"],
    ] {
        let out = d.ctl(&argv);
        assert_eq!(exit_code(&out), 2, "{argv:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty());
        let e: Value = serde_json::from_slice(&out.stderr)
            .unwrap_or_else(|_| panic!("{argv:?}: not JSON: {}", stderr(&out)));
        assert_eq!(e["error"]["code"], "BAD_REQUEST", "{argv:?}");
        assert!(!e["error"]["message"].as_str().unwrap().is_empty());
    }
    let out = d.ctl(&["--json", "tabs", "--bogus"]);
    let e: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(e["error"]["details"]["usage"], "browserctl tabs [OPTIONS]");
    // Without --json, clap's text.
    let out = d.ctl(&["tabs", "--bogus"]);
    assert_eq!(exit_code(&out), 2);
    assert!(stderr(&out).contains("unexpected argument '--bogus'"));
}

#[test]
fn messages_speak_the_cli_s_words() {
    let d = TestDaemon::start();
    for flag in ["--timeout", "--attempt-timeout"] {
        let out = d.ctl(&["call", "search", flag, "0"]);
        assert_eq!(exit_code(&out), 2);
        let text = stderr(&out);
        assert!(
            text.contains(flag) && text.contains("more than 0"),
            "{text}"
        );
        assert!(!text.contains("timeoutMs"), "{text}");
    }
    let help = stdout(&d.ctl(&["call", "--help"]));
    assert!(help.contains("Usage: browserctl call [OPTIONS]"), "{help}");
    // The daemon's start line names where logs go in words.
    let log = d.log();
    let ready = log
        .lines()
        .find(|l| l.contains("ready"))
        .unwrap_or_default();
    assert!(ready.contains("logs=stderr"), "{ready}");
    assert!(!ready.contains("Stderr("), "{ready}");
}

/// One failed attempt is told as itself, not as a retry history ("attempt 1 … then waited 0 ms").
#[tokio::test(flavor = "multi_thread")]
async fn one_failed_attempt_is_one_message() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::single(&d, tab(1, "T", vec![tool("submit")])).await;
    // A timeout of a tool that is not safe to repeat: one attempt, whose error the daemon
    // sends with a one-entry history.
    let cli = ctl_async(&d, &["call", "submit", "--attempt-timeout", "200ms"]);
    ext.expect("callTool").await;
    let out = cli.await.unwrap();
    assert_eq!(exit_code(&out), 8);
    let text = stderr(&out);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("browserctl: MESSAGE_TIMEOUT: "), "{text}");
    assert!(
        text.contains("within 200 ms"),
        "the attempt's own timeout: {text}"
    );
    assert!(
        !text.contains("attempt") && !text.contains("waited"),
        "{text}"
    );
}

/// A tab whose title is wide: CJK characters and an emoji take two cells each.
#[tokio::test(flavor = "multi_thread")]
async fn listings_for_people_and_for_programs() {
    let d = TestDaemon::start();
    // Empty: nothing on stdout, the reason on stderr, success.
    for cmd in ["tabs", "tools", "browsers"] {
        let out = d.ctl(&[cmd]);
        assert!(out.status.success());
        assert_eq!(stdout(&out), "", "{cmd}");
        assert!(
            stderr(&out).contains("no browser connected — run `browserctl doctor`"),
            "{cmd}: {}",
            stderr(&out)
        );
        // JSON is still a document.
        let v = d.ctl_json(&[cmd]);
        assert_eq!(v[cmd], json!([]));
    }
    let _ext = FakeExtension::connect(
        &d,
        "s1",
        vec![
            tab(1, "検索ページ 😀", vec![search_tool()]),
            tab(22, "plain", vec![]),
        ],
    )
    .await;
    d.wait_tabs("two tabs", |t| t.len() == 2);
    // Piped: tab-separated, no padding.
    let out = stdout(&d.ctl(&["tabs"]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "TAB\tTITLE\tURL\tTOOLS");
    assert_eq!(
        lines[1],
        "b1:1\t検索ページ 😀\thttps://example.com/1\tsearch"
    );
    assert_eq!(lines.len(), 3);
    assert_eq!(
        stdout(&d.ctl(&["tabs", "--no-headers", "-o", "tsv"]))
            .lines()
            .count(),
        2
    );
    // A table aligns by display width: the URL column starts at the same cell on each row.
    let table = stdout(&d.ctl(&["tabs", "-o", "table"]));
    let starts: Vec<usize> = table
        .lines()
        .map(|l| {
            let cut = l.find("http").or_else(|| l.find("URL")).unwrap();
            unicode_cells(&l[..cut])
        })
        .collect();
    assert!(starts.windows(2).all(|w| w[0] == w[1]), "{table}");
    // wide shows more columns; jsonl one object a line.
    assert!(stdout(&d.ctl(&["tools", "-o", "wide"])).contains("PARAMETERS"));
    assert!(stdout(&d.ctl(&["tools", "-o", "wide"])).contains("query*"));
    let jsonl = stdout(&d.ctl(&["tabs", "-o", "jsonl"]));
    let rows: Vec<Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["ref"], "b1:22");
    // A filter that matches nothing says so, with the counts.
    let out = d.ctl(&["tools", "--tab", "b1:22"]);
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("no tools for b1:22"),
        "{}",
        stderr(&out)
    );
}

fn unicode_cells(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// `browserctl events | head -3`: the reader leaves; browserctl must notice at once, not at
/// the next event (which may never come).
#[tokio::test(flavor = "multi_thread")]
async fn events_exits_when_its_reader_leaves() {
    let d = TestDaemon::start();
    let _ext = FakeExtension::connect(&d, "s1", vec![tab(1, "A", vec![])]).await;
    let mut child = d.ctl_spawn(&["events", "--since", "0"]);
    let mut lines = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    lines.read_line(&mut first).unwrap();
    assert!(first.contains("browserConnected"), "{first}");
    drop(lines); // `head -1` exits
    let status = wait_until(Duration::from_secs(10), "browserctl to exit", || {
        child.try_wait().unwrap()
    });
    assert!(status.success(), "{status}");

    // Through a real shell pipeline too, with nothing printed yet when head leaves.
    let sh = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{CTL}' --socket '{}' events | head -c 0; echo done",
            d.socket.display()
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(10),
        tokio::task::spawn_blocking(move || sh.wait_with_output().unwrap()),
    )
    .await
    .expect("the pipeline ends without another event")
    .unwrap();
    assert_eq!(stdout(&out).trim(), "done");
}

#[tokio::test(flavor = "multi_thread")]
async fn events_says_when_the_daemon_stops_and_where_to_resume() {
    let mut d = TestDaemon::start();
    let _ext = FakeExtension::connect(&d, "s1", vec![tab(1, "A", vec![])]).await;
    let last = status(&d).await["lastEventSeq"].as_u64().unwrap();
    assert!(last > 0);
    // --count reached: exit 0.
    let out = d.ctl(&["events", "--since", "0", "--count", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 1);

    let mut child = d.ctl_spawn(&["events", "--since", "0"]);
    let mut lines = BufReader::new(child.stdout.take().unwrap());
    let mut seen = 0;
    while seen < last {
        let mut line = String::new();
        lines.read_line(&mut line).unwrap();
        seen = serde_json::from_str::<Value>(&line).unwrap()["seq"]
            .as_u64()
            .unwrap();
    }
    d.terminate();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(text.contains("DAEMON_UNAVAILABLE"), "{text}");
    assert!(
        text.contains(&format!("resume with `browserctl events --since {last}`")),
        "{text}"
    );
}

/// The completion engine, asked the way a shell asks it: fish passes the words after `--`
/// and gets `value\thelp` lines back.
fn complete(d: Option<&TestDaemon>, words: &[&str]) -> Vec<String> {
    let mut cmd = Command::new(CTL);
    cmd.env("BROWSER_MCP_COMPLETE", "fish")
        .arg("--")
        .args(words)
        .stdin(Stdio::null());
    match d {
        Some(d) => cmd.env("BROWSER_MCP_SOCKET", &d.socket),
        None => cmd.env("BROWSER_MCP_SOCKET", "/nonexistent/browser-mcpd.sock"),
    };
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn completions_come_from_the_running_daemon() {
    // Without a daemon: commands, options and event types still complete.
    assert!(complete(None, &["browserctl", "st"]).contains(&"status".to_owned()));
    assert!(complete(None, &["browserctl", "tabs", "--no"]).contains(&"--no-headers".to_owned()));
    assert!(complete(None, &["browserctl", "events", "--type", "tab"])
        .contains(&"tabClosed".to_owned()));
    assert!(complete(None, &["browserctl", "tabs", "--browser", ""]).is_empty());

    let d = TestDaemon::start();
    let _ext = FakeExtension::connect(
        &d,
        "s1",
        vec![tab(7, "Search", vec![search_tool(), tool("peek")])],
    )
    .await;
    d.wait_tabs("tab 7", |t| t.len() == 1);
    assert_eq!(
        complete(Some(&d), &["browserctl", "tabs", "--browser", ""]),
        ["b1"]
    );
    assert_eq!(complete(Some(&d), &["browserctl", "close", "b1"]), ["b1:7"]);
    let first = complete(Some(&d), &["browserctl", "call", ""]);
    assert_eq!(first[..2], ["peek", "search"], "{first:?}");
    assert_eq!(
        complete(Some(&d), &["browserctl", "call", "se"]),
        ["search"]
    );
    let params = complete(Some(&d), &["browserctl", "call", "search", "--"]);
    assert!(params.contains(&"--query".to_owned()), "{params:?}");
    assert!(params.contains(&"--timeout".to_owned()), "{params:?}");
    assert!(complete(Some(&d), &["browserctl", "call", "--tab", "b1:"]).contains(&"b1:7".into()));

    // The scripts: the dynamic one calls back into browserctl, the static one does not.
    let bash = stdout(&ctl_env(&d, &["completions", "bash"], &[]));
    assert!(bash.contains("BROWSER_MCP_COMPLETE=\"bash\""), "{bash}");
    let fixed = stdout(&ctl_env(&d, &["completions", "bash", "--static"], &[]));
    assert!(!fixed.contains("BROWSER_MCP_COMPLETE") && fixed.contains("doctor"));
    for script in [bash, fixed] {
        let check = Command::new("bash")
            .args(["-n", "-c", &script])
            .output()
            .unwrap();
        assert!(check.status.success(), "{}", stderr(&check));
    }
    let v: Value =
        serde_json::from_slice(&ctl_env(&d, &["completions", "zsh", "--json"], &[]).stdout)
            .unwrap();
    assert_eq!(
        (v["shell"].as_str(), v["kind"].as_str()),
        (Some("zsh"), Some("dynamic"))
    );
}

#[test]
fn native_host_on_a_terminal_explains_itself() {
    // `script` gives the command a pseudo-terminal, as a person typing it would.
    let out = Command::new("script")
        .args(["-qec", &format!("'{CTL}' native-host"), "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("script (util-linux) runs");
    let text = stdout(&out);
    assert!(
        text.contains("native-messaging host of the browser-mcp extension"),
        "{text}"
    );
    assert!(text.contains("browserctl install-native-host"), "{text}");
    assert_eq!(out.status.code(), Some(2), "{text}");
    // Run by a browser (pipes), it speaks frames as before: one, then exit at end of input.
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(CTL)
        .args(["native-host", "--discovery-dir"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(&out.stdout[4..], br#"{"type":"servers","servers":[]}"#);
}

/// launchd keeps no journal and rotates nothing: the daemon's own --log-file starts afresh at
/// --log-file-max-bytes, keeping one old file.
#[tokio::test(flavor = "multi_thread")]
async fn the_daemon_rotates_its_log_file() {
    let logs = tempfile::tempdir().unwrap();
    let file = logs.path().join("browser-mcpd.log");
    let d = TestDaemon::builder()
        .args(&[
            "--log-file",
            file.to_str().unwrap(),
            "--log-file-max-bytes",
            "4096",
        ])
        .start();
    let old = logs.path().join("browser-mcpd.log.1");
    // Every connection logs a few lines at the harness's debug level.
    let mut n = 0;
    while !old.exists() {
        n += 1;
        assert!(n < 500, "no rotation after {n} connections");
        let ext = FakeExtension::connect(&d, &format!("s{n}"), vec![]).await;
        drop(ext);
    }
    let size = |p: &std::path::Path| std::fs::metadata(p).unwrap().len();
    assert!(size(&old) <= 4096 && size(&file) <= 4096);
    assert!(std::fs::read_to_string(&old).unwrap().contains("ready"));
    // stderr stays quiet: the log went to the file.
    assert!(!d.log().contains("ready"), "{}", d.log());
}

fn doctor_check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report}"))
}

/// The wrapper records the browserctl it was installed from: from a build directory, that
/// one goes with `cargo clean`. Say so at install time; doctor notices when it happened.
#[test]
fn a_host_installed_from_a_build_directory_is_warned_about_and_caught_dangling() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".config/chromium")).unwrap();
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(tree.path().join("Cargo.toml"), "[package]\n").unwrap();
    let release = tree.path().join("target/release");
    std::fs::create_dir_all(&release).unwrap();
    let built = release.join("browserctl");
    std::fs::copy(CTL, &built).unwrap();
    let run = |bin: &std::path::Path, args: &[&str]| {
        // A copy just written can be "busy" for a moment: another test's fork may hold the
        // writer's descriptor until its exec (ETXTBSY). Try again, briefly.
        let mut tries = 0;
        loop {
            let out = Command::new(bin)
                .args(args)
                .env("HOME", home.path())
                .env("XDG_CONFIG_HOME", home.path().join(".config"))
                .env("BROWSER_MCP_SOCKET", tree.path().join("none.sock"))
                .stdin(Stdio::null())
                .output();
            match out {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                out => break out.unwrap(),
            }
        }
    };
    let out = run(&built, &["install-native-host", "--browser", "chromium"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let warning = stderr(&out);
    assert!(
        warning.contains("warning:") && warning.contains("inside the build directory"),
        "{warning}"
    );
    assert!(
        warning.contains("cargo install --locked --path ."),
        "{warning}"
    );
    let out = run(
        &built,
        &["install-native-host", "--browser", "chromium", "--json"],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // One of its warnings (another, when a native host runs on this machine: restart).
    let warnings = v["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .filter(|w| w.as_str().unwrap().contains("inside the build directory"))
            .count()
            == 1,
        "{v}"
    );

    let report =
        |out: std::process::Output| -> Value { serde_json::from_slice(&out.stdout).unwrap() };
    let before = report(run(std::path::Path::new(CTL), &["doctor", "--json"]));
    assert_eq!(
        doctor_check(&before, "native host for Chromium")["ok"],
        true,
        "{before}"
    );
    std::fs::remove_dir_all(tree.path().join("target")).unwrap(); // cargo clean
    let after = report(run(std::path::Path::new(CTL), &["doctor", "--json"]));
    let host = doctor_check(&after, "native host for Chromium");
    assert_eq!(host["ok"], false, "{after}");
    assert!(
        host["detail"].as_str().unwrap().contains("which is gone"),
        "{host}"
    );
    assert!(host["fix"]
        .as_str()
        .unwrap()
        .contains("install-native-host --browser chromium"));
}

/// A socket file nobody answers on (a daemon that died) is not "fine".
#[test]
fn doctor_checks_that_the_socket_answers() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("dead.sock");
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = Command::new(CTL)
        .args(["doctor", "--json", "--socket"])
        .arg(&socket)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(exit_code(&out), 1);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = doctor_check(&report, "control socket");
    assert_eq!(check["ok"], false, "{report}");
    assert!(
        check["detail"].as_str().unwrap().contains("nobody answers"),
        "{check}"
    );
    assert!(check["fix"]
        .as_str()
        .unwrap()
        .contains(&format!("rm {}", socket.display())));
}
