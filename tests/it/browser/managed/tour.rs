//! README's "A short tour of browserctl", run as a person would type it (issue 59: its demo
//! page was not shipped and one example lacked a required argument): every `$ browserctl …`
//! line of the tour's console block, in order, on a browser the daemon launched on the shipped
//! demo page. Only what the reader would change is changed: the tab ids the tour shows become
//! this browser's, and example.com becomes a page of our own (tests stay on loopback).

use super::rig::*;
use crate::support::chromium::PageServer;
use crate::support::common::*;
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The `$ ` lines of the tour's console block, each without its `# comment`.
fn tour_commands(readme: &str) -> Vec<String> {
    let section = &readme[readme
        .find("## A short tour of browserctl")
        .expect("README has the tour")..];
    let block = &section[section.find("```console").unwrap()..];
    let block = &block[..3 + block[3..].find("```").unwrap()];
    block
        .lines()
        .filter_map(|l| l.strip_prefix("$ "))
        .map(|l| l.split(" # ").next().unwrap().trim().to_owned())
        .collect()
}

#[test]
fn the_readme_tour_runs_as_written() {
    let test = "browser::managed::tour::the_readme_tour_runs_as_written";
    let kind = Kind::Chromium;
    let Some(exe) = kind.exe(test) else { return };
    if Command::new("jq").arg("--version").output().is_err() {
        return skip(test, "no jq", "apt-get install jq");
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let commands = tour_commands(&readme);
    assert!(commands.len() >= 10, "{commands:?}");

    let d = daemon(tempfile::tempdir().unwrap(), kind, &exe);
    let examples = PageServer::examples();
    let pages = PageServer::pages();
    let demo = launch(&d, kind, &["--url", &examples.url("search-demo.html")]);
    let search_tab = demo["tab"].as_str().unwrap().to_owned();
    let other = pages.url("plain.html");
    let opened = d.ctl_json(&["open", &other]);
    let other_tab = opened["ref"]
        .as_str()
        .expect("open names its tab")
        .to_owned();
    d.ctl_json(&["wait", "--tool", "search", "--timeout", "60s"]);

    let bin = Path::new(CTL).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let shell = |line: &str| {
        let mut c = Command::new("bash");
        c.args(["-o", "pipefail", "-c", line])
            .env("PATH", &path)
            .env("BROWSER_MCP_SOCKET", &d.socket)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    let ran = |line: &str, out: &Output| {
        assert!(
            out.status.success(),
            "`{line}` exited {:?}\n{}{}\n{}",
            out.status.code(),
            stdout(out),
            stderr(out),
            d.log()
        );
        stdout(out)
    };

    let mut opened_tab = None::<String>;
    let mut events = None;
    for command in &commands {
        let mut line = command
            .replace("b1:625381319", &search_tab)
            .replace("b1:625381321", &other_tab)
            .replace("https://example.com", &other);
        if let Some(tab) = &opened_tab {
            line = line.replace("b1:625381324", tab);
        }
        if line.starts_with("browserctl events") {
            // It streams until stopped: the tour's next line closes a tab, which it must show.
            let mut child = shell(&line).spawn().unwrap();
            let (tx, rx) = mpsc::channel();
            let out = child.stdout.take().unwrap();
            std::thread::spawn(move || {
                for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                    let _ = tx.send(l);
                }
            });
            // The subscription is live once the daemon has answered; a short wait stands for it.
            std::thread::sleep(Duration::from_millis(500));
            events = Some((child, rx));
            continue;
        }
        let out = shell(&line).output().unwrap();
        let text = ran(&line, &out);
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[..2] {
            ["browserctl", "tabs"] => {
                let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
                let row = rows
                    .iter()
                    .find(|r| r[0].trim_end_matches('*') == search_tab)
                    .unwrap_or_else(|| panic!("{text}"));
                assert!(row.contains(&"Search demo"), "{text}");
                assert!(row.iter().any(|c| c.contains("search")), "{text}");
                assert!(text.contains(&other_tab), "{text}");
            }
            ["browserctl", "call"] if line.contains("--help") => {
                assert!(text.contains("--query"), "{text}");
            }
            ["browserctl", "call"] if words[2] == "search" && line.contains("jq") => {
                assert!(text.contains("results for test"), "{text}");
            }
            ["browserctl", "call"] if words[2] == "search" => {
                assert_eq!(text.trim(), "results for test");
            }
            ["browserctl", "call"] if words[2] == "browser_snapshot" => {
                assert!(text.contains("Plain test page"), "{text}");
                // The tour's next line clicks e3: the page has one.
                assert!(text.contains(" e3]"), "{text}");
            }
            ["browserctl", "open"] => {
                let tab = text.split_whitespace().next().unwrap_or_default();
                assert!(tab.starts_with(&format!("{}:", demo["browser"].as_str().unwrap())));
                opened_tab = Some(tab.to_owned());
            }
            ["browserctl", "close"] => {
                let tab = opened_tab.as_deref().expect("the tour opens a tab first");
                let (mut child, rx) = events.take().expect("the tour watches events first");
                let closed = wait_until(Duration::from_secs(10), "the tabClosed event", || {
                    rx.recv_timeout(Duration::from_millis(200))
                        .ok()
                        .filter(|l| l.contains("tabClosed") && l.contains(tab))
                });
                let _ = child.kill();
                let _ = child.wait();
                let v: serde_json::Value = serde_json::from_str(&closed).unwrap();
                assert_eq!(v["type"], "tabClosed", "{closed}");
            }
            _ => {}
        }
    }
    assert!(opened_tab.is_some(), "{commands:?}");
}
