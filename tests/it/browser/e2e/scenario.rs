//! The end-to-end scenario, once for both browsers: the page's WebMCP tool and the rest of its
//! API, the built-ins by ref, tabs opened and closed from both sides, a daemon restart, an idle
//! spell, and the browser's crash.

use crate::support::cdp::Browser;
use crate::support::chromium::*;
use crate::support::common::*;
use crate::support::driver::*;
use crate::support::firefox::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// How long a browser step may take on a loaded machine (passed to `browserctl wait`).
const WAIT: &str = "60s";

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Family {
    Chromium,
    Firefox,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Discovery {
    NativeHost,
    PortScan,
}

fn url_of(tab: &Value) -> &str {
    tab["url"].as_str().unwrap_or_default()
}

fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The ref of the snapshot element with this role and name.
fn ref_of(snapshot: &Value, role: &str, name: &str) -> String {
    snapshot["structuredContent"]["elements"]
        .as_array()
        .and_then(|els| {
            els.iter()
                .find(|e| e["role"] == role && e["name"] == name)
                .and_then(|e| e["ref"].as_str())
        })
        .unwrap_or_else(|| panic!("no [{role}] {name:?} in {snapshot}"))
        .to_owned()
}

/// Live `browserctl native-host` processes whose command line mentions `needle`.
fn native_hosts_mentioning(needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let c = String::from_utf8_lossy(&c);
                c.contains("native-host") && c.contains(needle)
            })
        })
        .collect()
}

/// The browser up with our extension, connected to `d` the way the discovery path says, showing
/// `start` in its first tab. Chromium gets the native host in its profile, Firefox in `HOME`.
fn launch(
    family: Family,
    discovery: Discovery,
    native_webmcp: bool,
    d: &TestDaemon,
    start: &str,
) -> Option<Box<dyn Driver>> {
    let test = format!("browser::e2e::{family:?}/{discovery:?}");
    match family {
        Family::Chromium => {
            let exe = chromium_or_skip(&test)?;
            let profile = tempfile::tempdir().unwrap();
            if discovery == Discovery::NativeHost {
                d.install_host(profile.path());
            }
            let flags: &[&str] = if native_webmcp {
                &["--enable-features=WebMCP"]
            } else {
                &[]
            };
            // The page is shown once the extension is set up, as in Firefox: a page that loads
            // while the browser is still loading the extension gets the WebMCP adapter late
            // (injected), after it registered its tools with the browser's own API, which keeps
            // no idempotentHint; this scenario is about a page opened in a running browser.
            let mut b = Browser::launch_with(&exe, profile.path(), "about:blank", flags);
            if discovery == Discovery::PortScan {
                // Found by the scan, trusted once paired (issue 21).
                pair_browser(profile.path(), d);
            }
            // Not a test of consent: the person lets agents act everywhere (issue 31).
            b.allow_everywhere();
            b.show(start);
            Some(Box::new(ChromiumTab::launched(b, start).keeping(profile)))
        }
        Family::Firefox => {
            let exe = firefox_or_skip(&test)?;
            let home = tempfile::tempdir().unwrap();
            if discovery == Discovery::NativeHost {
                let out = d.install_host_in_home(home.path(), "firefox-esr");
                let written: Value = serde_json::from_slice(&out.stdout).unwrap();
                let manifest_path = home
                    .path()
                    .join(".mozilla/native-messaging-hosts/dev.browsermcp.host.json");
                assert_eq!(
                    written["installed"][0]["manifest"],
                    json!(manifest_path),
                    "{written}"
                );
                let manifest: Value =
                    serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
                assert_eq!(
                    manifest["allowed_extensions"],
                    json!([GECKO_ID]),
                    "{manifest}"
                );
            }
            let options = Options {
                native_webmcp,
                ..Options::default()
            };
            let mut ff = Firefox::launch_with_home(&exe, &options, home);
            if discovery == Discovery::PortScan {
                // Found by the scan, trusted once paired (issue 21).
                ff.pair(d);
            }
            // Not a test of consent: the person lets agents act everywhere (issue 31).
            ff.allow_everywhere();
            let page = ff.show(start);
            Some(Box::new(FirefoxTab::new(ff, page)))
        }
    }
}

