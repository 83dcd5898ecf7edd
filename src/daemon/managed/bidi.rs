//! WebDriver BiDi to a Firefox the daemon launched, for the one thing a WebExtension cannot do
//! there: input the page believes (issue 57).
//!
//! The channel, and why no other program on a shared machine can use it: Firefox is started
//! with its Remote Agent on a loopback port of its choosing (`--remote-debugging-port=0`; it
//! writes the port into the profile as `WebDriverBiDiServer.json`, and the profile directory is
//! the user's alone), and the daemon takes the agent's one session as soon as the port is
//! known. Firefox allows a single WebDriver session ("Maximum number of active sessions" to any
//! other `session.new`), and without a session a connection can only ask `session.status`;
//! the session outlives a closed connection, but Firefox (153) refuses to join it again at
//! `/session/<id>`, so a lost connection leaves the browser without trusted input, never open
//! to another program. Web pages cannot reach the port: Firefox refuses a WebSocket upgrade
//! that carries an `Origin` (`remote.allow-origins` is empty) or a `Host` that is not local.
//! The residual risk is the start itself: a local program that polls the profile-less port
//! range could take the session first, in the milliseconds between the agent listening and the
//! daemon asking; the daemon then gets "Maximum number of active sessions" and closes the
//! browser (`NoSession::Taken`), so that program never drives an agent's browser unnoticed.
//!
//! The extension asks for input with a bridge message (`protocol::input`); the daemon finds the
//! tab's top-level context by the probe the extension put into the tab's document, keeps the
//! pair, and performs the actions there.

use crate::protocol::bridge::TabId;
use crate::protocol::input::{code, InputError, InputRequest, MAX_ACTIONS_BYTES};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Where Firefox writes its BiDi server's address, in the profile.
pub const SERVER_FILE: &str = "WebDriverBiDiServer.json";
/// One command's answer: Firefox answers in milliseconds; a drag's paced moves take under 1 s.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
/// The sandbox the probe is read in, so that nothing of the page's own realm runs.
const SANDBOX: &str = "browser-mcp";
const PROBE_ATTRIBUTE: &str = "data-browser-mcp-input";

type Reply = Result<Value, String>;

/// Why there is no session.
pub enum NoSession {
    /// Firefox's Remote Agent cannot be reached or used: no trusted input in this browser.
    Unavailable(String),
    /// Another program holds the browser's one WebDriver session: it could drive the agent's
    /// browser, which is then closed.
    Taken(String),
}

pub struct Bidi {
    out: mpsc::UnboundedSender<Message>,
    // Why std Mutexes: a map operation under each, never an `.await`.
    waiting: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    /// The top-level context of each tab the extension probed.
    contexts: Mutex<HashMap<TabId, String>>,
    next: AtomicU64,
    /// Cancelled when the connection ends.
    pub gone: CancellationToken,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The BiDi server's port, once Firefox has written it into `profile` (a file from an earlier
/// start is removed before each start, `profile::prepare`).
async fn server_port(
    profile: &Path,
    limit: Duration,
    stop: &CancellationToken,
) -> Result<u16, String> {
    let file = profile.join(SERVER_FILE);
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Ok(text) = tokio::fs::read_to_string(&file).await {
            if let Some(port) = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["ws_port"].as_u64())
                .and_then(|p| u16::try_from(p).ok())
            {
                return Ok(port);
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("Firefox wrote no {SERVER_FILE} within {limit:?}"));
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            _ = stop.cancelled() => return Err("the browser went".into()),
        }
    }
}

impl Bidi {
    /// Connects to the Firefox whose profile is `profile` and takes its session; the connection
    /// ends with `stop`.
    pub async fn connect(
        profile: &Path,
        limit: Duration,
        stop: &CancellationToken,
        tasks: &TaskTracker,
    ) -> Result<Arc<Bidi>, NoSession> {
        let port = server_port(profile, limit, stop)
            .await
            .map_err(NoSession::Unavailable)?;
        let url = format!("ws://127.0.0.1:{port}/session");
        let connecting = tokio_tungstenite::connect_async(url.as_str());
        let (ws, _) = tokio::time::timeout(COMMAND_TIMEOUT, connecting)
            .await
            .map_err(|_| {
                NoSession::Unavailable(format!("Firefox's BiDi server ({url}) did not answer"))
            })?
            .map_err(|e| {
                NoSession::Unavailable(format!(
                    "cannot connect to Firefox's BiDi server ({url}): {e}"
                ))
            })?;
        let (mut sink, mut stream) = ws.split();
        let (out, mut outbox) = mpsc::unbounded_channel::<Message>();
        let bidi = Arc::new(Bidi {
            out,
            waiting: Mutex::default(),
            contexts: Mutex::default(),
            next: AtomicU64::new(1),
            gone: stop.child_token(),
        });
        let reader = bidi.clone();
        tasks.spawn(async move {
            loop {
                tokio::select! {
                    m = outbox.recv() => match m {
                        Some(m) => if sink.send(m).await.is_err() { break },
                        None => break,
                    },
                    m = stream.next() => match m {
                        Some(Ok(Message::Text(t))) => reader.answer(&t),
                        Some(Ok(_)) => {}
                        _ => break,
                    },
                    _ = reader.gone.cancelled() => break,
                }
            }
            reader.gone.cancel();
            for (_, w) in lock(&reader.waiting).drain() {
                let _ = w.send(Err("the BiDi connection closed".into()));
            }
        });
        // Prompts are the page's, the person's and the extension's (its dialog tools): the
        // session answers none of them (by default it would dismiss alerts and accept "Leave
        // page?" by itself).
        let capabilities =
            json!({"alwaysMatch": {"unhandledPromptBehavior": {"default": "ignore"}}});
        // Firefox answers session.new once its start-up is done: seconds on a busy machine.
        match bidi
            .command_within("session.new", json!({"capabilities": capabilities}), limit)
            .await
        {
            Ok(_) => Ok(bidi),
            Err(e) => {
                bidi.gone.cancel();
                Err(if e.contains("Maximum number of active sessions") {
                    NoSession::Taken(format!(
                        "another program took the browser's WebDriver session first ({e})"
                    ))
                } else {
                    NoSession::Unavailable(format!("Firefox refused a BiDi session: {e}"))
                })
            }
        }
    }

