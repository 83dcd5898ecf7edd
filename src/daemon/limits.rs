//! Configured limits: the one place that words a refusal (LIMIT_EXCEEDED, with
//! `details: {"limit": <setting>, "max": n, …}`), counts it and logs it, and the slot that
//! counts what is open against a maximum.
//!
//! Why a counter and not a `tokio::sync::Semaphore`: every maximum here can change on SIGHUP
//! and is read afresh at each acquire, and the count itself is what `/v1/status` shows. A
//! semaphore would need its permits added or forgotten on every reload (with a debt when
//! fewer are free than must go) and a second counter for status.

use super::settings::config::Config;
use super::stats::Stats;
use crate::error::{Error, ErrorCode};
use serde_json::json;
use std::fmt::Display;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One of something counted against a maximum (an open connection, an agent's call in
/// flight), for as long as it lives. An upgraded WebSocket carries its connection's slot on
/// after the HTTP connection task has ended.
#[derive(Debug)]
pub struct Slot(Arc<AtomicU64>);

impl Slot {
    /// Takes a slot unless `max` are already taken; `Err` holds the number taken.
    pub fn take(count: &Arc<AtomicU64>, max: usize) -> Result<Slot, u64> {
        let before = count.fetch_add(1, Ordering::Relaxed);
        if before >= max as u64 {
            count.fetch_sub(1, Ordering::Relaxed);
            return Err(before);
        }
        Ok(Slot(count.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What an accept loop does with a new connection.
pub enum Admission {
    /// Serve it; the slot counts it while it lives.
    Open(Slot),
    /// Answer its first request with this refusal, then close it. Refusals are capped too.
    Refuse(Slot, Error),
    /// Over both caps: close it unanswered.
    Drop,
}

/// Admits a connection to a listener with `open` connections and at most `max` (the
/// `setting`); beyond, up to as many again (at least 16) get a refusal.
pub fn admit(
    stats: &Stats,
    open: &Arc<AtomicU64>,
    refusing: &Arc<AtomicU64>,
    max: usize,
    setting: &'static str,
) -> Admission {
    match Slot::take(open, max) {
        Ok(slot) => Admission::Open(slot),
        Err(now) => match Slot::take(refusing, max.max(16)) {
            Ok(slot) => {
                let e = exceeded(
                    setting,
                    max,
                    format!("{now} connections are open, the most allowed (--{setting} {max}); try again later"),
                );
                refused(stats, 0, &e);
                Admission::Refuse(slot, e)
            }
            Err(_) => {
                Stats::bump(&stats.limits_exceeded);
                Admission::Drop
            }
        },
    }
}

/// A LIMIT_EXCEEDED error for the setting `--{setting}`; its `details.limit` is the setting's
/// name in camelCase, as the config file and the JSON APIs spell settings.
pub fn exceeded(setting: &str, max: impl serde::Serialize, message: String) -> Error {
    Error::new(ErrorCode::LimitExceeded, message)
        .with_details(json!({"limit": camel(setting), "max": max}))
}

fn camel(setting: &str) -> String {
    let mut out = String::with_capacity(setting.len());
    let mut upper = false;
    for c in setting.chars() {
        match c {
            '-' => upper = true,
            c if upper => {
                out.push(c.to_ascii_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

pub fn too_many_tabs(browser: &dyn Display, tab: i64, max: usize) -> Error {
    exceeded(
        "max-tabs-per-browser",
        max,
        format!(
            "browser {browser} already has {max} tabs (--max-tabs-per-browser); tab {tab} refused"
        ),
    )
}

pub fn too_many_tools(place: &str, offered: usize, max: usize) -> Error {
    let mut e = exceeded(
        "max-tools-per-tab",
        max,
        format!("{place} offers {offered} tools, more than {max} (--max-tools-per-tab); its tools are unchanged"),
    );
    if let Some(d) = e.details.as_mut() {
        d["offered"] = json!(offered);
    }
    e
}

/// Counts a refusal for status and says in the log what was refused and why.
pub fn refused(stats: &Stats, conn: u64, e: &Error) {
    Stats::bump(&stats.limits_exceeded);
    tracing::warn!(conn, code = %e.code, "refused: {}", e.message);
}

/// [`refused`] for an update that may have hit a limit.
pub fn check(stats: &Stats, conn: u64, r: Result<(), Error>) {
    if let Err(e) = r {
        refused(stats, conn, &e);
    }
}

/// Raises the soft limit on open files to the hard limit (the soft default of 1024 is below
/// what the connection limits allow) and warns when the limits cannot be reached anyway.
pub fn raise_open_files(c: &Config) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return;
    };
    let want = hard.min(1 << 20);
    let soft = if want > soft && setrlimit(Resource::RLIMIT_NOFILE, want, hard).is_ok() {
        want
    } else {
        soft
    };
    // Listeners, the watcher, logs and a margin besides the connections.
    let need = (c.max_connections + c.max_control_connections + 64) as u64;
    if soft < need {
        tracing::warn!(
            open_files = soft,
            need,
            "the open-file limit is below --max-connections + --max-control-connections; \
             beyond it new connections fail to be accepted"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_name_the_setting_as_the_apis_spell_it() {
        let e = too_many_tools("tab b1:2", 5, 3);
        assert_eq!(
            e.details.unwrap(),
            json!({"limit": "maxToolsPerTab", "max": 3, "offered": 5})
        );
        assert_eq!(camel("agent-max-in-flight"), "agentMaxInFlight");
    }
}
