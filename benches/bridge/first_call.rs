//! Row 12: the first tool call on a page no tool has touched (the DOM tools are put into a frame
//! when first needed, issue 30) against a later call of the same tool on that page (300 ms after:
//! what the first answer leaves the page to do is neither call's), over the control socket: a page
//! in a tab behind the focused one, which nothing prepares (worker/ahead/kit-ahead.js may warm the
//! focused tab). Five fresh pages a tool, after one untimed: a browser's first call of a tool also
//! warms the worker's and the daemon's code for it, once a session and not once a page (the
//! session's first call read 35–62 ms in nine runs of scripts/first-call-cost.mjs, the next pages'
//! first calls 17–35). Medians. Row 12c: the same after the agent's own browser_navigate, where the
//! DOM tools go in ahead of the call.

use crate::prelude::*;

/// GET or POST on the control socket; the answer's status and JSON.
pub(crate) async fn control(
    d: &Daemon,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut client = http1_client(&d.socket).await;
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "d")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(
            body.map(|b| b.to_string()).unwrap_or_default(),
        )))
        .unwrap();
    client.ready().await.unwrap();
    let res = client.send_request(req).await.unwrap();
    let status = res.status().as_u16();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// The daemon's ref of the tab showing `url`, once it offers `tool`.
pub(crate) async fn tab_ref(d: &Daemon, url: &str, tool: &str) -> String {
    let start = Instant::now();
    loop {
        let (_, v) = control(d, "GET", "/v1/tabs", None).await;
        let found = v["tabs"].as_array().and_then(|tabs| {
            tabs.iter().find(|t| {
                t["url"] == url
                    && t["tools"]
                        .as_array()
                        .is_some_and(|ts| ts.iter().any(|x| x["name"] == tool))
            })
        });
        if let Some(t) = found {
            return t["ref"].as_str().unwrap().to_owned();
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no tab at {url} offering {tool}: {v}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn timed_call(d: &Daemon, tab: &str, tool: &str, args: &Value) -> Duration {
    let body = json!({"tool": tool, "tab": tab, "args": args, "retries": 0});
    let t = Instant::now();
    let (status, v) = control(d, "POST", "/v1/call", Some(body)).await;
    let took = t.elapsed();
    assert_eq!(status, 200, "{tool}: {v}");
    took
}

const TOOLS: &[(&str, &str, &str)] = &[
    ("browser_snapshot", "/t/playwright/input/button.html", "{}"),
    (
        "browser_click",
        "/t/playwright/input/button.html",
        r#"{"selector": "button"}"#,
    ),
    (
        "browser_type",
        "/t/playwright/evals/fill-form.html",
        r##"{"selector": "#name", "text": "Ada"}"##,
    ),
    (
        "browser_hover",
        "/t/playwright/input/button.html",
        r#"{"selector": "button"}"#,
    ),
];

pub(crate) async fn first_call_rows(c: &mut Chromium, d: &Daemon, pages: &PageServer) -> Vec<Row> {
    let mut rows = Vec::new();
    for (tool, path, args) in TOOLS {
        let args: Value = serde_json::from_str(args).unwrap();
        let url = pages.url(path);
        // The untimed page: this browser's first call of the tool (above).
        first_and_later(c, d, &url, tool, &args, How::Opened).await;
        let (f, l) = medians(c, d, &url, tool, &args, How::Opened, 5).await;
        let what = format!("12 first call on a fresh page, {tool}");
        rows.push(first_call_row(&what, f, l, Some(15.0)));
        // Row 12b (reported): the page's own part of row 12, its main thread's CPU time during
        // the first call against a later one (DevTools' metrics, `threadTicks`, read around
        // each call). The round trips of row 12 stretch with the shared machine's speed (a
        // later snapshot read 5 to 10 ms from run to run); the page's CPU time much less. Pages
        // of its own, three a tool, as the metrics' instrumentation would lengthen row 12's
        // round trips.
        let (f, l) = medians(c, d, &url, tool, &args, How::PageCpu, 3).await;
        let what = format!("12b the page's main-thread CPU in that first call, {tool}");
        rows.push(first_call_row(&what, f, l, None));
        // Row 12c (reported): the first call on a page the agent reached with browser_navigate
        // in the tab, at once after the navigation's answer, as a script's next command comes:
        // the DOM tools go into a page of a tab an agent drives once it has loaded
        // (worker/ahead/kit-ahead.js), so the call finds them there or on their way.
        let (f, l) = medians(c, d, &url, tool, &args, How::Navigated, 5).await;
        let what = format!("12c first call after the agent's browser_navigate, {tool}");
        rows.push(first_call_row(&what, f, l, None));
    }
    rows
}

/// The medians of `pages` first and later calls, a fresh page each (`first_and_later`).
async fn medians(
    c: &mut Chromium,
    d: &Daemon,
    url: &str,
    tool: &str,
    args: &Value,
    how: How,
    pages: usize,
) -> (f64, f64) {
    let (mut first, mut later) = (Vec::new(), Vec::new());
    for _ in 0..pages {
        let (f, l) = first_and_later(c, d, url, tool, args, how).await;
        first.push(f);
        later.push(l);
    }
    (median(&first), median(&later))
}

/// A first call against a later one, in ms, with a target for the difference or reported.
fn first_call_row(what: &str, first: f64, later: f64, target: Option<f64>) -> Row {
    let added = first - later;
    row(
        what,
        format!("{first:.1} ms"),
        format!("{later:.1} ms (a later call)"),
        format!("{added:+.1} ms"),
        &target.map_or("report".into(), |t| format!("<= +{t} ms")),
        target.map(|t| added <= t),
    )
}

/// How a first call's page is reached and what is measured.
#[derive(Clone, Copy, PartialEq)]
enum How {
    /// A tab opened at the page behind the focused one (by the person, say): the calls' round
    /// trips.
    Opened,
    /// The same, with DevTools' metrics on in the page: its main-thread CPU during each call.
    PageCpu,
    /// A tab opened behind at another page, then browser_navigate to this one: the round trips.
    Navigated,
}

/// The pause between a first call and the later one: an agent's, not a script's next command.
const SETTLE: Duration = Duration::from_millis(300);

/// A fresh tab at `url`, a first and a later call of `tool` there, the tab closed: the two
/// calls' round trips in ms, or the page's main-thread CPU ms during each (`How::PageCpu`).
async fn first_and_later(
    c: &mut Chromium,
    d: &Daemon,
    url: &str,
    tool: &str,
    args: &Value,
    how: How,
) -> (f64, f64) {
    let page_cpu = how == How::PageCpu;
    let opened = match how {
        How::Navigated => format!("{url}?from"),
        _ => url.to_owned(),
    };
    let (target, session) = open_in(c, &opened, page_cpu, Place::Behind).await;
    let tab = tab_ref(d, &opened, tool).await;
    if how == How::Navigated {
        timed_call(d, &tab, "browser_navigate", &json!({ "url": url })).await;
    }
    let before = cpu_ms(c, &session, page_cpu).await;
    let first = timed_call(d, &tab, tool, args).await;
    let between = cpu_ms(c, &session, page_cpu).await;
    // What the first answer leaves the page to do (after a snapshot, the acting part goes in
    // for the action that follows) is neither call's: it is let finish before the later call.
    tokio::time::sleep(SETTLE).await;
    let settled = cpu_ms(c, &session, page_cpu).await;
    let later = timed_call(d, &tab, tool, args).await;
    let after = cpu_ms(c, &session, page_cpu).await;
    c.close_tab(&target).await;
    if page_cpu {
        (between - before, after - settled)
    } else {
        (first.as_secs_f64() * 1e3, later.as_secs_f64() * 1e3)
    }
}

/// The page's main-thread CPU time so far, in ms (0 when its metrics are off).
async fn cpu_ms(c: &mut Chromium, session: &str, on: bool) -> f64 {
    if on {
        ms_of(&c.metrics(session).await).task
    } else {
        0.0
    }
}

/// Row 14: browser_screenshot of a whole 5,000 px page, in seconds (median of 3), on the
/// browser's one tab of it. `captureVisibleTab` takes the viewport and Chromium allows two a
/// second, so without the debugger permission it is stitched from that many captures.
pub(crate) async fn screenshot_secs(c: &mut Chromium, d: &Daemon, pages: &PageServer) -> f64 {
    let url = pages.url("/tall");
    let (target, session) = open(c, &url).await;
    c.send(
        Some(&session),
        "Emulation.setDeviceMetricsOverride",
        json!({"width": 800, "height": 600, "deviceScaleFactor": 1, "mobile": false}),
    )
    .await;
    let tab = tab_ref(d, &url, "browser_screenshot").await;
    let args = json!({"fullPage": true});
    let mut took = Vec::new();
    for _ in 0..3 {
        took.push(
            timed_call(d, &tab, "browser_screenshot", &args)
                .await
                .as_secs_f64(),
        );
    }
    c.close_tab(&target).await;
    median(&took)
}

/// Rows 14 and 14b: stitched (the default) and in one capture once the person granted the
/// optional "debugger" permission (the options page asks for it).
pub(crate) fn screenshot_rows(stitched: f64, one: f64) -> Vec<Row> {
    vec![
        row(
            "14 full-page screenshot, 5,000 px page, 800x600 viewport",
            format!("{stitched:.2} s"),
            "2 captures/s (Chromium's limit)".into(),
            format!("{:.0} captures", (5000.0f64 / 600.0).ceil()),
            "reported",
            None,
        ),
        row(
            "14b the same, debugger permission granted (opt-in)",
            format!("{one:.2} s"),
            format!("{stitched:.2} s stitched"),
            format!("{:.2}x", one / stitched),
            "reported",
            None,
        ),
    ]
}

/// The extension as it is once the person granted the debugger permission: a copy whose
/// manifest asks for it up front (nobody can click the browser's prompt in a headless bench).
pub(crate) fn granted_extension() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("extension");
    let ok = Command::new("cp")
        .arg("-r")
        .arg(&src)
        .arg(dir.path())
        .status()
        .unwrap()
        .success();
    assert!(ok, "copy the extension");
    let path = dir.path().join("extension/manifest.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["permissions"]
        .as_array_mut()
        .unwrap()
        .push(json!("debugger"));
    std::fs::write(&path, manifest.to_string()).unwrap();
    dir
}

/// Row 13: 50 tabs open, then the daemon starts: how long until `GET /v1/tabs` lists all of
/// them with their tools; the extension's service-worker heap and the daemon's RSS then.
pub(crate) async fn many_tabs_rows(exe: &Path, pages: &PageServer) -> Vec<Row> {
    const TABS: usize = 50;
    let dir = tempfile::tempdir().unwrap();
    let mut c = crate::browser::host_chromium(exe, &dir.path().join("discovery")).await;
    for i in 0..TABS {
        c.send(
            None,
            "Target.createTarget",
            json!({"url": pages.url(&format!("/child?tab{i}"))}),
        )
        .await;
    }
    // Every tab loaded before the daemon exists.
    let start = Instant::now();
    while c
        .targets("page")
        .await
        .iter()
        .filter(|t| t["url"].as_str().unwrap_or("").contains("/child?tab"))
        .count()
        < TABS
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "50 tabs did not open"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let t0 = Instant::now();
    let d = Daemon::start_in(dir);
    loop {
        let (_, v) = control(&d, "GET", "/v1/tabs", None).await;
        let ready = v["tabs"].as_array().map_or(0, |tabs| {
            tabs.iter()
                .filter(|t| {
                    t["url"].as_str().unwrap_or("").contains("/child?tab")
                        && t["tools"].as_array().is_some_and(|ts| !ts.is_empty())
                })
                .count()
        });
        if ready >= TABS {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the daemon never listed 50 tabs"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let listed = t0.elapsed();
    let sw = c
        .targets("service_worker")
        .await
        .into_iter()
        .find(|t| {
            t["url"]
                .as_str()
                .unwrap_or("")
                .ends_with("/worker/background.js")
        })
        .expect("the extension's service worker");
    let session = c
        .send(
            None,
            "Target.attachToTarget",
            json!({"targetId": sw["targetId"], "flatten": true}),
        )
        .await["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let heap = c
        .send(Some(&session), "Runtime.getHeapUsage", json!({}))
        .await;
    let heap_mib = heap["usedSize"].as_f64().unwrap_or_default() / 1048576.0;
    let rss_mib = d.rss_kib() as f64 / 1024.0;
    vec![
        row(
            "13 50 tabs: daemon start -> all listed with tools",
            ms(listed),
            "-".into(),
            "-".into(),
            "<= 3 s",
            Some(listed <= Duration::from_secs(3)),
        ),
        row(
            "13 50 tabs: service worker heap / daemon RSS",
            format!("{heap_mib:.1} MiB / {rss_mib:.1} MiB"),
            "-".into(),
            "-".into(),
            "<= 16 MiB / <= 24 MiB",
            Some(heap_mib <= 16.0 && rss_mib <= 24.0),
        ),
    ]
}