    fn answer(&self, text: &str) {
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let Some(id) = v["id"].as_u64() else {
            return; // an event: none is subscribed to
        };
        let Some(w) = lock(&self.waiting).remove(&id) else {
            return;
        };
        let reply = if v["type"] == "success" {
            Ok(v["result"].clone())
        } else {
            Err(format!(
                "{}: {}",
                v["error"].as_str().unwrap_or("error"),
                v["message"].as_str().unwrap_or("")
            ))
        };
        let _ = w.send(reply);
    }

    async fn command(&self, method: &str, params: Value) -> Reply {
        self.command_within(method, params, COMMAND_TIMEOUT).await
    }

    async fn command_within(&self, method: &str, params: Value, limit: Duration) -> Reply {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.waiting).insert(id, tx);
        let frame = json!({"id": id, "method": method, "params": params}).to_string();
        if self.out.send(Message::text(frame)).is_err() {
            lock(&self.waiting).remove(&id);
            return Err("the BiDi connection closed".into());
        }
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => Err("the BiDi connection closed".into()),
            Err(_) => {
                lock(&self.waiting).remove(&id);
                Err(format!("Firefox did not answer {method} within {limit:?}"))
            }
        }
    }

    /// The top-level context whose document shows `probe`: exactly one, or none is chosen.
    async fn find(&self, probe: &str) -> Result<String, InputError> {
        let tree = self
            .command("browsingContext.getTree", json!({"maxDepth": 0}))
            .await
            .map_err(tool_error)?;
        let contexts: Vec<String> = tree["contexts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["context"].as_str().map(str::to_owned))
            .collect();
        let expression = format!("document.documentElement?.getAttribute({PROBE_ATTRIBUTE:?})");
        let looks = contexts.iter().map(|context| {
            let params = json!({"expression": expression, "awaitPromise": false,
                "target": {"context": context, "sandbox": SANDBOX}});
            async move {
                let r = self.command("script.evaluate", params).await.ok()?;
                (r["result"]["value"].as_str() == Some(probe)).then(|| context.clone())
            }
        });
        let found: Vec<String> = futures_util::future::join_all(looks)
            .await
            .into_iter()
            .flatten()
            .collect();
        match found.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(unknown("no tab shows the probe")),
            _ => Err(tool_error(format!(
                "{} tabs show the probe, so none is acted on",
                found.len()
            ))),
        }
    }

    /// Performs the extension's `input` request.
    pub async fn perform(&self, req: &InputRequest) -> Result<(), InputError> {
        // Firefox keeps the session of a closed connection and lets nobody join it again: the
        // browser has no trusted input left, and the extension falls back, saying so.
        if self.gone.is_cancelled() {
            return Err(unsupported(
                "the daemon's WebDriver BiDi connection with this Firefox closed",
            ));
        }
        if req.actions.get().len() > MAX_ACTIONS_BYTES {
            return Err(tool_error(format!(
                "the actions weigh {} bytes, more than {MAX_ACTIONS_BYTES}",
                req.actions.get().len()
            )));
        }
        let actions: Value = serde_json::from_str(req.actions.get()).map_err(tool_error)?;
        if !actions.is_array() {
            return Err(tool_error("the actions are not a list of input sources"));
        }
        let context = match (&req.probe, lock(&self.contexts).get(&req.tab_id).cloned()) {
            (Some(probe), _) if probe.len() >= 16 => None,
            (Some(_), _) => return Err(tool_error("a probe is at least 16 characters")),
            (None, Some(c)) => Some(c),
            (None, None) => return Err(unknown("the daemon has not seen this tab yet")),
        };
        let context = match context {
            Some(c) => c,
            None => {
                let c = self.find(req.probe.as_deref().unwrap_or_default()).await?;
                lock(&self.contexts).insert(req.tab_id, c.clone());
                c
            }
        };
        let done = self
            .command(
                "input.performActions",
                json!({"context": context, "actions": actions}),
            )
            .await;
        match done {
            Ok(_) => Ok(()),
            Err(e) if e.starts_with("no such frame") => {
                lock(&self.contexts).remove(&req.tab_id);
                Err(unknown("the tab's context is gone"))
            }
            Err(e) => {
                // Nothing stays pressed for the next action.
                let _ = self
                    .command("input.releaseActions", json!({"context": context}))
                    .await;
                Err(tool_error(format!(
                    "Firefox did not perform the input: {e}"
                )))
            }
        }
    }

    /// A tab closed: its context is forgotten.
    pub fn forget(&self, tab: TabId) {
        lock(&self.contexts).remove(&tab);
    }
}

fn tool_error(e: impl std::fmt::Display) -> InputError {
    InputError {
        code: "TOOL_ERROR".into(),
        message: e.to_string(),
    }
}

fn unknown(why: &str) -> InputError {
    InputError {
        code: code::UNKNOWN_TAB.into(),
        message: why.into(),
    }
}

pub fn unsupported(why: &str) -> InputError {
    InputError {
        code: code::UNSUPPORTED.into(),
        message: why.into(),
    }
}
