//! Row 11: what our extension costs the person's pages (issue 30). Headless Chromiums of the
//! same run, one with the extension (connected to a daemon through its native host, as README
//! sets it up) and one without, load the same pages in turn; the renderer's main-thread time
//! (`TaskDuration`) and script time (`ScriptDuration`) of each load come from DevTools'
//! `Performance.getMetrics`. Medians, ranges and what the extension adds. A third Chromium, with
//! the floor extension (one statement at `document_start`, nothing else), loads the pages that
//! have a target in milliseconds: what any extension with a content script costs them.
//!
//! The times are the main thread's CPU time (DevTools' `threadTicks`), not its wall-clock
//! time: on a two-core machine shared by three Chromiums, a daemon and this bench, a task's
//! wall-clock time counts the moments its thread waits for a core, and a page's loads spread
//! over twice their median (docs/performance.md). `BENCH_CLOCK=wall` measures wall-clock time.

use crate::prelude::*;

/// Main-thread and script milliseconds of one load (or, for the idle page, of one second).
#[derive(Clone, Copy, Default)]
pub(crate) struct Cost {
    pub(crate) task: f64,
    pub(crate) script: f64,
}

/// The pages of row 11, and what each may cost more with the extension.
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) path: &'static str,
    pub(crate) limit: Limit,
}

pub(crate) enum Limit {
    /// At most this many ms of main thread and of script more than without.
    Added { task: f64, script: f64 },
    /// At most this ratio of main-thread time to without.
    Ratio(f64),
}

pub(crate) const CASES: &[Case] = &[
    Case {
        name: "a button page",
        path: "/t/playwright/input/button.html",
        limit: Limit::Added {
            task: 3.0,
            script: 1.0,
        },
    },
    Case {
        name: "an order form",
        path: "/t/playwright/evals/fill-form.html",
        limit: Limit::Added {
            task: 3.0,
            script: 1.0,
        },
    },
    Case {
        name: "50,000 elements",
        path: "/big",
        limit: Limit::Ratio(1.05),
    },
    Case {
        name: "20 same-origin iframes",
        path: "/frames",
        // One millisecond an iframe.
        limit: Limit::Added {
            task: 20.0,
            script: 20.0,
        },
    },
    Case {
        name: "DOM changing 60x/s, per s idle",
        path: "/idle",
        limit: Limit::Ratio(1.05),
    },
];

/// `BENCH_CLOCK=wall`: wall-clock time, as before issue 30's last figures, for comparison.
fn wall_clock() -> bool {
    std::env::var("BENCH_CLOCK").is_ok_and(|c| c == "wall")
}

/// What the rows' times are, for their names.
fn times() -> &'static str {
    if wall_clock() {
        "main thread, wall clock (script) ms"
    } else {
        "main-thread CPU (script) ms"
    }
}

const SETTLE: Duration = Duration::from_millis(300);
const IDLE_WINDOW: Duration = Duration::from_secs(3);

pub(crate) fn ms_of(m: &std::collections::HashMap<String, f64>) -> Cost {
    Cost {
        task: m.get("TaskDuration").copied().unwrap_or_default() * 1e3,
        script: m.get("ScriptDuration").copied().unwrap_or_default() * 1e3,
    }
}

/// Opens `url` in a new tab and waits for it to load and settle; returns (target, session).
pub(crate) async fn open(c: &mut Chromium, url: &str) -> (String, String) {
    open_in(c, url, false, Place::Front).await
}

/// As `open`, with DevTools' metrics on from before the page starts, in the focused tab or one
/// behind it. Only rows 11 and 12b turn the metrics on: the other rows time calls, and a
/// person's browser runs without DevTools' instrumentation.
pub(crate) async fn open_in(
    c: &mut Chromium,
    url: &str,
    metrics: bool,
    place: Place,
) -> (String, String) {
    let (target, session) = c.new_tab_where(place).await;
    if metrics {
        let domain = if wall_clock() {
            "timeTicks"
        } else {
            "threadTicks"
        };
        c.send(
            Some(&session),
            "Performance.enable",
            json!({ "timeDomain": domain }),
        )
        .await;
    }
    c.send(Some(&session), "Page.navigate", json!({ "url": url }))
        .await;
    c.wait(
        &session,
        &format!(
            "location.href === {} && document.readyState === 'complete'",
            json!(url)
        ),
    )
    .await;
    tokio::time::sleep(SETTLE).await;
    (target, session)
}

/// One load of `url` in a new tab: its cost up to SETTLE after it completed (for the idle
/// page: the cost of one second once loaded).
pub(crate) async fn load(c: &mut Chromium, url: &str, idle: bool) -> Cost {
    let (target, session) = open_in(c, url, true, Place::Front).await;
    let first = ms_of(&c.metrics(&session).await);
    let cost = if idle {
        tokio::time::sleep(IDLE_WINDOW).await;
        let later = ms_of(&c.metrics(&session).await);
        let secs = IDLE_WINDOW.as_secs_f64();
        Cost {
            task: (later.task - first.task) / secs,
            script: (later.script - first.script) / secs,
        }
    } else {
        first
    };
    c.close_tab(&target).await;
    cost
}

pub(crate) fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn range(v: &[f64]) -> String {
    let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    format!("{lo:.1}–{hi:.1}")
}

