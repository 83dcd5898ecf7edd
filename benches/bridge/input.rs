//! Row 16 (issue 57): each action of the hands end to end over the control socket, with the
//! browser's own input (trusted: the extension holds the "debugger" permission) against
//! synthetic events (the extension as installed), on a simple page. Two Chromiums on one
//! daemon, their calls taken in turn round by round, so a shared machine's slow spells fall on
//! both alike; every answer is checked to say the input it used, so a fallback to synthetic
//! events can never pass for trusted input. Targets: trusted p99 ≤ 1.5× synthetic p99, and
//! every action ≤ 50 ms p99. The same rows in Firefox: two Firefoxes the daemon launched, one
//! with its trusted input (WebDriver BiDi, the daemon's session) and one launched
//! `--input synthetic`.

use crate::prelude::*;

/// The actions timed, each with its arguments on the `/act` page.
const ACTIONS: &[(&str, &str)] = &[
    ("browser_click", r##"{"selector": "#b"}"##),
    ("browser_hover", r##"{"selector": "#b"}"##),
    ("browser_type", r##"{"selector": "#t", "text": "Ada"}"##),
    ("browser_press_key", r##"{"selector": "#t", "key": "a"}"##),
];

/// Row 16 alone (`--input`): a daemon, the page server and the two browsers of its own, in
/// Chromium, then in Firefox.
pub(crate) async fn input_only_rows(quick: bool) -> Vec<Row> {
    let mut rows = chromium_input_rows(quick).await;
    rows.extend(firefox_input_rows(quick).await);
    rows
}

async fn chromium_input_rows(quick: bool) -> Vec<Row> {
    let Some(exe) = chromium_exe() else {
        return no_chromium("16");
    };
    let pages = PageServer::start().await;
    let d = Daemon::start();
    let mut synthetic = connected_chromium(&exe, &d).await;
    let granted = granted_extension();
    let mut trusted = host_chromium_with(
        &exe,
        &d.dir.path().join("discovery"),
        &granted.path().join("extension"),
    )
    .await;
    input_rows(&d, &pages, &mut trusted, &mut synthetic, quick).await
}

/// Row 16 in two browsers on `d`: `trusted` holds the debugger permission, `synthetic` not.
pub(crate) async fn input_rows(
    d: &Daemon,
    pages: &PageServer,
    trusted: &mut Chromium,
    synthetic: &mut Chromium,
    quick: bool,
) -> Vec<Row> {
    let rounds = if quick { 30 } else { 100 };
    let (t_url, s_url) = (pages.url("/act?trusted"), pages.url("/act?synthetic"));
    let (t_target, _) = open(trusted, &t_url).await;
    let (s_target, _) = open(synthetic, &s_url).await;
    let mut t = InputRun::new(d, &t_url, "trusted").await;
    let mut s = InputRun::new(d, &s_url, "synthetic").await;
    let mut rows = timed_rows(d, &mut t, &mut s, rounds, "trusted").await;
    trusted.close_tab(&t_target).await;
    synthetic.close_tab(&s_target).await;
    rows.push(where_the_time_goes(trusted, &t_url, rounds).await);
    rows
}

/// Row 16b (reported): where a trusted click's time goes, measured inside the extension (one
/// of its pages, which may do what its worker does) on another tab of the same page: the page
/// trip that finds the point (`chrome.scripting`), the browser's input there (three mouse
/// events, each acknowledged once the page took it), and the page's next task after it (where
/// the action's result learns what followed), against the synthetic path's one trip that
/// clicks and waits for that next task. The same steps as tools/input.js, without the daemon.
async fn where_the_time_goes(browser: &mut Chromium, url: &str, rounds: usize) -> Row {
    let worker = browser.targets("service_worker").await;
    let id = worker
        .iter()
        .filter_map(|t| t["url"].as_str()?.strip_prefix("chrome-extension://"))
        .find_map(|rest| rest.split('/').next())
        .expect("the extension's worker")
        .to_owned();
    let page = format!("chrome-extension://{id}/ui/options.html");
    let (target, session) = browser.open(json!({"url": page})).await;
    browser
        .wait(&session, "typeof chrome === 'object' && !!chrome.debugger")
        .await;
    let expr = format!(
        "({STEPS})({}, {rounds})",
        serde_json::to_string(url).unwrap()
    );
    let v = browser.eval(&session, &expr).await;
    browser.close_tab(&target).await;
    let p50 = |k: &str| v[k].as_f64().unwrap_or_else(|| panic!("16b: {v}"));
    let (trip, input, turn, synthetic) = (p50("trip"), p50("input"), p50("turn"), p50("synthetic"));
    row(
        "16b where a trusted click's time goes in the page (Chromium), p50",
        format!(
            "trip {trip:.1} + input {input:.1} + next task {turn:.1} = {:.1} ms",
            trip + input + turn
        ),
        format!("{synthetic:.1} ms synthetic click and next task"),
        format!("{:.2}x", (trip + input + turn) / synthetic),
        "reported",
        None,
    )
}

/// The steps of row 16b, in an extension page: a tab of its own at `url`, `rounds` clicks each
/// way, the p50 of each step in ms.
const STEPS: &str = r#"async (url, rounds) => {
  const tab = await chrome.tabs.create({ url, active: true });
  await new Promise((done) => {
    const on = (id, info) => id === tab.id && info.status === 'complete' && (chrome.tabs.onUpdated.removeListener(on), done());
    chrome.tabs.onUpdated.addListener(on);
  });
  const target = { tabId: tab.id, frameIds: [0] };
  const run = async (func) => (await chrome.scripting.executeScript({ target, func, injectImmediately: true }))[0].result;
  const point = () => {
    const r = document.getElementById('b').getBoundingClientRect();
    return { x: r.x + r.width / 2, y: r.y + r.height / 2 };
  };
  const turn = () => new Promise((done) => { const c = new MessageChannel(); c.port1.onmessage = () => done(true); c.port2.postMessage(0); });
  const click = () => {
    document.getElementById('b').click();
    return new Promise((done) => { const c = new MessageChannel(); c.port1.onmessage = () => done(true); c.port2.postMessage(0); });
  };
  await chrome.debugger.attach({ tabId: tab.id }, '1.3');
  const mouse = (type, p) => chrome.debugger.sendCommand({ tabId: tab.id }, 'Input.dispatchMouseEvent', { type, x: p.x, y: p.y, button: 'left', buttons: type === 'mousePressed' ? 1 : 0, clickCount: 1, pointerType: 'mouse' });
  const times = { trip: [], input: [], turn: [], synthetic: [] };
  const timed = async (key, work) => { const t = performance.now(); const v = await work(); times[key].push(performance.now() - t); return v; };
  for (let i = 0; i <= rounds; i++) {
    const p = await timed('trip', () => run(point));
    await timed('input', () => Promise.all(['mouseMoved', 'mousePressed', 'mouseReleased'].map((type) => mouse(type, p))));
    await timed('turn', () => run(turn));
    await timed('synthetic', () => run(click));
    if (i === 0) for (const k in times) times[k].length = 0;
  }
  await chrome.debugger.detach({ tabId: tab.id });
  await chrome.tabs.remove(tab.id);
  const p50 = (a) => a.sort((x, y) => x - y)[Math.floor((a.length - 1) / 2)];
  return Object.fromEntries(Object.entries(times).map(([k, a]) => [k, p50(a)]));
}"#;

/// Each action's round trips, in action order, taken in `browser` (its tab showing `url`).
struct InputRun {
    tab: String,
    mode: &'static str,
    times: Vec<Vec<Duration>>,
}

impl InputRun {
    async fn new(d: &Daemon, url: &str, mode: &'static str) -> InputRun {
        InputRun::on(tab_ref(d, url, "browser_click").await, mode)
    }

    fn on(tab: String, mode: &'static str) -> InputRun {
        InputRun {
            tab,
            mode,
            times: vec![Vec::new(); ACTIONS.len()],
        }
    }

    /// One of each action; `keep` false for the untimed warm-up round (the trusted side
    /// attaches its DevTools session at its first action).
    async fn round(&mut self, d: &Daemon, keep: bool) {
        for (i, (tool, args)) in ACTIONS.iter().enumerate() {
            let args: Value = serde_json::from_str(args).unwrap();
            let body = json!({"tool": tool, "tab": self.tab, "args": args, "retries": 0});
            let t = Instant::now();
            let (status, v) = control(d, "POST", "/v1/call", Some(body)).await;
            let took = t.elapsed();
            assert_eq!(status, 200, "{tool}: {v}");
            let used = &v["result"]["structuredContent"]["input"];
            assert_eq!(used, self.mode, "{tool} used {used} input: {v}");
            if keep {
                self.times[i].push(took);
            }
        }
    }
}

/// `rounds` timed rounds (after one untimed) of every action in both browsers, in turn; `how`
/// names the trusted side's input in the rows.
async fn timed_rows(
    d: &Daemon,
    trusted: &mut InputRun,
    synthetic: &mut InputRun,
    rounds: usize,
    how: &str,
) -> Vec<Row> {
    for keep in std::iter::once(false).chain(std::iter::repeat_n(true, rounds)) {
        trusted.round(d, keep).await;
        synthetic.round(d, keep).await;
    }
    ACTIONS
        .iter()
        .enumerate()
        .map(|(i, (tool, _))| {
            let t = percentiles(trusted.times[i].clone());
            let s = percentiles(synthetic.times[i].clone());
            let ratio = t.p99.as_secs_f64() / s.p99.as_secs_f64();
            row(
                &format!("16 {tool}, {how} vs synthetic input, p50/p99"),
                format!("{} / {}", ms(t.p50), ms(t.p99)),
                format!("{} / {} synthetic", ms(s.p50), ms(s.p99)),
                format!("{ratio:.2}x p99"),
                "<= 1.5x, p99 <= 50 ms",
                Some(ratio <= 1.5 && t.p99.max(s.p99) <= Duration::from_millis(50)),
            )
        })
        .collect()
}

/// Where the Firefox of rows 16 in Firefox is: `BROWSER_MCP_FIREFOX`, else Debian's ESR.
fn firefox_exe() -> Option<PathBuf> {
    let exe = std::env::var_os("BROWSER_MCP_FIREFOX")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/firefox-esr"));
    exe.exists().then_some(exe)
}

/// Row 16 in Firefox: a daemon that launches two headless Firefoxes, one with trusted input
/// (the default) and one `--input synthetic`, each on its own `/act` page.
async fn firefox_input_rows(quick: bool) -> Vec<Row> {
    let Some(exe) = firefox_exe() else {
        eprintln!("\n*** rows 16 in Firefox need Firefox ESR (apt-get install firefox-esr, or set BROWSER_MCP_FIREFOX)\n");
        return vec![row(
            "16 Firefox, BiDi vs synthetic input",
            "no Firefox".into(),
            "-".into(),
            "-".into(),
            "-",
            None,
        )];
    };
    let pages = PageServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let managed = dir.path().join("managed");
    let profiles = dir.path().join("profiles");
    let d = Daemon::start_with(
        dir,
        &[
            "--managed-dir".into(),
            managed.display().to_string(),
            "--profiles-dir".into(),
            profiles.display().to_string(),
            "--browser-path".into(),
            format!("firefox={}", exe.display()),
        ],
    );
    let launch = |input: &'static str, url: String| {
        let body = json!({"browser": "firefox", "headless": true, "url": url, "input": input});
        let d = &d;
        async move {
            let (status, v) = control(d, "POST", "/v1/browsers", Some(body)).await;
            assert_eq!(status, 200, "launch {input}: {v}");
            v
        }
    };
    let rounds = if quick { 30 } else { 100 };
    let t = launch("trusted", pages.url("/act?trusted")).await;
    let s = launch("synthetic", pages.url("/act?synthetic")).await;
    let tab = |v: &Value| v["tab"].as_str().unwrap().to_owned();
    let mut tr = InputRun::on(tab(&t), "trusted");
    let mut sy = InputRun::on(tab(&s), "synthetic");
    let rows = timed_rows(&d, &mut tr, &mut sy, rounds, "Firefox BiDi").await;
    for v in [&t, &s] {
        let path = format!("/v1/browsers/{}", v["browser"].as_str().unwrap());
        control(&d, "DELETE", &path, None).await;
    }
    rows
}
