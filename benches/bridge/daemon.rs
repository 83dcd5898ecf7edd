//! The daemon under test and the scripted browsers that feed it: starting it on temp paths,
//! its memory and CPU clock, and extensions with many tabs and tools.

use crate::prelude::*;

pub(crate) const DAEMON: &str = env!("CARGO_BIN_EXE_browser-mcpd");
pub(crate) const CTL: &str = env!("CARGO_BIN_EXE_browserctl");
pub(crate) struct Daemon {
    pub(crate) child: Child,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) socket: PathBuf,
    pub(crate) port: u16,
    pub(crate) token: String,
}

impl Daemon {
    pub(crate) fn start() -> Daemon {
        Daemon::start_in(tempfile::tempdir().unwrap())
    }

    /// In a directory chosen beforehand (its `discovery` is where a browser will look).
    pub(crate) fn start_in(dir: tempfile::TempDir) -> Daemon {
        Daemon::start_with(dir, &[])
    }

    /// With `extra` arguments (a launching daemon's directories and browser paths).
    pub(crate) fn start_with(dir: tempfile::TempDir, extra: &[String]) -> Daemon {
        let socket = dir.path().join("ctl.sock");
        let disco = dir.path().join("discovery");
        let child = Command::new(DAEMON)
            .args(["--port", "0", "--log-level", "error", "--socket"])
            .arg(&socket)
            .arg("--discovery-dir")
            .arg(&disco)
            .args(extra)
            .env_remove("NOTIFY_SOCKET")
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let file = disco.join(format!("server-{}.json", child.id()));
        let start = Instant::now();
        let (port, token) = loop {
            if let Some(v) = std::fs::read_to_string(&file)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            {
                let token = v["token"].as_str().unwrap_or_default().to_owned();
                break (v["port"].as_u64().unwrap() as u16, token);
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "daemon did not start"
            );
            std::thread::sleep(Duration::from_millis(2));
        };
        Daemon {
            child,
            dir,
            socket,
            port,
            token,
        }
    }

    pub(crate) fn rss_kib(&self) -> u64 {
        rss_kib(self.child.id())
    }

    /// CPU time (user + system) the daemon used so far.
    pub(crate) fn cpu(&self) -> Duration {
        cpu(self.child.id())
    }

    pub(crate) async fn wait_tabs(&self, n: usize) {
        let mut client = http1_client(&self.socket).await;
        let start = Instant::now();
        loop {
            let req = Request::get("/v1/status")
                .header("host", "d")
                .body(Full::new(Bytes::new()))
                .unwrap();
            let body = {
                client.ready().await.unwrap();
                client.send_request(req).await.unwrap()
            }
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes();
            let v: Value = serde_json::from_slice(&body).unwrap();
            if v["tabs"].as_u64().unwrap() as usize >= n {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "tabs did not appear"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = &self.dir;
    }
}

pub(crate) fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// CPU time (user + system) process `pid` used so far, all its threads: its POSIX CPU clock,
/// which counts a running thread up to now (schedstat's run times stop at the thread's last
/// switch or tick, so a read while the daemon runs misses up to a tick of its work, which
/// the next reading then gets), else clock ticks.
pub(crate) fn cpu(pid: u32) -> Duration {
    use nix::libc;
    let mut clock: libc::clockid_t = 0;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // Safety: both are valid, writable out-parameters.
    let read = unsafe {
        libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) == 0
            && libc::clock_gettime(clock, &mut ts) == 0
    };
    match read {
        true => Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32),
        false => cpu_ticks(pid),
    }
}

pub(crate) fn cpu_ticks(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit_once(')').unwrap().1;
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as u64;
    Duration::from_secs_f64(ticks as f64 / hz as f64)
}

pub(crate) fn tool_json(i: usize) -> Value {
    json!({"name": format!("tool_{i}"), "description": "A benchmark tool that answers at once",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}, "label": {"type": "string"}}},
        "annotations": {"readOnlyHint": true}})
}

/// The runtime of the scripted extensions: one thread of their own, as a browser is a process
/// of its own.
pub(crate) fn browsers() -> &'static tokio::runtime::Handle {
    static BROWSERS: std::sync::OnceLock<tokio::runtime::Handle> = std::sync::OnceLock::new();
    BROWSERS.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let handle = rt.handle().clone();
        std::thread::Builder::new()
            .name("browsers".into())
            .spawn(move || rt.block_on(std::future::pending::<()>()))
            .unwrap();
        handle
    })
}

/// Connects a scripted extension with `tabs` tabs of `tools` tools (tab ids from 1), on
/// [`browsers`], and answers every callTool at once. Returns when `connected` has been sent.
pub(crate) async fn extension(
    port: u16,
    session: &str,
    tabs: usize,
    tools: usize,
) -> tokio::task::JoinHandle<()> {
    browsers()
        .spawn(scripted_extension(port, session.to_owned(), tabs, tools))
        .await
        .unwrap()
}

pub(crate) async fn scripted_extension(
    port: u16,
    session: String,
    tabs: usize,
    tools: usize,
) -> tokio::task::JoinHandle<()> {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}/"))
        .await
        .unwrap();
    let tool_list: Vec<Value> =
        std::iter::once(json!({"name": "echo", "inputSchema": {"type": "object"}}))
            .chain((1..tools).map(tool_json))
            .collect();
    let tab_list: Vec<Value> = (1..=tabs)
        .map(|i| json!({"id": i, "title": format!("Tab {i}"), "url": format!("https://example.com/{i}"), "tools": tool_list}))
        .collect();
    let hello = json!({"type": "connected", "sessionId": session,
        "browser": {"name": "Bench", "version": "1"}, "tabs": tab_list});
    ws.send(Message::text(hello.to_string())).await.unwrap();
    // Speaking first (as the extension does) lets `GET /` pick the dialect without waiting.
    let _connect = ws.next().await;
    tokio::spawn(async move {
        #[derive(serde::Deserialize)]
        struct Call<'a> {
            #[serde(rename = "type")]
            kind: &'a str,
            #[serde(rename = "callId")]
            call_id: Option<&'a str>,
        }
        while let Some(Ok(m)) = ws.next().await {
            let Message::Text(t) = m else { continue };
            let Ok(c) = serde_json::from_str::<Call>(t.as_str()) else {
                continue;
            };
            if c.kind == "callTool" {
                let reply = format!(
                    r#"{{"type":"toolResult","callId":"{}","result":{{"ok":true}},"error":null}}"#,
                    c.call_id.unwrap_or("")
                );
                if ws.send(Message::text(reply)).await.is_err() {
                    break;
                }
            }
        }
    })
}
