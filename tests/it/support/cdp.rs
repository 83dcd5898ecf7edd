//! Headless Chromium driven over the DevTools protocol, synchronously: launched with our
//! extension in its own process group (killed with its helpers on drop), pages attached,
//! script evaluated, keys and clicks sent as a person's, screenshots taken. The Chromium side
//! of the browser tests (Firefox's is support/firefox.rs).

use crate::support::common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

/// Browser steps (start-up, port scan, page load) on a loaded two-core machine.
pub(crate) const BROWSER_WAIT: Duration = Duration::from_secs(30);

/// An attached DevTools session on one page.
#[derive(Clone)]
pub(crate) struct Page {
    pub(crate) session: String,
    pub(crate) target: String,
}

/// Headless Chromium (own process group, killed with its helpers on drop) and a DevTools
/// connection to it, used synchronously. Under support/driver.rs's ChromiumTab.
pub(crate) struct Browser {
    child: Child,
    log: PathBuf,
    _logdir: tempfile::TempDir,
    rt: tokio::runtime::Runtime,
    ws: Option<Ws>,
    next_id: u64,
}

impl Browser {
    pub(crate) fn launch(exe: &Path, profile: &Path, url: &str) -> Browser {
        Browser::launch_with(exe, profile, url, &[])
    }

    /// With more command-line flags (`--enable-features=WebMCP`, a window size…).
    pub(crate) fn launch_with(exe: &Path, profile: &Path, url: &str, flags: &[&str]) -> Browser {
        let extension = Path::new(env!("CARGO_MANIFEST_DIR")).join("extension");
        Browser::launch_extension(exe, profile, url, flags, &extension)
    }

