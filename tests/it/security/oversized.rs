//! Issue 35, item 5: a page cannot cut the browser off. One page tool with a 17 MiB description
//! used to make the daemon close the extension's connection (1009, over its frame limit) and the
//! extension reconnect in a loop, every tab of the browser gone each time. The extension now
//! refuses oversized page tools (extension/shared/page-tools.js) and tells the daemon which and
//! why; the connection stays, and the page's other tool works. In headless Chromium with the
//! real extension, paired with a real daemon.

use crate::browser::face::ChromiumFace;
use crate::support::chromium::tool_names;
use crate::support::common::*;
use std::time::Duration;

const PAGE: &str = r#"<!doctype html><meta charset="utf-8"><title>Heavy</title>
<p>A page with one tool too big to carry.</p><script>
const mc = navigator.modelContext || document.modelContext;
const schema = { type: 'object', properties: {} };
mc.registerTool({ name: 'light', description: 'Answers at once', inputSchema: schema,
  execute: () => ({ content: [{ type: 'text', text: 'still here' }] }) });
mc.registerTool({ name: 'heavy', description: 'x'.repeat(17 * 1024 * 1024), inputSchema: schema,
  execute: () => ({ content: [{ type: 'text', text: 'never offered' }] }) });
</script>"#;

#[test]
fn an_oversized_page_tool_is_refused_and_the_browser_stays_connected() {
    let test =
        "security::oversized::an_oversized_page_tool_is_refused_and_the_browser_stays_connected";
    let Some(face) = ChromiumFace::showing(test, PAGE) else {
        return;
    };
    let d = &face.d;
    let url = face.pages.url("recipes");
    let tab = wait_until(Duration::from_secs(60), "the page's light tool", || {
        let tabs = d.ctl_json(&["tabs"]);
        tabs["tabs"].as_array()?.iter().find_map(|t| {
            (t["url"] == url.as_str() && tool_names(t).contains(&"light")).then(|| t.clone())
        })
    });
    assert!(
        !tool_names(&tab).contains(&"heavy"),
        "{}",
        tool_names(&tab).join(", ")
    );
    let hidden = &tab["hidden"];
    assert!(
        hidden["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|n| n == "heavy")),
        "the daemon is told: {hidden}"
    );
    assert!(
        hidden["reason"]
            .as_str()
            .unwrap_or("")
            .contains("larger than browser-mcp accepts"),
        "{hidden}"
    );
    // The same connection a while later: no 1009, no reconnect loop.
    let connected =
        |d: &TestDaemon| d.ctl_json(&["browsers"])["browsers"][0]["connectedAt"].clone();
    let before = connected(d);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        connected(d),
        before,
        "the browser reconnected:\n{}",
        d.log()
    );
    let tab_ref = tab["ref"].as_str().unwrap();
    let out = d.ctl(&["call", "light", "--tab", tab_ref]);
    assert!(stdout(&out).contains("still here"), "{}", stderr(&out));
    let out = d.ctl(&["call", "heavy", "--tab", tab_ref]);
    fails(&out, 4, "larger than browser-mcp accepts");
}
