//! Browsers the daemon launches and looks after (issue 32), for pipelines with no person and
//! no desktop: `browserctl browser launch` starts one with our extension loaded and our
//! native host installed into the profile it creates, so it connects to this daemon alone
//! under a session id the daemon chose (its browser ref is reserved before it starts).
//!
//! - [`find`]: which browser, and where its executable is (config, else PATH; never downloaded).
//! - [`profile`]: the profile directory and the command line.
//! - [`process`]: a process group of its own, started from one long-lived thread with a
//!   parent-death signal; SIGTERM, then SIGKILL after `close-grace`.
//! - [`ledger`]: a record per launch, so the next start stops what a killed daemon left.
//! - [`table`]: what runs now, kept in the [`Daemon`].
//! - [`bidi`]: WebDriver BiDi with a Firefox it launched, for trusted input (issue 57).
//! - [`supervise`]: one task per browser: waits for it, reports an exit, restarts on request,
//!   and closes it (a persistent profile's tabs first, so it exits in order and writes its
//!   cookies).
//!
//! May import what is below it in `daemon/mod.rs`'s order, `calls/` on down. [`table`] and
//! [`process`] are entries of their own there, below `context.rs`: the Daemon holds the
//! table (and the table the thread that starts browsers), so they import nothing of the folder
//! above them and nothing that imports the Daemon.

pub mod bidi;
mod find;
mod ledger;
mod process;
pub mod profile;
mod supervise;
pub mod table;

pub use ledger::sweep;

use crate::daemon::context::Daemon;
use crate::daemon::registry::BrowserKey;
use crate::error::{Error, ErrorCode};
use crate::protocol::bridge::DIALECT;
use crate::protocol::input::{InputDone, InputRequest};
use crate::protocol::managed::{state, LaunchRequest, Launchable, LaunchableBrowser, ManagedView};
use find::Kind;
use profile::{HostSpec, Layout};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use supervise::Plan;
use table::Entry;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The directory of temporary profiles and launch records.
pub fn managed_dir(d: &Daemon) -> PathBuf {
    d.config()
        .managed_dir
        .clone()
        .unwrap_or_else(crate::paths::default_managed_dir)
}

/// No display to show a window on: a service, a CI runner, ssh.
fn no_display() -> bool {
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .all(|v| std::env::var_os(v).is_none_or(|v| v.is_empty()))
}

fn launch_failed(message: String, log: &Path, tail: Vec<String>) -> Error {
    Error::new(ErrorCode::LaunchFailed, message)
        .with_details(json!({"log": log.display().to_string(), "tail": tail}))
}

/// The extension a launched browser loads: configured, else installed beside the binaries,
/// else this source tree's; refused unless only the user or root can change it.
fn extension_dir(configured: Option<&Path>) -> Result<PathBuf, Error> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    match configured {
        Some(dir) => candidates.push(dir.to_path_buf()),
        None => {
            if let Some(bin) = std::env::current_exe()
                .ok()
                .and_then(|e| e.parent().map(Path::to_path_buf))
            {
                candidates.push(bin.join("../share/browser-mcp/extension"));
            }
            candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("extension"));
        }
    }
    let found = candidates
        .iter()
        .find(|d| d.join("manifest.json").is_file())
        .and_then(|d| std::fs::canonicalize(d).ok());
    if let Some(dir) = &found {
        // Its code sees every call and is handed the daemon's token: another user who could
        // change it (binaries under /tmp, a shared prefix) would own the browser (issue 58,
        // item 2).
        crate::trust::check_path(dir).map_err(|u| {
            Error::new(
                ErrorCode::LaunchFailed,
                format!(
                    "refusing to load the extension at {}: {u}, so another user could change \
                     the code a launched browser runs; install it where only you or root can \
                     write ({}), or set the daemon's --extension-dir to such a copy",
                    dir.display(),
                    u.fix()
                ),
            )
        })?;
    }
    found.ok_or_else(|| {
        Error::new(
            ErrorCode::LaunchFailed,
            format!(
                "no extension to load: looked in {}; set the daemon's --extension-dir",
                candidates
                    .iter()
                    .map(|c| c.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })
}

/// `browserctl`, which the profile's native host runs: beside this daemon's executable.
fn browserctl() -> Result<PathBuf, Error> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::internal(format!("cannot find our own executable: {e}")))?;
    let ctl = exe.with_file_name("browserctl");
    if ctl.is_file() {
        Ok(ctl)
    } else {
        Err(Error::new(
            ErrorCode::LaunchFailed,
            format!(
                "{} is missing: a launched browser's native host runs it (install browserctl beside browser-mcpd)",
                ctl.display()
            ),
        ))
    }
}