    /// With the extension loaded from `extension` (a copy a test has changed).
    pub(crate) fn launch_extension(
        exe: &Path,
        profile: &Path,
        url: &str,
        flags: &[&str],
        extension: &Path,
    ) -> Browser {
        let logdir = tempfile::tempdir().unwrap();
        let log = logdir.path().join("chromium.log");
        let out = File::create(&log).unwrap();
        let _ = std::fs::remove_file(profile.join("DevToolsActivePort"));
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
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            // Chromium leaves its singleton socket dir in TMPDIR when killed: keep it in the profile.
            .env("TMPDIR", profile)
            .arg(format!("--load-extension={}", extension.display()))
            .args(flags)
            .arg(url)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("launch {}: {e}", exe.display()));
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut b = Browser {
            child,
            log,
            _logdir: logdir,
            rt,
            ws: None,
            next_id: 0,
        };
        // "PORT\n/devtools/browser/ID", written once DevTools listens.
        let endpoint = {
            let start = Instant::now();
            loop {
                if let Ok(Some(status)) = b.child.try_wait() {
                    panic!("chromium exited ({status}):\n{}", b.log_tail());
                }
                let text =
                    std::fs::read_to_string(profile.join("DevToolsActivePort")).unwrap_or_default();
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    break format!("ws://127.0.0.1:{port}{path}");
                }
                if start.elapsed() > BROWSER_WAIT {
                    panic!(
                        "no DevToolsActivePort after {BROWSER_WAIT:?}:\n{}",
                        b.log_tail()
                    );
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        let (ws, _) =
            b.rt.block_on(tokio_tungstenite::connect_async(endpoint.as_str()))
                .unwrap_or_else(|e| panic!("DevTools at {endpoint}: {e}"));
        b.ws = Some(ws);
        b
    }

    pub(crate) fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// The browser's process id, which is also its process group's.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// One DevTools command; events are skipped.
    pub(crate) fn try_send(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        self.try_send_seeing(session, method, params, "")
            .map(|(result, _)| result)
    }

    /// One DevTools command, and the events named `event` of its session that came before
    /// its answer (`Runtime.enable` reports the contexts that exist that way).
    pub(crate) fn try_send_seeing(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        event: &str,
    ) -> Result<(Value, Vec<Value>), String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = s.into();
        }
        let ws = self.ws.as_mut().ok_or("not connected")?;
        self.rt.block_on(async {
            ws.send(Message::text(msg.to_string()))
                .await
                .map_err(|e| e.to_string())?;
            let deadline = tokio::time::Instant::now() + BROWSER_WAIT;
            let mut seen = Vec::new();
            loop {
                let frame = tokio::time::timeout_at(deadline, ws.next())
                    .await
                    .map_err(|_| format!("no answer to {method}"))?
                    .ok_or("DevTools closed")?
                    .map_err(|e| e.to_string())?;
                let Message::Text(text) = frame else { continue };
                let v: Value = serde_json::from_str(text.as_str()).map_err(|e| e.to_string())?;
                if v["id"] == id {
                    return match v.get("error") {
                        Some(e) => Err(format!("{method}: {e}")),
                        None => Ok((v["result"].clone(), seen)),
                    };
                }
                if !event.is_empty() && v["method"] == event && v["sessionId"].as_str() == session {
                    seen.push(v["params"].clone());
                }
            }
        })
    }

    /// The isolated worlds an extension has made in the page's top frame (their contexts'
    /// descriptions), as DevTools reports them when asked for the page's contexts.
    pub(crate) fn isolated_worlds(&mut self, page: &Page) -> Vec<Value> {
        let (_, created) = self
            .try_send_seeing(
                Some(&page.session),
                "Runtime.enable",
                json!({}),
                "Runtime.executionContextCreated",
            )
            .unwrap_or_else(|e| panic!("{e}"));
        self.send(Some(&page.session), "Runtime.disable", json!({}));
        let top = self.send(Some(&page.session), "Page.getFrameTree", json!({}))["frameTree"]
            ["frame"]["id"]
            .clone();
        created
            .into_iter()
            .map(|c| c["context"].clone())
            .filter(|c| c["auxData"]["type"] == "isolated" && c["auxData"]["frameId"] == top)
            .collect()
    }

    pub(crate) fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.try_send(session, method, params)
            .unwrap_or_else(|e| panic!("{e}\n--- chromium ---\n{}", self.log_tail()))
    }

    /// A new tab showing `url`, attached, the focused one.
    pub(crate) fn open(&mut self, url: &str) -> Page {
        self.open_tab(url, false)
    }

    /// As `open`, in a tab behind the focused one (as a link opened in a new tab).
    pub(crate) fn open_behind(&mut self, url: &str) -> Page {
        self.open_tab(url, true)
    }

    fn open_tab(&mut self, url: &str, background: bool) -> Page {
        let params = json!({"url": url, "background": background});
        let target = self.send(None, "Target.createTarget", params)["targetId"].clone();
        let page = self.attach_to(target.as_str().unwrap().to_owned());
        self.wait_for(
            &page,
            &format!("{url} to load"),
            &format!(
                "location.href === {} && document.readyState === 'complete'",
                json!(url)
            ),
        );
        page
    }

    /// Shows `url` in place of the launch's `about:blank` tab, with no DevTools session on it:
    /// as a person opens a page once the browser is up.
    pub(crate) fn show(&mut self, url: &str) {
        let blank: Vec<String> = self.send(None, "Target.getTargets", json!({}))["targetInfos"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["type"] == "page" && t["url"] == "about:blank")
            .map(|t| t["targetId"].as_str().unwrap().to_owned())
            .collect();
        self.send(None, "Target.createTarget", json!({"url": url}));
        for target in blank {
            self.send(None, "Target.closeTarget", json!({"targetId": target}));
        }
    }

    /// Evaluates an expression in the page (promises awaited) and returns its JSON value.
    pub(crate) fn try_eval(&mut self, page: &Page, expr: &str) -> Result<Value, String> {
        let r = self.try_send(
            Some(&page.session),
            "Runtime.evaluate",
            json!({"expression": expr, "awaitPromise": true, "returnByValue": true}),
        )?;
        match r.get("exceptionDetails") {
            Some(ex) => Err(format!("{expr}: {ex}")),
            None => Ok(r["result"]["value"].clone()),
        }
    }

    pub(crate) fn eval(&mut self, page: &Page, expr: &str) -> Value {
        self.try_eval(page, expr).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Polls `expr` until it is truthy; returns its value.
    pub(crate) fn wait_for(&mut self, page: &Page, what: &str, expr: &str) -> Value {
        let start = Instant::now();
        let mut last;
        loop {
            match self.try_eval(page, expr) {
                Ok(v)
                    if !matches!(v, Value::Null | Value::Bool(false))
                        && v != json!(0)
                        && v != json!("") =>
                {
                    return v
                }
                Ok(v) => last = v,
                Err(e) => last = Value::String(e),
            }
            if start.elapsed() > BROWSER_WAIT {
                let body = self
                    .try_eval(page, "document.body?.innerText")
                    .unwrap_or_default();
                panic!("timed out waiting for {what}: {last}\n--- page text ---\n{body}\n--- chromium ---\n{}", self.log_tail());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn viewport(&mut self, page: &Page, width: u32, height: u32) {
        self.send(
            Some(&page.session),
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
    }

    pub(crate) fn color_scheme(&mut self, page: &Page, dark: bool) {
        self.send(
            Some(&page.session),
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": scheme(dark)}]}),
        );
        self.wait_for(
            page,
            "the colour scheme",
            &format!("matchMedia('(prefers-color-scheme: dark)').matches === {dark}"),
        );
    }

    /// A PNG of the whole page (not only the viewport).
    pub(crate) fn screenshot(&mut self, page: &Page, path: &Path) {
        let size = self.eval(
            page,
            "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]",
        );
        let shot = self.send(
            Some(&page.session),
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true,
                   "clip": {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1}}),
        );
        let png = base64_decode(shot["data"].as_str().unwrap());
        assert_eq!(&png[1..4], b"PNG", "a PNG");
        std::fs::write(path, png).unwrap();
    }

    /// A key press as the keyboard sends it (Tab, Space, Enter).
    pub(crate) fn press(&mut self, page: &Page, key: &str) {
        let (key, code, vk, text) = match key {
            "Tab" => ("Tab", "Tab", 9, None),
            "Space" => (" ", "Space", 32, Some(" ")),
            "Enter" => ("Enter", "Enter", 13, Some("\r")),
            other => panic!("no key {other}"),
        };
        let mut down = json!({"type": if text.is_some() { "keyDown" } else { "rawKeyDown" },
            "key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk});
        if let Some(t) = text {
            down["text"] = t.into();
        }
        self.send(Some(&page.session), "Input.dispatchKeyEvent", down);
        self.send(
            Some(&page.session),
            "Input.dispatchKeyEvent",
            json!({"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk}),
        );
    }

    /// Focuses an element, waiting until it can take focus (a disabled control cannot: the
    /// page may not have caught up with a change yet).
    pub(crate) fn focus(&mut self, page: &Page, id: &str) {
        self.wait_for(
            page,
            &format!("#{id} to take focus"),
            &format!("(() => {{ const e = document.getElementById('{id}'); e.focus(); return document.activeElement === e; }})()"),
        );
    }

    /// The ids of the first `n` elements Tab reaches from the top of the page.
    pub(crate) fn tab_order(&mut self, page: &Page, n: usize) -> Vec<String> {
        self.eval(page, "document.activeElement?.blur(); window.focus()");
        (0..n)
            .map(|_| {
                self.press(page, "Tab");
                self.eval(
                    page,
                    "document.activeElement?.id || document.activeElement?.tagName",
                )
                .as_str()
                .unwrap_or_default()
                .to_owned()
            })
            .collect()
    }

    /// Attaches to the tab already showing `url` (the one the browser was launched with).
    pub(crate) fn attach(&mut self, url: &str) -> Page {
        let start = Instant::now();
        let target = loop {
            let targets = self.send(None, "Target.getTargets", json!({}));
            let found = targets["targetInfos"].as_array().and_then(|ts| {
                ts.iter()
                    .find(|t| t["type"] == "page" && t["url"] == url)
                    .map(|t| t["targetId"].as_str().unwrap().to_owned())
            });
            if let Some(t) = found {
                break t;
            }
            if start.elapsed() > BROWSER_WAIT {
                panic!("no tab showing {url}: {targets}");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        self.attach_to(target)
    }

    /// Waits until the extension has loaded (its service worker is a target). `--load-extension`
    /// loads it while the start-up tab already loads, so a page that must run the extension's
    /// `document_start` scripts is shown after this, not given on the command line.
    pub(crate) fn wait_for_extension(&mut self) {
        let start = Instant::now();
        while let Err(targets) = self.worker_target() {
            if start.elapsed() > BROWSER_WAIT {
                panic!("the extension did not start in {BROWSER_WAIT:?}: {targets}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A DevTools session on the extension's service worker (it runs while a daemon is
    /// connected).
    pub(crate) fn worker(&mut self) -> Page {
        let target = self
            .worker_target()
            .unwrap_or_else(|targets| panic!("no service worker of the extension: {targets}"));
        self.attach_to(target)
    }

    /// The extension's service worker's target id, or every target there is.
    fn worker_target(&mut self) -> Result<String, Value> {
        let prefix = format!(
            "chrome-extension://{}/",
            crate::support::chromium::EXTENSION_ID
        );
        let targets = self.send(None, "Target.getTargets", json!({}));
        targets["targetInfos"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| {
                t["type"] == "service_worker"
                    && t["url"].as_str().is_some_and(|u| u.starts_with(&prefix))
            })
            .map(|t| t["targetId"].as_str().unwrap().to_owned())
            .ok_or(targets)
    }

    /// A DevTools session on this target.
    fn attach_to(&mut self, target: String) -> Page {
        let session = self.send(
            None,
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
        )["sessionId"]
            .as_str()
            .unwrap()
            .to_owned();
        Page { session, target }
    }

    /// The person chooses *Allow everywhere* in the extension's settings page (see
    /// [`crate::support::chromium::ALLOW_EVERYWHERE`]), which then closes.
    pub(crate) fn allow_everywhere(&mut self) {
        let url = format!(
            "chrome-extension://{}/ui/options.html",
            crate::support::chromium::EXTENSION_ID
        );
        let options = self.open(&url);
        let chosen = self.eval(&options, crate::support::chromium::ALLOW_EVERYWHERE);
        assert_eq!(chosen, json!(true), "Allow everywhere, in the options page");
        self.close_page(&options);
    }

    /// Closes one tab, as a person closes it.
    pub(crate) fn close_page(&mut self, page: &Page) {
        self.send(None, "Target.closeTarget", json!({"targetId": page.target}));
    }

    /// SIGKILL to the browser process alone, as in a crash: its helpers and the native host
    /// must notice by themselves.
    pub(crate) fn kill_main(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Closes the browser as a person would (profile written to disk), then waits for it.
    pub(crate) fn close(mut self) {
        let _ = self.try_send(None, "Browser.close", json!({}));
        let start = Instant::now();
        while start.elapsed() < BROWSER_WAIT {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "chromium did not exit after Browser.close:\n{}",
            self.log_tail()
        );
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The whole group: the browser and whatever helpers are left.
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= val(c) << (18 - 6 * i);
        }
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

pub(crate) fn scheme(dark: bool) -> &'static str {
    if dark {
        "dark"
    } else {
        "light"
    }
}
