//! Soak: many calls over several browser connections that drop at random, from several
//! clients on kept-alive control connections. Every call gets exactly one answer (its own
//! result, or a typed error), no call runs twice in a browser, nothing stays pending, and
//! memory stays flat.
//!
//! CI runs a few thousand calls. The long run (a release build, a million calls):
//! `scripts/soak.sh` (`SOAK_CALLS=1000000 cargo test --release --test it soak -- --nocapture`).

use crate::support::common::*;
use crate::support::harness::*;
use bytes::Bytes;
use futures_util::SinkExt;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What the browsers saw: every `n` a tool ran for, and how often one ran twice.
#[derive(Default)]
struct Ledger {
    ran: Mutex<HashSet<u64>>,
    doubled: AtomicU64,
    drops: AtomicU64,
}

/// One browser connection that answers every call with its arguments, and now and then
/// dies: abruptly (RST), sometimes with calls unanswered; then it comes back (same session).
async fn flaky_browser(
    port: u16,
    session: String,
    seed: u64,
    drop_one_in: u64,
    ledger: Arc<Ledger>,
    stop: CancellationToken,
) {
    let mut rng = XorShift(seed | 1);
    while !stop.is_cancelled() {
        let Ok(mut ws) = FakeExtension::raw(&format!("ws://127.0.0.1:{port}/"), &[]).await else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let hello = json!({"type": "connected", "sessionId": session, "browser": {"name": "Soak", "version": "1"},
            "tabs": [{"id": 1, "title": "T", "url": "https://x", "tools": [{"name": "echo"}]}]});
        if ws.send(Message::text(hello.to_string())).await.is_err() {
            continue;
        }
        loop {
            let Some(m) = unless_stopped(&mut ws, &stop).await else {
                return;
            };
            let text = match m {
                Some(Ok(Message::Text(t))) => t,
                Some(Ok(_)) => continue,
                _ => break,
            };
            let v: Value = serde_json::from_str(text.as_str()).unwrap();
            if v["type"] != "callTool" {
                continue;
            }
            let n = v["args"]["n"].as_u64().unwrap();
            let die = rng.next().is_multiple_of(drop_one_in);
            // Half the deaths come before the tool runs, half after it ran but before the
            // answer left: both must end the call with one typed error.
            if die && rng.next().is_multiple_of(2) {
                ledger.drops.fetch_add(1, Ordering::Relaxed);
                break;
            }
            if !ledger.ran.lock().unwrap().insert(n) {
                ledger.doubled.fetch_add(1, Ordering::Relaxed);
            }
            if die {
                ledger.drops.fetch_add(1, Ordering::Relaxed);
                break;
            }
            let answer = json!({"type": "toolResult", "callId": v["callId"], "result": {"n": n}});
            if ws.feed(Message::text(answer.to_string())).await.is_err() {
                break;
            }
            // Flush when nothing else is waiting (cheap batching under load).
            if ws.flush().await.is_err() {
                break;
            }
        }
        if let tokio_tungstenite::MaybeTlsStream::Plain(tcp) = ws.get_ref() {
            // A zero linger resets the connection at once; it never blocks (only a positive
            // one does, which is what the deprecation is about).
            #[allow(deprecated)]
            let _ = tcp.set_linger(Some(Duration::ZERO));
        }
        drop(ws);
        tokio::time::sleep(Duration::from_millis(rng.next() % 20)).await;
    }
}

/// What the clients got back.
#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    errors: Mutex<BTreeMap<String, u64>>,
    succeeded: Mutex<Vec<u64>>,
}

