//! What the daemon launched: one entry per browser, its view on a watch channel (so a launch
//! or a close can wait for its next state), and how to stop it. Kept in the
//! [`Daemon`](crate::daemon::context::Daemon), so it imports nothing that imports the Daemon;
//! the launching and supervising happen in the parent module.

use super::bidi::Bidi;
use super::process::{signal_group, Spawner};
use crate::daemon::registry::BrowserKey;
use crate::protocol::managed::{state, ManagedView};
use nix::sys::signal::Signal;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub struct Entry {
    pub key: BrowserKey,
    pub view: watch::Sender<ManagedView>,
    /// Cancelled to close it.
    pub stop: CancellationToken,
    /// The daemon's WebDriver BiDi session with it, while one is up (a Firefox: its trusted
    /// input, issue 57).
    pub bidi: Option<Arc<Bidi>>,
}

#[derive(Default)]
pub struct Managed {
    // Why a std Mutex: a few map operations under it, never an `.await`.
    entries: Mutex<HashMap<String, Entry>>,
    pub spawner: Spawner,
}

impl Managed {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn insert(&self, session: String, entry: Entry) {
        self.lock().insert(session, entry);
    }

    pub fn remove(&self, session: &str) {
        self.lock().remove(session);
    }

    /// Changes an entry's view (and wakes whoever waits on it).
    pub fn update(&self, session: &str, f: impl FnOnce(&mut ManagedView)) {
        if let Some(e) = self.lock().get(session) {
            e.view.send_modify(f);
        }
    }

    /// The entry a reference names: its browser ref (`b3`) or its session id.
    pub fn find(
        &self,
        reference: &str,
    ) -> Option<(String, watch::Receiver<ManagedView>, CancellationToken)> {
        self.lock().iter().find_map(|(session, e)| {
            (session == reference || e.key.to_string() == reference)
                .then(|| (session.clone(), e.view.subscribe(), e.stop.clone()))
        })
    }

    pub fn set_bidi(&self, session: &str, bidi: Option<Arc<Bidi>>) {
        if let Some(e) = self.lock().get_mut(session) {
            e.bidi = bidi;
        }
    }

    /// The BiDi session with the browser launched under `session`, if it has one and `key` is
    /// the browser that session's connection attached as (a connection that only names the
    /// session is not the launched browser).
    pub fn bidi(&self, session: &str, key: BrowserKey) -> Option<Arc<Bidi>> {
        let all = self.lock();
        let e = all.get(session)?;
        (e.key == key).then(|| e.bidi.clone())?
    }

    pub fn views(&self) -> Vec<ManagedView> {
        let mut views: Vec<ManagedView> = self
            .lock()
            .values()
            .map(|e| e.view.borrow().clone())
            .collect();
        views.sort_by_key(|v| v.browser[1..].parse::<u64>().unwrap_or(u64::MAX));
        views
    }

    pub fn sessions(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// Whether the daemon launched this browser headless (`None`: it did not launch it).
    pub fn headless(&self, key: BrowserKey) -> Option<bool> {
        let entries = self.lock();
        let e = entries.values().find(|e| e.key == key)?;
        let headless = e.view.borrow().headless;
        Some(headless)
    }

    /// Whether a persistent profile is in use by a browser of this daemon (its ref, if so).
    pub fn profile_user(&self, profile_dir: &str) -> Option<String> {
        self.lock().values().find_map(|e| {
            let v = e.view.borrow();
            (v.profile_dir == profile_dir && v.state != state::EXITED).then(|| v.browser.clone())
        })
    }

    /// Every entry's stop token and a receiver of its view, to close them all.
    pub fn all(&self) -> Vec<(watch::Receiver<ManagedView>, CancellationToken)> {
        self.lock()
            .values()
            .map(|e| (e.view.subscribe(), e.stop.clone()))
            .collect()
    }

    /// SIGKILL to every launched browser's process group, at once (a forced shutdown).
    pub fn kill_all_now(&self) {
        for e in self.lock().values() {
            if let Some(pid) = e.view.borrow().pid {
                signal_group(pid, Signal::SIGKILL);
            }
        }
    }
}
