//! MCP clients of the daemon: `browserctl mcp` over stdio, the socket session, and `/mcp`.

use crate::prelude::*;

/// MCP calls before the MCP memory row is read (16 in flight, also the MCP CPU row).
pub(crate) const MCP_CALLS: usize = 10_000;

// ---------------------------------------------------------------------------------------------
// Measurements

pub(crate) fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}})
}

pub(crate) fn tools_call(id: u64, name: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": {"x": 1}}})
}

/// The name the echo tool of tab b1:1 is listed under, from a `tools/list` answer.
pub(crate) fn echo_name(list: &Value) -> String {
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .find(|n| n.starts_with("echo"))
        .expect("the echo tool is listed")
        .to_owned()
}

/// One persistent MCP client of `browserctl mcp` on stdio.
pub(crate) struct McpStdio {
    pub(crate) child: tokio::process::Child,
    pub(crate) stdin: tokio::process::ChildStdin,
    pub(crate) lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    pub(crate) next_id: u64,
    pub(crate) name: String,
}

impl McpStdio {
    pub(crate) async fn start(d: &Daemon) -> McpStdio {
        McpStdio::start_with(d, CTL).await
    }

    /// With another `browserctl` (`BENCH_BEFORE_CTL`: the one before issue 17, for the
    /// before/after rows).
    pub(crate) async fn start_with(d: &Daemon, ctl: &str) -> McpStdio {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let mut child = tokio::process::Command::new(ctl)
            .arg("--socket")
            .arg(&d.socket)
            .args(["mcp", "--tab", "b1:1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut c = McpStdio {
            child,
            stdin,
            lines,
            next_id: 0,
            name: String::new(),
        };
        c.exchange(initialize(0)).await;
        c.stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await
            .unwrap();
        let list = json!({"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {}});
        c.name = echo_name(&c.exchange(list).await);
        c
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id().unwrap()
    }

    /// Sends a request (under a fresh id) and returns its answer, skipping notifications.
    pub(crate) async fn exchange(&mut self, mut msg: Value) -> Value {
        use tokio::io::AsyncWriteExt;
        self.next_id += 1;
        msg["id"] = json!(self.next_id);
        let text = msg.to_string() + "\n";
        self.stdin.write_all(text.as_bytes()).await.unwrap();
        loop {
            let line = self.lines.next_line().await.unwrap().expect("an answer");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == self.next_id {
                return v;
            }
        }
    }

    pub(crate) async fn call(&mut self) -> Duration {
        self.next_id += 1;
        timed_call(&mut self.stdin, &mut self.lines, self.next_id, &self.name).await
    }

    /// `total` calls with `in_flight` of them outstanding at any time.
    pub(crate) async fn pipelined(&mut self, total: usize, in_flight: usize) {
        use tokio::io::AsyncWriteExt;
        let mut sent = 0;
        let mut answered = 0;
        while answered < total {
            let mut batch = String::new();
            while sent < total && sent - answered < in_flight {
                self.next_id += 1;
                batch.push_str(&tools_call(self.next_id, &self.name).to_string());
                batch.push('\n');
                sent += 1;
            }
            if !batch.is_empty() {
                self.stdin.write_all(batch.as_bytes()).await.unwrap();
            }
            let line = self.lines.next_line().await.unwrap().expect("an answer");
            if line.contains("\"result\"") {
                assert!(!line.contains("\"isError\":true"), "{line}");
                answered += 1;
            }
        }
    }
}

/// One `tools/call` over a line-framed MCP connection: the time from its request (already
/// serialized) to its answer's line, which is checked after the clock stops.
pub(crate) async fn timed_call<W, R>(
    w: &mut W,
    lines: &mut tokio::io::Lines<R>,
    id: u64,
    name: &str,
) -> Duration
where
    W: tokio::io::AsyncWrite + Unpin,
    R: tokio::io::AsyncBufRead + Unpin,
{
    use tokio::io::AsyncWriteExt;
    let line = tools_call(id, name).to_string() + "\n";
    let t = Instant::now();
    w.write_all(line.as_bytes()).await.unwrap();
    loop {
        let line = lines.next_line().await.unwrap().expect("an answer");
        let took = t.elapsed();
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == id {
            assert!(v["result"]["isError"] == false, "{v}");
            return took;
        }
    }
}

/// An MCP session on the control socket itself (`GET /v1/mcp`), with no relay in between:
/// how much of row 8 is the daemon's MCP work and how much the relay's hop.
pub(crate) struct McpSocket {
    pub(crate) w: tokio::net::unix::OwnedWriteHalf,
    pub(crate) lines: tokio::io::Lines<tokio::io::BufReader<tokio::net::unix::OwnedReadHalf>>,
    pub(crate) name: String,
    pub(crate) next_id: u64,
}

impl McpSocket {
    /// Scoped to tab b1:1, initialized, its echo tool listed.
    pub(crate) async fn start(d: &Daemon) -> McpSocket {
        let mut c = McpSocket::open(d, "tab=b1%3A1").await;
        c.ask(initialize(0)).await;
        let list = c
            .ask(json!({"jsonrpc": "2.0", "id": 0, "method": "tools/list"}))
            .await;
        c.name = echo_name(&list);
        c
    }

    /// A session on the control socket with this scope (`GET /v1/mcp?{query}`), not yet
    /// initialized.
    pub(crate) async fn open(d: &Daemon, query: &str) -> McpSocket {
        use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
        let mut s = UnixStream::connect(&d.socket).await.unwrap();
        s.write_all(
            format!("GET /v1/mcp?{query} HTTP/1.1\r\nHost: d\r\nConnection: Upgrade\r\nUpgrade: mcp-stdio\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            head.push(s.read_u8().await.unwrap());
        }
        assert!(
            head.starts_with(b"HTTP/1.1 101"),
            "{}",
            String::from_utf8_lossy(&head)
        );
        let (r, w) = s.into_split();
        McpSocket {
            w,
            lines: BufReader::new(r).lines(),
            name: String::new(),
            next_id: 0,
        }
    }

    pub(crate) async fn ask(&mut self, mut v: Value) -> Value {
        use tokio::io::AsyncWriteExt;
        self.next_id += 1;
        v["id"] = json!(self.next_id);
        self.w
            .write_all((v.to_string() + "\n").as_bytes())
            .await
            .unwrap();
        loop {
            let line = self.lines.next_line().await.unwrap().unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == self.next_id {
                return v;
            }
        }
    }

    pub(crate) async fn call(&mut self) -> Duration {
        self.next_id += 1;
        timed_call(&mut self.w, &mut self.lines, self.next_id, &self.name).await
    }
}

/// Latencies of rows 8 and 9 and of their baselines, sampled in turn in one loop: a direct
/// call, an MCP call through `browserctl mcp`, one on the socket's own MCP session, one over
/// /mcp, a raw TCP HTTP echo and a raw WebSocket echo.
pub(crate) struct McpLatencies {
    pub(crate) direct: Lat,
    pub(crate) stdio: Lat,
    pub(crate) socket: Lat,
    pub(crate) http: Lat,
    /// Row 9's floor: echoes in a process of their own.
    pub(crate) tcp: Lat,
    pub(crate) ws: Lat,
    /// The same echoes on the client's own thread (reported).
    pub(crate) here: (Lat, Lat),
    /// The echo process's Unix-socket HTTP echo.
    pub(crate) uds: Lat,
    /// The echo process's minimal bridge over a Unix socket and over TCP: the floors of a
    /// direct call and of `/mcp`.
    pub(crate) bridge: (Lat, Lat),
    pub(crate) before: Option<Lat>,
}

/// The MCP CPU row: CPU per call of `browserctl mcp` and of the daemon for MCP calls, and of
/// the daemon for direct calls to the same tab, 16 in flight each, taking turns on one daemon
/// so that both see the same machine (read in phases of their own, seconds apart, the ratio
/// followed the machine's load: 1.63x in a slow run against 1.12–1.29x). A turn is 2,000
/// MCP calls, or direct calls for 30 ms (about as long); the order swaps every round, so that
/// what one kind leaves behind is paid by each kind alike.
pub(crate) async fn mcp_and_direct_cpu(d: &Daemon, stdio: &mut McpStdio) -> (f64, f64, f64) {
    pub(crate) const ROUNDS: usize = 8;
    pub(crate) const CALLS: usize = 2_000;
    pub(crate) const TURN: Duration = Duration::from_millis(30);
    pub(crate) const IN_FLIGHT: usize = 16;
    let mut direct_n = 0;
    let mut direct = Vec::new();
    for _ in 0..IN_FLIGHT {
        direct.push(http1_client(&d.socket).await);
    }
    let call = call_body("b1:1");
    let (mut relay, mut mcp, mut plain) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for round in 0..ROUNDS {
        for mcp_now in [round % 2 == 0, round % 2 == 1] {
            let (r0, d0) = (cpu(stdio.pid()), d.cpu());
            if mcp_now {
                stdio.pipelined(CALLS, IN_FLIGHT).await;
                relay += cpu(stdio.pid()) - r0;
                mcp += d.cpu() - d0;
            } else {
                let (back, n) = direct_calls(direct, &call, TURN).await;
                direct = back;
                direct_n += n;
                plain += d.cpu() - d0;
            }
        }
    }
    let per_call = |t: Duration| t.as_secs_f64() / (ROUNDS * CALLS) as f64;
    let d_per = plain.as_secs_f64() / direct_n as f64;
    (per_call(relay), per_call(mcp), d_per)
}

/// Rows 8–9's round trips, with `browserctl mcp` (and the one before issue 17, if given)
/// started for them.
pub(crate) async fn latency_pass(d: &Daemon, has_before: bool, n: usize) -> McpLatencies {
    let mut stdio = McpStdio::start(d).await;
    let mut before = match std::env::var("BENCH_BEFORE_CTL") {
        Ok(old) if has_before => Some(McpStdio::start_with(d, &old).await),
        _ => None,
    };
    mcp_latencies(d, &mut stdio, before.as_mut(), n).await
}

pub(crate) async fn mcp_latencies(
    d: &Daemon,
    stdio: &mut McpStdio,
    mut before: Option<&mut McpStdio>,
    n: usize,
) -> McpLatencies {
    let mut direct = http1_client(&d.socket).await;
    let call = call_body("b1:1");
    let mut socket = McpSocket::start(d).await;
    let (mut http, http_name) = McpHttp::start(d).await;
    let echo_dir = tempfile::tempdir().unwrap();
    let ext_echo = browsers().spawn(spawn_ws_echo()).await.unwrap();
    let echoes = EchoProcess::start(echo_dir.path(), ext_echo);
    let mut uds = http1_client(&echoes.uds).await;
    let mut bridge_uds = http1_client(&echoes.bridge_uds).await;
    let mut bridge_tcp = tcp_client(echoes.bridge).await;
    let mut tcp = tcp_client(echoes.http).await;
    let mut ws = WsEcho::connect(echoes.ws).await;
    let tcp_here_addr = spawn_tcp_echo().await;
    let mut tcp_here = tcp_client(tcp_here_addr).await;
    let mut ws_here = WsEcho::connect(spawn_ws_echo().await).await;
    let echo_body = Bytes::from(tools_call(1, "echo").to_string());
    let mut s: [Vec<Duration>; 12] = Default::default();
    // Blocks of BLOCK round trips of each kind in turn: every kind sees the same load on
    // the machine, and each block runs warm (like the sequential rows). The first WARM round
    // trips of a block are not kept: they run on caches the other kinds just used (measured:
    // on one CPU, 100 of /mcp's 119 round trips over 110 µs were the first of their block),
    // which would put the cost of taking turns, not of the path, into every kind's p99.
    pub(crate) const BLOCK: usize = 50;
    pub(crate) const WARM: usize = 2;
    for b in 0..(n + n / 10).div_ceil(BLOCK) {
        let keep = b * BLOCK >= n / 10;
        for (k, samples) in s.iter_mut().enumerate() {
            for i in 0..BLOCK {
                // Requests are built, and MCP answers decoded and checked, outside the clock,
                // as the echoes' are: the rows time the round trip, not the bench's JSON.
                let t = Instant::now();
                let took = match k {
                    0 => {
                        direct_once(&mut direct, &call).await;
                        t.elapsed()
                    }
                    1 => stdio.call().await,
                    2 => socket.call().await,
                    3 => http.call((b * BLOCK + i) as u64 + 10, &http_name).await,
                    4 => {
                        tcp_echo_once(&mut tcp, &echoes.http.to_string(), &echo_body).await;
                        t.elapsed()
                    }
                    5 => {
                        ws.once().await;
                        t.elapsed()
                    }
                    6 => {
                        tcp_echo_once(&mut tcp_here, &tcp_here_addr.to_string(), &echo_body).await;
                        t.elapsed()
                    }
                    7 => {
                        ws_here.once().await;
                        t.elapsed()
                    }
                    8 => {
                        direct_once(&mut uds, &call).await;
                        t.elapsed()
                    }
                    9 => {
                        direct_once(&mut bridge_uds, &call).await;
                        t.elapsed()
                    }
                    10 => {
                        tcp_echo_once(&mut bridge_tcp, &echoes.bridge.to_string(), &echo_body)
                            .await;
                        t.elapsed()
                    }
                    _ => match before.as_mut() {
                        Some(b) => b.call().await,
                        None => break,
                    },
                };
                if keep && i >= WARM {
                    samples.push(took);
                }
            }
        }
    }
    let has_before = !s[11].is_empty();
    let [direct, stdio, socket, http, tcp, ws, tcp_here, ws_here, uds, bridge_uds, bridge_tcp, b] =
        s.map(|v| {
            if v.is_empty() {
                percentiles(vec![Duration::ZERO])
            } else {
                percentiles(v)
            }
        });
    McpLatencies {
        before: has_before.then_some(b),
        direct,
        stdio,
        socket,
        http,
        tcp,
        ws,
        here: (tcp_here, ws_here),
        uds,
        bridge: (bridge_uds, bridge_tcp),
    }
}

/// One MCP client of `/mcp` over one keep-alive connection, with a session.
pub(crate) struct McpHttp {
    pub(crate) sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    pub(crate) host: String,
    pub(crate) token: String,
    pub(crate) session: Option<String>,
}

impl McpHttp {
    pub(crate) async fn post(&mut self, msg: &Value) -> Option<Value> {
        let req = self.request(msg);
        let (_, answer) = self.send(req).await;
        answer
    }

    /// One call; the time from its request (already built) to its whole answer, which is
    /// decoded and checked after the clock stops.
    pub(crate) async fn call(&mut self, id: u64, name: &str) -> Duration {
        let req = self.request(&tools_call(id, name));
        let (took, v) = self.send(req).await;
        let v = v.expect("an answer");
        assert!(v["result"]["isError"] == false, "{v}");
        took
    }

    pub(crate) fn request(&self, msg: &Value) -> Request<Full<Bytes>> {
        let mut req = Request::post("/mcp")
            .header("host", &self.host)
            .header("authorization", format!("Bearer {}", self.token))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s);
        }
        req.body(Full::new(Bytes::from(msg.to_string()))).unwrap()
    }

    pub(crate) async fn send(&mut self, req: Request<Full<Bytes>>) -> (Duration, Option<Value>) {
        let t = Instant::now();
        self.sender.ready().await.unwrap();
        let resp = self.sender.send_request(req).await.unwrap();
        let status = resp.status();
        let session = resp.headers().get("mcp-session-id").cloned();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        let took = t.elapsed();
        assert!(status.is_success(), "/mcp: {status}");
        if let Some(s) = session {
            self.session = Some(s.to_str().unwrap().to_owned());
        }
        (took, Self::decode(&body))
    }

    pub(crate) fn decode(body: &[u8]) -> Option<Value> {
        let text = std::str::from_utf8(body).unwrap();
        // JSON, or an event stream whose `data:` lines carry the messages.
        if text.trim_start().starts_with('{') {
            return Some(serde_json::from_str(text).unwrap());
        }
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("id").is_some())
    }

    pub(crate) async fn start(d: &Daemon) -> (McpHttp, String) {
        let addr: std::net::SocketAddr = format!("127.0.0.1:{}", d.port).parse().unwrap();
        let mut c = McpHttp {
            sender: tcp_client(addr).await,
            host: addr.to_string(),
            token: d.token.clone(),
            session: None,
        };
        c.post(&initialize(1)).await.expect("initialize answered");
        c.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        // Unscoped, an agent works in its current tab: tab b1:1, selected as an agent would.
        let select = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "browserctl_select_tab", "arguments": {"tab": "b1:1"}}});
        c.post(&select).await.expect("select answered");
        let list = c
            .post(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}))
            .await
            .unwrap();
        let name = echo_name(&list);
        (c, name)
    }
}

// ---------------------------------------------------------------------------------------------
// Row 6: start-up to READY=1
