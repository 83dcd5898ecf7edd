//! The real clients (issue 59): Claude Code, Codex CLI, Gemini CLI and the MCP Inspector,
//! the npm packages pinned in `.ci/agent-clients-versions` (`.ci/run` installs them, and the
//! Node 22 they need, into target/agent-clients; `AGENT_CLIENTS` names another `.bin`). With no
//! model and no key, each adds our server from `browserctl mcp --print-config --client NAME`
//! and passes its own health check or tool listing, over stdio and over Streamable HTTP; the
//! clients run with a bare environment (HOME and PATH: no XDG_RUNTIME_DIR) while the daemon
//! listens in a runtime directory, as under systemd; the daemon restarts between saving the
//! HTTP configurations and using them.
//!
//! Everything runs in a network namespace of its own with only loopback up: the clients
//! reach our daemon and nothing else (their telemetry and update checks fail at once).

use super::bare_env::user_dirs;
use crate::support::common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The `.bin` of the installed clients, with each program there.
fn clients_bin() -> Option<PathBuf> {
    let bin = std::env::var_os("AGENT_CLIENTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/agent-clients/node_modules/.bin")
        });
    ["node", "claude", "codex", "gemini", "mcp-inspector"]
        .iter()
        .all(|p| bin.join(p).exists())
        .then_some(bin)
}

/// Moves this thread into a network namespace of its own with loopback up; what it starts
/// from now on lives there.
fn own_network() -> Result<(), String> {
    // SAFETY: unshare(2) with CLONE_NEWNET changes only this thread's namespace.
    if unsafe { nix::libc::unshare(nix::libc::CLONE_NEWNET) } != 0 {
        return Err(format!("unshare: {}", std::io::Error::last_os_error()));
    }
    let up = Command::new("ip")
        .args(["link", "set", "lo", "up"])
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    up.status
        .success()
        .then_some(())
        .ok_or_else(|| format!("ip link set lo up: {}", stderr(&up)))
}

struct Person {
    home: PathBuf,
    bin: PathBuf,
}