async fn client(
    socket: std::path::PathBuf,
    targets: Arc<Vec<String>>,
    next: Arc<AtomicU64>,
    total: u64,
    seed: u64,
    tally: Arc<Tally>,
) {
    let mut rng = XorShift(seed | 1);
    let connect =
        || async { http1_client(tokio::net::UnixStream::connect(&socket).await.unwrap()).await };
    let mut sender = connect().await;
    loop {
        let n = next.fetch_add(1, Ordering::Relaxed);
        if n >= total {
            return;
        }
        let tab = &targets[(rng.next() % targets.len() as u64) as usize];
        let body =
            json!({"tool": "echo", "tab": tab, "args": {"n": n}, "timeoutMs": 10000}).to_string();
        let req = hyper::Request::post("/v1/call")
            .header("host", "d")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        if sender.ready().await.is_err() {
            // The daemon closed an idle kept-alive connection: nothing was sent on it.
            sender = connect().await;
        }
        let resp = sender
            .send_request(req)
            .await
            .unwrap_or_else(|e| panic!("call {n}: no answer at all: {e}"));
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let v: Value = serde_json::from_slice(&body).unwrap();
        if status == 200 {
            assert_eq!(
                v["result"]["n"], n,
                "call {n} got another call's answer: {v}"
            );
            tally.ok.fetch_add(1, Ordering::Relaxed);
            tally.succeeded.lock().unwrap().push(n);
        } else {
            let code = v["error"]["code"]
                .as_str()
                .unwrap_or_else(|| panic!("untyped error: {v}"))
                .to_owned();
            assert!(
                [
                    "WEBSOCKET_ERROR",
                    "NO_BROWSER",
                    "SEND_ERROR",
                    "MAX_RETRIES_EXCEEDED"
                ]
                .contains(&code.as_str()),
                "call {n}: unexpected {v}"
            );
            *tally.errors.lock().unwrap().entry(code).or_default() += 1;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn soak_every_call_gets_exactly_one_answer() {
    let total = env_num("SOAK_CALLS", 3000);
    let browsers = env_num("SOAK_BROWSERS", 4);
    let clients = env_num("SOAK_CLIENTS", 8);
    let drop_one_in = env_num("SOAK_DROP_ONE_IN", 300);
    let d = TestDaemon::builder()
        .args(&["--backoff-base", "5ms", "--backoff-max", "20ms"])
        .start();
    let pid = d.child.id();
    let ledger = Arc::new(Ledger::default());
    let stop = CancellationToken::new();
    let mut tasks = Vec::new();
    for i in 0..browsers {
        tasks.push(tokio::spawn(flaky_browser(
            d.port,
            format!("soak{i}"),
            0x9E37_79B9 * (i + 1),
            drop_one_in,
            ledger.clone(),
            stop.clone(),
        )));
    }
    let s = status_until(&d, "every browser", |s| s["browsers"] == browsers).await;
    let base_tasks = s["tasks"].as_u64().unwrap();
    let (_, list) = api(&d, "GET", "/v1/browsers", None).await;
    let targets: Arc<Vec<String>> = Arc::new(
        list["browsers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| format!("{}:1", b["id"].as_str().unwrap()))
            .collect(),
    );

    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(0));
    let tally = Arc::new(Tally::default());
    let mut running = Vec::new();
    for c in 0..clients {
        running.push(tokio::spawn(client(
            d.socket.clone(),
            targets.clone(),
            next.clone(),
            total,
            0xDEAD_BEEF + c,
            tally.clone(),
        )));
    }
    // Memory after a warm-up, and at the end.
    let warm_at = total / 10;
    let mut rss_warm = None;
    let mut rss_max = 0;
    while running.iter().any(|t| !t.is_finished()) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (rss, _) = proc_status(pid);
        if rss_warm.is_none() && next.load(Ordering::Relaxed) >= warm_at {
            rss_warm = Some(rss);
        }
        rss_max = rss_max.max(rss);
    }
    for t in running {
        t.await.unwrap();
    }
    let elapsed = started.elapsed();
    stop.cancel();
    for t in tasks {
        t.await.unwrap();
    }

    let ok = tally.ok.load(Ordering::Relaxed);
    let errors = tally.errors.lock().unwrap().clone();
    let failed: u64 = errors.values().sum();
    let s = status_until(&d, "everything settled", |s| {
        s["callsInFlight"] == 0 && s["pendingCalls"] == 0 && s["browsers"] == 0
    })
    .await;
    let (rss_end, threads) = proc_status(pid);
    eprintln!(
        "soak: {total} calls in {elapsed:.1?} ({:.0}/s) over {browsers} browsers, {clients} clients: \
         {ok} ok, errors {errors:?}; {} browser deaths; rss warm {} kB, max {rss_max} kB, end {rss_end} kB; \
         threads {threads}; tasks {base_tasks} → {}",
        total as f64 / elapsed.as_secs_f64(),
        ledger.drops.load(Ordering::Relaxed),
        rss_warm.unwrap_or(0),
        s["tasks"],
    );
    // Exactly one answer per call, and each success is that call's own result.
    assert_eq!(ok + failed, total, "answers: {ok} ok + {failed} errors");
    assert_eq!(s["callsTotal"].as_u64().unwrap(), total, "{s}");
    assert_eq!(s["callsFailed"].as_u64().unwrap(), failed, "{s}");
    // No tool ran twice, and every success ran (once).
    assert_eq!(
        ledger.doubled.load(Ordering::Relaxed),
        0,
        "a call ran twice in a browser"
    );
    let ran = ledger.ran.lock().unwrap();
    assert!(tally
        .succeeded
        .lock()
        .unwrap()
        .iter()
        .all(|n| ran.contains(n)));
    assert!(
        ledger.drops.load(Ordering::Relaxed) > 0 || total < drop_one_in,
        "the soak dropped browsers"
    );
    assert!(
        s["tasks"].as_u64().unwrap() <= base_tasks,
        "tasks back to their idle number: {s}"
    );
    // Flat memory: what is left after the run is close to what the warm daemon used.
    if let Some(warm) = rss_warm.filter(|_| total >= 10_000) {
        assert!(
            rss_end < warm + 32 * 1024,
            "rss grew from {warm} kB to {rss_end} kB"
        );
    }
}