/// The floor of row 11: an extension of one statement in the page's world at `document_start`,
/// in every frame as ours, and nothing else (no worker, no permissions). Whatever an extension
/// with a content script does, the browser charges a page this much for it.
pub(crate) fn floor_extension() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let manifest = json!({
        "manifest_version": 3,
        "name": "floor",
        "version": "1.0",
        "content_scripts": [{
            "matches": ["http://*/*", "https://*/*"],
            "js": ["floor.js"],
            "run_at": "document_start",
            "all_frames": true,
            "match_origin_as_fallback": true,
            "world": "MAIN",
        }],
    });
    std::fs::write(dir.path().join("manifest.json"), manifest.to_string()).unwrap();
    std::fs::write(
        dir.path().join("floor.js"),
        "globalThis.benchFloor = true;\n",
    )
    .unwrap();
    dir
}

/// Row 11 for every case: `runs` alternating loads with and without the extension, and with the
/// floor extension for the cases with a target in milliseconds.
pub(crate) async fn page_cost_rows(
    with: &mut Chromium,
    without: &mut Chromium,
    floor: &mut Chromium,
    pages: &PageServer,
    runs: usize,
) -> Vec<Row> {
    // BENCH_CASES=button,form: only the cases whose names contain one of these (for work on
    // the extension; the full bench runs them all).
    let only = std::env::var("BENCH_CASES").ok();
    let cases: Vec<&Case> = CASES
        .iter()
        .filter(|c| {
            only.as_deref()
                .is_none_or(|o| o.split(',').any(|w| c.name.contains(w)))
        })
        .collect();
    // with, without, floor
    let mut samples: Vec<[Vec<Cost>; 3]> = cases.iter().map(|_| Default::default()).collect();
    for _ in 0..runs {
        for (i, case) in cases.iter().enumerate() {
            let url = pages.url(case.path);
            let idle = case.path == "/idle";
            samples[i][1].push(load(without, &url, idle).await);
            if matches!(case.limit, Limit::Added { .. }) {
                samples[i][2].push(load(floor, &url, idle).await);
            }
            samples[i][0].push(load(with, &url, idle).await);
        }
    }
    let mut rows = Vec::new();
    for (case, [w, wo, fl]) in cases.iter().zip(&samples) {
        let c = Compared::of(w, wo);
        let (target, ok) = match case.limit {
            Limit::Added { task, script } => (
                format!("<= +{task} ms, script <= +{script} ms"),
                c.added <= task && c.added_script <= script,
            ),
            Limit::Ratio(r) => (format!("<= {r}x"), c.ratio <= r),
        };
        let ours = (c.added, c.added_script);
        rows.push(c.row(
            &format!("11 page cost, {}: {}", case.name, times()),
            &target,
            Some(ok),
        ));
        if !fl.is_empty() {
            let f = Compared::of(fl, wo);
            let over = format!(
                "ours {:+.1} ({:+.1}) over it",
                ours.0 - f.added,
                ours.1 - f.added_script
            );
            rows.push(row(
                &format!("11 floor, {}: any extension's one statement", case.name),
                f.with,
                f.without,
                over,
                "report",
                None,
            ));
        }
    }
    rows
}

/// The loads of one page with the extension and without: medians, main-thread ranges and what
/// the extension adds, as rows 11 and 11b print them.
struct Compared {
    with: String,
    without: String,
    added: f64,
    added_script: f64,
    ratio: f64,
}

impl Compared {
    fn of(w: &[Cost], wo: &[Cost]) -> Compared {
        let task = |v: &[Cost]| v.iter().map(|c| c.task).collect::<Vec<_>>();
        let script = |v: &[Cost]| v.iter().map(|c| c.script).collect::<Vec<_>>();
        let (tw, two) = (task(w), task(wo));
        let (sw, swo) = (script(w), script(wo));
        let added = median(&tw) - median(&two);
        let added_script = median(&sw) - median(&swo);
        Compared {
            with: format!(
                "{:.1} ({:.1}) [{}] {added:+.1} ({added_script:+.1})",
                median(&tw),
                median(&sw),
                range(&tw)
            ),
            without: format!(
                "{:.1} ({:.1}) [{}] no extension",
                median(&two),
                median(&swo),
                range(&two)
            ),
            added,
            added_script,
            ratio: median(&tw) / median(&two),
        }
    }

    fn row(self, name: &str, target: &str, ok: Option<bool>) -> Row {
        let ratio = format!("{:.2}x", self.ratio);
        row(name, self.with, self.without, ratio, target, ok)
    }
}

/// Row 11b (reported): the button page while an agent works. The daemon has told the extension
/// so (`watch`), and its isolated half goes into every top frame at `document_start`: the cost
/// row 11 no longer pays, measured the same way.
pub(crate) async fn at_work_row(
    with: &mut Chromium,
    without: &mut Chromium,
    pages: &PageServer,
    runs: usize,
) -> Row {
    let url = pages.url(CASES[0].path);
    let (mut w, mut wo) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        wo.push(load(without, &url, false).await);
        w.push(load(with, &url, false).await);
    }
    Compared::of(&w, &wo).row(
        &format!("11b the button page while an agent works: {}", times()),
        "report",
        None,
    )
}
