//! Faults with the real browser (issue 20): headless Chromium with our extension, paired with
//! the real daemon, on a page whose WebMCP tools wait until the test acts. Mid-call, the tests
//! kill the browser's process group, close the tab, navigate the page, stop the extension's
//! service worker (DevTools' ServiceWorker domain), and SIGKILL or SIGTERM the daemon and start
//! it again on its port. Each asserts how the call ends, and the time to its end or to the
//! browser's return against a generous bound, and prints that time.

use crate::support::cdp::{Browser, Page};
use crate::support::chromium::*;
use crate::support::common::*;
use serde_json::{json, Value};
use std::process::Output;
use std::time::{Duration, Instant};

/// `hang` (read-only) and `hang_act` (may change things, so never retried) wait until the page
/// goes, except that `hang` answers at once on /done; `echo` answers at once. `hanging` counts
/// the calls that reached the page.
pub(crate) const PAGE: &str = r#"<!doctype html><meta charset="utf-8"><title>Faults</title>
<p>A page whose tools wait.</p><script>
window.hanging = 0;
if (location.pathname === '/done') document.body.append('Arrived.');
const mc = navigator.modelContext || document.modelContext;
const wait = () => { window.hanging++; return new Promise(() => {}); };
const text = (t) => ({ content: [{ type: 'text', text: t }] });
const schema = { type: 'object', properties: { n: { type: 'number' } } };
mc.registerTool({ name: 'hang', description: 'Waits until the page goes; answers at once on /done',
  inputSchema: schema, annotations: { readOnlyHint: true },
  execute: () => (location.pathname === '/done' ? text('done') : wait()) });
mc.registerTool({ name: 'hang_act', description: 'Waits until the page goes', inputSchema: schema,
  execute: wait });
mc.registerTool({ name: 'echo', description: 'Answers at once', inputSchema: schema,
  annotations: { readOnlyHint: true }, execute: ({ n }) => text(`echo ${n} ${location.pathname}`) });
</script>"#;

/// `browser_wait_for` arguments for a text that never appears (a minute at most).
const WAIT_FOREVER: &str = r#"{"text": "a text this page never shows", "timeout": 60000}"#;

/// A call's end well within this is "at once" on a loaded CI machine, and far from the 30 s
/// attempt timeout a call used to wait out.
const AT_ONCE: Duration = Duration::from_secs(4);
/// The longest a browser may take to come back after a fault.
const RECOVERY: Duration = Duration::from_secs(30);

/// What the person chose in the extension's settings for agents on their sites.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sites {
    /// A fresh install: a call on a site the person has not allowed asks first.
    AskFirst,
    /// *Allow everywhere*, chosen in the options page.
    AllowEverywhere,
}

