//! What a page pays while no agent is at work (issue 30), in headless Chromium with the real
//! extension and daemon: a page the person opens then gets the extension's page-world scripts
//! alone, no isolated world, and its WebMCP tools wait in its own world; an agent's first
//! request puts the bridge in and lists them at once; pages that load while an agent works get
//! the bridge as they start; and once no agent has asked for `--agent-idle`, new pages pay for
//! none again.

use crate::support::cdp::{Browser, Page};
use crate::support::chromium::*;
use crate::support::common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Browser steps (start-up, port scan, page loads) on a loaded two-core machine.
const PATIENCE: Duration = Duration::from_secs(60);

fn tab_of<'a>(tabs: &'a Value, url: &str) -> Option<&'a Value> {
    tabs["tabs"]
        .as_array()?
        .iter()
        .find(|t| t["url"].as_str() == Some(url))
}

/// Opens `url` in a tab of its own, the focused one, and waits until its WebMCP tool is
/// registered.
fn open_search(browser: &mut Browser, url: &str) -> Page {
    let page = browser.open(url);
    search_registered(browser, page)
}

/// As `open_search`, in a tab behind the focused one.
fn open_search_behind(browser: &mut Browser, url: &str) -> Page {
    let page = browser.open_behind(url);
    search_registered(browser, page)
}

/// The person sets the policy of the site of `url` in the extension's settings: its storage, as
/// the popup writes it (here from the service worker, so that no tab takes the focus).
fn set_site(browser: &mut Browser, url: &str, policy: Value) {
    let origin = url.splitn(4, '/').take(3).collect::<Vec<_>>().join("/");
    let worker = browser.worker();
    let set = format!(
        "chrome.storage.local.set({{ sites: {{ [{}]: {policy} }} }}).then(() => true)",
        serde_json::json!(origin)
    );
    assert_eq!(browser.eval(&worker, &set), serde_json::json!(true));
}

/// The person turns to the tab.
fn activate(browser: &mut Browser, page: &Page) {
    let target = serde_json::json!({ "targetId": page.target });
    browser.send(None, "Target.activateTarget", target);
}

fn search_registered(browser: &mut Browser, page: Page) -> Page {
    browser.wait_for(
        &page,
        "the page's search tool",
        "document.getElementById('status').textContent === 'search tool registered'",
    );
    page
}

/// A Chromium with the real extension, paired to a daemon started with `flags` and connected
/// to it. Dropped in this order: the browser and the daemon before their directories.
struct Connected {
    browser: Browser,
    d: TestDaemon,
    pages: PageServer,
    _profile: tempfile::TempDir,
    _lock: nix::fcntl::Flock<std::fs::File>,
}

fn connected(exe: &std::path::Path, flags: &[&str]) -> Connected {
    let lock = machine_wide_lock();
    let pages = PageServer::pages();
    let profile = tempfile::tempdir().unwrap();
    let mut browser = Browser::launch(exe, profile.path(), "about:blank");
    let d = daemon_in_scan_range(flags);
    pair_browser(profile.path(), &d);
    // Not a test of consent: the person lets agents act everywhere (issue 31).
    browser.allow_everywhere();
    // `status` is no agent's business: it tells the browser nothing.
    wait_until(PATIENCE, "the browser to connect", || {
        (d.status()["browsers"] == 1).then_some(())
    });
    Connected {
        browser,
        d,
        pages,
        _profile: profile,
        _lock: lock,
    }
}

