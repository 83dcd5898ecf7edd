//! `/mcp`'s sessions are bounded (issue 22): at most `--mcp-max-sessions` live (an
//! `initialize` over the cap is answered 429 LIMIT_EXCEEDED and counted in status), one idle
//! for `--mcp-session-idle` is closed (one with an open stream is not idle), and the memory
//! of a flood of sessions goes back once they are gone. Real requests on real sockets.

use crate::support::common::*;
use crate::support::harness::proc_status;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

type Http = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

fn http() -> Http {
    Client::builder(TokioExecutor::new()).build_http()
}

fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "flood", "version": "0"}}})
    .to_string()
}

/// POSTs `body` to `/mcp` (with a session id if given); returns status, session id, body.
async fn post(
    c: &Http,
    d: &TestDaemon,
    session: Option<&str>,
    body: String,
) -> (u16, Option<String>, String) {
    let mut req = hyper::Request::post(format!("http://127.0.0.1:{}/mcp", d.port))
        .header("Authorization", format!("Bearer {}", d.token))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream");
    if let Some(s) = session {
        req = req
            .header("Mcp-Session-Id", s)
            .header("Mcp-Protocol-Version", "2025-11-25");
    }
    let resp = c
        .request(req.body(Full::new(Bytes::from(body))).unwrap())
        .await
        .expect("POST /mcp");
    let status = resp.status().as_u16();
    let id = resp
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, id, String::from_utf8_lossy(&body).into_owned())
}

fn ping() -> String {
    json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string()
}

