//! The agent's eyes (issue 16) in a real browser, Chromium and Firefox ESR: our extension, the
//! real daemon on a port the extension scans, the pages of tests/e2e/pages (eyes-*.html) served
//! from loopback, and browserctl (and `browserctl mcp`) as subprocesses. One browser launch for
//! every case: console, network, downloads, screenshots, a console flood, browser_tabs, and the
//! page events on `browserctl events`. Every scenario is written once against
//! [`DrivesTab`](crate::browser::drives::DrivesTab) and runs in both browsers; what a browser
//! reports its own way is said where it is checked.
//!
//! Without the browser a test says SKIPPED loudly and passes, except under CI=true, where a
//! missing browser is a failure. `BROWSER_MCP_CHROMIUM` names another Chromium.

mod chromium;
mod console;
mod files;
mod firefox;
mod network;
mod tabs;

use crate::browser::drives::DrivesTab;
use crate::support::chromium::PageServer;

fn every_scenario<E: DrivesTab>(eyes: &E, pages: &PageServer) {
    console::console(eyes, pages);
    network::network(eyes, pages);
    files::downloads(eyes, pages);
    files::screenshots(eyes, pages);
    console::flood(eyes, pages);
    tabs::tabs_and_memory(eyes, pages);
    eyes.step("done");
}
