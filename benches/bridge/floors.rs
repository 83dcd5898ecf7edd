//! The floors every daemon figure is read against, measured in the same run: raw hyper and
//! tokio-tungstenite echoes, a minimal bridge, and the echo process that serves them from a
//! process of its own (as the daemon is one).

use crate::prelude::*;

/// A minimal hyper HTTP/1.1 server on a Unix socket that answers every request with its body.
pub(crate) fn spawn_uds_echo(dir: &Path) -> PathBuf {
    let path = dir.join("echo.sock");
    let listener = UnixListener::bind(&path).unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            tokio::spawn(http_echo(s));
        }
    });
    path
}

/// Serves one connection with a minimal hyper HTTP/1.1 echo: each answer is its request's body.
pub(crate) async fn http_echo<I>(io: I)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(|req: Request<Incoming>| async move {
        let body = req.into_body().collect().await?.to_bytes();
        Ok::<_, hyper::Error>(Response::new(Full::new(body)))
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(io), svc)
        .await;
}

/// Sequential round trips of `body` to `route` on a Unix-socket HTTP server.
pub(crate) async fn uds_latency(path: &Path, route: &str, body: Bytes, n: usize) -> Lat {
    let mut sender = http1_client(path).await;
    let mut samples = Vec::with_capacity(n);
    for i in 0..n + n / 10 {
        let req = Request::post(route)
            .header("host", "d")
            .body(Full::new(body.clone()))
            .unwrap();
        let t = Instant::now();
        let resp = {
            sender.ready().await.unwrap();
            sender.send_request(req).await.unwrap()
        };
        assert!(resp.status().is_success(), "{route}: {}", resp.status());
        let _ = resp.into_body().collect().await.unwrap();
        if i >= n / 10 {
            samples.push(t.elapsed());
        }
    }
    percentiles(samples)
}

pub(crate) async fn raw_ws_echo(n: usize) -> Lat {
    let mut ws = WsEcho::connect(spawn_ws_echo().await).await.0;
    let msg = r#"{"type":"callTool","callId":"call_1","tabId":1,"toolName":"echo","args":{"x":1}}"#;
    let mut samples = Vec::with_capacity(n);
    for i in 0..n + n / 10 {
        let t = Instant::now();
        ws.send(Message::text(msg)).await.unwrap();
        let _ = ws.next().await.unwrap().unwrap();
        if i >= n / 10 {
            samples.push(t.elapsed());
        }
    }
    percentiles(samples)
}

pub(crate) async fn http1_client(
    path: &Path,
) -> hyper::client::conn::http1::SendRequest<Full<Bytes>> {
    let stream = UnixStream::connect(path).await.unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

// ---------------------------------------------------------------------------------------------
// The daemon under test and a fast scripted extension

/// Serves loopback TCP on a port of its own: each connection (with Nagle off) goes to `serve`.
pub(crate) async fn spawn_tcp<F, Fut>(serve: F) -> std::net::SocketAddr
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            let _ = s.set_nodelay(true);
            tokio::spawn(serve(s));
        }
    });
    addr
}

/// A minimal hyper HTTP/1.1 echo on loopback TCP: the floor of any HTTP front.
pub(crate) async fn spawn_tcp_echo() -> std::net::SocketAddr {
    spawn_tcp(http_echo).await
}

pub(crate) async fn tcp_client(
    addr: std::net::SocketAddr,
) -> hyper::client::conn::http1::SendRequest<Full<Bytes>> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

/// A minimal tokio-tungstenite echo on loopback TCP: the floor of the hop to an extension.
pub(crate) async fn spawn_ws_echo() -> std::net::SocketAddr {
    spawn_tcp(|s| async move {
        let mut ws = tokio_tungstenite::accept_async(s).await.unwrap();
        while let Some(Ok(m)) = ws.next().await {
            if m.is_text() && ws.send(m).await.is_err() {
                break;
            }
        }
    })
    .await
}

/// Echoes of row 9's floor served by a process of their own: the bench run again with
/// [`ECHO_CHILD`] set, on one thread, as the daemon serves its ports. A round trip to it
/// wakes another process, as every hop through the daemon does; an echo on the client's own
/// thread answers without one.
pub(crate) struct EchoProcess {
    pub(crate) child: Child,
    pub(crate) http: std::net::SocketAddr,
    pub(crate) ws: std::net::SocketAddr,
    /// Its HTTP echo on a Unix socket (the floor of the control socket's hop).
    pub(crate) uds: PathBuf,
    /// Its minimal bridge ([`spawn_bridge`]) on loopback TCP and on a Unix socket.
    pub(crate) bridge: std::net::SocketAddr,
    pub(crate) bridge_uds: PathBuf,
}

