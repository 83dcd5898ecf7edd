//! End to end in a real browser, Chromium and Firefox ESR: the same extension directory (loaded
//! unpacked in Chromium, a temporary add-on over WebDriver BiDi in Firefox), the real daemon, the
//! test pages of tests/e2e/pages served from loopback, and browserctl as a subprocess. The
//! scenario (scenario.rs) is written once; it runs per discovery path (native-messaging host,
//! port scan) and per WebMCP flavour (the browser's own API, the extension's shim): all four in
//! Chromium, and in Firefox the native host with Firefox's own WebMCP and the scan with the shim.
//!
//! Without the browser a test says SKIPPED loudly and passes, except under CI=true, where a
//! missing browser is a failure. `BROWSER_MCP_CHROMIUM` / `BROWSER_MCP_FIREFOX` name others.

mod scenario;

use scenario::{scenario, Discovery, Family};

#[test]
fn chromium_native_host_with_native_webmcp() {
    scenario(Family::Chromium, Discovery::NativeHost, true);
}

#[test]
fn chromium_native_host_with_shim() {
    scenario(Family::Chromium, Discovery::NativeHost, false);
}

#[test]
fn chromium_port_scan_with_native_webmcp() {
    scenario(Family::Chromium, Discovery::PortScan, true);
}

#[test]
fn chromium_port_scan_with_shim() {
    scenario(Family::Chromium, Discovery::PortScan, false);
}

#[test]
fn firefox_native_host_with_firefox_webmcp() {
    scenario(Family::Firefox, Discovery::NativeHost, true);
}

#[test]
fn firefox_port_scan_with_shim() {
    scenario(Family::Firefox, Discovery::PortScan, false);
}
