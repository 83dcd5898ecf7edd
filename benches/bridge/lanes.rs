//! Row 15: each agent in its own lane (issue 60). Eight MCP clients (`browserctl mcp`) at once
//! on one real Chromium with the extension, each in three tabs it opened, looping navigate /
//! snapshot / click / type / snapshot by its current tab for two minutes, while a ninth reads
//! their tabs and tries to act in them; one agent alone first, in the same run, for the
//! baseline. The workload is the CI test's (`tests/it/support/lanes.rs`, `browser::lanes`);
//! `BENCH_LANES_SECS` sets the time together, `BENCH_LANES_RUNS` repeats the row (the spread).

use crate::lanes_work::{quantile, run, Report, Work, LANE_PAGE};
use crate::prelude::*;

/// The page of the lanes, at `/lane` of the bench's page server.
pub(crate) fn lane_page() -> Vec<u8> {
    LANE_PAGE.as_bytes().to_vec()
}

pub(crate) async fn lanes_rows(quick: bool) -> Vec<Row> {
    let Some(exe) = chromium_exe() else {
        eprintln!("\n*** row 15 needs Chromium at {CHROMIUM_DEFAULT}\n");
        let missed = "no Chromium".into();
        return vec![row(
            "15 lanes",
            missed,
            "-".into(),
            "-".into(),
            "measured",
            Some(false),
        )];
    };
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    let secs = env("BENCH_LANES_SECS").unwrap_or(if quick { 20 } else { 120 });
    let runs = env("BENCH_LANES_RUNS").unwrap_or(1).max(1);
    let mut reports = Vec::new();
    for i in 0..runs {
        let pages = PageServer::start().await;
        let d = Daemon::start();
        let browser = connected_chromium(&exe, &d).await;
        let work = Work {
            ctl: CTL.into(),
            socket: d.socket.clone(),
            page: pages.url("/lane"),
            agents: 8,
            tabs: 3,
            alone: Duration::from_secs(if quick { 5 } else { 20 }),
            together: Duration::from_secs(secs),
        };
        let report = run(&work).await;
        let alive = pid_alive(d.child.id());
        eprintln!(
            "row 15, run {}: {}; daemon alive at the end: {alive}",
            i + 1,
            report.summary()
        );
        eprintln!(
            "row 15, run {}, by tool (p50/p99 ms): {}",
            i + 1,
            report.tools()
        );
        for c in report.cross_talk.iter().chain(&report.lost).take(5) {
            eprintln!("  {c}");
        }
        drop(browser);
        drop(d);
        reports.push((report, alive));
    }
    rows_of(&reports, secs)
}

fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}/stat")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

/// `a` when every run says the same, else `min–max`.
fn spread(values: impl Iterator<Item = f64>, digits: usize) -> String {
    let v: Vec<f64> = values.collect();
    let (lo, hi) = v
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), x| (l.min(*x), h.max(*x)));
    match (hi - lo).abs() < 1e-9 {
        true => format!("{lo:.digits$}"),
        false => format!("{lo:.digits$}–{hi:.digits$}"),
    }
}

fn rows_of(reports: &[(Report, bool)], secs: u64) -> Vec<Row> {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let of = |f: &dyn Fn(&Report) -> f64, digits| spread(reports.iter().map(|(r, _)| f(r)), digits);
    let worst = reports.iter().map(|(r, _)| r.ratio()).fold(0.0, f64::max);
    let clean = reports.iter().all(|(r, alive)| {
        r.cross_talk.is_empty() && r.lost.is_empty() && r.hung == 0 && r.refused > 0 && *alive
    });
    let steady = reports
        .iter()
        .all(|(r, _)| r.daemon_down == 0 && r.reconnects == 0);
    let runs = reports.len();
    vec![
        row(
            &format!("15 lanes, 8 agents x 3 tabs, {secs} s, {runs} run(s): p50/p99 together"),
            format!(
                "{} / {} ms",
                of(&|r| ms(quantile(&r.together, 0.5)), 0),
                of(&|r| ms(quantile(&r.together, 0.99)), 0)
            ),
            format!(
                "{} / {} ms (one agent alone)",
                of(&|r| ms(quantile(&r.alone, 0.5)), 0),
                of(&|r| ms(quantile(&r.alone, 0.99)), 0)
            ),
            format!("{}x", of(&|r| r.ratio(), 2)),
            "p99 <= 3x",
            Some(worst <= 3.0),
        ),
        row(
            "15 lanes: calls together / rounds / intruder refused, read",
            format!(
                "{} / {} / {}, {}",
                of(&|r| r.together.len() as f64, 0),
                of(&|r| r.rounds as f64, 0),
                of(&|r| r.refused as f64, 0),
                of(&|r| r.reads as f64, 0)
            ),
            "-".into(),
            "-".into(),
            "report",
            None,
        ),
        row(
            "15 lanes: cross-talk / lost / hung",
            format!(
                "{} / {} / {}",
                of(&|r| r.cross_talk.len() as f64, 0),
                of(&|r| r.lost.len() as f64, 0),
                of(&|r| r.hung as f64, 0)
            ),
            "-".into(),
            "-".into(),
            "0 / 0 / 0, all refused",
            Some(clean),
        ),
        row(
            "15 lanes: daemon unanswered (1/s) / extension reconnects",
            format!(
                "{} / {}",
                of(&|r| r.daemon_down as f64, 0),
                of(&|r| r.reconnects as f64, 0)
            ),
            "-".into(),
            "-".into(),
            "0 / 0",
            Some(steady),
        ),
    ]
}
