//! A headless Chromium for rows 11–14, driven over DevTools (flat sessions): launched with or
//! without our extension, tabs opened and measured, the page's own metrics read.

use crate::prelude::*;
use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use tokio::net::TcpStream;

pub(crate) const CHROMIUM_DEFAULT: &str = "/usr/lib/chromium/chromium";

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

pub(crate) struct Chromium {
    child: Child,
    _profile: tempfile::TempDir,
    ws: Ws,
    next: u64,
}

/// The Chromium to measure: `BROWSER_MCP_CHROMIUM`, else Debian's.
pub(crate) fn chromium_exe() -> Option<PathBuf> {
    let exe = std::env::var_os("BROWSER_MCP_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(CHROMIUM_DEFAULT));
    exe.exists().then_some(exe)
}

impl Chromium {
    /// `prepare` runs on the new profile before the browser starts (a native host to install).
    pub(crate) async fn launch(
        exe: &Path,
        extension: Option<&Path>,
        prepare: impl FnOnce(&Path),
    ) -> Chromium {
        let profile = tempfile::tempdir().unwrap();
        prepare(profile.path());
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
        .env("TMPDIR", profile.path())
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        if let Some(ext) = extension {
            cmd.arg(format!("--load-extension={}", ext.display()));
        }
        cmd.arg("about:blank");
        let child = cmd.spawn().expect("launch chromium");
        let start = Instant::now();
        let endpoint = loop {
            let text = std::fs::read_to_string(profile.path().join("DevToolsActivePort"))
                .unwrap_or_default();
            let mut lines = text.lines();
            if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                break format!("ws://127.0.0.1:{port}{path}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "chromium did not start"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let (ws, _) = tokio_tungstenite::connect_async(endpoint.as_str())
            .await
            .expect("DevTools");
        Chromium {
            child,
            _profile: profile,
            ws,
            next: 0,
        }
    }

    pub(crate) async fn send(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = s.into();
        }
        self.ws.send(Message::text(msg.to_string())).await.unwrap();
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(60), self.ws.next())
                .await
                .unwrap_or_else(|_| panic!("no answer to {method}"))
                .expect("DevTools closed")
                .unwrap();
            let Message::Text(text) = frame else { continue };
            let v: Value = serde_json::from_str(text.as_str()).unwrap();
            if v["id"] == id {
                if let Some(e) = v.get("error") {
                    panic!("{method}: {e}");
                }
                return v["result"].clone();
            }
        }
    }

    /// A new tab at about:blank, attached; returns (target, session).
    pub(crate) async fn new_tab(&mut self) -> (String, String) {
        self.new_tab_where(Place::Front).await
    }

    /// As `new_tab`, the focused tab or one behind it.
    pub(crate) async fn new_tab_where(&mut self, place: Place) -> (String, String) {
        self.open(json!({"url": "about:blank", "background": place == Place::Behind}))
            .await
    }

    /// A new target (`Target.createTarget`'s `params`), attached; returns (target, session).
    pub(crate) async fn open(&mut self, params: Value) -> (String, String) {
        let target = self.send(None, "Target.createTarget", params).await["targetId"]
            .as_str()
            .unwrap()
            .to_owned();
        let session = self
            .send(
                None,
                "Target.attachToTarget",
                json!({"targetId": target, "flatten": true}),
            )
            .await["sessionId"]
            .as_str()
            .unwrap()
            .to_owned();
        (target, session)
    }

    pub(crate) async fn eval(&mut self, session: &str, expr: &str) -> Value {
        let r = self
            .send(
                Some(session),
                "Runtime.evaluate",
                json!({"expression": expr, "awaitPromise": true, "returnByValue": true}),
            )
            .await;
        r["result"]["value"].clone()
    }

    /// Polls `expr` until it is true.
    pub(crate) async fn wait(&mut self, session: &str, expr: &str) {
        let start = Instant::now();
        while self.eval(session, expr).await != json!(true) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "timed out: {expr}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The page's metrics (Performance.getMetrics), by name.
    pub(crate) async fn metrics(&mut self, session: &str) -> HashMap<String, f64> {
        let r = self
            .send(Some(session), "Performance.getMetrics", json!({}))
            .await;
        r["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["name"].as_str().unwrap().to_owned(),
                    m["value"].as_f64().unwrap(),
                )
            })
            .collect()
    }

    pub(crate) async fn close_tab(&mut self, target: &str) {
        self.send(None, "Target.closeTarget", json!({"targetId": target}))
            .await;
    }

    /// The targets of a type ("page", "service_worker").
    pub(crate) async fn targets(&mut self, kind: &str) -> Vec<Value> {
        let r = self.send(None, "Target.getTargets", json!({})).await;
        r["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["type"] == kind)
            .cloned()
            .collect()
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        // The whole process group: the browser and its helpers.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}

/// Where a new tab opens: focused, or behind the focused one (as a link opened in a new tab).
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Place {
    Front,
    Behind,
}
