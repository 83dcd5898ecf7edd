//! A fault soak with the real browser (issue 20): callers keep calling the page tools of every
//! open tab through the control API while the test opens, closes and navigates tabs and stops
//! the extension's service worker at random. Every call must end exactly once — with its own
//! result or a typed error, never by waiting out a timeout — nothing may stay pending, and the
//! daemon's and the service worker's memory must stay flat.
//!
//! `SOAK_BROWSER_SECS` (default 45) sets how long the faults run; its figures are in docs/tests.md.

use crate::browser::faults::{stop_worker, Rig};
use crate::support::cdp::{Browser, Page};
use crate::support::common::XorShift;
use crate::support::harness::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// What the callers saw.
#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    /// Answers that were not the call's own (`echo N` for another N).
    crossed: AtomicU64,
    /// Error codes, with a sample message each.
    errors: Mutex<BTreeMap<String, (u64, String)>>,
    slowest_ms: AtomicU64,
    /// Tabs with a `hang_act` in flight: calls on one tab take turns (issue 60), so an `echo`
    /// sent there waits behind it, and may run out of time when no fault ends it.
    hanging: Mutex<BTreeMap<String, u32>>,
}

impl Tally {
    fn error(&self, code: &str, message: &str) {
        let mut e = self.errors.lock().unwrap();
        let entry = e.entry(code.to_owned()).or_insert((0, message.to_owned()));
        entry.0 += 1;
    }

    fn count(&self, code: &str) -> u64 {
        self.errors.lock().unwrap().get(code).map_or(0, |e| e.0)
    }
}

/// The refs of the tabs that offer the page's tools, kept current by [`watch_tabs`].
type Tabs = Arc<Mutex<Vec<String>>>;

