//! Rows 11–14: the real extension in headless Chromium (issue 30). Without a Chromium the rows
//! are missed targets, said loudly: they never pass unmeasured.

use crate::prelude::*;

/// A daemon, and a Chromium whose extension reaches it through the native host (README's way).
pub(crate) async fn connected_chromium(exe: &Path, d: &Daemon) -> Chromium {
    let c = host_chromium(exe, &d.dir.path().join("discovery")).await;
    d.wait_tabs(1).await;
    c
}

/// The person's choice in the extension's options page: *Allow everywhere* (issue 31), so that
/// the rows measure calls, not a consent prompt nobody answers.
const ALLOW_EVERYWHERE: &str = include_str!("../../tests/e2e/allow-everywhere.js");

/// A Chromium whose extension looks for daemons in `disco` through its native host, with
/// agents allowed everywhere. BENCH_EXTENSION=DIR loads another build of the extension (a
/// variant under study) instead.
pub(crate) async fn host_chromium(exe: &Path, disco: &Path) -> Chromium {
    let ext = std::env::var_os("BENCH_EXTENSION")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("extension"));
    host_chromium_with(exe, disco, &ext).await
}

/// The same with the extension loaded from `ext` (a copy the bench has changed).
pub(crate) async fn host_chromium_with(exe: &Path, disco: &Path, ext: &Path) -> Chromium {
    let mut c = launch_host_chromium(exe, disco, ext).await;
    let (target, session) = c.new_tab().await;
    let options = "chrome-extension://jldadifenendlhihnlmegbljijfhnffa/ui/options.html";
    // The extension may still be loading: its page appears once it is up.
    let start = std::time::Instant::now();
    loop {
        c.send(Some(&session), "Page.navigate", json!({ "url": options }))
            .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        if c.eval(&session, "!!document.getElementById('default-mode')")
            .await
            == json!(true)
        {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no options page");
    }
    assert_eq!(c.eval(&session, ALLOW_EVERYWHERE).await, json!(true));
    c.close_tab(&target).await;
    c
}

async fn launch_host_chromium(exe: &Path, disco: &Path, ext: &Path) -> Chromium {
    std::fs::create_dir_all(disco).unwrap();
    Chromium::launch(exe, Some(ext), |profile| {
        let out = Command::new(CTL)
            .args(["--json", "install-native-host", "--user-data-dir"])
            .arg(profile)
            .arg("--discovery-dir")
            .arg(disco)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "install-native-host: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    })
    .await
}

/// Rows that need Chromium where there is none: a missed target, said loudly.
pub(crate) fn no_chromium(rows: &str) -> Vec<Row> {
    eprintln!(
        "\n*** rows {rows} need Chromium at {CHROMIUM_DEFAULT} (apt-get install chromium, or set BROWSER_MCP_CHROMIUM)\n"
    );
    vec![row(
        &format!("{rows} the extension in Chromium"),
        "no Chromium".into(),
        "-".into(),
        "-".into(),
        "measured",
        Some(false),
    )]
}

pub(crate) async fn browser_rows(quick: bool) -> Vec<Row> {
    let Some(exe) = chromium_exe() else {
        return no_chromium("11-14");
    };
    let pages = PageServer::start().await;
    let d = Daemon::start();
    let mut with = connected_chromium(&exe, &d).await;
    let mut without = Chromium::launch(&exe, None, |_| {}).await;
    let floor_ext = floor_extension();
    let mut floor = Chromium::launch(&exe, Some(floor_ext.path()), |_| {}).await;
    // Each browser keeps a page open throughout, as a person's browser does (where pages carry
    // the extension's lifeline, this one would; Chromium's is an offscreen document); a first
    // load of every page warms the browsers' caches alike.
    for c in [&mut with, &mut without, &mut floor] {
        open(c, &pages.url("/child?home")).await;
        for case in CASES {
            load(c, &pages.url(case.path), false).await;
        }
    }
    let runs = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(if quick { 3 } else { 7 });
    let mut rows = page_cost_rows(&mut with, &mut without, &mut floor, &pages, runs).await;
    drop(floor);
    // An agent's first request: from now on the extension watches its pages.
    let (status, _) = control(&d, "GET", "/v1/tabs", None).await;
    assert_eq!(status, 200, "GET /v1/tabs");
    rows.push(at_work_row(&mut with, &mut without, &pages, runs).await);
    drop(without);
    if std::env::var_os("BENCH_CASES").is_none() {
        rows.extend(first_call_rows(&mut with, &d, &pages).await);
        let stitched = screenshot_secs(&mut with, &d, &pages).await;
        let granted = granted_extension();
        let mut fast = host_chromium_with(
            &exe,
            &d.dir.path().join("discovery"),
            &granted.path().join("extension"),
        )
        .await;
        // Row 16 sets the extension's synthetic input against its trusted input: both are
        // this build's, so a variant of BENCH_EXTENSION is not set against it.
        if std::env::var_os("BENCH_EXTENSION").is_none() {
            rows.extend(input_rows(&d, &pages, &mut fast, &mut with, quick).await);
        }
        drop(with);
        let one = screenshot_secs(&mut fast, &d, &pages).await;
        drop(fast);
        rows.extend(screenshot_rows(stitched, one));
        drop(d);
        rows.extend(many_tabs_rows(&exe, &pages).await);
    }
    rows
}
