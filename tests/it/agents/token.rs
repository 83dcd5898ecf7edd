//! The token a person saves in an MCP client's HTTP configuration (issue 59): it was made
//! anew at every daemon start, so Claude Code's saved entry failed with no reason after the
//! next restart. It is kept now (0600, in the user's state directory) until `browserctl token
//! rotate`, which the running daemon takes at once and which names the files holding the old.

use crate::support::common::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::path::Path;

/// The status of an MCP `initialize` POSTed to `/mcp` with `token`.
pub fn initialize_status(port: u16, token: &str) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"saved","version":"0"}}}"#;
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

fn token_in(discovery_file: &Path) -> String {
    read_json(discovery_file).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_saved_http_token_survives_restarts_until_it_is_rotated() {
    let d = TestDaemon::start();
    let saved = d.token.clone();
    assert_eq!(initialize_status(d.port, &saved), 200);
    let file = d.dir.path().join("state/token");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);

    let d = d.restart(&[]);
    assert_eq!(d.token, saved, "the token changed with the restart");
    assert_eq!(
        initialize_status(d.port, &saved),
        200,
        "the saved config stopped working"
    );

    // A person's Claude Code entry with the token, and an unrelated file.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join(".claude.json"),
        format!(
            r#"{{"mcpServers":{{"browser":{{"headers":{{"Authorization":"Bearer {saved}"}}}}}}}}"#
        ),
    )
    .unwrap();
    std::fs::create_dir_all(home.path().join(".gemini")).unwrap();
    std::fs::write(home.path().join(".gemini/settings.json"), "{}").unwrap();
    let out = std::process::Command::new(CTL)
        .args(["--socket", d.socket.to_str().unwrap(), "token", "rotate"])
        .env("HOME", home.path())
        .current_dir(home.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "rotate: {}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.contains("~/.claude.json") && said.contains("--client claude-code"),
        "{said}"
    );
    assert!(!said.contains("settings.json"), "{said}");

    // The discovery file carries the new token by the time the command has answered: a script
    // that rotates and then reads it finds the new one.
    let new = token_in(&d.discovery_file);
    assert_ne!(new, saved, "the discovery file still has the old token");
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), new);
    assert_eq!(
        initialize_status(d.port, &saved),
        401,
        "the old token still opens /mcp"
    );
    assert_eq!(initialize_status(d.port, &new), 200);

    let d = d.restart(&[]);
    assert_eq!(d.token, new, "a restart undid the rotation");
    let v: Value = d.ctl_json(&["mcp", "--print-config"]);
    assert_eq!(
        v["http"]["mcpServers"]["browser"]["headers"]["Authorization"],
        format!("Bearer {new}")
    );
}