pub(crate) const ECHO_CHILD: &str = "BENCH_ECHO_CHILD";
/// The WebSocket echo on the browsers' thread that the echo process's bridge forwards to.
pub(crate) const ECHO_EXT: &str = "BENCH_ECHO_EXT";

pub(crate) type ExtWs =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A minimal bridge, the floor of anything in the daemon's place: each HTTP request's body goes
/// to the browser's side as one WebSocket message, and the answer is the response — one
/// process between the client and the browser, as the daemon is, with no routing, JSON or
/// state. Serves loopback TCP and `bridge.sock` in `dir`.
pub(crate) async fn spawn_bridge(ext: std::net::SocketAddr, dir: &Path) -> std::net::SocketAddr {
    let ws = Arc::new(tokio::sync::Mutex::new(WsEcho::connect(ext).await.0));
    let uds = UnixListener::bind(dir.join("bridge.sock")).unwrap();
    let ws2 = ws.clone();
    let addr = spawn_tcp(move |s| bridged(s, ws2.clone())).await;
    tokio::spawn(async move {
        while let Ok((s, _)) = uds.accept().await {
            tokio::spawn(bridged(s, ws.clone()));
        }
    });
    addr
}

pub(crate) async fn bridged<I>(io: I, ws: Arc<tokio::sync::Mutex<ExtWs>>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
        let ws = ws.clone();
        async move {
            let body = req.into_body().collect().await?.to_bytes();
            let mut ws = ws.lock().await;
            let text = String::from_utf8(body.to_vec()).unwrap();
            ws.send(Message::text(text)).await.unwrap();
            let answer = ws.next().await.unwrap().unwrap().into_data();
            Ok::<_, hyper::Error>(Response::new(Full::new(answer)))
        }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(io), svc)
        .await;
}

impl EchoProcess {
    pub(crate) fn start(dir: &Path, ext: std::net::SocketAddr) -> EchoProcess {
        use std::io::BufRead;
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(ECHO_CHILD, dir)
            .env(ECHO_EXT, ext.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let mut addrs = line.split_whitespace().map(|a| a.parse().unwrap());
        let (http, ws) = (addrs.next().unwrap(), addrs.next().unwrap());
        EchoProcess {
            child,
            http,
            ws,
            uds: dir.join("echo.sock"),
            bridge: addrs.next().unwrap(),
            bridge_uds: dir.join("bridge.sock"),
        }
    }

    /// The child's side: prints `<http addr> <ws addr> <bridge addr>` (its Unix sockets are
    /// `echo.sock` and `bridge.sock` in the directory it was given), serves until its stdin
    /// closes.
    pub(crate) fn serve(dir: &Path) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            use tokio::io::AsyncReadExt;
            let (http, ws) = (spawn_tcp_echo().await, spawn_ws_echo().await);
            spawn_uds_echo(dir);
            let ext = std::env::var(ECHO_EXT).unwrap().parse().unwrap();
            let bridge = spawn_bridge(ext, dir).await;
            println!("{http} {ws} {bridge}");
            let mut stdin = tokio::io::stdin();
            let mut buf = [0; 64];
            while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
        });
    }
}

impl Drop for EchoProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw WebSocket echo's client on loopback: one message out and back.
pub(crate) struct WsEcho(
    pub(crate)  tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
);

impl WsEcho {
    pub(crate) async fn connect(addr: std::net::SocketAddr) -> WsEcho {
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/"))
            .await
            .unwrap();
        WsEcho(ws)
    }

    pub(crate) async fn once(&mut self) {
        let msg =
            r#"{"type":"callTool","callId":"call_1","tabId":1,"toolName":"echo","args":{"x":1}}"#;
        self.0.send(Message::text(msg)).await.unwrap();
        let _ = self.0.next().await.unwrap().unwrap();
    }
}

/// One POST to a raw loopback HTTP echo.
pub(crate) async fn tcp_echo_once(
    sender: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    host: &str,
    body: &Bytes,
) {
    let req = Request::post("/mcp")
        .header("host", host)
        .body(Full::new(body.clone()))
        .unwrap();
    sender.ready().await.unwrap();
    let resp = sender.send_request(req).await.unwrap();
    let _ = resp.into_body().collect().await.unwrap();
}
