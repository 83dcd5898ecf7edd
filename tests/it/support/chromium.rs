//! What the browser tests share: finding Chromium (or saying loudly why a test is skipped),
//! one browser test at a time on the machine, a daemon on a port the extension scans, and a
//! tiny page server on loopback.

use crate::support::common::*;
use crate::support::site::{listen, read_head, respond, stop};
use serde_json::Value;
use std::fs::File;
use std::io::BufReader;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const DEFAULT_CHROMIUM: &str = "/usr/lib/chromium/chromium";
/// Fixed by the `key` in extension/manifest.json.
pub const EXTENSION_ID: &str = "jldadifenendlhihnlmegbljijfhnffa";
/// The ports the extension scans when no native host tells it where daemons are.
pub const SCAN_PORTS: std::ops::RangeInclusive<u16> = 8765..=8785;

/// The Chromium binary, or None after a loud SKIPPED banner; under CI=true a missing browser
/// fails the test instead. `BROWSER_MCP_CHROMIUM` names another binary.
pub fn chromium_or_skip(test: &str) -> Option<PathBuf> {
    let path = std::env::var_os("BROWSER_MCP_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CHROMIUM));
    if path.is_file() {
        return Some(path);
    }
    skip(
        test,
        &format!("no Chromium at {}", path.display()),
        "apt-get install chromium, or set BROWSER_MCP_CHROMIUM",
    );
    None
}

/// One browser test at a time on this machine, across test processes too: a Chromium in
/// port-scan mode connects to every daemon on 8765–8785, so two at once would see each
/// other's tabs. Held for the test's life (flock on a file every browser test opens).
pub fn machine_wide_lock() -> nix::fcntl::Flock<File> {
    let path = std::env::temp_dir().join("browser-mcp-e2e.lock");
    // flock needs no write access: another user's lock file is opened read-only.
    let file = File::options()
        .append(true)
        .create(true)
        .open(&path)
        .or_else(|_| File::open(&path))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .expect("flock")
}

/// A daemon on a free port the extension scans. Other programs may take ports meanwhile, so a
/// daemon that fails to start moves on to the next port.
pub fn daemon_in_scan_range(extra: &[&str]) -> TestDaemon {
    let mut failures = Vec::new();
    for port in SCAN_PORTS {
        if TcpListener::bind(("127.0.0.1", port)).is_err() {
            continue;
        }
        match TestDaemon::builder().port(port).args(extra).try_start() {
            Ok(d) => return d,
            Err(e) => failures.push(format!("{port}: {e}")),
        }
    }
    panic!(
        "no free port in {SCAN_PORTS:?} for the daemon:\n{}",
        failures.join("\n")
    );
}

/// The names of a tab's tools, from `browserctl tabs --json`.
pub fn tool_names(tab: &Value) -> Vec<&str> {
    tab["tools"]
        .as_array()
        .map(|ts| ts.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default()
}

/// The tab showing `url` once `browserctl tabs` lists it with `tool`, within `patience`.
pub fn listed_tab(d: &TestDaemon, patience: Duration, url: &str, tool: &str) -> Value {
    wait_until(patience, &format!("{url} with {tool}"), || {
        let tabs = d.ctl_json(&["tabs"]);
        tabs["tabs"]
            .as_array()?
            .iter()
            .find(|t| t["url"] == url && tool_names(t).contains(&tool))
            .cloned()
    })
}

/// What a [`PageServer`] serves.
#[derive(Clone)]
enum Content {
    /// Files of a directory, by name.
    Dir(PathBuf),
    /// One page, whatever the path.
    Page(&'static str),
}

/// A static page server on 127.0.0.1; stops on drop.
pub struct PageServer {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl PageServer {
    /// Serves tests/e2e/pages.
    pub fn pages() -> PageServer {
        PageServer::start(Content::Dir(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/pages"),
        ))
    }

    /// Serves examples/, the pages README's examples use.
    pub fn examples() -> PageServer {
        PageServer::start(Content::Dir(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"),
        ))
    }

    /// Serves one page at every path.
    pub fn page(html: &'static str) -> PageServer {
        PageServer::start(Content::Page(html))
    }

    fn start(content: Content) -> PageServer {
        let (port, stop) = listen(move |stream| serve(stream, &content));
        PageServer { port, stop }
    }

    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.origin())
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        stop(self.port, &self.stop);
    }
}

fn serve(stream: TcpStream, content: &Content) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(&stream);
    let Some(head) = read_head(&mut reader) else {
        return;
    };
    // A request body (POST) is read and dropped: closing with unread data would reset the
    // connection under the response.
    let _ = std::io::copy(
        &mut std::io::Read::take(&mut reader, head.length.min(1 << 20) as u64),
        &mut std::io::sink(),
    );
    let (status, body) = match content {
        Content::Page(html) => ("200 OK", html.as_bytes().to_vec()),
        Content::Dir(root) => {
            let name = head
                .path
                .trim_start_matches('/')
                .split('?')
                .next()
                .unwrap_or("");
            let safe = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
                && !name.starts_with('.');
            match safe.then(|| std::fs::read(root.join(name))) {
                Some(Ok(body)) => ("200 OK", body),
                _ => ("404 Not Found", b"not found".to_vec()),
            }
        }
    };
    respond(&stream, status, "text/html; charset=utf-8", &body);
}

/// What a person does to pair in the extension's settings page: types `code`, presses Pair,
/// and reads the page's verdict (a script for the page; Chromium's and Firefox's tests run it).
pub fn pairing_script(code: &str) -> String {
    format!(
        r#"(async () => {{
            for (let i = 0; i < 200 && !document.getElementById('pair-form'); i++) await new Promise((r) => setTimeout(r, 50));
            const input = document.getElementById('pair-code');
            const status = document.getElementById('pair-status');
            input.value = {code};
            status.textContent = '';
            document.getElementById('pair').click();
            for (let i = 0; i < 400; i++) {{
                const t = status.textContent;
                if (t && t !== 'Pairing…') return t;
                await new Promise((r) => setTimeout(r, 50));
            }}
            return 'no verdict';
        }})()"#,
        code = serde_json::json!(code)
    )
}