fn new_session() -> String {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("managed-{hex}")
}

/// Launches a browser and answers once its extension has listed its first tab.
pub async fn launch(d: &Arc<Daemon>, req: LaunchRequest) -> Result<ManagedView, Error> {
    if d.draining.is_cancelled() {
        return Err(Error::new(
            ErrorCode::ShuttingDown,
            "the daemon is shutting down",
        ));
    }
    let c = d.config();
    let want = req
        .browser
        .as_deref()
        .or(c.launch_browser.as_deref())
        .map(Kind::parse)
        .transpose()?;
    let url = req
        .url
        .clone()
        .unwrap_or_else(|| supervise::BLANK.to_owned());
    // A URL is never a flag of the browser's.
    if url.is_empty() || url.starts_with('-') || url.chars().any(char::is_control) {
        return Err(Error::bad_request(format!("`{url}` is not a URL to open")));
    }
    let path = std::env::var_os("PATH");
    let found = find::find(want, &c.browser_paths, path.as_deref())?;
    let extension = extension_dir(c.extension_dir.as_deref())?;
    let browserctl = browserctl()?;
    let headless = req.headless.unwrap_or_else(no_display);
    let session = new_session();
    let dir = managed_dir(d);
    ledger::ensure_dir(&dir).map_err(|e| Error::internal(format!("{}: {e}", dir.display())))?;
    let (root, temporary) = match &req.profile {
        Some(name) => {
            if !profile::valid_name(name) {
                return Err(Error::bad_request(format!(
                    "`{name}` is not a profile name: letters, digits, `.`, `_` and `-`, not starting with `.`"
                )));
            }
            let base = c
                .profiles_dir
                .clone()
                .unwrap_or_else(crate::paths::default_profiles_dir);
            (base.join(name).join(found.kind.name()), false)
        }
        None => (dir.join(&session), true),
    };
    let layout = Layout { root };
    let profile_dir = layout.profile().display().to_string();
    if let Some(user) = d.managed.profile_user(&profile_dir) {
        return Err(Error::bad_request(format!(
            "profile `{}` is in use by {user}; close it first (browserctl browser close {user})",
            req.profile.as_deref().unwrap_or_default()
        )));
    }
    let key = d.registry.reserve(DIALECT, &session);
    let host = HostSpec {
        browserctl: &browserctl,
        discovery_dir: d.runtime.discovery_file.parent().unwrap_or(Path::new("/")),
        session: &session,
        daemon_pid: std::process::id(),
    };
    // Recorded before anything is created, so a daemon killed from here on leaves nothing
    // the next start does not find.
    let record = ledger::Record {
        daemon_pid: std::process::id(),
        daemon_start: process::start_time(std::process::id()).unwrap_or(0),
        pid: 0,
        pid_start: 0,
        root: layout.root.clone(),
        temporary,
    };
    ledger::write(&dir, &session, &record)
        .map_err(|e| Error::internal(format!("{}: {e}", dir.display())))?;
    let extension = match profile::prepare(&layout, found.kind, &host, &extension, req.input) {
        Ok(loaded) => loaded,
        Err(e) => {
            if temporary {
                let _ = std::fs::remove_dir_all(&layout.root);
            }
            ledger::remove(&dir, &session);
            return Err(Error::internal(format!(
                "cannot prepare the profile {}: {e}",
                layout.root.display()
            )));
        }
    };
    let flags = c
        .browser_flags
        .iter()
        .filter_map(|f| {
            let (k, flag) = f.split_once('=')?;
            (Kind::parse(k.trim()).ok()? == found.kind).then(|| flag.to_owned())
        })
        .collect();
    let view = ManagedView {
        browser: key.to_string(),
        session_id: session.clone(),
        kind: found.kind.name().to_owned(),
        executable: found.exe.display().to_string(),
        pid: None,
        headless,
        profile: req.profile.clone(),
        profile_dir,
        state: state::STARTING.to_owned(),
        restart: req.restart,
        input: req.input,
        restarts: 0,
        launched_at: crate::time::now_rfc3339(),
        exit: None,
        tab: None,
        log: layout.log().display().to_string(),
    };
    let (tx, mut rx) = watch::channel(view);
    let stop = CancellationToken::new();
    d.managed.insert(
        session.clone(),
        Entry {
            key,
            view: tx,
            stop: stop.clone(),
            bidi: None,
        },
    );
    tracing::info!(browser = %key, kind = found.kind.name(), exe = %found.exe.display(), headless, "launching a browser");
    // A web page is opened once the extension is up: one that loads while the browser is
    // still loading its extension gets the page-world scripts late (the WebMCP adapter after
    // the page registered its tools, no console relay for its frames). Other URLs (file:,
    // data:), which the extension does not open, go on the command line as before.
    let start_blank = url.starts_with("http://") || url.starts_with("https://");
    let plan = Plan {
        found,
        headless,
        url: url.clone(),
        start_blank,
        extension,
        flags,
        layout: layout.clone(),
        temporary,
        restart: req.restart,
        input: req.input,
        record,
        dir,
        input_settled: CancellationToken::new(),
    };
    let input_settled = plan.input_settled.clone();
    d.tasks.spawn(supervise::run(
        d.clone(),
        session.clone(),
        key,
        plan,
        stop.clone(),
    ));

    let limit = req
        .timeout_ms
        .map(Duration::from_millis)
        .unwrap_or(c.launch_timeout);
    let deadline = tokio::time::Instant::now() + limit;
    let mut events = d.registry.subscribe(None).live;
    let failure = loop {
        if let Some(tab) = d.registry.tab_views(Some(key)).into_iter().next() {
            d.managed.update(&session, |v| {
                if v.state == state::STARTING {
                    v.state = state::RUNNING.to_owned();
                }
            });
            let opened = if start_blank {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                open_first_page(d, key, &tab.tab_ref, &url, left).await
            } else {
                Ok(tab.tab_ref)
            };
            match opened {
                Ok(tab_ref) => {
                    // Within the launch's time; past it, trusted input follows when it can.
                    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                    let _ = tokio::time::timeout(left, input_settled.cancelled()).await;
                    let mut v = rx.borrow().clone();
                    v.tab = Some(tab_ref);
                    tracing::info!(browser = %key, tab = v.tab.as_deref().unwrap_or(""), "launched browser is up");
                    return Ok(v);
                }
                Err(e) => {
                    break format!("{} started, but {url} did not open: {e}", rx.borrow().kind)
                }
            }
        }
        let v = rx.borrow().clone();
        if v.state == state::EXITED || v.state == state::CLOSED {
            break format!(
                "{} exited ({}) before its extension listed a tab",
                v.kind,
                v.exit.as_deref().unwrap_or("?")
            );
        }
        tokio::select! {
            _ = events.recv() => {}
            _ = rx.changed() => {}
            _ = tokio::time::sleep_until(deadline) => break format!(
                "{} started, but its extension did not list a tab within {limit:?} (--launch-timeout)",
                v.kind
            ),
            _ = d.draining.cancelled() => break "the daemon is shutting down".to_owned(),
        }
    };
    let tail = profile::log_tail(&layout, 8);
    let _ = close(d, &session).await;
    let hint = if failure.contains("firefox") {
        "; release Firefox refuses the unsigned extension: use Firefox ESR, Developer Edition or Nightly"
    } else {
        ""
    };
    Err(launch_failed(
        format!("{failure}{hint}"),
        &layout.log(),
        tail,
    ))
}

