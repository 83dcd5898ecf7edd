//! `cargo bench --bench bridge [-- --check] [-- --quick]`
//!
//! Measures browser-mcpd against the physical limit of this machine, every row in the same run:
//! the raw hops (a minimal hyper HTTP/1.1 echo on a Unix socket, a minimal tokio-tungstenite
//! echo on loopback) are the baseline, and each daemon figure is printed beside it with the
//! ratio. Rows 8–9 are measured by clients that run on one thread, which also waits on their
//! sockets, as real clients do; the scripted extensions have a thread of their own, as a
//! browser is a process of its own; row 9's floor is served by a process of its own (the
//! daemon is one: each hop wakes another process). Rows 8–9 run twice: as the kernel places
//! their processes (reported) and with all of them on one CPU (the targets; see [`OneCpu`]).
//! Rows 11–14 and 16 put the real extension in headless Chromium (browser.rs, input.rs), row 15
//! eight agents at once in it (lanes.rs). `--check` exits non-zero when a target is missed;
//! `--quick` runs fewer iterations; `--browser-only` runs rows 11–14 and 16 alone, `--lanes`
//! row 15 alone, `--input` row 16 alone.

mod browser;
mod calls;
mod cdp;
mod daemon;
mod first_call;
mod floors;
mod input;
mod lanes;
/// Issue 60's workload, shared with the CI test `browser::lanes`.
#[path = "../../tests/it/support/lanes.rs"]
mod lanes_work;
mod mcp;
mod page_cost;
mod pages;
mod pinning;
mod report;
mod startup;
mod view;

/// What every module of the bench uses: the crates' types and each other's items.
mod prelude {
    pub(crate) use crate::{
        browser::*, calls::*, cdp::*, daemon::*, first_call::*, floors::*, input::*, lanes::*,
        mcp::*, page_cost::*, pages::*, pinning::*, report::*, startup::*, view::*,
    };
    pub(crate) use bytes::Bytes;
    pub(crate) use futures_util::{SinkExt, StreamExt};
    pub(crate) use http_body_util::{BodyExt, Full};
    pub(crate) use hyper::body::Incoming;
    pub(crate) use hyper::{Request, Response};
    pub(crate) use hyper_util::rt::TokioIo;
    pub(crate) use serde_json::{json, Value};
    pub(crate) use std::path::{Path, PathBuf};
    pub(crate) use std::process::{Child, Command, Stdio};
    pub(crate) use std::sync::atomic::{AtomicU64, Ordering};
    pub(crate) use std::sync::Arc;
    pub(crate) use std::time::{Duration, Instant};
    pub(crate) use tokio::net::{TcpListener, UnixListener, UnixStream};
    pub(crate) use tokio_tungstenite::tungstenite::Message;
}

use prelude::*;

