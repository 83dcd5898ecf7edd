//! Whole processes: the daemon's start to READY, and one-shot `browserctl call` against curl.

use crate::prelude::*;

pub(crate) fn start_to_ready(runs: usize) -> Duration {
    let mut samples = Vec::new();
    for _ in 0..runs {
        let dir = tempfile::tempdir().unwrap();
        let notify_path = dir.path().join("notify.sock");
        let notify = std::os::unix::net::UnixDatagram::bind(&notify_path).unwrap();
        notify
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let t = Instant::now();
        let mut child = Command::new(DAEMON)
            .args(["--port", "0", "--log-level", "error", "--socket"])
            .arg(dir.path().join("ctl.sock"))
            .arg("--discovery-dir")
            .arg(dir.path().join("d"))
            .env("NOTIFY_SOCKET", &notify_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut buf = [0u8; 4096];
        loop {
            let n = notify.recv(&mut buf).expect("READY=1 from the daemon");
            if String::from_utf8_lossy(&buf[..n])
                .lines()
                .any(|l| l == "READY=1")
            {
                break;
            }
        }
        samples.push(t.elapsed());
        let _ = child.kill();
        let _ = child.wait();
    }
    samples.sort();
    samples[samples.len() / 2]
}

// ---------------------------------------------------------------------------------------------
// Row 7: one browserctl process against curl doing the same request

pub(crate) fn one_shot(d: &Daemon, runs: usize) -> (Duration, Duration) {
    let body = r#"{"tool":"echo","tab":"b1:1","args":{"x":1}}"#;
    let time = |cmd: &mut Command| {
        let t = Instant::now();
        let out = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(out.success());
        t.elapsed()
    };
    let mut ctl = Vec::new();
    let mut curl = Vec::new();
    for _ in 0..runs {
        ctl.push(time(Command::new(CTL).arg("--socket").arg(&d.socket).args(
            [
                "--json",
                "call",
                "echo",
                "--tab",
                "b1:1",
                "--args",
                r#"{"x":1}"#,
            ],
        )));
        curl.push(time(
            Command::new("curl")
                .args(["-sf", "--unix-socket"])
                .arg(&d.socket)
                .args([
                    "-H",
                    "content-type: application/json",
                    "-d",
                    body,
                    "http://d/v1/call",
                ]),
        ));
    }
    ctl.sort();
    curl.sort();
    (ctl[runs / 2], curl[runs / 2])
}

// ---------------------------------------------------------------------------------------------
