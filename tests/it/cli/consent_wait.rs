//! A call that waits for the person's answer in the browser (issue 59): `browserctl call`
//! waited 25 s in silence for a prompt the terminal never mentioned, then exited 7 like a tool
//! that ran and failed. It now says on stderr, within a second, which prompt it waits for
//! (tool, site, tab), and exits with codes of their own: 20 USER_DENIED, 21
//! USER_CONSENT_TIMEOUT. The extension reports the prompt (`consentRequested`,
//! `consentAnswered`, additive bridge messages); the daemon publishes both as events.

use crate::support::common::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One call the extension asks the person about, answered `outcome` with `error`'s code.
async fn prompted_call(
    d: &TestDaemon,
    ext: &mut FakeExtension,
    outcome: &str,
    code: &str,
) -> (Duration, String, std::process::ExitStatus) {
    let mut child = Command::new(CTL)
        .args([
            "--socket",
            d.socket.to_str().unwrap(),
            "call",
            "search",
            "--query",
            "q",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let call = ext.expect("callTool").await;
    let asked = Instant::now();
    let id = call["callId"].clone();
    ext.send(
        json!({"type": "consentRequested", "sessionId": ext.session, "callId": id,
        "tabId": 7, "promptId": "browser-mcp-consent-1", "agent": "browserctl",
        "site": "https://a-rather-long-subdomain.example.com", "tool": "search",
        "argsSummary": "{\"query\":\"q\"}", "timeoutMs": 25000}),
    )
    .await;
    let said = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("browserctl said nothing about the prompt");
    let within = asked.elapsed();
    ext.send(
        json!({"type": "consentAnswered", "sessionId": ext.session, "callId": id,
        "tabId": 7, "promptId": "browser-mcp-consent-1", "outcome": outcome}),
    )
    .await;
    ext.send(json!({"type": "toolResult", "sessionId": ext.session, "callId": id,
        "result": null, "error": {"code": code, "message": format!("{outcome}: the call did not run")}}))
        .await;
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    let mut all = vec![said];
    // Until the reader meets the end of stderr (it drops its sender then).
    all.extend(rx.iter());
    (within, all.join("\n"), status)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_says_it_waits_for_the_person_and_exits_with_the_answers_own_code() {
    let d = TestDaemon::start();
    let mut ext = FakeExtension::search_tab(&d).await;

    let (within, said, status) = prompted_call(&d, &mut ext, "denied", "USER_DENIED").await;
    assert!(
        said.contains("waiting for your answer in the browser")
            && said.contains("`search`")
            && said.contains("https://a-rather-long-subdomain.example.com")
            && said.contains("b1:7"),
        "{said}"
    );
    assert!(within < Duration::from_secs(1), "said after {within:?}");
    assert_eq!(status.code(), Some(20), "denied: {said}");
    assert!(said.contains("USER_DENIED"), "{said}");

    let (_, said, status) = prompted_call(&d, &mut ext, "unanswered", "USER_CONSENT_TIMEOUT").await;
    assert_eq!(status.code(), Some(21), "unanswered: {said}");

    // The same prompts, on the event stream (replayed from its start), naming the caller's call.
    let out = d.ctl(&[
        "events",
        "--since",
        "0",
        "--type",
        "consentRequested,consentAnswered",
        "--count",
        "4",
    ]);
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "consentRequested",
            "consentAnswered",
            "consentRequested",
            "consentAnswered"
        ],
        "{lines:?}"
    );
    let asked = &lines[0];
    assert_eq!(asked["tab"], "b1:7");
    assert_eq!(asked["data"]["tool"], "search");
    assert_eq!(asked["data"]["agent"], "browserctl");
    assert_eq!(asked["data"]["id"], "browser-mcp-consent-1");
    assert!(
        asked["data"]["callId"]
            .as_str()
            .unwrap()
            .starts_with("browserctl-"),
        "{asked}"
    );
    assert_eq!(lines[1]["data"]["outcome"], "denied");
    assert_eq!(lines[3]["data"]["outcome"], "unanswered");
}