async fn mcp_sessions_until(d: &TestDaemon, what: &str, pred: impl Fn(u64) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let s = d.status();
        if pred(s["mcpSessions"].as_u64().unwrap()) {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}: {s}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_are_capped_and_idle_ones_close_but_not_those_with_an_open_stream() {
    let d = TestDaemon::builder()
        .args(&["--mcp-max-sessions", "20", "--mcp-session-idle", "1s"])
        .start();
    let c = http();
    let mut ids = Vec::new();
    for _ in 0..20 {
        let (status, id, body) = post(&c, &d, None, initialize()).await;
        assert_eq!(status, 200, "{body}");
        ids.push(id.expect("a session id"));
    }
    let before = d.status();
    assert_eq!(before["mcpSessions"], 20, "{before}");

    // Over the cap: a clear refusal, counted; requests of live sessions still served.
    let (status, id, body) = post(&c, &d, None, initialize()).await;
    assert_eq!((status, id), (429, None), "{body}");
    let e: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(e["error"]["code"], "LIMIT_EXCEEDED", "{e}");
    assert_eq!(e["error"]["details"]["limit"], "mcpMaxSessions", "{e}");
    assert!(e["error"]["message"]
        .as_str()
        .unwrap()
        .contains("--mcp-max-sessions 20"));
    let s = d.status();
    assert_eq!(
        s["limitsExceeded"],
        before["limitsExceeded"].as_u64().unwrap() + 1
    );
    let (status, _, body) = post(&c, &d, Some(&ids[0]), ping()).await;
    assert_eq!(status, 200, "{body}");

    // One client listens on its GET stream: its session is not idle while the stream is
    // open, however long; the 19 others are closed after a second.
    let kept = ids[0].clone();
    let stream = c
        .request(
            hyper::Request::get(format!("http://127.0.0.1:{}/mcp", d.port))
                .header("Authorization", format!("Bearer {}", d.token))
                .header("Accept", "text/event-stream")
                .header("Mcp-Session-Id", &kept)
                .header("Mcp-Protocol-Version", "2025-11-25")
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await
        .expect("GET /mcp");
    assert_eq!(stream.status(), 200);
    mcp_sessions_until(&d, "idle sessions to close", |n| n == 1).await;
    tokio::time::sleep(Duration::from_millis(1500)).await; // past the idle time, stream open
    assert_eq!(d.status()["mcpSessions"], 1);
    let (status, _, body) = post(&c, &d, Some(&kept), ping()).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, _) = post(&c, &d, Some(&ids[1]), ping()).await;
    assert_eq!(status, 404, "a closed session is unknown");

    // The stream ends: now it is idle too.
    drop(stream);
    mcp_sessions_until(&d, "the last session to close", |n| n == 0).await;
    let (status, _, _) = post(&c, &d, Some(&kept), ping()).await;
    assert_eq!(status, 404);
    // And new sessions are welcome again.
    let (status, id, _) = post(&c, &d, None, initialize()).await;
    assert_eq!(status, 200);
    assert!(id.is_some());
}

/// The daemon's RSS in KiB.
fn rss(d: &TestDaemon) -> u64 {
    proc_status(d.child.id()).0
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_initialize_is_bounded_and_its_memory_returns() {
    const FLOOD: usize = 10_000;
    let d = TestDaemon::builder()
        .args(&["--mcp-session-idle", "2s"])
        .start();
    let c = http();
    // Warm up: the service, the runtime's and allocator's first pages.
    for _ in 0..3 {
        let (status, id, _) = post(&c, &d, None, initialize()).await;
        assert_eq!(status, 200);
        let (status, _, _) = post(&c, &d, id.as_deref(), ping()).await;
        assert_eq!(status, 200);
    }
    mcp_sessions_until(&d, "the warm-up sessions to close", |n| n == 0).await;
    let idle = rss(&d);

    let start = Instant::now();
    let mut peak = idle;
    let (mut created, mut refused) = (0usize, 0usize);
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let c = c.clone();
            let port = d.port;
            let token = d.token.clone();
            tokio::spawn(async move {
                let d = Fake { port, token };
                let mut counts = (0usize, 0usize);
                for _ in 0..FLOOD / 8 {
                    match d.initialize(&c).await {
                        200 => counts.0 += 1,
                        429 => counts.1 += 1,
                        other => panic!("initialize answered {other}"),
                    }
                }
                counts
            })
        })
        .collect();
    for w in workers {
        let (c, r) = w.await.unwrap();
        created += c;
        refused += r;
        peak = peak.max(rss(&d));
    }
    let flood_time = start.elapsed();
    let live = d.status()["mcpSessions"].as_u64().unwrap();
    peak = peak.max(rss(&d));
    // The default cap (256) holds, however fast they come; the others were told why.
    assert_eq!(created + refused, FLOOD);
    assert!(live <= 256, "{live} live");
    assert!(created >= 256, "{created} created");

    mcp_sessions_until(&d, "the flood's sessions to close", |n| n == 0).await;
    // The memory goes back soon after (the daemon hands freed pages back a tick later).
    let back = idle + (peak - idle) / 2 + 2048;
    let start = Instant::now();
    let mut after = rss(&d);
    while after > back && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        after = rss(&d);
    }
    eprintln!(
        "mcp session flood: {FLOOD} initialize in {flood_time:?}: {created} sessions, {refused} \
         refused; RSS idle {idle} KiB, peak {peak} KiB ({:.2}× idle), after expiry {after} KiB \
         ({:.2}× idle); {:.1} KiB per live session at the peak",
        peak as f64 / idle as f64,
        after as f64 / idle as f64,
        (peak - idle) as f64 / live.max(1) as f64
    );
    // Bounded: the cap's worth of sessions, not the flood's; and it goes back.
    assert!(
        peak < idle + 64 * 1024,
        "RSS grew from {idle} to {peak} KiB"
    );
    assert!(
        after <= back,
        "RSS stayed at {after} KiB after the sessions closed (idle {idle}, peak {peak})"
    );
}

/// Just enough of a daemon to post to from a spawned task.
struct Fake {
    port: u16,
    token: String,
}

impl Fake {
    async fn initialize(&self, c: &Http) -> u16 {
        let req = hyper::Request::post(format!("http://127.0.0.1:{}/mcp", self.port))
            .header("Authorization", format!("Bearer {}", self.token))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .body(Full::new(Bytes::from(initialize())))
            .unwrap();
        let resp = c.request(req).await.expect("POST /mcp");
        let status = resp.status().as_u16();
        resp.into_body().collect().await.unwrap();
        status
    }
}