/// Opens `url` in a browser just up (its start-up tab `blank` listed) and closes that tab; the
/// new tab's ref.
async fn open_first_page(
    d: &Arc<Daemon>,
    key: crate::daemon::registry::BrowserKey,
    blank: &str,
    url: &str,
    limit: Duration,
) -> Result<String, Error> {
    let ms = Some(limit.as_millis().max(1) as u64);
    let tab = crate::daemon::calls::open_tab(
        d,
        crate::protocol::control::OpenTabRequest {
            url: url.to_owned(),
            focus: true,
            browser: Some(key.to_string()),
            timeout_ms: ms,
            group: None,
        },
    )
    .await?;
    if let Err(e) = crate::daemon::calls::close_tab(d, blank, ms).await {
        tracing::debug!(browser = %key, tab = blank, error = %e, "the start-up tab stays");
    }
    Ok(tab.tab_ref)
}

/// Closes a browser the daemon launched (by its ref or session id): a persistent profile's
/// tabs first (through its extension, `close-grace` to exit), then SIGTERM to its process
/// group, SIGKILL after `close-grace`; a temporary profile is removed.
pub async fn close(d: &Arc<Daemon>, reference: &str) -> Result<ManagedView, Error> {
    let Some((session, mut rx, stop)) = d.managed.find(reference) else {
        let own = d
            .registry
            .browser_views()
            .into_iter()
            .any(|b| b.id == reference || b.session_id == reference);
        return Err(Error::new(
            ErrorCode::NotFound,
            if own {
                format!("{reference} is not a browser this daemon launched: it is the user's own, and stays open")
            } else {
                format!("no browser `{reference}` launched by this daemon; browserctl browser list shows them")
            },
        ));
    };
    if rx.borrow().state == state::EXITED {
        d.managed.remove(&session);
        let mut v = rx.borrow().clone();
        v.state = state::CLOSED.to_owned();
        return Ok(v);
    }
    stop.cancel();
    let limit = 2 * d.config().close_grace + Duration::from_secs(10);
    let _ = tokio::time::timeout(limit, async {
        while rx.borrow().state != state::CLOSED {
            if rx.changed().await.is_err() {
                break;
            }
        }
    })
    .await;
    let v = rx.borrow().clone();
    Ok(v)
}

