//! One task per launched browser: starts it, waits for it to exit or to be closed, stops its
//! whole process group, reports an exit (event `browserExited`), restarts it when asked to
//! (`--restart on-failure`), and removes a temporary profile and the launch record at the end.

use super::bidi::{Bidi, NoSession};
use super::find::Found;
use super::ledger::{self, Record};
use super::process::{self, describe, group_gone, signal_group};
use super::profile::{self, Launch, Layout};
use crate::daemon::context::Daemon;
use crate::daemon::registry::BrowserKey;
use crate::protocol::managed::{state, InputChoice, RestartPolicy};
use nix::sys::signal::Signal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The page of a launch that names none, and of a first start before its web page opens.
pub const BLANK: &str = "about:blank";

/// Restarts of one browser before the daemon gives up on it.
const MAX_RESTARTS: u32 = 5;

/// Everything needed to start the browser again.
pub struct Plan {
    pub found: Found,
    pub headless: bool,
    pub url: String,
    /// The first start opens about:blank, and `launch` opens `url` once the extension is up.
    pub start_blank: bool,
    pub extension: PathBuf,
    pub flags: Vec<String>,
    pub layout: Layout,
    pub temporary: bool,
    pub restart: RestartPolicy,
    pub input: InputChoice,
    pub record: Record,
    /// The managed directory (launch records).
    pub dir: PathBuf,
    /// Cancelled once a Firefox's first start has its BiDi session, or cannot have one:
    /// `launch` answers after it, so the first action already has trusted input (Firefox
    /// answers `session.new` about a second after the extension is up).
    pub input_settled: CancellationToken,
}

/// SIGTERM to the browser, SIGKILL to what is left of its group after `grace`. The browser
/// alone is asked: its helpers (Chromium's network service owns the cookie store) must live
/// until it has shut down in order, or what it still had to write is lost.
async fn terminate(pgid: u32, grace: Duration) {
    let leader = nix::unistd::Pid::from_raw(pgid as i32);
    if nix::sys::signal::kill(leader, Signal::SIGTERM).is_err() && !process::group_alive(pgid) {
        return;
    }
    if !group_gone(pgid, grace).await {
        tracing::warn!(
            pid = pgid,
            "a launched browser outlived SIGTERM by {grace:?}; SIGKILL"
        );
        signal_group(pgid, Signal::SIGKILL);
        group_gone(pgid, Duration::from_secs(5)).await;
    }
}

/// Closes a browser's tabs through its extension and gives it `grace`, all told, to exit on
/// its own; false when it is still running. Chromium keeps new cookies in memory for up to
/// 30 s and, headless, does not write them at a SIGTERM; Firefox does, but a loaded machine
/// can keep its SIGTERM shutdown past `grace` and the SIGKILL then loses them. A browser whose
/// last window closes shuts down in order and writes them, so a login made just before
/// `browser close` is kept; a SIGTERM still follows, with its own `grace`, if it does not.
async fn close_tabs(d: &Daemon, key: BrowserKey, pgid: u32, grace: Duration) -> bool {
    let tabs = d.registry.tab_views(Some(key));
    if tabs.is_empty() {
        return false;
    }
    let ms = grace.as_millis().max(1) as u64;
    let closed = async {
        let mut asked = 0;
        for tab in &tabs {
            // The last close may go unanswered: the browser exits with it.
            match crate::daemon::calls::close_tab(d, &tab.tab_ref, Some(ms)).await {
                Ok(_) => asked += 1,
                Err(e) => {
                    tracing::debug!(tab = %tab.tab_ref, error = %e, "not closed by the extension")
                }
            }
        }
        // Nothing closed (an extension that refuses): no reason to wait for an exit.
        asked > 0 && group_gone(pgid, grace).await
    };
    tokio::time::timeout(grace, closed).await.unwrap_or(false)
}

/// Takes the BiDi session of a Firefox just started. Without one it has no trusted input; one
/// another program took first means that program could drive the agent's browser, which is
/// then closed.
async fn take_bidi(
    d: &Daemon,
    session: &str,
    key: BrowserKey,
    profile: &Path,
    alive: &CancellationToken,
    stop: &CancellationToken,
    settled: &CancellationToken,
) {
    let _settled = settled.clone().drop_guard();
    match Bidi::connect(profile, d.config().launch_timeout, alive, &d.tasks).await {
        Ok(bidi) if !alive.is_cancelled() => {
            tracing::info!(browser = %key, "WebDriver BiDi session taken: trusted input");
            d.managed.set_bidi(session, Some(bidi));
        }
        Ok(_) => {}
        Err(NoSession::Unavailable(e)) => {
            tracing::warn!(browser = %key, "no trusted input in this Firefox: {e}")
        }
        Err(NoSession::Taken(e)) => {
            tracing::error!(browser = %key, "{e}; closing the browser");
            stop.cancel();
        }
    }
}