/// Chromium with the extension, paired with a daemon on a scanned port, and the page server.
/// Fields drop in order: the browser first, the machine-wide lock last.
pub(crate) struct Rig {
    pub(crate) b: Browser,
    pub(crate) d: Option<TestDaemon>,
    pub(crate) pages: PageServer,
    _profile: tempfile::TempDir,
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl Rig {
    /// None (after a loud SKIPPED) without Chromium. The person lets agents act on every site.
    pub(crate) fn start(test: &str, daemon_args: &[&str]) -> Option<Rig> {
        Rig::with_sites(test, daemon_args, Sites::AllowEverywhere)
    }

    /// The same, with the extension as a fresh install has it, or the person's choice.
    pub(crate) fn with_sites(test: &str, daemon_args: &[&str], sites: Sites) -> Option<Rig> {
        Rig::serving(test, daemon_args, sites, PAGE)
    }

    /// The same, with `page` at every path of the page server.
    pub(crate) fn serving(
        test: &str,
        daemon_args: &[&str],
        sites: Sites,
        page: &'static str,
    ) -> Option<Rig> {
        let exe = chromium_or_skip(test)?;
        let lock = machine_wide_lock();
        let pages = PageServer::page(page);
        let d = daemon_in_scan_range(daemon_args);
        let profile = tempfile::tempdir().unwrap();
        let mut b = Browser::launch(&exe, profile.path(), "about:blank");
        pair_browser(profile.path(), &d);
        if sites == Sites::AllowEverywhere {
            // Not a test of consent: the person lets agents act everywhere (issue 31).
            b.allow_everywhere();
        }
        Some(Rig {
            b,
            d: Some(d),
            pages,
            _profile: profile,
            _lock: lock,
        })
    }

    pub(crate) fn d(&self) -> &TestDaemon {
        self.d.as_ref().expect("a daemon")
    }

    /// A new tab at PATH, and its ref once the daemon has its tools.
    pub(crate) fn open(&mut self, path: &str) -> (Page, String) {
        let url = self.pages.url(path);
        let page = self.b.open(&url);
        (page, self.tab_showing(&url))
    }

    /// The ref of the tab at `url`, once the daemon has its tools.
    pub(crate) fn tab_showing(&self, url: &str) -> String {
        let d = self.d();
        wait_until(RECOVERY, &format!("a tab at {url} with its tools"), || {
            let v = d.ctl_json(&["tabs"]);
            v["tabs"].as_array()?.iter().find_map(|t| {
                (t["url"] == url && tool_names(t).contains(&"hang"))
                    .then(|| t["ref"].as_str().unwrap().to_owned())
            })
        })
    }

    /// Waits until `n` calls reached the page.
    pub(crate) fn reached(&mut self, page: &Page, n: u32) {
        let what = format!("call {n} to reach the page");
        self.b
            .wait_for(page, &what, &format!("window.hanging === {n}"));
    }

    /// Waits until `n` calls wait for the browser's answer (it has them).
    pub(crate) fn pending(&self, n: u64) {
        let d = self.d();
        wait_until(RECOVERY, &format!("{n} calls pending"), || {
            (d.status()["pendingCalls"] == n).then_some(())
        });
    }

    /// Ends `running`, which must fail with browserctl's exit `code` and the error `name`
    /// within `bound` of `t0` (printed as `what`); gives back how it ended.
    pub(crate) fn failed(
        &self,
        running: Running,
        (code, name): (i32, &str),
        what: &str,
        (t0, bound): (Instant, Duration),
    ) -> Ended {
        let end = running.end();
        let ctx = self.context();
        assert_eq!(
            (end.code, &end.error()["code"]),
            (code, &json!(name)),
            "{what}: {}\n{ctx}",
            end.json
        );
        timed(what, end.at - t0, bound, self);
        end
    }

    /// Ends `running`, which must succeed within `bound` of `t0` (printed as `what`).
    pub(crate) fn answered(
        &self,
        running: Running,
        what: &str,
        (t0, bound): (Instant, Duration),
    ) -> Ended {
        let end = running.end();
        let ctx = self.context();
        assert_eq!(end.code, 0, "{what}: {}\n{ctx}", end.json);
        timed(what, end.at - t0, bound, self);
        end
    }

    /// What went wrong, for an assertion's message.
    pub(crate) fn context(&self) -> String {
        let log = self.d.as_ref().map(|d| d.log()).unwrap_or_default();
        format!(
            "--- daemon log (tail) ---\n{}\n--- chromium (tail) ---\n{}",
            log.lines()
                .rev()
                .take(30)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n"),
            self.b.log_tail()
        )
    }
}

/// Stops the extension's service worker, as Chromium does with an idle or misbehaving one.
pub(crate) fn stop_worker(b: &mut Browser, page: &Page) {
    b.send(Some(&page.session), "ServiceWorker.enable", json!({}));
    b.send(
        Some(&page.session),
        "ServiceWorker.stopAllWorkers",
        json!({}),
    );
}

/// A `browserctl --json call` running on its own thread.
pub(crate) struct Running(std::thread::JoinHandle<(Output, Instant)>);

/// How a call ended: browserctl's exit code, what it printed (the answer on stdout, the error
/// on stderr) and when it exited.
pub(crate) struct Ended {
    pub(crate) code: i32,
    pub(crate) json: Value,
    pub(crate) at: Instant,
}

/// `browserctl --json call TOOL --tab TAB --timeout 60s ARGS…`, started now.
pub(crate) fn call(d: &TestDaemon, tool: &str, tab: &str, args: &[&str]) -> Running {
    let mut all = vec!["--json", "call", tool, "--tab", tab, "--timeout", "60s"];
    all.extend_from_slice(args);
    let child = d.ctl_spawn(&all);
    Running(std::thread::spawn(move || {
        let out = child.wait_with_output().expect("run browserctl");
        (out, Instant::now())
    }))
}

impl Running {
    pub(crate) fn end(self) -> Ended {
        let (out, at) = self.0.join().expect("the browserctl thread");
        let text = match out.status.success() {
            true => stdout(&out),
            false => stderr(&out),
        };
        let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Ended {
            code: exit_code(&out),
            json,
            at,
        }
    }
}

impl Ended {
    pub(crate) fn error(&self) -> &Value {
        &self.json["error"]
    }
}

/// Asserts `took` is within `bound`, and prints it.
fn timed(what: &str, took: Duration, bound: Duration, rig: &Rig) {
    eprintln!("issue 20, real browser: {what}: {} ms", took.as_millis());
    assert!(
        took < bound,
        "{what} took {took:?}, over {bound:?}\n{}",
        rig.context()
    );
}

#[test]
fn a_tab_closed_or_a_page_navigated_mid_call_ends_the_call_with_its_own_code() {
    let Some(mut rig) = Rig::start("browser_faults::tab_closed_or_navigated", &[]) else {
        return;
    };
    // Closed: TAB_NOT_FOUND at once, whatever the tool was waiting for.
    let (page, tab) = rig.open("closed");
    let running = call(rig.d(), "hang", &tab, &[]);
    rig.reached(&page, 1);
    let waiting = call(rig.d(), "browser_wait_for", &tab, &["--args", WAIT_FOREVER]);
    rig.pending(2);
    let t0 = Instant::now();
    rig.b.send(Some(&page.session), "Page.close", json!({}));
    let not_found = (4, "TAB_NOT_FOUND");
    let what = "tab closed mid-call → TAB_NOT_FOUND (browser_wait_for)";
    rig.failed(waiting, not_found, what, (t0, AT_ONCE));
    let what = "tab closed mid-call → TAB_NOT_FOUND";
    let end = rig.failed(running, not_found, what, (t0, AT_ONCE));
    let message = end.error()["message"].as_str().unwrap_or_default();
    assert!(message.contains("was closed while hang ran"), "{message}");

    // Navigated away under a tool that may change things: PAGE_NAVIGATED, not retried.
    let (page, tab) = rig.open("moving");
    let running = call(rig.d(), "hang_act", &tab, &[]);
    rig.reached(&page, 1);
    let t0 = Instant::now();
    rig.b.eval(
        &page,
        "setTimeout(() => location.assign('/elsewhere'), 0), true",
    );
    let what = "page navigated mid-call → PAGE_NAVIGATED";
    let end = rig.failed(running, (14, "PAGE_NAVIGATED"), what, (t0, AT_ONCE));
    assert_eq!(end.error()["retryable"], false, "{}", end.json);

    // Navigated away under a read-only tool: retried on the new page, where it answers.
    let (page, tab) = rig.open("moving-too");
    let running = call(rig.d(), "hang", &tab, &[]);
    rig.reached(&page, 1);
    let t0 = Instant::now();
    rig.b
        .eval(&page, "setTimeout(() => location.assign('/done'), 0), true");
    // The retry waits out one backoff (--backoff-base, 1 s).
    let one_backoff = (t0, AT_ONCE + Duration::from_secs(1));
    let what = "read-only call, page navigated → retried on the new page";
    let end = rig.answered(running, what, one_backoff);
    assert_eq!(
        end.json["result"]["content"][0]["text"], "done",
        "{}",
        end.json
    );
    assert_eq!(end.json["attempts"], 2, "{}", end.json);

    // The same with a built-in: browser_wait_for cut off by the navigation, retried on /done.
    let (page, tab) = rig.open("moving-three");
    let arrived = r#"{"text": "Arrived.", "timeout": 60000}"#;
    let running = call(rig.d(), "browser_wait_for", &tab, &["--args", arrived]);
    rig.pending(1);
    let t0 = Instant::now();
    rig.b
        .eval(&page, "setTimeout(() => location.assign('/done'), 0), true");
    // Either the navigation ends the first attempt (PAGE_NAVIGATED, retried on /done), or the
    // built-in's own look at the tab sees the new page's text first and answers in that same
    // attempt: a race inside the browser, and both are a right answer. What must not happen is
    // a failure or a wait for the call's timeout.
    let what = "browser_wait_for, page navigated → answered on the new page";
    let end = rig.answered(running, what, (t0, AT_ONCE + Duration::from_secs(1)));
    let ctx = rig.context();
    assert!(
        matches!(end.json["attempts"].as_u64(), Some(1 | 2)),
        "{}\n{ctx}",
        end.json
    );
    assert!(
        end.json["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Arrived.")),
        "{}\n{ctx}",
        end.json
    );
    let s = rig.d().status();
    assert_eq!(
        (s["pendingCalls"].as_u64(), s["callsInFlight"].as_u64()),
        (Some(0), Some(0)),
        "{s}"
    );
}

