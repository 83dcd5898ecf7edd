//! The official Python MCP SDK's clients in tests/python/, run beside what a test scripts: the
//! test binary `python_sdk` (its own harness) and the remote tests both drive them.

use std::future::Future;
use std::pin::Pin;
use std::process::{Output, Stdio};
use std::time::Duration;

/// Whether `python3` can import the SDK (`pip install mcp`; .ci/run does).
pub fn python_has_mcp() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import mcp"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// One of tests/python/*.py running; its output is awaited beside what this side scripts.
pub struct PythonScript {
    what: &'static str,
    output: Pin<Box<dyn Future<Output = std::io::Result<Output>>>>,
}

impl PythonScript {
    pub fn start(what: &'static str, file: &str, env: &[(&str, &std::ffi::OsStr)]) -> Self {
        let path = format!("{}/tests/python/{file}", env!("CARGO_MANIFEST_DIR"));
        let child = tokio::process::Command::new("python3")
            .arg(path)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("run python3");
        PythonScript {
            what,
            output: Box::pin(child.wait_with_output()),
        }
    }

    fn report(&self, out: &Output) -> String {
        format!(
            "the Python {} failed ({}):\n{}\n{}",
            self.what,
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }

    /// What `scripted` gives, unless the client stops first (then its report).
    pub async fn beside<T>(&mut self, scripted: impl Future<Output = T>) -> T {
        tokio::select! {
            t = scripted => t,
            out = &mut self.output => panic!("{}", self.report(&out.expect("python3 ran"))),
        }
    }

    // tests/python_sdk.rs, which shares this file, serves no uploads.
    #[allow(dead_code)]
    /// Answers the calls that reach `ext` until the client ends: the calls, in order, and
    /// whether the client ended well (a success that printed `ok`), else its report.
    pub async fn serving(
        mut self,
        ext: &mut super::common::FakeExtension,
        ok: &str,
    ) -> (Vec<serde_json::Value>, Result<(), String>) {
        let mut calls = Vec::new();
        let out = loop {
            tokio::select! {
                out = &mut self.output => break out.expect("python3 ran"),
                call = ext.call_within(Duration::from_secs(60)) => {
                    calls.push(call.expect("a call, or the client's end"));
                }
            }
        };
        let fine = out.status.success() && String::from_utf8_lossy(&out.stdout).contains(ok);
        (calls, if fine { Ok(()) } else { Err(self.report(&out)) })
    }

    /// Waits for the client's end, which must be a success that printed `ok`.
    pub async fn finish(mut self, ok: &str) {
        let out = tokio::time::timeout(Duration::from_secs(60), &mut self.output)
            .await
            .expect("the Python client finishes within 60 s")
            .expect("python3 ran");
        let fine = out.status.success() && String::from_utf8_lossy(&out.stdout).contains(ok);
        assert!(fine, "{}", self.report(&out));
    }
}