impl Person {
    /// One of the clients (or browserctl), with the bare environment, in the home directory.
    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env_clear()
            .env("HOME", &self.home)
            .env("PATH", format!("{}:/usr/bin:/bin", self.bin.display()))
            .env("LANG", "C.UTF-8")
            .env("USER", "root")
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .current_dir(&self.home)
            .stdin(Stdio::null());
        // A group of its own, so that `stop` reaches what it started: Gemini CLI runs itself
        // again in a child node, which outlived a kill of the first.
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        c
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        let out = self.cmd(program).args(args).output().unwrap();
        let shown = format!("{program} {args:?}");
        eprintln!("$ {shown}\n{}{}", stdout(&out), stderr(&out));
        out
    }

    /// `browserctl mcp --print-config --client NAME --transport T`, as the person runs it.
    fn config(&self, client: &str, transport: &str) -> String {
        let out = self.run(
            CTL,
            &[
                "mcp",
                "--print-config",
                "--client",
                client,
                "--transport",
                transport,
            ],
        );
        assert!(out.status.success(), "print-config: {}", stderr(&out));
        stdout(&out)
    }

    /// Runs a printed command line with the shell.
    fn sh(&self, line: &str) -> Output {
        let out = self.run("sh", &["-c", line]);
        assert!(out.status.success(), "{line}: {}", stderr(&out));
        out
    }

    /// The health check of Claude Code or Gemini CLI: its `mcp list` line for `browser`.
    fn listed(&self, program: &str) -> String {
        let out = self.run(program, &["mcp", "list"]);
        let text = format!("{}{}", stdout(&out), stderr(&out));
        text.lines()
            .find(|l| l.contains("browser:"))
            .unwrap_or_else(|| panic!("{program} mcp list shows no browser: {text}"))
            .to_owned()
    }

    /// Codex's own tool listing (what its `/mcp` shows): the app server's
    /// `mcpServerStatus/list`, started as Codex starts it, no model involved.
    fn codex_tools(&self) -> Value {
        let mut child = self
            .cmd("codex")
            .arg("app-server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        for m in [
            json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "it", "version": "0"}}}),
            json!({"method": "initialized"}),
            json!({"id": 2, "method": "mcpServerStatus/list", "params": {}}),
        ] {
            writeln!(stdin, "{m}").unwrap();
        }
        let mut answer = Value::Null;
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let v: Value = serde_json::from_str(&line.unwrap()).unwrap_or_default();
            if v["id"] == 2 {
                answer = v;
                break;
            }
        }
        drop(stdin);
        stop(&mut child);
        eprintln!("codex mcpServerStatus/list: {answer}");
        answer["result"]["data"]
            .as_array()
            .and_then(|d| d.iter().find(|s| s["name"] == "browser"))
            .cloned()
            .unwrap_or_else(|| panic!("codex lists no browser server: {answer}"))
    }

    /// Gemini CLI's tool discovery, which runs as a session starts (its `mcp list` only pings):
    /// an ACP session with a made-up key (no prompt is sent, so no model is asked). Its
    /// `--debug` log, where discovery errors go.
    fn gemini_discovery(&self) -> String {
        // A file, not a pipe: nobody reads the log while the session starts, and a full pipe
        // would stop Gemini CLI mid-discovery.
        let log = self.home.join("gemini-debug.log");
        let mut child = self
            .cmd("gemini")
            .args(["--acp", "--debug"])
            .env("GEMINI_API_KEY", "not-a-key")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        for m in [
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                "params": {"cwd": self.home, "mcpServers": []}}),
        ] {
            writeln!(stdin, "{m}").unwrap();
        }
        let out = BufReader::new(child.stdout.take().unwrap());
        for line in out.lines() {
            let v: Value = serde_json::from_str(&line.unwrap()).unwrap_or_default();
            if v["id"] == 1 {
                assert!(v["result"]["sessionId"].is_string(), "session/new: {v}");
                break;
            }
        }
        drop(stdin);
        stop(&mut child);
        std::fs::read_to_string(&log).unwrap_or_default()
    }

    /// The Inspector's CLI, run as printed (its npx package is the installed one).
    fn inspector(&self, printed: &str) -> Value {
        let line = printed.trim().replacen(
            "npx @modelcontextprotocol/inspector",
            &self.bin.join("mcp-inspector").display().to_string(),
            1,
        );
        let out = self.run("sh", &["-c", &line]);
        assert!(out.status.success(), "inspector: {}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// Kills a client started by `Person::cmd` with everything it started, and reaps it.
fn stop(child: &mut std::process::Child) {
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    let _ = child.wait();
}

fn names(tools: &Value) -> Vec<String> {
    match tools {
        Value::Array(list) => list
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect(),
        Value::Object(map) => map.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// ListTools requests the daemon answered, by its debug log.
fn lists_answered(d: &TestDaemon) -> usize {
    d.log().matches("ListToolsResult").count()
}

/// A browser with a focused tab offering `search`, so a client that reached the daemon lists
/// a page's tool beside our own.
async fn browser(d: &TestDaemon) -> FakeExtension {
    let mut ext = FakeExtension::search_tab(d).await;
    ext.send(json!({"type": "tabFocused", "sessionId": ext.session, "tabId": 7}))
        .await;
    d.wait_tabs("tab 7 focused", |t| t.iter().any(|t| t["focused"] == true));
    ext
}

#[test]
fn the_clients_people_use_add_the_server_and_pass_their_health_checks() {
    let Some(bin) = clients_bin() else {
        return skip(
            "the_clients_people_use_add_the_server_and_pass_their_health_checks",
            "the MCP clients are not installed in target/agent-clients",
            ".ci/run installs them (the versions in .ci/agent-clients-versions)",
        );
    };
    std::thread::spawn(move || {
        if let Err(e) = own_network() {
            return skip("the_clients_people_use…", &e, "run as root (CI does)");
        }
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(scenario(bin));
    })
    .join()
    .unwrap_or_else(|e| std::panic::resume_unwind(e));
}

async fn scenario(bin: PathBuf) {
    let started = Instant::now();
    let (_t, home, runtime) = user_dirs();
    let p = Person {
        home: home.clone(),
        bin,
    };
    for (program, flag) in [
        ("claude", "--version"),
        ("codex", "--version"),
        ("gemini", "--version"),
        ("mcp-inspector", "--version"),
        ("node", "--version"),
    ] {
        let out = p.run(program, &[flag]);
        eprintln!("version: {program} {}", stdout(&out).trim());
    }
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        json!({"privacy": {"usageStatisticsEnabled": false},
            "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}})
        .to_string(),
    )
    .unwrap();

    // No daemon yet: a health check that fails, not a green light.
    p.sh(&p.config("claude-code", "stdio"));
    p.sh(&p.config("gemini", "stdio"));
    let claude = p.listed("claude");
    assert!(
        claude.contains("Failed"),
        "claude without a daemon: {claude}"
    );
    let gemini = p.listed("gemini");
    assert!(
        gemini.contains("Disconnected"),
        "gemini without a daemon: {gemini}"
    );

    // The user's daemon, as systemd starts it (its socket in the runtime directory).
    let d = TestDaemon::builder()
        .like_the_users(&home, Some(&runtime))
        .start();
    let port = d.port;
    let _ext = browser(&d).await;

    // stdio.
    let claude = p.listed("claude");
    assert!(claude.contains("Connected"), "claude over stdio: {claude}");
    let gemini = p.listed("gemini");
    assert!(gemini.contains("Connected"), "gemini over stdio: {gemini}");
    let before = lists_answered(&d);
    let log = p.gemini_discovery();
    assert!(
        !log.contains("MCP ERROR"),
        "gemini's discovery over stdio: {log}"
    );
    assert!(
        lists_answered(&d) > before,
        "gemini listed no tools over stdio: {log}"
    );
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    std::fs::write(home.join(".codex/config.toml"), p.config("codex", "stdio")).unwrap();
    let listed = p.run("codex", &["mcp", "list"]);
    assert!(stdout(&listed).contains("browser"), "{}", stdout(&listed));
    let codex = p.codex_tools();
    assert!(
        names(&codex["tools"]).contains(&"search".to_owned()),
        "codex over stdio: {codex}"
    );
    let tools = p.inspector(&p.config("inspector", "stdio"));
    assert!(
        names(&tools["tools"]).contains(&"search".to_owned()),
        "inspector over stdio: {tools}"
    );

    // Streamable HTTP: each client saves its entry (the token in it)...
    p.sh("claude mcp remove --scope user browser");
    p.sh(&p.config("claude-code", "http"));
    p.sh("gemini mcp remove --scope user browser");
    p.sh(&p.config("gemini", "http"));
    std::fs::write(home.join(".codex/config.toml"), p.config("codex", "http")).unwrap();
    let inspector_http = p.config("inspector", "http");

    // ...and the daemon restarts before they use it.
    drop(_ext);
    drop(d);
    let d = TestDaemon::builder()
        .like_the_users(&home, Some(&runtime))
        .port(port)
        .start();
    let _ext = browser(&d).await;

    let claude = p.listed("claude");
    assert!(
        claude.contains("Connected"),
        "claude over HTTP after a restart: {claude}"
    );
    let gemini = p.listed("gemini");
    assert!(
        gemini.contains("Connected"),
        "gemini over HTTP after a restart: {gemini}"
    );
    let before = lists_answered(&d);
    let log = p.gemini_discovery();
    assert!(
        !log.contains("MCP ERROR"),
        "gemini's discovery over HTTP: {log}"
    );
    assert!(
        lists_answered(&d) > before,
        "gemini listed no tools over HTTP: {log}"
    );
    let codex = p.codex_tools();
    assert!(
        names(&codex["tools"]).contains(&"search".to_owned()),
        "codex over HTTP: {codex}"
    );
    let tools = p.inspector(&inspector_http);
    assert!(
        names(&tools["tools"]).contains(&"search".to_owned()),
        "inspector over HTTP: {tools}"
    );
    eprintln!("the clients' run took {:?}", started.elapsed());
    assert!(started.elapsed() < Duration::from_secs(150));
}
