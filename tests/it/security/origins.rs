//! Who may connect: loopback Hosts only, no web Origins, the token when required.

use crate::support::common::*;
use crate::support::harness::status_of;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn upgrade_status(d: &TestDaemon, host: &str, origin: Option<&str>, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", d.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let origin = origin
        .map(|o| format!("Origin: {o}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\n{origin}Connection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    .unwrap();
    let mut buf = vec![0u8; 4096];
    let n = s.read(&mut buf).unwrap_or(0);
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    (status_of(&text), text)
}

#[test]
fn web_origins_and_foreign_hosts_are_refused() {
    let d = TestDaemon::start();
    let host = format!("127.0.0.1:{}", d.port);
    let (s, text) = upgrade_status(&d, &host, Some("http://evil.example"), "/");
    assert_eq!(s, 403, "{text}");
    assert!(text.contains("UNAUTHORIZED"));
    let (s, _) = upgrade_status(&d, &host, Some("https://example.com"), "/");
    assert_eq!(s, 403);
    let (s, text) = upgrade_status(&d, &format!("evil.example:{}", d.port), None, "/");
    assert_eq!(s, 403, "DNS rebinding: {text}");
    let ours = "chrome-extension://jldadifenendlhihnlmegbljijfhnffa";
    let (s, _) = upgrade_status(&d, &host, Some(ours), "/");
    assert_eq!(s, 101, "our extension");
    let (s, _) = upgrade_status(&d, &format!("localhost:{}", d.port), None, "/");
    assert_eq!(s, 101, "no Origin (a native client) is fine");
}

/// Issue 35, item 8: another installed extension (and any Firefox one, whose origin names only
/// an install) joins as a browser only with proof: the token, or the trust handshake. Without,
/// it is refused before the upgrade, and says why; the port scan's plain `GET /` still answers.
#[test]
fn another_extension_joins_only_with_proof() {
    let d = TestDaemon::start();
    let host = format!("127.0.0.1:{}", d.port);
    for other in ["chrome-extension://abcdefghijklmnop", "moz-extension://x"] {
        let (s, text) = upgrade_status(&d, &host, Some(other), "/");
        assert_eq!(s, 401, "{other}: {text}");
        assert!(text.contains("is not the browser-mcp extension"), "{text}");
        let (s, text) = upgrade_status(&d, &host, Some(other), &format!("/?token={}", d.token));
        assert_eq!(s, 101, "{other} with the token: {text}");
        let (s, text) = upgrade_status(&d, &host, Some(other), "/ws?role=browser");
        assert_eq!(s, 401, "{other} on the JSON-RPC route: {text}");
    }
    // Who we are, for a scan: no proof needed to learn that.
    let mut s = TcpStream::connect(("127.0.0.1", d.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: {host}\r\nOrigin: moz-extension://x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    assert!(text.starts_with("HTTP/1.1 426"), "{text}");
    assert!(text.contains("browser-mcpd"), "{text}");
    // Named by the user, an origin is trusted as named.
    let named = TestDaemon::builder()
        .args(&["--allow-origin", "chrome-extension://abcdefghijklmnop"])
        .start();
    let host = format!("127.0.0.1:{}", named.port);
    let (s, text) = upgrade_status(
        &named,
        &host,
        Some("chrome-extension://abcdefghijklmnop"),
        "/",
    );
    assert_eq!(s, 101, "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn token_is_checked_when_presented_or_required() {
    let d = TestDaemon::builder().args(&["--require-token"]).start();
    let url = d.ws_url();
    assert!(
        FakeExtension::raw(&url, &[]).await.is_err(),
        "no token refused"
    );
    assert!(FakeExtension::raw(&format!("{url}?token=wrong"), &[])
        .await
        .is_err());
    let ok = FakeExtension::raw(&format!("{url}?token={}", d.token), &[]).await;
    assert!(ok.is_ok());
    let auth = format!("Bearer {}", d.token);
    assert!(
        FakeExtension::raw(&url, &[("Authorization", auth.as_str())])
            .await
            .is_ok()
    );
}

#[test]
fn non_loopback_bind_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(DAEMON)
        .args(["--port", "0", "--bind", "0.0.0.0", "--socket"])
        .arg(dir.path().join("s"))
        .arg("--discovery-dir")
        .arg(dir.path().join("d"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("loopback"), "{}", stderr(&out));
}

#[test]
fn plain_get_explains_itself() {
    let d = TestDaemon::start();
    let mut s = TcpStream::connect(("127.0.0.1", d.port)).unwrap();
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 426"), "{text}");
    let body: Value = serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["name"], "browser-mcpd");
}

#[test]
fn an_idle_probe_connection_does_not_hold_up_shutdown() {
    // What the extension's port scan leaves behind: a kept-alive connection after one GET.
    let mut d = TestDaemon::start();
    let mut s = TcpStream::connect(("127.0.0.1", d.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut buf = [0u8; 512];
    let n = s.read(&mut buf).unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 426"));
    assert!(d.terminate().success());
    assert!(
        !d.log().contains("did not close"),
        "the probe's connection held up the shutdown:\n{}",
        d.log()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_token_pairs_and_a_wrong_one_never_passes() {
    let d = TestDaemon::start();
    let url = d.ws_url();
    let ext = (
        "Origin",
        "chrome-extension://jldadifenendlhihnlmegbljijfhnffa",
    );
    let web = ("Origin", "https://evil.example");
    let with_token = format!("{url}?token={}", d.token);
    // Without a token: extension origins only.
    assert!(FakeExtension::raw(&url, &[ext]).await.is_ok());
    assert!(FakeExtension::raw(&url, &[web]).await.is_err());
    // The right token pairs; a wrong one is refused even from an extension origin; a web
    // origin stays refused even with the token.
    assert!(FakeExtension::raw(&with_token, &[ext]).await.is_ok());
    let wrong = format!("{url}?token=x{}", d.token);
    assert!(FakeExtension::raw(&wrong, &[ext]).await.is_err());
    assert!(FakeExtension::raw(&with_token, &[web]).await.is_err());

    // --require-token: an extension origin alone is not enough.
    let strict = TestDaemon::builder().args(&["--require-token"]).start();
    let url = strict.ws_url();
    assert!(FakeExtension::raw(&url, &[ext]).await.is_err());
    let ok = format!("{url}?token={}", strict.token);
    assert!(FakeExtension::raw(&ok, &[ext]).await.is_ok());
}
