//! Test helpers: a real `browser-mcpd` process on temp paths, a scripted extension speaking
//! the seed-001 bridge protocol over a real WebSocket, and `browserctl` as a subprocess.
#![allow(dead_code)]

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub const DAEMON: &str = env!("CARGO_BIN_EXE_browser-mcpd");
pub const CTL: &str = env!("CARGO_BIN_EXE_browserctl");

/// A test that needs something this machine lacks (a browser, Python's MCP SDK, a second
/// user): under `CI=true` the test fails; otherwise a loud SKIPPED banner goes straight to fd
/// 2 (cargo test captures `eprintln!` and hides the output of a passing test) and the caller
/// returns. `fix` says how to get what is missing.
/// Our extension's origin in Chromium (its id is fixed by the manifest's key): a scripted
/// browser that sends it joins without proof, as the real extension does.
pub const OUR_ORIGIN: &str = "chrome-extension://jldadifenendlhihnlmegbljijfhnffa";

pub fn skip(test: &str, missing: &str, fix: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true, but {test} cannot run: {missing} ({fix})");
    }
    let stars = "*".repeat(76);
    let banner = format!("\n{stars}\n*** SKIPPED {test}: {missing}\n*** ({fix})\n{stars}\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr(), banner.as_bytes());
}

/// Polls `check` every few milliseconds until it returns Some, or panics after `limit`.
pub fn wait_until<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return v;
        }
        if start.elapsed() > limit {
            panic!("timed out after {limit:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A running daemon; killed and its temp dir removed on drop.
pub struct TestDaemon {
    pub child: Child,
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub discovery_dir: PathBuf,
    pub port: u16,
    pub token: String,
    pub discovery_file: PathBuf,
}

/// How to start a [`TestDaemon`]: extra flags and environment, an existing temp dir (to
/// restart on the same paths), a fixed port.
///
/// ```ignore
/// let d = TestDaemon::builder().args(&["--retries", "0"]).env("X", "1").start();
/// ```
#[derive(Default)]
pub struct DaemonBuilder {
    dir: Option<tempfile::TempDir>,
    port: u16,
    args: Vec<String>,
    env: Vec<(String, String)>,
    socket: Option<PathBuf>,
    user: Option<(u32, u32)>,
    daemon: Option<PathBuf>,
    /// A user's environment instead of test paths (see [`DaemonBuilder::like_the_users`]).
    user_env: Option<(PathBuf, Option<PathBuf>)>,
}

impl DaemonBuilder {
    /// Extra command-line flags.
    pub fn args(mut self, args: &[&str]) -> DaemonBuilder {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// An extra environment variable.
    pub fn env(mut self, key: &str, value: &str) -> DaemonBuilder {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Runs in this temp dir (its socket, discovery dir and log), e.g. one a daemon used before.
    pub fn dir(mut self, dir: tempfile::TempDir) -> DaemonBuilder {
        self.dir = Some(dir);
        self
    }

    /// The control socket at this path (default: `ctl.sock` in the temp dir).
    pub fn socket(mut self, socket: PathBuf) -> DaemonBuilder {
        self.socket = Some(socket);
        self
    }

    /// Runs as this uid and gid, through setpriv; the temp dir must be that user's.
    pub fn user(mut self, uid: u32, gid: u32) -> DaemonBuilder {
        self.user = Some((uid, gid));
        self
    }

    /// Runs this browser-mcpd (default: the one cargo built), e.g. one a package installed.
    pub fn daemon(mut self, exe: &Path) -> DaemonBuilder {
        self.daemon = Some(exe.to_path_buf());
        self
    }

    /// Runs as a user's daemon does, started with no path named: HOME (and XDG_RUNTIME_DIR
    /// when given) as here, no XDG_STATE_HOME, and no `--socket`, token or pairing file, so
    /// that it picks its socket, token and pointer as under systemd (issue 59).
    pub fn like_the_users(mut self, home: &Path, runtime: Option<&Path>) -> DaemonBuilder {
        self.user_env = Some((home.to_path_buf(), runtime.map(Path::to_path_buf)));
        self
    }

    /// Listens on this port (default 0: any free one).
    pub fn port(mut self, port: u16) -> DaemonBuilder {
        self.port = port;
        self
    }

    /// Starts the daemon and waits until it is ready (its discovery file is written).
    pub fn start(self) -> TestDaemon {
        self.try_start().unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`DaemonBuilder::start`], with `Err` and the daemon's log when it exits early (e.g. its
    /// port was taken meanwhile).
    pub fn try_start(self) -> Result<TestDaemon, String> {
        let dir = match self.dir {
            Some(dir) => dir,
            None => tempfile::tempdir().expect("temp dir"),
        };
        let socket = match &self.user_env {
            Some((home, runtime)) => runtime
                .clone()
                .unwrap_or_else(|| home.join(".local/state"))
                .join("browser-mcp/browser-mcpd.sock"),
            None => self.socket.unwrap_or_else(|| dir.path().join("ctl.sock")),
        };
        let discovery_dir = dir.path().join("discovery");
        let log = std::fs::File::create(dir.path().join("daemon.log")).unwrap();
        let exe = self.daemon.unwrap_or_else(|| PathBuf::from(DAEMON));
        let mut cmd = match self.user {
            Some((uid, gid)) => {
                let mut c = Command::new("/usr/bin/setpriv");
                c.arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={gid}"))
                    .arg("--clear-groups")
                    .arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        cmd.arg("--port").arg(self.port.to_string());
        match &self.user_env {
            Some((home, runtime)) => {
                cmd.env("HOME", home)
                    .env_remove("XDG_STATE_HOME")
                    .env_remove("BROWSER_MCP_SOCKET")
                    .env_remove("BROWSER_MCP_TOKEN_FILE")
                    .env_remove("BROWSER_MCP_PAIRING_FILE");
                match runtime {
                    Some(r) => cmd.env("XDG_RUNTIME_DIR", r),
                    None => cmd.env_remove("XDG_RUNTIME_DIR"),
                };
            }
            None => {
                cmd.arg("--socket")
                    .arg(&socket)
                    // The user's pairings (issue 21) and token (issue 59): per test, and kept
                    // across a restart.
                    .env(
                        "BROWSER_MCP_PAIRING_FILE",
                        dir.path().join("state/pairings.json"),
                    )
                    .env("BROWSER_MCP_TOKEN_FILE", dir.path().join("state/token"));
            }
        }
        let child = cmd
            .arg("--discovery-dir")
            .arg(&discovery_dir)
            .args(&self.args)
            .env("BROWSER_MCP_LOG_LEVEL", "debug")
            .env_remove("RUST_LOG")
            .env_remove("NOTIFY_SOCKET")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn browser-mcpd");
        let discovery_file = discovery_dir.join(format!("server-{}.json", child.id()));
        let mut d = TestDaemon {
            child,
            dir,
            socket,
            discovery_dir,
            port: 0,
            token: String::new(),
            discovery_file,
        };
        let start = Instant::now();
        let info: Value = loop {
            if let Ok(Some(status)) = d.child.try_wait() {
                return Err(format!(
                    "browser-mcpd exited early ({status}):\n{}",
                    d.log()
                ));
            }
            if let Some(info) = read_json(&d.discovery_file) {
                break info;
            }
            if start.elapsed() > Duration::from_secs(20) {
                panic!("timed out waiting for the discovery file:\n{}", d.log());
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        d.port = info["port"].as_u64().unwrap() as u16;
        d.token = info["token"].as_str().unwrap_or_default().to_owned();
        Ok(d)
    }
}

impl TestDaemon {
    /// How to start one with options; [`TestDaemon::start`] for none.
    pub fn builder() -> DaemonBuilder {
        DaemonBuilder::default()
    }

    /// `TestDaemon::builder().start()`: a daemon with the default settings on temp paths.
    pub fn start() -> TestDaemon {
        TestDaemon::builder().start()
    }

    /// Stops this daemon (SIGTERM) and starts a new one on the same paths and the same port.
    pub fn restart(mut self, extra: &[&str]) -> TestDaemon {
        self.terminate();
        let port = self.port;
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().expect("temp dir"));
        drop(self);
        let restarted = TestDaemon::builder().dir(dir).port(port).args(extra);
        restarted
            .try_start()
            .unwrap_or_else(|e| panic!("restart: {e}"))
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("daemon.log")).unwrap_or_default()
    }

    pub fn ws_url(&self) -> String {
        format!("ws://127.0.0.1:{}/", self.port)
    }

    /// Runs browserctl against this daemon.
    /// `browserctl --json install-native-host --user-data-dir PROFILE`, pointed at this
    /// daemon's discovery directory, as README tells a person to connect Chromium; it must
    /// succeed. Its output.
    pub fn install_host(&self, profile: &Path) -> Output {
        let out = ctl_plain(&[
            "--json",
            "install-native-host",
            "--user-data-dir",
            profile.to_str().unwrap(),
            "--discovery-dir",
            self.discovery_dir.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "install: {}", stderr(&out));
        out
    }

    /// The same for Firefox (`--browser NAME`) with HOME at `home`.
    pub fn install_host_in_home(&self, home: &Path, browser: &str) -> Output {
        let out = Command::new(CTL)
            .args(["--json", "install-native-host", "--browser", browser])
            .arg("--discovery-dir")
            .arg(&self.discovery_dir)
            .env("HOME", home)
            .output()
            .expect("run browserctl");
        assert!(out.status.success(), "install: {}", stderr(&out));
        out
    }

    /// `browserctl ARGS…` on this daemon, started and left running, its output piped.
    pub fn ctl_spawn(&self, args: &[&str]) -> std::process::Child {
        Command::new(CTL)
            .arg("--socket")
            .arg(&self.socket)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run browserctl")
    }

    pub fn ctl(&self, args: &[&str]) -> Output {
        self.ctl_spawn(args)
            .wait_with_output()
            .expect("run browserctl")
    }

    /// Runs browserctl and parses its stdout as JSON (`--json` is added).
    pub fn ctl_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.ctl(&all);
        assert!(
            out.status.success(),
            "browserctl {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
    }

    pub fn status(&self) -> Value {
        self.ctl_json(&["status"])
    }

    /// Polls `browserctl tabs --json` until `pred` holds.
    pub fn wait_tabs(&self, what: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        wait_until(Duration::from_secs(10), what, || {
            let v = self.ctl_json(&["tabs"]);
            let tabs = v["tabs"].as_array().cloned().unwrap_or_default();
            pred(&tabs).then_some(tabs)
        })
    }

    pub fn terminate(&mut self) -> std::process::ExitStatus {
        self.stop(Duration::from_secs(10))
            .unwrap_or_else(|| panic!("timed out after 10s waiting for the daemon to exit"))
    }

    /// SIGTERM, and the daemon's exit status once it has exited, if within `limit`. Never
    /// panics: a drop may call it.
    pub fn stop(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if start.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// browserctl exited `code` and said `words` on stderr.
pub fn fails(out: &Output, code: i32, words: &str) {
    assert_eq!(exit_code(out), code, "{}", stderr(out));
    assert!(stderr(out).contains(words), "{}", stderr(out));
}

pub fn exit_code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A scripted extension: a real WebSocket client that speaks seed 001.
pub struct FakeExtension {
    pub ws: Ws,
    pub session: String,
}

pub fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("the {name} tool"),
        "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}}})
}

pub fn search_tool() -> Value {
    json!({"name": "search", "description": "Search the page",
        "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}})
}

pub fn tab(id: i64, title: &str, tools: Vec<Value>) -> Value {
    json!({"id": id, "title": title, "url": format!("https://example.com/{id}"), "tools": tools})
}

impl FakeExtension {
    /// Connects with optional extra headers and returns the raw socket after the upgrade.
    pub async fn raw(
        url: &str,
        headers: &[(&str, &str)],
    ) -> Result<Ws, tokio_tungstenite::tungstenite::Error> {
        let mut req = url.into_client_request().unwrap();
        for (k, v) in headers {
            req.headers_mut().insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        tokio_tungstenite::connect_async(req)
            .await
            .map(|(ws, _)| ws)
    }

    /// Connects, sends `connected` with these tabs, reads `connect`. Speaking first, like
    /// the real extension, lets the daemon tell the dialects of `GET /` apart at once.
    pub async fn connect(d: &TestDaemon, session: &str, tabs: Vec<Value>) -> FakeExtension {
        FakeExtension::connect_saying(d, session, tabs, json!({})).await
    }

    /// [`FakeExtension::connect`] with more fields in `connected` (`features`, say).
    pub async fn connect_saying(
        d: &TestDaemon,
        session: &str,
        tabs: Vec<Value>,
        more: Value,
    ) -> FakeExtension {
        let ws = FakeExtension::raw(&d.ws_url(), &[("Origin", OUR_ORIGIN)])
            .await
            .expect("WebSocket connect");
        let mut ext = FakeExtension {
            ws,
            session: session.to_owned(),
        };
        let mut connected = json!({"type": "connected", "sessionId": session,
            "browser": {"name": "Chrome", "version": "120.0.0.0"}, "tabs": tabs});
        for (k, v) in more.as_object().into_iter().flatten() {
            connected[k] = v.clone();
        }
        ext.send(connected).await;
        let hello = ext.recv().await;
        assert_eq!(hello["type"], "connect", "{hello}");
        ext
    }

    /// Connects as session `s1` with this one tab, and waits until the daemon lists it.
    pub async fn single(d: &TestDaemon, tab: Value) -> FakeExtension {
        let ext = FakeExtension::connect(d, "s1", vec![tab]).await;
        d.wait_tabs("the tab", |t| t.len() == 1);
        ext
    }

    /// [`FakeExtension::single`] with b1:7 "Search", offering `search`.
    pub async fn search_tab(d: &TestDaemon) -> FakeExtension {
        FakeExtension::single(d, tab(7, "Search", vec![search_tool()])).await
    }

    pub async fn send(&mut self, v: Value) {
        self.ws
            .send(Message::text(v.to_string()))
            .await
            .expect("send");
    }

    pub async fn send_text(&mut self, t: &str) {
        self.ws
            .send(Message::text(t.to_owned()))
            .await
            .expect("send");
    }

    /// The next JSON message from the daemon (skips WebSocket control frames).
    pub async fn recv(&mut self) -> Value {
        self.try_recv(Duration::from_secs(10))
            .await
            .expect("a message from the daemon")
    }

    pub async fn try_recv(&mut self, limit: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let msg = tokio::time::timeout_at(deadline, self.ws.next())
                .await
                .ok()??;
            match msg.ok()? {
                Message::Text(t) => {
                    return Some(serde_json::from_str(t.as_str()).expect("daemon sends JSON"))
                }
                Message::Close(_) => return None,
                _ => continue,
            }
        }
    }

    /// Waits for the next message of a type, answering pings on the way.
    pub async fn expect(&mut self, kind: &str) -> Value {
        loop {
            let m = self.recv().await;
            if m["type"] == kind {
                return m;
            }
        }
    }

    /// The next callTool within `limit`, answered with an empty result; `None` when none
    /// came (for tests whose point is that a call never reaches the browser).
    pub async fn call_within(&mut self, limit: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let m = self.try_recv(left).await?;
            if m["type"] == "callTool" {
                self.send(json!({"type": "toolResult", "sessionId": self.session,
                    "callId": m["callId"], "result": {"content": []}, "error": null}))
                    .await;
                return Some(m);
            }
        }
    }

    /// Answers the next callTool with a result.
    pub async fn answer_call(&mut self, result: Value) -> Value {
        let call = self.expect("callTool").await;
        self.send(
            json!({"type": "toolResult", "sessionId": self.session, "callId": call["callId"],
            "result": result, "error": null}),
        )
        .await;
        call
    }
}

/// `browserctl --json call TOOL EXTRA…` on a blocking thread (see [`ctl_async`]).
pub fn call_async(d: &TestDaemon, tool: &str, extra: &[&str]) -> tokio::task::JoinHandle<Output> {
    let mut args = vec!["--json", "call", tool];
    args.extend_from_slice(extra);
    ctl_async(d, &args)
}

/// Runs browserctl on a blocking thread so an async test can script the extension meanwhile.
pub fn ctl_async(d: &TestDaemon, args: &[&str]) -> tokio::task::JoinHandle<Output> {
    let child = d.ctl_spawn(args);
    tokio::task::spawn_blocking(move || child.wait_with_output().expect("run browserctl"))
}

/// Sets a path's permission bits, as a test that plays with ownership needs to.
pub fn set_mode(p: &Path, m: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

pub fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// Runs browserctl without `--socket`, for the commands that do not talk to the daemon
/// (install-native-host, setup, completions), which refuse it.
pub fn ctl_plain(args: &[&str]) -> Output {
    Command::new(CTL)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run browserctl")
}

/// An HTTP/1.1 client on one connection (kept alive), its connection driven by a task.
pub async fn http1_client<S, B>(stream: S) -> hyper::client::conn::http1::SendRequest<B>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("HTTP/1.1 handshake");
    tokio::spawn(conn);
    sender
}

/// A small deterministic generator (no rand crate for the tests).
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (0 for 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The next item of `stream`, or None once `stop` is cancelled (a scripted browser's loop).
pub async fn unless_stopped<S: futures_util::Stream + Unpin>(
    stream: &mut S,
    stop: &tokio_util::sync::CancellationToken,
) -> Option<Option<S::Item>> {
    use futures_util::StreamExt;
    tokio::select! {
        m = stream.next() => Some(m),
        _ = stop.cancelled() => None,
    }
}

/// A child process killed (and reaped) when the test lets go of it, however it ends.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