#[test]
fn a_killed_browser_ends_its_calls_within_the_reconnect_grace() {
    let Some(mut rig) = Rig::start("browser_faults::killed_browser", &[]) else {
        return;
    };
    let (page, tab) = rig.open("doomed");
    let read_only = call(rig.d(), "hang", &tab, &[]);
    rig.reached(&page, 1);
    // In a tab of its own: on the first it would wait its turn behind the read (issue 60).
    let (acting_page, acting_tab) = rig.open("doomed-too");
    let acting = call(rig.d(), "hang_act", &acting_tab, &[]);
    rig.reached(&acting_page, 1);
    // The built-in the issue saw wait 31-61 s for a browser that was gone.
    let waiting = call(rig.d(), "browser_wait_for", &tab, &["--args", WAIT_FOREVER]);
    rig.pending(3);
    let t0 = Instant::now();
    let group = nix::unistd::Pid::from_raw(rig.b.pid() as i32);
    nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL).unwrap();

    // Not to be repeated: WEBSOCKET_ERROR at once.
    let what = "browser killed → WEBSOCKET_ERROR (hang_act)";
    let end = rig.failed(acting, (9, "WEBSOCKET_ERROR"), what, (t0, AT_ONCE));
    assert_eq!(end.error()["retryable"], true);

    // Read-only: retried, but the browser is not back within the grace (1 s): NO_BROWSER.
    let grace = (t0, AT_ONCE + Duration::from_secs(1));
    let what = "browser killed → NO_BROWSER (read-only hang, 1 s grace)";
    let end = rig.failed(read_only, (4, "NO_BROWSER"), what, grace);
    assert_eq!(end.error()["retryable"], true);
    assert_eq!(
        end.error()["details"]["history"][0]["code"],
        "WEBSOCKET_ERROR",
        "{}",
        end.json
    );
    let took = end.at - t0;
    assert!(took >= Duration::from_secs(1), "waited the grace: {took:?}");
    let what = "browser killed → NO_BROWSER (browser_wait_for, 1 s grace)";
    rig.failed(waiting, (4, "NO_BROWSER"), what, grace);
    let s = rig.d().status();
    assert_eq!(
        (
            s["browsers"].as_u64(),
            s["pendingCalls"].as_u64(),
            s["callsInFlight"].as_u64()
        ),
        (Some(0), Some(0), Some(0)),
        "{s}"
    );
}