async fn watch_tabs(socket: PathBuf, tabs: Tabs, stop: CancellationToken) {
    while !stop.is_cancelled() {
        let (_, v) = api_at(&socket, "GET", "/v1/tabs", None).await;
        let refs = v["tabs"].as_array().map(|ts| {
            ts.iter()
                .filter(|t| crate::support::chromium::tool_names(t).contains(&"echo"))
                .filter_map(|t| t["ref"].as_str().map(str::to_owned))
                .collect()
        });
        *tabs.lock().unwrap() = refs.unwrap_or_default();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Calls `echo` (and now and then `hang_act`, which only a fault ends) on random tabs.
async fn caller(
    socket: PathBuf,
    tabs: Tabs,
    next: Arc<AtomicU64>,
    tally: Arc<Tally>,
    stop: CancellationToken,
    seed: u64,
) {
    let mut rng = XorShift(seed | 1);
    while !stop.is_cancelled() {
        let tab = {
            let tabs = tabs.lock().unwrap();
            match tabs.len() {
                0 => None,
                n => Some(tabs[rng.below(n)].clone()),
            }
        };
        let Some(tab) = tab else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let n = next.fetch_add(1, Ordering::Relaxed);
        let tool = if rng.below(50) == 0 {
            "hang_act"
        } else {
            "echo"
        };
        let body = json!({"tool": tool, "tab": tab, "args": {"n": n}, "timeoutMs": 6000});
        let behind = {
            let mut h = tally.hanging.lock().unwrap();
            let behind = h.get(&tab).is_some_and(|c| *c > 0);
            if tool == "hang_act" {
                *h.entry(tab.clone()).or_default() += 1;
            }
            behind
        };
        let started = Instant::now();
        let (status, v) = api_at(&socket, "POST", "/v1/call", Some(&body.to_string())).await;
        if tool == "hang_act" {
            if let Some(c) = tally.hanging.lock().unwrap().get_mut(&tab) {
                *c -= 1;
            }
        }
        let ms = started.elapsed().as_millis() as u64;
        tally.slowest_ms.fetch_max(ms, Ordering::Relaxed);
        if status == 200 {
            let text = v["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default();
            match text.starts_with(&format!("echo {n} ")) {
                true => tally.ok.fetch_add(1, Ordering::Relaxed),
                false => tally.crossed.fetch_add(1, Ordering::Relaxed),
            };
        } else {
            let code = v["error"]["code"].as_str().unwrap_or("(untyped)");
            let code = match (tool, code) {
                ("hang_act", "MESSAGE_TIMEOUT") => "MESSAGE_TIMEOUT (hang_act, no fault came)",
                ("echo", "MESSAGE_TIMEOUT" | "BUSY") if behind => {
                    "timed out behind a hang_act on its tab"
                }
                _ => code,
            };
            tally.error(code, v["error"]["message"].as_str().unwrap_or_default());
            if code == "NO_BROWSER" {
                // As a script would: the browser is coming back, ask again shortly.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The service worker's JS heap after a collection (bytes), read over a DevTools session that
/// is detached at once (an attached session would keep the worker alive).
fn worker_heap(b: &mut Browser) -> u64 {
    crate::support::common::wait_until(Duration::from_secs(30), "the service worker", || {
        let targets = b.send(None, "Target.getTargets", json!({}));
        let worker = targets["targetInfos"].as_array()?.iter().find(|t| {
            t["type"] == "service_worker"
                && t["url"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("chrome-extension://"))
        })?;
        let session = b
            .try_send(
                None,
                "Target.attachToTarget",
                json!({"targetId": worker["targetId"], "flatten": true}),
            )
            .ok()?;
        let session = session["sessionId"].as_str()?.to_owned();
        let _ = b.try_send(Some(&session), "HeapProfiler.collectGarbage", json!({}));
        let used = b.try_send(Some(&session), "Runtime.getHeapUsage", json!({}));
        let _ = b.try_send(
            None,
            "Target.detachFromTarget",
            json!({"sessionId": session}),
        );
        used.ok()?["usedSize"].as_f64().map(|u| u as u64)
    })
}

/// One random fault, or a new tab.
fn fault(
    rig: &mut Rig,
    tabs: &mut Vec<Page>,
    rng: &mut XorShift,
    serial: &mut u64,
    stops: &mut u64,
    last_stop: &mut Instant,
) {
    *serial += 1;
    match rng.below(10) {
        0..=2 if tabs.len() < 6 => {
            let url = rig.pages.url(&format!("open-{serial}"));
            tabs.push(rig.b.open(&url));
        }
        3 | 4 if tabs.len() > 2 => {
            let page = tabs.swap_remove(rng.below(tabs.len()));
            let _ = rig.b.try_send(Some(&page.session), "Page.close", json!({}));
        }
        5..=7 if !tabs.is_empty() => {
            let page = &tabs[rng.below(tabs.len())];
            let go = format!("setTimeout(() => location.assign('/nav-{serial}'), 0), true");
            let _ = rig.b.try_eval(page, &go);
        }
        8 if last_stop.elapsed() > Duration::from_secs(3) && !tabs.is_empty() => {
            let page = &tabs[0];
            stop_worker(&mut rig.b, page);
            *stops += 1;
            *last_stop = Instant::now();
        }
        _ => {}
    }
}

#[test]
fn a_fault_soak_with_the_real_browser_ends_every_call_once_and_stays_flat() {
    let setup = Instant::now();
    let Some(mut rig) = Rig::start("browser_soak::fault_soak", &[]) else {
        return;
    };
    let secs = std::env::var("SOAK_BROWSER_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(45u64);
    let socket = rig.d().socket.clone();
    let pid = rig.d().child.id();
    let mut pages: Vec<Page> = (0..3).map(|i| rig.open(&format!("start-{i}")).0).collect();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let stop = CancellationToken::new();
    let tabs: Tabs = Arc::default();
    let (tally, next) = (Arc::new(Tally::default()), Arc::new(AtomicU64::new(0)));
    rt.spawn(watch_tabs(socket.clone(), tabs.clone(), stop.clone()));
    let callers: Vec<_> = (0..6)
        .map(|i| {
            rt.spawn(caller(
                socket.clone(),
                tabs.clone(),
                next.clone(),
                tally.clone(),
                stop.clone(),
                0x9e37_79b9 + i,
            ))
        })
        .collect();

    let setup = setup.elapsed();
    let started = Instant::now();
    let (mut rng, mut serial, mut stops) = (XorShift(0x2545_f491), 0, 0);
    let mut last_stop = Instant::now();
    let (mut warm, mut rss_max) = (None, 0);
    while started.elapsed() < Duration::from_secs(secs) {
        fault(
            &mut rig,
            &mut pages,
            &mut rng,
            &mut serial,
            &mut stops,
            &mut last_stop,
        );
        let (rss, _) = proc_status(pid);
        rss_max = rss_max.max(rss);
        if warm.is_none() && started.elapsed() > Duration::from_secs(secs / 5) {
            warm = Some((rss, worker_heap(&mut rig.b)));
        }
        // The faults' pace: a few a second, between the callers' hundreds of calls.
        std::thread::sleep(Duration::from_millis(100 + rng.below(300) as u64));
    }
    stop.cancel();
    let draining = Instant::now();
    for c in callers {
        rt.block_on(c).unwrap();
    }
    let s = rt.block_on(status_until(rig.d(), "no call in flight", |s| {
        s["callsInFlight"] == 0 && s["pendingCalls"] == 0
    }));
    let drain = draining.elapsed();
    let (rss_end, _) = proc_status(pid);
    let heap_end = worker_heap(&mut rig.b);
    let (rss_warm, heap_warm) = warm.expect("a warm measurement");

    let ok = tally.ok.load(Ordering::Relaxed);
    let total = next.load(Ordering::Relaxed);
    let errors = tally.errors.lock().unwrap().clone();
    let failed: u64 = errors.values().map(|e| e.0).sum();
    let slowest = tally.slowest_ms.load(Ordering::Relaxed);
    eprintln!(
        "issue 20, browser fault soak: {secs} s, {total} calls ({ok} ok, {failed} typed errors), {serial} faults \
         incl. {stops} worker stops; errors {errors:?}; slowest call {slowest} ms; daemon rss warm {rss_warm} kB, \
         max {rss_max} kB, end {rss_end} kB; worker heap warm {} KiB, end {} KiB; late answers {}; \
         setup {setup:?} (browser lock included), drain {drain:?}",
        heap_warm / 1024,
        heap_end / 1024,
        s["lateResponses"]
    );
    let context = rig.context();
    // Every call ended once, with its own answer or a typed error.
    assert_eq!(
        ok + failed + tally.crossed.load(Ordering::Relaxed),
        total,
        "{context}"
    );
    assert_eq!(
        tally.crossed.load(Ordering::Relaxed),
        0,
        "answers crossed: {context}"
    );
    assert_eq!(s["callsTotal"].as_u64(), Some(total), "{s}");
    assert_eq!(
        s["unknownResponses"].as_u64(),
        Some(0),
        "an answer to no known call: {s}"
    );
    // A soak that made few calls proves little, so there is a floor; it is far below a quiet
    // run's 1,100-1,400 (calls on one tab take turns, issue 60: an `echo` behind a `hang_act`
    // waits up to its 6 s budget), since a slow spell of the shared machine once let only 416
    // through in a CI run. How many calls fit in a second is the benchmark's to say.
    assert!(
        total >= 200 && ok * 2 > total,
        "too few calls went through: {total}, {ok} ok\n{context}"
    );
    // Only the codes these faults call for; none waited on a browser that was gone.
    let expected = [
        "TAB_NOT_FOUND",
        "PAGE_NAVIGATED",
        "WEBSOCKET_ERROR",
        "NO_BROWSER",
        "SEND_ERROR",
        "TOOL_NOT_FOUND",
        "MESSAGE_TIMEOUT (hang_act, no fault came)",
        "timed out behind a hang_act on its tab",
    ];
    let unexpected: Vec<_> = errors
        .iter()
        .filter(|(c, _)| !expected.contains(&c.as_str()))
        .collect();
    assert!(
        unexpected.is_empty(),
        "unexpected errors: {unexpected:?}\n{context}"
    );
    assert_eq!(tally.count("MESSAGE_TIMEOUT"), 0);
    assert!(slowest < 8_000, "a call took {slowest} ms\n{context}");
    // Flat memory: the end is close to the warm figure.
    assert!(
        rss_end < rss_warm + 16 * 1024,
        "daemon rss grew from {rss_warm} kB to {rss_end} kB"
    );
    assert!(
        heap_end < heap_warm * 2 + (4 << 20),
        "worker heap grew from {heap_warm} to {heap_end} bytes"
    );
}