pub async fn run(
    d: Arc<Daemon>,
    session: String,
    key: BrowserKey,
    plan: Plan,
    stop: CancellationToken,
) {
    let m = &d.managed;
    let mut restarts = 0;
    let mut record = plan.record.clone();
    let expected = loop {
        let launch = Launch {
            found: &plan.found,
            headless: plan.headless,
            url: if plan.start_blank && restarts == 0 {
                BLANK
            } else {
                &plan.url
            },
            extension: &plan.extension,
            flags: plan.flags.clone(),
            input: plan.input,
        };
        if plan.found.kind.firefox() {
            // Each start writes its own; a restart must not read the last one's port (gone, or
            // by now another program's).
            let _ = std::fs::remove_file(plan.layout.profile().join(super::bidi::SERVER_FILE));
        }
        let child = match profile::command(&plan.layout, &launch) {
            Ok(cmd) => m.spawner.spawn(cmd).await,
            Err(e) => Err(e),
        };
        let mut child = match child {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(browser = %key, "cannot start {}: {e}", plan.found.exe.display());
                m.update(&session, |v| {
                    v.state = state::EXITED.to_owned();
                    v.exit = Some(format!("could not start: {e}"));
                });
                break false;
            }
        };
        let pid = child.id();
        record.pid = pid;
        record.pid_start = process::start_time(pid).unwrap_or(0);
        if let Err(e) = ledger::write(&plan.dir, &session, &record) {
            tracing::warn!(browser = %key, "cannot record the launch: {e}");
        }
        m.update(&session, |v| {
            v.pid = Some(pid);
            v.state = state::STARTING.to_owned();
        });
        // This start's BiDi session, for a Firefox's trusted input; it ends with the start.
        let alive = CancellationToken::new();
        if plan.found.kind.firefox() && plan.input.is_trusted() {
            let profile = plan.layout.profile();
            let (d, session, stop, alive) =
                (d.clone(), session.clone(), stop.clone(), alive.clone());
            let settled = plan.input_settled.clone();
            d.tasks.clone().spawn(async move {
                take_bidi(&d, &session, key, &profile, &alive, &stop, &settled).await
            });
        } else {
            plan.input_settled.cancel();
        }
        // A blocking wait on a thread of the pool: the child is reaped the moment it exits,
        // so an empty process group means every process is gone.
        let mut waited = tokio::task::spawn_blocking(move || child.wait());
        let exited = tokio::select! {
            r = &mut waited => Some(r),
            _ = stop.cancelled() => None,
            _ = d.shutdown.cancelled() => None,
        };
        alive.cancel();
        m.set_bidi(&session, None);
        let asked = exited.is_none();
        let status = match exited {
            Some(r) => {
                // What the browser left in its group (renderers, the native host) goes with it.
                signal_group(pid, Signal::SIGKILL);
                group_gone(pid, Duration::from_secs(5)).await;
                r
            }
            None => {
                m.update(&session, |v| v.state = state::CLOSING.to_owned());
                let grace = d.config().close_grace;
                // A temporary profile has nothing worth an orderly exit's seconds.
                let by_itself = !plan.temporary && close_tabs(&d, key, pid, grace).await;
                tracing::debug!(browser = %key, by_itself, "asked a launched browser to close");
                if !by_itself {
                    terminate(pid, grace).await;
                }
                waited.await
            }
        };
        let exit = match status {
            Ok(Ok(status)) => describe(status),
            Ok(Err(e)) => format!("unknown ({e})"),
            Err(e) => format!("unknown ({e})"),
        };
        let again = !asked
            && plan.restart == RestartPolicy::OnFailure
            && restarts < MAX_RESTARTS
            && !d.draining.is_cancelled();
        d.registry.browser_exited(key, exit.clone(), asked, again);
        if asked {
            tracing::info!(browser = %key, exit, "closed a launched browser");
        } else {
            tracing::warn!(browser = %key, exit, restarting = again, "a launched browser exited");
        }
        m.update(&session, |v| {
            v.pid = None;
            v.exit = Some(exit.clone());
        });
        if !again {
            if !asked {
                m.update(&session, |v| v.state = state::EXITED.to_owned());
            }
            break asked;
        }
        restarts += 1;
        m.update(&session, |v| {
            v.state = state::RESTARTING.to_owned();
            v.restarts = restarts;
        });
        let pause = Duration::from_secs(1 << (restarts - 1).min(5));
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = stop.cancelled() => break true,
            _ = d.shutdown.cancelled() => break true,
        }
    };
    if plan.temporary {
        let _ = std::fs::remove_dir_all(&plan.layout.root);
    }
    ledger::remove(&plan.dir, &session);
    if expected {
        m.update(&session, |v| v.state = state::CLOSED.to_owned());
        m.remove(&session);
    }
}