/// The daemon's view of the one browser: (id, session, connectedAt).
fn the_browser(d: &TestDaemon) -> Option<(String, String, String)> {
    let v = d.ctl_json(&["browsers"]);
    let b = v["browsers"].as_array()?.first()?.clone();
    let s = |k: &str| b[k].as_str().unwrap_or_default().to_owned();
    Some((s("id"), s("sessionId"), s("connectedAt")))
}

#[test]
fn a_stopped_service_worker_fails_the_call_and_comes_back_as_the_same_browser() {
    // A grace long enough for the worker's return on a loaded machine: the read-only retry
    // below must reach it.
    let args = ["--reconnect-grace", "5s"];
    let Some(mut rig) = Rig::start("browser_faults::stopped_worker", &args) else {
        return;
    };
    let (page, tab) = rig.open("worker");
    let url = rig.pages.url("worker");
    let before = the_browser(rig.d()).expect("the browser");

    let acting = call(rig.d(), "hang_act", &tab, &[]);
    rig.reached(&page, 1);
    let t0 = Instant::now();
    stop_worker(&mut rig.b, &page);
    let what = "worker stopped → WEBSOCKET_ERROR (hang_act)";
    rig.failed(acting, (9, "WEBSOCKET_ERROR"), what, (t0, AT_ONCE));

    // Back: the same browser id and session, its tabs reported again.
    let after = wait_until(RECOVERY, "the worker back", || {
        the_browser(rig.d()).filter(|b| b.2 != before.2)
    });
    timed(
        "worker stopped → back, reconnected",
        t0.elapsed(),
        RECOVERY,
        &rig,
    );
    assert_eq!((&after.0, &after.1), (&before.0, &before.1));
    assert_eq!(rig.tab_showing(&url), tab, "the same tab ref");

    // A read-only call cut off by a stop is retried on the worker that came back.
    let read_only = call(rig.d(), "hang", &tab, &[]);
    rig.reached(&page, 2);
    let t0 = Instant::now();
    stop_worker(&mut rig.b, &page);
    rig.reached(&page, 3);
    timed(
        "worker stopped → read-only call retried on its return",
        t0.elapsed(),
        Duration::from_secs(5),
        &rig,
    );
    rig.b.send(Some(&page.session), "Page.close", json!({}));
    let what = "tab closed after the retry → TAB_NOT_FOUND";
    let end = rig.failed(
        read_only,
        (4, "TAB_NOT_FOUND"),
        what,
        (Instant::now(), AT_ONCE),
    );
    let history = &end.error()["details"]["history"];
    assert_eq!(
        (&history[0]["code"], &history[1]["code"]),
        (&json!("WEBSOCKET_ERROR"), &json!("TAB_NOT_FOUND")),
        "{}",
        end.json
    );
}