#[test]
fn a_page_pays_for_no_isolated_world_until_an_agent_needs_it() {
    let Some(exe) = chromium_or_skip("browser::watched") else {
        return;
    };
    let mut c = connected(&exe, &["--agent-idle", "1s"]);

    // The worker's lifeline is an offscreen document of the extension's own
    // (worker/connection/lifeline.js): no web tab carries it, not even the first that loads (which
    // is where it went when a page carried it: 3.3 ms of each cross-site navigation there).
    wait_until(PATIENCE, "the offscreen lifeline", || {
        let targets = c
            .browser
            .send(None, "Target.getTargets", serde_json::json!({}));
        let all = targets["targetInfos"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        all.iter()
            .any(|t| {
                t["url"]
                    .as_str()
                    .is_some_and(|u| u.ends_with("/offscreen/lifeline.html"))
            })
            .then_some(())
    });
    let first = c.browser.open(&c.pages.url("search.html?first"));
    // Past the worker's wait before it would place a lifeline in a page (PLACE_MS).
    std::thread::sleep(Duration::from_millis(2000));
    assert_eq!(
        c.browser.isolated_worlds(&first),
        Vec::<Value>::new(),
        "the first page carries an isolated world of ours\n--- daemon ---\n{}",
        c.d.log()
    );
    let url = c.pages.url("search.html?before");
    let before = open_search(&mut c.browser, &url);
    assert_eq!(
        c.browser.isolated_worlds(&before),
        Vec::<Value>::new(),
        "a page no agent needs has an isolated world of ours\n--- daemon ---\n{}",
        c.d.log()
    );

    // An agent's first listing: the page's tool is in it, with no wait of the agent's own.
    let started = Instant::now();
    let tabs = c.d.ctl_json(&["tabs"]);
    let listed = started.elapsed();
    let tab = tab_of(&tabs, &url).unwrap_or_else(|| panic!("{url} not listed: {tabs}"));
    assert!(
        tool_names(tab).contains(&"search"),
        "the first listing lacks the page's tool: {tab}\n--- daemon ---\n{}",
        c.d.log()
    );
    eprintln!("first listing with the page's tools: {listed:?}");
    assert!(
        !c.browser.isolated_worlds(&before).is_empty(),
        "no bridge after the listing"
    );
    // The focused tab's page, where a call that names no tab goes, gets the DOM tools as the
    // agent arrives (worker/ahead/kit-ahead.js).
    wait_until(PATIENCE, "the DOM tools in the focused tab's page", || {
        has_dom_tools(&mut c.browser, &before).then_some(())
    });
    let reference = tab["ref"].as_str().unwrap().to_owned();
    let out = called(&c.d, &["search", "--tab", &reference, "--query", "watched"]);
    assert!(out.contains("results for watched"), "{out}");

    // While the agent works, a new page gets the bridge as it starts: its tool is listed
    // without anyone asking it.
    let url = c.pages.url("search.html?while");
    let during = open_search(&mut c.browser, &url);
    assert!(
        !c.browser.isolated_worlds(&during).is_empty(),
        "a page loaded while an agent works has no bridge"
    );
    let tab = listed_tab(&c.d, PATIENCE, &url, "search");
    assert!(tool_names(&tab).contains(&"search"), "{tab}");

    // No agent for --agent-idle (1 s): the daemon says so, and pages that load after pay for
    // nothing again (the extension answers `watch: false` once its scripts' registration is
    // gone; the daemon does not wait for that answer, hence the margin).
    wait_until(PATIENCE, "the agent to be gone", || {
        (c.d.status()["agentAtWork"] == false).then_some(())
    });
    std::thread::sleep(Duration::from_millis(500));
    let after = open_search(&mut c.browser, &c.pages.url("search.html?after"));
    assert_eq!(
        c.browser.isolated_worlds(&after),
        Vec::<Value>::new(),
        "a page loaded after the agent left has an isolated world of ours\n--- daemon ---\n{}",
        c.d.log()
    );
    c.browser.close();
}

/// `browserctl call ARGS`, which must succeed: what it printed.
fn called(d: &TestDaemon, args: &[&str]) -> String {
    let out = d.ctl(&[&["call"], args].concat());
    assert!(out.status.success(), "call {args:?}: {}", stderr(&out));
    stdout(&out)
}

/// What `expression` gives in each world of ours in the page's top frame.
fn in_our_worlds(browser: &mut Browser, page: &Page, expression: &str) -> Vec<serde_json::Value> {
    let worlds = browser.isolated_worlds(page);
    let mut values = Vec::new();
    for world in worlds {
        let r = browser.try_send(
            Some(&page.session),
            "Runtime.evaluate",
            serde_json::json!({ "expression": expression, "contextId": world["id"], "returnByValue": true }),
        );
        if let Ok(r) = r {
            values.push(r["result"]["value"].clone());
        }
    }
    values
}

/// Whether a world of ours in the page's top frame holds the DOM tools.
fn has_dom_tools(browser: &mut Browser, page: &Page) -> bool {
    in_our_worlds(
        browser,
        page,
        "typeof globalThis.browserMcpDom?.answer === 'function'",
    )
    .iter()
    .any(|v| v == true)
}

/// The DOM tools the page's top frame holds, in the order they were put in ("" for none).
fn dom_tool_names(browser: &mut Browser, page: &Page) -> String {
    let expression =
        "globalThis.browserMcpDom ? Object.keys(globalThis.browserMcpDom.tools).join(',') : null";
    in_our_worlds(browser, page, expression)
        .iter()
        .find_map(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A page an agent reaches by navigating a tab it drives, or opens in a tab of its own, gets the
/// DOM tools once it has loaded, before the agent's next call asks for them
/// (worker/ahead/kit-ahead.js): that call does not wait for their compile. While the agent follows
/// the person's focused tab, where a call that names no tab goes, so does the page in front. A
/// page the person opens while the agent works in its own tabs gets none.
#[test]
fn the_dom_tools_go_into_the_pages_an_agent_will_use_before_its_first_call() {
    let Some(exe) = chromium_or_skip("browser::watched") else {
        return;
    };
    let mut c = connected(&exe, &[]);
    // Another origin for the same pages, which the person wants to be asked about.
    let asking = c
        .pages
        .url("search.html?asking")
        .replace("127.0.0.1", "localhost");
    set_site(
        &mut c.browser,
        &asking,
        serde_json::json!({ "mode": "ask" }),
    );

    // Behind the launch's blank tab: the agent's arrival (its first listing) warms the focused
    // tab only.
    let first = c.pages.url("search.html?first");
    let page = open_search_behind(&mut c.browser, &first);
    let tab = listed_tab(&c.d, PATIENCE, &first, "browser_snapshot");
    let reference = tab["ref"].as_str().unwrap().to_owned();
    assert!(
        !has_dom_tools(&mut c.browser, &page),
        "a page no tool has used has the DOM tools"
    );
    called(&c.d, &["browser_snapshot", "--tab", &reference]);
    assert!(
        has_dom_tools(&mut c.browser, &page),
        "no DOM tools after a snapshot"
    );
    // The snapshot's call brings the reading part; the acting part follows its answer, for the
    // action an agent takes next.
    let all = |names: &str| {
        let has = |n: &str| names.split(',').any(|t| t == n);
        names.starts_with("snapshot,") && has("click") && has("hover") && has("drag")
    };
    let names = wait_until(PATIENCE, "the acting part after a snapshot", || {
        let names = dom_tool_names(&mut c.browser, &page);
        all(&names).then_some(names)
    });
    let out = called(
        &c.d,
        &["browser_hover", "--tab", &reference, "--selector", "h1"],
    );
    assert!(out.contains("Hovered"), "{out}");
    assert_eq!(dom_tool_names(&mut c.browser, &page), names);

    // The agent drives the tab to another page: the tools are there before it asks.
    let next = c.pages.url("search.html?next");
    called(
        &c.d,
        &["browser_navigate", "--tab", &reference, "--url", &next],
    );
    wait_until(PATIENCE, "the DOM tools in the page navigated to", || {
        has_dom_tools(&mut c.browser, &page).then_some(())
    });
    let out = called(&c.d, &["browser_snapshot", "--tab", &reference]);
    assert!(out.contains("Search test page"), "{out}");

    // So does a tab the agent opens (behind the focused one: no --focus), before any call on it.
    let opened = c.pages.url("search.html?opened");
    let out = c.d.ctl(&["open", &opened]);
    assert!(out.status.success(), "open: {}", stderr(&out));
    let own = c.browser.attach(&opened);
    wait_until(
        PATIENCE,
        "the DOM tools in the tab the agent opened",
        || has_dom_tools(&mut c.browser, &own).then_some(()),
    );

    // Not on a site the person wants to be asked about: the same, on the other origin set to
    // "ask", gets nothing ahead.
    let out = c.d.ctl(&["open", &asking]);
    assert!(out.status.success(), "open: {}", stderr(&out));
    let asked = c.browser.attach(&asking);
    c.browser.wait_for(
        &asked,
        "the page on the site set to ask",
        "document.readyState === 'complete'",
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !has_dom_tools(&mut c.browser, &asked),
        "a page of a site set to \"ask\" got the DOM tools ahead"
    );

    // A page the person opens meanwhile, in a tab no agent drives, stays without them, though
    // it is in front: the agent works in tabs of its own.
    let theirs = c.pages.url("search.html?theirs");
    let other = open_search(&mut c.browser, &theirs);
    listed_tab(&c.d, PATIENCE, &theirs, "browser_snapshot");
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !has_dom_tools(&mut c.browser, &other),
        "a page in a tab no agent drives got the DOM tools\n--- daemon ---\n{}",
        c.d.log()
    );

    // The person turns to the tab the agent drives, then opens another in front: the agent
    // follows them there (its calls name no tab), and the page in front gets the tools once it
    // has loaded; so does the page of the tab they turn to next.
    activate(&mut c.browser, &page);
    called(&c.d, &["browser_snapshot", "--tab", &reference]);
    let front = open_search(&mut c.browser, &c.pages.url("search.html?front"));
    wait_until(PATIENCE, "the DOM tools in the page in front", || {
        has_dom_tools(&mut c.browser, &front).then_some(())
    });
    activate(&mut c.browser, &other);
    wait_until(PATIENCE, "the DOM tools in the tab turned to", || {
        has_dom_tools(&mut c.browser, &other).then_some(())
    });
    c.browser.close();
}
