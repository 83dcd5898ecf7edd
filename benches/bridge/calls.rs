//! Direct calls over the control socket: latency, throughput, and event fan-out.

use crate::prelude::*;

pub(crate) fn call_body(tab: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"tool":"echo","tab":"{tab}","args":{{"x":1}}}}"#
    ))
}

// ---------------------------------------------------------------------------------------------
// Rows 2–3: calls through the daemon

pub(crate) async fn call_latency(d: &Daemon, n: usize) -> Lat {
    uds_latency(&d.socket, "/v1/call", call_body("b1:1"), n).await
}

/// `clients` keep-alive connections, each sending requests back to back for `run_for`;
/// client `c` sends `body_for(c)`. Returns calls/s and the latency percentiles.
pub(crate) async fn throughput(
    path: &Path,
    route: &'static str,
    body_for: impl Fn(usize) -> Bytes,
    clients: usize,
    run_for: Duration,
) -> (f64, Lat) {
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    let start = Instant::now();
    for c in 0..clients {
        let path = path.to_path_buf();
        let done = done.clone();
        let body = body_for(c);
        tasks.push(tokio::spawn(async move {
            let mut client = http1_client(&path).await;
            let mut samples = Vec::new();
            while start.elapsed() < run_for {
                let req = Request::post(route)
                    .header("host", "d")
                    .body(Full::new(body.clone()))
                    .unwrap();
                let t = Instant::now();
                let resp = {
                    client.ready().await.unwrap();
                    client.send_request(req).await.unwrap()
                };
                assert!(resp.status().is_success());
                let _ = resp.into_body().collect().await.unwrap();
                samples.push(t.elapsed());
                done.fetch_add(1, Ordering::Relaxed);
            }
            samples
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let elapsed = start.elapsed();
    (
        done.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64(),
        percentiles(all),
    )
}

/// 16 tabs over 4 browsers: client `c` calls tab `b{c%4+1}:{(c/4)%4+1}`.
pub(crate) fn spread_call(c: usize) -> Bytes {
    call_body(&format!("b{}:{}", c % 4 + 1, (c / 4) % 4 + 1))
}

// ---------------------------------------------------------------------------------------------
// Row 4: event fan-out

pub(crate) async fn fanout(d: &Daemon, subscribers: usize, churn: usize) -> (f64, u64, f64, u64) {
    let delivered = Arc::new(AtomicU64::new(0));
    let lagged = Arc::new(AtomicU64::new(0));
    let mut readers = Vec::new();
    for _ in 0..subscribers {
        let mut s = UnixStream::connect(&d.socket).await.unwrap();
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        s.write_all(b"GET /v1/events?type=tabUpdated,lagged HTTP/1.1\r\nHost: d\r\n\r\n")
            .await
            .unwrap();
        let delivered = delivered.clone();
        let lagged = lagged.clone();
        readers.push(tokio::spawn(async move {
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let chunk = &buf[..n];
                delivered.fetch_add(
                    chunk.windows(11).filter(|w| w == b"\"tabUpdated").count() as u64,
                    Ordering::Relaxed,
                );
                lagged.fetch_add(
                    chunk.windows(8).filter(|w| w == b"\"lagged\"").count() as u64,
                    Ordering::Relaxed,
                );
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{}/", d.port))
        .await
        .unwrap();
    let tabs: Vec<Value> = (1..=10)
        .map(|i| json!({"id": i, "title": "t", "url": "https://e.x/", "tools": []}))
        .collect();
    ws.send(Message::text(json!({"type": "connected", "sessionId": "churn", "browser": {"name": "B", "version": "1"}, "tabs": tabs}).to_string())).await.unwrap();
    let _ = ws.next().await;
    d.wait_tabs(10).await;
    let cpu0 = d.cpu();
    let start = Instant::now();
    for i in 0..churn {
        let m = json!({"type": "tabUpdated", "tab": {"id": i % 10 + 1, "title": format!("title {i}"), "url": "https://e.x/"}});
        ws.send(Message::text(m.to_string())).await.unwrap();
    }
    let expected = (churn * subscribers) as u64;
    let limit = Instant::now() + Duration::from_secs(60);
    while delivered.load(Ordering::Relaxed) + lagged.load(Ordering::Relaxed) < expected
        && Instant::now() < limit
    {
        // Stop waiting once delivery has settled (lagged readers never get every event).
        let before = delivered.load(Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(50)).await;
        if delivered.load(Ordering::Relaxed) == before && start.elapsed() > Duration::from_secs(1) {
            break;
        }
    }
    let elapsed = start.elapsed();
    let cpu = d.cpu() - cpu0;
    for r in readers {
        r.abort();
    }
    let n = delivered.load(Ordering::Relaxed);
    (
        n as f64 / elapsed.as_secs_f64(),
        lagged.load(Ordering::Relaxed),
        cpu.as_secs_f64() / elapsed.as_secs_f64() * 100.0,
        n,
    )
}

// ---------------------------------------------------------------------------------------------
// Rows 8–9: through MCP, over `browserctl mcp` (stdio) and over /mcp (Streamable HTTP)

/// One direct call (`POST /v1/call`) on a kept-alive control connection.
pub(crate) async fn direct_once(
    sender: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    body: &Bytes,
) {
    let req = Request::post("/v1/call")
        .header("host", "d")
        .body(Full::new(body.clone()))
        .unwrap();
    sender.ready().await.unwrap();
    let resp = sender.send_request(req).await.unwrap();
    assert!(resp.status().is_success());
    let _ = resp.into_body().collect().await.unwrap();
}

/// Direct calls on each of `clients` at once until `turn` has passed, a task per client as
/// row 3's clients are; gives the clients back, with the number of calls. A deadline, not a
/// count: clients given a count each end at different times, leaving fewer calls in flight
/// at the end of every turn (measured: direct calls then read up to 40% dearer).
pub(crate) async fn direct_calls(
    clients: Vec<hyper::client::conn::http1::SendRequest<Full<Bytes>>>,
    call: &Bytes,
    turn: Duration,
) -> (
    Vec<hyper::client::conn::http1::SendRequest<Full<Bytes>>>,
    usize,
) {
    let start = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|mut c| {
            let call = call.clone();
            tokio::spawn(async move {
                let mut n = 0;
                while start.elapsed() < turn {
                    direct_once(&mut c, &call).await;
                    n += 1;
                }
                (c, n)
            })
        })
        .collect();
    let mut back = Vec::new();
    let mut calls = 0;
    for t in tasks {
        let (c, n) = t.await.unwrap();
        back.push(c);
        calls += n;
    }
    (back, calls)
}