fn main() {
    if let Some(dir) = std::env::var_os(ECHO_CHILD) {
        return EchoProcess::serve(Path::new(&dir));
    }
    let args: Vec<String> = std::env::args().collect();
    let check = args.iter().any(|a| a == "--check");
    let quick = args.iter().any(|a| a == "--quick");
    let n = if quick { 2_000 } else { 10_000 };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // `--browser-only`: rows 11-14 and 16 alone (the extension in Chromium), for work on the extension.
    if args.iter().any(|a| a == "--browser-only") {
        return finish(rt.block_on(browser_rows(quick)), check);
    }
    // `--input`: row 16 alone (issue 57).
    if args.iter().any(|a| a == "--input") {
        return finish(rt.block_on(input_only_rows(quick)), check);
    }
    // `--lanes`: row 15 alone (issue 60).
    if args.iter().any(|a| a == "--lanes") {
        return finish(rt.block_on(lanes_rows(quick)), check);
    }
    let scratch = tempfile::tempdir().unwrap();
    let mut rows = Vec::new();

    let secs = Duration::from_secs(if quick { 2 } else { 5 });
    let echo_path = rt.block_on(async { spawn_uds_echo(scratch.path()) });
    let (uds, ws, (raw_cps, raw_tp)) = rt.block_on(async {
        (
            uds_latency(&echo_path, "/echo", call_body("b1:1"), n).await,
            raw_ws_echo(n).await,
            throughput(&echo_path, "/echo", spread_call, 64, secs).await,
        )
    });
    rows.push(row(
        "1 raw UDS HTTP echo p50/p99",
        format!("{} / {}", us(uds.p50), us(uds.p99)),
        "-".into(),
        "-".into(),
        "the limit",
        None,
    ));
    rows.push(row(
        "1 raw WS echo p50/p99",
        format!("{} / {}", us(ws.p50), us(ws.p99)),
        "-".into(),
        "-".into(),
        "the limit",
        None,
    ));
    rows.push(row(
        "1 raw UDS HTTP echo, 64 clients",
        format!("{raw_cps:.0} req/s, p99 {}", ms(raw_tp.p99)),
        "-".into(),
        "-".into(),
        "the limit",
        None,
    ));
    let base50 = uds.p50 + ws.p50;
    let base99 = uds.p99 + ws.p99;

    let d = Daemon::start();
    let idle_rss = d.rss_kib();
    let mut exts = Vec::new();
    let mcp_n = if quick { 1_000 } else { 5_000 };
    let (lat, (cps, tp), cpu_per_call) = rt.block_on(async {
        for b in 1..=4 {
            exts.push(extension(d.port, &format!("bench-{b}"), 4, 1).await);
        }
        d.wait_tabs(16).await;
        let lat = call_latency(&d, n).await;
        let cpu0 = d.cpu();
        let tp = throughput(&d.socket, "/v1/call", spread_call, 64, secs).await;
        let calls = tp.0 * secs.as_secs_f64();
        let cpu_per_call = (d.cpu() - cpu0).as_secs_f64() / calls;
        (lat, tp, cpu_per_call)
    });
    drop(exts);
    drop(d);

    // MCP on a fresh daemon with the same browsers, so its memory row is MCP's alone.
    let d = Daemon::start();
    let mut exts = Vec::new();
    let mcp = rt.block_on(async {
        for b in 1..=4 {
            exts.push(extension(d.port, &format!("bench-{b}"), 4, 1).await);
        }
        d.wait_tabs(16).await;
        let mut stdio = McpStdio::start(&d).await;
        let rss_before = d.rss_kib();
        stdio.pipelined(MCP_CALLS, 16).await;
        // Before the /mcp session of the latency rows, so the row is browserctl mcp's alone.
        let rss = (rss_kib(stdio.pid()), d.rss_kib(), rss_before);
        // The same figures for the `browserctl mcp` before issue 17, if given: an MCP server
        // of its own over the control API.
        let mut before = None;
        if let Ok(old) = std::env::var("BENCH_BEFORE_CTL") {
            let mut b = McpStdio::start_with(&d, &old).await;
            let (c0, d0) = (cpu(b.pid()), d.cpu());
            b.pipelined(MCP_CALLS, 16).await;
            let b_cpu = (
                (cpu(b.pid()) - c0).as_secs_f64(),
                (d.cpu() - d0).as_secs_f64(),
            );
            let b_rss = rss_kib(b.pid());
            before = Some((b, b_cpu, b_rss));
        }
        let has_before = before.is_some();
        let cpu_row = mcp_and_direct_cpu(&d, &mut stdio).await;
        drop(stdio);
        let before = before.map(|(_, c, r)| (c.0 / MCP_CALLS as f64, c.1 / MCP_CALLS as f64, r));
        // The latency rows' clients run on one thread that also waits on their sockets, as a
        // real client does (browserctl, curl, an MCP SDK): on the bench's worker pool an HTTP
        // client hands each request and answer between threads, which a line client does not.
        let d = &d;
        let lat = std::thread::scope(|s| {
            s.spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let placed = latency_pass(d, has_before, mcp_n).await;
                    let _one = OneCpu::pin(d.child.id()).await;
                    (latency_pass(d, has_before, mcp_n).await, placed)
                })
            })
            .join()
            .unwrap()
        });
        (lat, cpu_row, rss, before)
    });
    let r50 = lat.p50.as_secs_f64() / base50.as_secs_f64();
    let r99 = lat.p99.as_secs_f64() / base99.as_secs_f64();
    rows.push(row(
        "2 call latency p50",
        us(lat.p50),
        format!("{} (UDS+WS)", us(base50)),
        format!("{r50:.2}x"),
        "<= 1.5x",
        Some(r50 <= 1.5),
    ));
    rows.push(row(
        "2 call latency p99",
        us(lat.p99),
        format!("{} (UDS+WS)", us(base99)),
        format!("{r99:.2}x"),
        "<= 3x",
        Some(r99 <= 3.0),
    ));
    rows.push(row(
        "3 throughput, 64 clients/16 tabs/4 browsers",
        format!("{cps:.0} calls/s"),
        "-".into(),
        "-".into(),
        ">= 50000/s",
        Some(cps >= 50_000.0),
    ));
    rows.push(row(
        "3 throughput vs raw echo / daemon CPU per call",
        format!(
            "{:.2}x of raw / {:.1} µs",
            cps / raw_cps,
            cpu_per_call * 1e6
        ),
        format!("{raw_cps:.0} req/s"),
        "-".into(),
        "report",
        None,
    ));
    rows.push(row(
        "3 throughput p99",
        ms(tp.p99),
        "-".into(),
        "-".into(),
        "< 5 ms",
        Some(tp.p99 < Duration::from_millis(5)),
    ));

    let ((m, placed), (ctl_cpu, d_cpu, direct16), mcp_rss, before) = mcp;
    let mcp_cpu = ctl_cpu + d_cpu;
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    rows.push(row(
        "8 direct call (rows 8-9: in turn, on one CPU) p50/p99",
        format!("{} / {}", us(m.direct.p50), us(m.direct.p99)),
        "-".into(),
        "-".into(),
        "baseline",
        None,
    ));
    rows.push(ratio_row(
        "8 direct call p50 vs a minimal bridge (UDS -> WS)",
        m.direct.p50,
        m.bridge.0.p50,
        "bridge".into(),
    ));
    rows.push(ratio_row(
        "8 direct call p50 vs the echo process's two hops",
        m.direct.p50,
        m.uds.p50 + m.ws.p50,
        format!("UDS {} + WS {}", us(m.uds.p50), us(m.ws.p50)),
    ));
    let m50 = ratio(m.stdio.p50, m.direct.p50);
    let m99 = ratio(m.stdio.p99, m.direct.p99);
    rows.push(row(
        "8 MCP tools/call via browserctl mcp (stdio) p50",
        us(m.stdio.p50),
        format!("{} (direct call)", us(m.direct.p50)),
        format!("{m50:.2}x"),
        "<= 1.3x",
        Some(m50 <= 1.3),
    ));
    rows.push(row(
        "8 MCP tools/call via browserctl mcp (stdio) p99",
        us(m.stdio.p99),
        format!("{} (direct call)", us(m.direct.p99)),
        format!("{m99:.2}x"),
        "<= 2x",
        Some(m99 <= 2.0),
    ));
    rows.push(ratio_row(
        "8 MCP tools/call on the socket's MCP session, no relay, p50",
        m.socket.p50,
        m.direct.p50,
        "direct call".into(),
    ));
    let rc = mcp_cpu / direct16;
    rows.push(row(
        "8 MCP CPU per call, browserctl mcp + daemon, 16 in flight",
        format!(
            "{:.1} µs (relay {:.1} + daemon {:.1})",
            mcp_cpu * 1e6,
            ctl_cpu * 1e6,
            d_cpu * 1e6
        ),
        format!("{:.1} µs (daemon, direct call)", direct16 * 1e6),
        format!("{rc:.2}x"),
        "<= 1.5x",
        Some(rc <= 1.5),
    ));
    rows.push(row(
        "8 RSS browserctl mcp + daemon after 10,000 MCP calls",
        format!(
            "{:.1} MiB (relay {:.1} + daemon {:.1}, {:.1} before the calls)",
            (mcp_rss.0 + mcp_rss.1) as f64 / 1024.0,
            mcp_rss.0 as f64 / 1024.0,
            mcp_rss.1 as f64 / 1024.0,
            mcp_rss.2 as f64 / 1024.0
        ),
        "-".into(),
        "-".into(),
        "<= 20 MiB",
        Some(mcp_rss.0 + mcp_rss.1 <= 20 * 1024),
    ));
    if let (Some(b), Some((b_ctl, b_d, b_rss))) = (m.before, before) {
        rows.push(row(
            "8 before: browserctl mcp of main (stdio) p50/p99",
            format!("{} / {}", us(b.p50), us(b.p99)),
            format!("{} (direct call)", us(m.direct.p50)),
            format!("{:.2}x", ratio(b.p50, m.direct.p50)),
            "report",
            None,
        ));
        rows.push(row(
            "8 before: CPU per call, browserctl mcp of main + daemon",
            format!(
                "{:.1} µs (it {:.1} + daemon {:.1})",
                (b_ctl + b_d) * 1e6,
                b_ctl * 1e6,
                b_d * 1e6
            ),
            format!("{:.1} µs (daemon, direct call)", direct16 * 1e6),
            format!("{:.2}x", (b_ctl + b_d) / direct16),
            "report",
            None,
        ));
        rows.push(row(
            "8 before: RSS of browserctl mcp of main",
            format!("{:.1} MiB", b_rss as f64 / 1024.0),
            "-".into(),
            "-".into(),
            "report",
            None,
        ));
    }
    // The floor of /mcp: a raw HTTP echo whose answer comes over the WebSocket hop, in one
    // process between the client and the browser, as the daemon is (`spawn_bridge`).
    let floor = m.bridge.1;
    let r50 = ratio(m.http.p50, floor.p50);
    let r99 = ratio(m.http.p99, floor.p99);
    rows.push(row(
        "9 MCP tools/call over /mcp (Streamable HTTP) p50",
        us(m.http.p50),
        format!("{} (bridge: TCP -> WS)", us(floor.p50)),
        format!("{r50:.2}x"),
        "<= 1.3x",
        Some(r50 <= 1.3),
    ));
    rows.push(row(
        "9 MCP tools/call over /mcp (Streamable HTTP) p99",
        us(m.http.p99),
        format!("{} (bridge: TCP -> WS)", us(floor.p99)),
        format!("{r99:.2}x"),
        "<= 2x",
        Some(r99 <= 2.0),
    ));
    rows.push(ratio_row(
        "9 /mcp p50 vs the direct call",
        m.http.p50,
        m.direct.p50,
        "direct call".into(),
    ));
    rows.push(ratio_row(
        "9 /mcp p50 vs the echo process's two hops",
        m.http.p50,
        m.tcp.p50 + m.ws.p50,
        format!("TCP {} + WS {}", us(m.tcp.p50), us(m.ws.p50)),
    ));
    rows.push(ratio_row(
        "9 /mcp p50 vs echoes on the client's own thread",
        m.http.p50,
        m.here.0.p50 + m.here.1.p50,
        "TCP+WS".into(),
    ));
    // The same round trips as the kernel placed them: what a caller waits here, wake-ups
    // between CPUs included (see `OneCpu` for why the targets are read on one CPU).
    for (name, p99) in [("p50", false), ("p99", true)] {
        let at = |l: Lat| if p99 { l.p99 } else { l.p50 };
        let p = |l: Lat| at(l).as_secs_f64() * 1e6;
        rows.push(row(
            &format!("8-9 as placed by the kernel, {name}: stdio / direct / /mcp / TCP bridge"),
            format!(
                "{:.1} / {:.1} / {:.1} / {:.1} µs",
                p(placed.stdio),
                p(placed.direct),
                p(placed.http),
                p(placed.bridge.1)
            ),
            "-".into(),
            format!(
                "{:.2}x, {:.2}x",
                ratio(at(placed.stdio), at(placed.direct)),
                ratio(at(placed.http), at(placed.bridge.1))
            ),
            "report",
            None,
        ));
    }

    let (ctl, curl) = one_shot(&d, if quick { 10 } else { 40 });
    let r7 = ctl.as_secs_f64() / curl.as_secs_f64();
    rows.push(row(
        "7 one-shot browserctl call",
        ms(ctl),
        format!("{} (curl)", ms(curl)),
        format!("{r7:.2}x"),
        "<= 1.0x",
        Some(r7 <= 1.0),
    ));
    drop(d);

    let d = Daemon::start();
    let (eps, lagged, cpu, delivered) =
        rt.block_on(fanout(&d, 100, if quick { 2_000 } else { 10_000 }));
    rows.push(row(
        "4 event fan-out, 100 subscribers",
        format!("{eps:.0} events/s ({delivered} delivered)"),
        "-".into(),
        "-".into(),
        "report",
        None,
    ));
    rows.push(row(
        "4 fan-out lagged notices / daemon CPU",
        format!("{lagged} / {cpu:.0}%"),
        "-".into(),
        "-".into(),
        "report",
        None,
    ));
    drop(d);

    let d = Daemon::start();
    let idle2 = d.rss_kib();
    let loaded = rt.block_on(async {
        let mut exts = Vec::new();
        for b in 0..10 {
            exts.push(extension(d.port, &format!("mem-{b}"), 100, 20).await);
        }
        d.wait_tabs(1000).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        d.rss_kib()
    });
    let idle = idle_rss.max(idle2);
    rows.push(row(
        "5 RSS idle",
        format!("{:.1} MiB", idle as f64 / 1024.0),
        "-".into(),
        "-".into(),
        "<= 10 MiB",
        Some(idle <= 10 * 1024),
    ));
    rows.push(row(
        "5 RSS, 10 browsers x 100 tabs x 20 tools",
        format!("{:.1} MiB", loaded as f64 / 1024.0),
        "-".into(),
        "-".into(),
        "<= 64 MiB",
        Some(loaded <= 64 * 1024),
    ));
    drop(d);

    let start = start_to_ready(if quick { 5 } else { 11 });
    rows.push(row(
        "6 start: exec -> READY=1 (median)",
        ms(start),
        "-".into(),
        "-".into(),
        "<= 20 ms",
        Some(start <= Duration::from_millis(20)),
    ));

    // Row 10: the agent's view over MCP, the same with 1, 20 and 100 tabs.
    let builtins = builtin_tools();
    let lists: Vec<(usize, Listing)> = [1, 20, 100]
        .into_iter()
        .map(|n| (n, rt.block_on(listing(n, &builtins))))
        .collect();
    let same_names = lists.iter().all(|(_, l)| l.names == lists[0].1.names);
    for (n, l) in &lists {
        let ok = l.names.len() <= MAX_TOOLS && l.bytes <= MAX_LIST_BYTES && same_names;
        rows.push(row(
            &format!("10 MCP tools/list, {n} tab(s): tools / bytes"),
            format!("{} / {:.1} KB", l.names.len(), l.bytes as f64 / 1024.0),
            format!("{} built-ins a tab", builtins.len()),
            "-".into(),
            "<= 40 / 40 KB, same names",
            Some(ok),
        ));
    }
    let (unrelated, control) = rt.block_on(list_changed(&builtins));
    rows.push(row(
        "10 list_changed per 100 unrelated tab events",
        unrelated.to_string(),
        format!("{control} (focus moved)"),
        "-".into(),
        "0 (control >= 1)",
        Some(unrelated == 0 && control >= 1),
    ));

    let (mcp_chars, cli_chars) = rt.block_on(snapshot_chars(&builtins));
    let r10 = mcp_chars as f64 / cli_chars as f64;
    rows.push(row(
        "10 snapshot over MCP vs browserctl call (scripted, the extension's shape)",
        format!("{mcp_chars} chars"),
        format!("{cli_chars} chars (CLI)"),
        format!("{r10:.2}x"),
        "<= 1.1x",
        Some(r10 <= 1.1),
    ));

    rows.extend(rt.block_on(browser_rows(quick)));
    rows.extend(rt.block_on(lanes_rows(quick)));
    finish(rows, check);
}

fn finish(rows: Vec<Row>, check: bool) {
    print_table(&rows);
    let missed: Vec<&Row> = rows.iter().filter(|r| r.ok == Some(false)).collect();
    if check && !missed.is_empty() {
        eprintln!(
            "missed targets: {}",
            missed
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
        std::process::exit(1);
    }
}