#[test]
fn a_daemon_killed_or_terminated_mid_call_gets_its_browser_back_on_restart() {
    let args = ["--shutdown-grace", "2s"];
    let Some(mut rig) = Rig::start("browser_faults::daemon_restarts", &args) else {
        return;
    };
    let (page, tab) = rig.open("daemon");
    let url = rig.pages.url("daemon");

    // SIGKILL: browserctl learns at once that the daemon is gone.
    let running = call(rig.d(), "hang", &tab, &[]);
    rig.reached(&page, 1);
    let mut d = rig.d.take().unwrap();
    let t0 = Instant::now();
    d.child.kill().unwrap();
    d.child.wait().unwrap();
    let what = "daemon SIGKILLed → DAEMON_UNAVAILABLE";
    rig.failed(running, (3, "DAEMON_UNAVAILABLE"), what, (t0, AT_ONCE));
    let (port, dir) = (
        d.port,
        std::mem::replace(&mut d.dir, tempfile::tempdir().unwrap()),
    );
    drop(d);
    let t0 = Instant::now();
    rig.d = Some(
        TestDaemon::builder()
            .dir(dir)
            .port(port)
            .args(&args)
            .start(),
    );
    let tab = rig.tab_showing(&url);
    timed(
        "daemon SIGKILLed and restarted → browser back",
        t0.elapsed(),
        RECOVERY,
        &rig,
    );
    let echo = call(rig.d(), "echo", &tab, &["--n", "1"]).end();
    assert_eq!(echo.code, 0, "{}\n{}", echo.json, rig.context());

    // SIGTERM: the call gets --shutdown-grace (2 s) to finish, then SHUTTING_DOWN.
    let running = call(rig.d(), "hang", &tab, &[]);
    rig.reached(&page, 2);
    let t0 = Instant::now();
    let restarting = std::thread::spawn({
        let d = rig.d.take().unwrap();
        move || d.restart(&args)
    });
    let what = "daemon SIGTERMed → SHUTTING_DOWN (2 s grace)";
    let two_s = (t0, AT_ONCE + Duration::from_secs(2));
    rig.failed(running, (11, "SHUTTING_DOWN"), what, two_s);
    rig.d = Some(restarting.join().expect("restarted"));
    let tab = rig.tab_showing(&url);
    timed(
        "daemon SIGTERMed and restarted → browser back",
        t0.elapsed(),
        RECOVERY,
        &rig,
    );
    let echo = call(rig.d(), "echo", &tab, &["--n", "2"]).end();
    assert_eq!(echo.code, 0, "{}\n{}", echo.json, rig.context());
    assert_eq!(echo.json["result"]["content"][0]["text"], "echo 2 /daemon");
}