/// Trusted input an extension asks for in a browser this daemon launched (issue 57), performed
/// over the daemon's WebDriver BiDi session with it: the `inputDone` frame that answers.
pub async fn input(d: &Daemon, session: &str, key: BrowserKey, req: InputRequest) -> String {
    let outcome = match d.managed.bidi(session, key) {
        Some(b) => b.perform(&req).await,
        None => Err(bidi::unsupported(
            "this daemon has no WebDriver BiDi session with the browser (it did not launch it, or its Remote Agent did not answer)",
        )),
    };
    InputDone {
        session_id: session,
        request_id: &req.request_id,
        error: outcome.err(),
    }
    .to_json()
}

/// Closes every browser the daemon launched (at shutdown), in parallel.
pub async fn close_all(d: &Arc<Daemon>) {
    let all = d.managed.all();
    if all.is_empty() {
        return;
    }
    tracing::info!(
        browsers = all.len(),
        "closing the browsers this daemon launched"
    );
    let limit = 2 * d.config().close_grace + Duration::from_secs(10);
    let waits = all.into_iter().map(|(mut rx, stop)| async move {
        stop.cancel();
        while ![state::CLOSED, state::EXITED].contains(&rx.borrow().state.as_str()) {
            if rx.changed().await.is_err() {
                break;
            }
        }
    });
    let _ = tokio::time::timeout(limit, futures_util::future::join_all(waits)).await;
}

/// What `GET /v1/browsers/launchable` answers: each kind found, in the order a launch that
/// names none tries them.
pub fn launchable(d: &Daemon) -> Launchable {
    let c = d.config();
    let path = std::env::var_os("PATH");
    let browsers = Kind::ALL
        .iter()
        .filter_map(|k| find::find(Some(*k), &c.browser_paths, path.as_deref()).ok())
        .map(|f| LaunchableBrowser {
            kind: f.kind.name().to_owned(),
            executable: f.exe.display().to_string(),
        })
        .collect();
    let extension = extension_dir(c.extension_dir.as_deref());
    Launchable {
        browsers,
        path: path
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default(),
        extension: extension.as_ref().ok().map(|p| p.display().to_string()),
        extension_missing: extension.err().map(|e| e.message),
    }
}

/// The managed browsers as `GET /v1/browsers` shows them: one whose extension is connected
/// is `running`.
pub fn views(d: &Daemon) -> Vec<ManagedView> {
    let connected: Vec<String> = d
        .registry
        .browser_views()
        .into_iter()
        .map(|b| b.id)
        .collect();
    d.managed
        .views()
        .into_iter()
        .map(|mut v| {
            if v.state == state::STARTING && connected.contains(&v.browser) {
                v.state = state::RUNNING.to_owned();
            }
            v
        })
        .collect()
}