/// What a person does in the extension's settings page to let every agent act on every site
/// without asking (issue 31): a script for the options page (Chromium's and Firefox's tests run
/// it); true once the choice is stored.
pub const ALLOW_EVERYWHERE: &str = include_str!("../../e2e/allow-everywhere.js");

/// The page's verdict: paired (`Some(true)`), not yet (the scan has not found the daemon:
/// try again), or failed.
pub fn paired(verdict: &str) -> Option<bool> {
    if verdict.starts_with("Paired with the daemon on port") {
        Some(true)
    } else if verdict.is_empty() || verdict.starts_with("No daemon found") {
        None
    } else {
        Some(false)
    }
}

/// Pairs the browser whose profile is `profile` (launched with `--remote-debugging-port=0`)
/// with `d` the way a person does (issue 21): `browserctl pair` prints a code, the code goes
/// into the extension's settings page, Pair is pressed, and the page says it is paired. A
/// daemon the scan has not found yet makes the page say so; then the person tries again.
pub fn pair_browser(profile: &Path, d: &TestDaemon) -> String {
    let printed = d.ctl_json(&["pair", "--no-wait"]);
    let code = printed["code"].as_str().expect("a code").to_owned();
    let endpoint =
        crate::support::common::wait_until(Duration::from_secs(30), "DevToolsActivePort", || {
            let text = std::fs::read_to_string(profile.join("DevToolsActivePort")).ok()?;
            let mut lines = text.lines();
            Some(format!("ws://127.0.0.1:{}{}", lines.next()?, lines.next()?))
        });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (mut ws, _) = tokio_tungstenite::connect_async(endpoint.as_str())
            .await
            .expect("DevTools");
        let mut id = 0u64;
        let url = format!("chrome-extension://{EXTENSION_ID}/ui/options.html");
        let target = cdp(&mut ws, &mut id, None, "Target.createTarget", serde_json::json!({"url": url})).await["targetId"].clone();
        let session = cdp(&mut ws, &mut id, None, "Target.attachToTarget", serde_json::json!({"targetId": target, "flatten": true})).await["sessionId"]
            .as_str()
            .unwrap()
            .to_owned();
        // Types the code, presses Pair, and waits for the page's verdict.
        let attempt = pairing_script(&code);
        let start = Instant::now();
        loop {
            let r = cdp(&mut ws, &mut id, Some(&session), "Runtime.evaluate", serde_json::json!({"expression": attempt, "awaitPromise": true, "returnByValue": true})).await;
            let verdict = r["result"]["value"].as_str().unwrap_or("").to_owned();
            match paired(&verdict) {
                Some(true) => break,
                // Nothing yet: the page is still loading, or the scan has not found the daemon.
                None if start.elapsed() < Duration::from_secs(60) => {}
                _ => panic!("pairing failed: {verdict:?} ({r})\n--- daemon ---\n{}", d.log()),
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        cdp(&mut ws, &mut id, None, "Target.closeTarget", serde_json::json!({"targetId": target})).await;
    });
    code
}

type DevTools =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// One DevTools command; events are skipped.
async fn cdp(
    ws: &mut DevTools,
    id: &mut u64,
    session: Option<&str>,
    method: &str,
    params: Value,
) -> Value {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    *id += 1;
    let mut msg = serde_json::json!({"id": *id, "method": method, "params": params});
    if let Some(s) = session {
        msg["sessionId"] = s.into();
    }
    ws.send(Message::text(msg.to_string())).await.unwrap();
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .expect("DevTools answers")
            .expect("DevTools open")
            .unwrap();
        let Message::Text(t) = frame else { continue };
        let v: Value = serde_json::from_str(t.as_str()).unwrap();
        if v["id"] == *id {
            return v["result"].clone();
        }
    }
}

/// A copy of the extension in `dir` as it is once the person said yes to its optional
/// "debugger" permission (fast screenshots, trusted input): a headless browser cannot click the
/// browser's own permission prompt, so the copy asks for it up front, as an unpacked
/// extension's required permissions are granted at load. Its path, to load.
pub fn granted_extension(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("extension");
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(&src)
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
    let path = dir.join("extension/manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(
        manifest["optional_permissions"],
        serde_json::json!(["debugger"]),
        "the extension offers the debugger as an optional permission"
    );
    manifest["permissions"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!("debugger"));
    std::fs::write(&path, manifest.to_string()).unwrap();
    dir.join("extension")
}
