//! Slot exhaustion by another user (issue 35, item 6): a program of another uid that opens
//! hundreds of connections to the loopback port and holds them takes no connection slot, is
//! answered 403 (or, beyond 64 answers in flight, not at all) and closed at once, and is logged once a second, not once a connection; the
//! user's own programs are served all along.

use crate::support::common::*;
use crate::support::impostor::{become_nobody, other_user_or_skip};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Opens `n` connections to the port, sending nothing, holds them for `secs`, then reports
/// how many the daemon answered with a 403 and closed: "answered A closed C of N".
const HOLDER: &str = r#"
import socket, sys, time
port, n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
socks = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(0.05)
    socks.append(s)
print("holding", flush=True)
answered = closed = 0
seen = [b""] * n
end = time.time() + secs
while time.time() < end and closed < n:
    for i, s in enumerate(socks):
        if s is None:
            continue
        try:
            d = s.recv(4096)
        except socket.timeout:
            continue
        except OSError:
            d = b""
        if d:
            seen[i] += d
        else:
            closed += 1
            answered += seen[i].startswith(b"HTTP/1.1 403")
            s.close()
            socks[i] = None
print("answered", answered, "closed", closed, "of", n, flush=True)
"#;

/// `GET /` from us: the probe every browser makes, answered 426 (upgrade required).
fn our_probe(port: u16) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
}

#[test]
fn another_users_flood_takes_no_slot_and_is_closed_and_logged_once_a_second() {
    if other_user_or_skip(
        "security::slots::another_users_flood_takes_no_slot_and_is_closed_and_logged_once_a_second",
    )
    .is_none()
    {
        return;
    }
    let d = TestDaemon::builder()
        .args(&["--max-connections", "16"])
        .start();
    let mut cmd = become_nobody().expect("setpriv or runuser");
    cmd.extend(["/usr/bin/python3".into(), "-c".into(), HOLDER.into()]);
    cmd.extend([d.port.to_string(), "300".into(), "20".into()]);
    let mut holder = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(holder.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "holding");
    // While the 300 are open, our own program is served as if they were not there.
    for _ in 0..5 {
        let answer = our_probe(d.port);
        assert!(
            answer.starts_with("HTTP/1.1 426") && !answer.contains("LIMIT_EXCEEDED"),
            "{answer}"
        );
    }
    line.clear();
    out.read_line(&mut line).unwrap();
    let _ = holder.wait();
    // "answered A closed C of N": every one closed although the holder never closed one; the
    // first ones answered 403 (at most 64 answers are in flight, the rest close unanswered).
    let words: Vec<&str> = line.split_whitespace().collect();
    let (answered, closed): (u32, u32) = (words[1].parse().unwrap(), words[3].parse().unwrap());
    assert_eq!(closed, 300, "{line}");
    assert!(answered >= 64, "{line}");
    let status = d.status();
    assert_eq!(status["limitsExceeded"], 0, "{status}");
    let log = d.log();
    let lines = log
        .lines()
        .filter(|l| l.contains("refused a connection of another user"))
        .count();
    assert!(
        (1..=5).contains(&lines),
        "one warning a second, not one per connection: {lines} lines\n{log}"
    );
    assert!(log.contains("uid 65534"), "{log}");
}