pub fn scenario(family: Family, discovery: Discovery, native_webmcp: bool) {
    let firefox = family == Family::Firefox;
    let what = format!(
        "{family:?}, {discovery:?}, {} WebMCP",
        if native_webmcp {
            "the browser's own"
        } else {
            "shim"
        }
    );
    let _lock = machine_wide_lock();
    let started = Instant::now();
    let step = |name: &str| eprintln!("e2e [{what}] {:>6.1?} {name}", started.elapsed());
    let pages = PageServer::pages();

    // Native host: the daemon is on a port the scan never tries and demands its token, so only
    // the host's list can have brought the extension to it.
    let token_flag: &[&str] = match discovery {
        Discovery::NativeHost => &["--require-token"],
        Discovery::PortScan => &[],
    };
    let d = match discovery {
        Discovery::NativeHost => TestDaemon::builder().args(token_flag).start(),
        Discovery::PortScan => daemon_in_scan_range(&[]),
    };
    if discovery == Discovery::NativeHost {
        assert!(!SCAN_PORTS.contains(&d.port), "port {} is scanned", d.port);
    }
    let host_marker = d.discovery_dir.to_str().unwrap().to_owned();
    let Some(mut browser) = launch(
        family,
        discovery,
        native_webmcp,
        &d,
        &pages.url("search.html"),
    ) else {
        return;
    };
    let b: &mut dyn Driver = browser.as_mut();
    let mut daemon = Some(d);
    fn ctl<'a>(d: &'a Option<TestDaemon>, what: &'a str) -> Ctl<'a> {
        Ctl {
            d: d.as_ref().unwrap(),
            what,
        }
    }
    step("browser up");

    // The page's WebMCP tool shows up on its tab, with the built-ins.
    let c = ctl(&daemon, &what);
    c.ok(b, &["wait", "--tool", "search", "--timeout", WAIT]);
    step("search tool up");
    let browsers = c.json(b, &["browsers"]);
    let family_name = if firefox { "Firefox" } else { "Chromium" };
    assert!(
        browsers["browsers"][0]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with(family_name)),
        "{browsers}"
    );
    let tabs = c.tabs(b);
    let search_tab = tabs
        .iter()
        .find(|t| url_of(t).ends_with("/search.html"))
        .unwrap_or_else(|| panic!("no search.html tab in {tabs:?}\n{}", c.context(b)))
        .clone();
    let search_ref = search_tab["ref"].as_str().unwrap().to_owned();
    let names = tool_names(&search_tab);
    for builtin in [
        "browser_navigate",
        "browser_snapshot",
        "browser_click",
        "browser_type",
        "browser_select",
        "browser_press_key",
        "browser_wait_for",
        "browser_screenshot",
    ] {
        assert!(names.contains(&builtin), "{builtin} in {names:?}");
    }
    assert!(names.contains(&"search"), "{names:?}");
    let tools = c.json(b, &["tools", "--tab", &search_ref]);
    let search = tools["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "search"))
        .cloned()
        .unwrap_or_else(|| panic!("no search tool in {tools}"));
    assert_eq!(search["inputSchema"]["required"][0], "query", "{search}");
    assert_eq!(
        search["annotations"]["idempotentHint"], true,
        "annotations intact: {search}"
    );

    // The flavour asked for is the one the page got (the page prints its API object's class).
    let snap = text_of(&c.call(b, "browser_snapshot", &search_ref, &[]));
    let expected = if native_webmcp {
        "WebMCP object: [object ModelContext]"
    } else {
        "WebMCP object: [object Object]"
    };
    assert!(snap.contains(expected), "wanted {expected:?} in {snap}");
    assert!(snap.contains("search tool registered"), "{snap}");

    // The page answers a call, and its own error comes back as the page worded it.
    let out = c.ok(b, &["call", "search", "--query", "test"]);
    assert!(
        stdout(&out).contains("results for test"),
        "{}",
        stdout(&out)
    );
    let out =
        c.d.ctl(&["call", "search", "--tab", &search_ref, "--query", ""]);
    assert!(!out.status.success(), "an empty query fails");
    assert!(
        stderr(&out).contains("query is required"),
        "{}",
        stderr(&out)
    );
    step("page call answered");

    // The rest of the page's API, as the page sees it (BiDi evaluates in the page's own world):
    // a tool withdrawn by its AbortSignal (Firefox's own object ignores one), unregisterTool,
    // provideContext replacing the set, clearContext emptying it.
    let page_tools = |c: &Ctl, b: &dyn Driver| -> Vec<String> {
        let tab = c
            .tabs(b)
            .into_iter()
            .find(|t| t["ref"] == search_ref.as_str())
            .unwrap_or_default();
        tool_names(&tab)
            .into_iter()
            .filter(|n| !n.starts_with("browser_"))
            .map(str::to_owned)
            .collect()
    };
    let wait_page_tools = |c: &Ctl, b: &dyn Driver, want: &[&str]| {
        let start = Instant::now();
        loop {
            let mut now = page_tools(c, b);
            // The browser's own WebMCP and the shim list a page's tools in their own orders.
            now.sort();
            let mut want: Vec<&str> = want.to_vec();
            want.sort();
            if now == want {
                return;
            }
            if start.elapsed() > FIREFOX_WAIT {
                panic!("page tools {now:?}, wanted {want:?}\n{}", c.context(b));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let tool_js = |name: &str| {
        format!("{{ name: '{name}', description: '{name}', inputSchema: {{ type: 'object', properties: {{}} }}, execute: async () => '{name} ran' }}")
    };
    b.eval(
        &format!(
            "(() => {{ window.ac = new AbortController(); navigator.modelContext.registerTool({}, {{ signal: ac.signal }}); return true; }})()",
            tool_js("late")
        ),
    );
    wait_page_tools(&c, b, &["search", "late"]);
    let out = c.ok(b, &["call", "late", "--tab", &search_ref]);
    assert!(stdout(&out).contains("late ran"), "{}", stdout(&out));
    b.eval("(() => { ac.abort(); return true; })()");
    wait_page_tools(&c, b, &["search"]);
    b.eval(
        &format!(
            "Promise.resolve(navigator.modelContext.provideContext({{ tools: [{}, {}, {}] }})).then(() => true)",
            tool_js("one"),
            tool_js("two"),
            // Named, as agents see it, like another tab's built-in (issue 35, item 2): never
            // offered.
            tool_js(&format!("browser.type_{}", search_ref.replace(':', "_")))
        ),
    );
    wait_page_tools(&c, b, &["one", "two"]);
    b.eval("(() => { navigator.modelContext.unregisterTool('one'); return true; })()");
    wait_page_tools(&c, b, &["two"]);
    b.eval("(() => { navigator.modelContext.clearContext(); return true; })()");
    wait_page_tools(&c, b, &[]);
    b.go(&pages.url("search.html"));
    wait_page_tools(&c, b, &["search"]);
    step("the page's WebMCP API");

    // open: the tab is reported with its built-ins before it has loaded, and a call waits for it.
    let opened = c.json(b, &["open", &pages.url("plain.html")]);
    let plain = opened["ref"]
        .as_str()
        .unwrap_or_else(|| panic!("open gave {opened}"))
        .to_owned();
    assert!(
        tool_names(&opened).contains(&"browser_snapshot"),
        "a tab opened for a web page offers the built-ins at once: {opened}"
    );
    c.call(b, "browser_wait_for", &plain, &["--selector", "#button"]);
    let snap = c.call(b, "browser_snapshot", &plain, &[]);
    assert!(text_of(&snap).contains("Plain test page"), "{snap}");

    // Click, type, select and keys by ref, as an agent does.
    let button = ref_of(&snap, "button", "Click me");
    c.call(b, "browser_click", &plain, &["--ref", &button]);
    let name = ref_of(&snap, "textbox", "Your name");
    c.call(
        b,
        "browser_type",
        &plain,
        &["--ref", &name, "--text", "Ada"],
    );
    c.call(b, "browser_press_key", &plain, &["--key", "!"]);
    let colour = ref_of(&snap, "combobox", "Colour");
    c.call(
        b,
        "browser_select",
        &plain,
        &["--ref", &colour, "--value", "Green"],
    );
    let after = text_of(&c.call(b, "browser_snapshot", &plain, &[]));
    assert!(after.contains("Clicked!"), "the click landed: {after}");
    assert!(
        after.contains("You typed: Ada!"),
        "typed and pressed: {after}"
    );
    assert!(after.contains("Colour = \"green\""), "selected: {after}");
    let out =
        c.d.ctl(&["call", "browser_click", "--tab", &plain, "--ref", "e999"]);
    assert!(
        stderr(&out).contains("ELEMENT_NOT_FOUND"),
        "{}",
        stderr(&out)
    );
    let out = c.d.ctl(&[
        "call",
        "browser_wait_for",
        "--tab",
        &plain,
        "--text",
        "never there",
        "--timeout",
        "300",
    ]);
    assert!(stderr(&out).contains("WAIT_TIMEOUT"), "{}", stderr(&out));

    // A screenshot is a PNG; navigation loads and reports a failure as such.
    let shot = c.call(b, "browser_screenshot", &plain, &[]);
    assert_eq!(shot["content"][0]["mimeType"], "image/png", "{shot}");
    assert!(
        shot["content"][0]["data"]
            .as_str()
            .is_some_and(|d| d.starts_with("iVBORw0KGgo") && d.len() > 1000),
        "a PNG of some size"
    );
    let loaded = text_of(&c.call(
        b,
        "browser_navigate",
        &plain,
        &["--url", &pages.url("search.html")],
    ));
    assert!(loaded.contains("Search test page"), "{loaded}");
    c.ok(
        b,
        &[
            "wait",
            "--tool",
            "search",
            "--tab",
            &plain,
            "--timeout",
            WAIT,
        ],
    );
    let out = c.d.ctl(&[
        "call",
        "browser_navigate",
        "--tab",
        &plain,
        "--url",
        "http://127.0.0.1:9/nothing",
    ]);
    assert!(
        stderr(&out).contains("NAVIGATION_FAILED"),
        "{}",
        stderr(&out)
    );
    step("built-ins done");

    // Closing: by browserctl, and by the browser (as a user closes a tab).
    c.ok(b, &["close", &plain]);
    c.wait_tabs(b, "the plain tab to close", |tabs| {
        !tabs.iter().any(|t| t["ref"] == plain.as_str())
    });
    let other = b.open(&pages.url("plain.html"));
    let tabs = c.wait_tabs(b, "the tab the browser opened", |tabs| {
        tabs.iter()
            .filter(|t| url_of(t).ends_with("/plain.html"))
            .count()
            == 1
    });
    let other_ref = tabs
        .iter()
        .find(|t| url_of(t).ends_with("/plain.html"))
        .unwrap()["ref"]
        .as_str()
        .unwrap()
        .to_owned();
    b.close(&other);
    c.wait_tabs(b, "the closed tab to go", |tabs| {
        !tabs.iter().any(|t| t["ref"] == other_ref.as_str())
    });
    step("tabs closed");

    // A daemon restart on the same port: the extension comes back with its tabs.
    let d = daemon.take().unwrap().restart(token_flag);
    daemon = Some(d);
    let c = ctl(&daemon, &what);
    c.ok(b, &["wait", "--tool", "search", "--timeout", WAIT]);
    let out = c.ok(
        b,
        &["call", "search", "--tab", &search_ref, "--query", "again"],
    );
    assert!(stdout(&out).contains("results for again"));
    step("reconnected after a daemon restart");

    if firefox && discovery == Discovery::PortScan {
        // Firefox suspends an idle event page (after 25 s in these profiles); the extension's
        // keep-alive holds it, so the connection outlives an idle spell untouched. The spell is
        // what an idle page needs to die for sure: 25 s, plus up to 30 s that the extension's
        // watchdog alarm (an event, which counts as activity) may add. (With the native host,
        // an open native port alone keeps Firefox's background alive.)
        let connected_at =
            |c: &Ctl, b: &dyn Driver| c.json(b, &["browsers"])["browsers"][0].clone();
        let before = connected_at(&c, b);
        std::thread::sleep(Duration::from_secs(58));
        let after = connected_at(&c, b);
        assert_eq!(before, after, "one connection all along\n{}", c.context(b));
        let out = c.ok(
            b,
            &["call", "search", "--tab", &search_ref, "--query", "idle"],
        );
        assert!(stdout(&out).contains("results for idle"));
        step("still connected after idling");
    }

    // Killing the browser takes its tabs away (and the native host goes with it).
    if discovery == Discovery::NativeHost {
        assert!(
            !native_hosts_mentioning(&host_marker).is_empty(),
            "the browser runs the host we installed\n{}",
            c.context(b)
        );
    }
    b.kill();
    c.wait_tabs(b, "the tabs to go with the browser", |tabs| tabs.is_empty());
    let browsers = c.json(b, &["browsers"]);
    assert_eq!(browsers["browsers"], json!([]), "{browsers}");
    if discovery == Discovery::NativeHost {
        wait_until(Duration::from_secs(20), "the native host to exit", || {
            native_hosts_mentioning(&host_marker)
                .is_empty()
                .then_some(())
        });
    }
    step("done");
}
