//! Scripted peers for the register dialect (seed 002) and the JSON-RPC dialect (seed 003),
//! written from the seeds: real WebSocket clients and raw HTTP.
#![allow(dead_code)]

use crate::support::common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::{self, Message};

/// One HTTP/1.1 request on a fresh connection: (status, body as JSON or Null).
pub async fn http(
    d: &TestDaemon,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, Value) {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", d.port))
        .await
        .unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost:{}\r\nConnection: close\r\n",
        d.port
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(body.unwrap_or(""));
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .expect("an HTTP answer")
        .unwrap();
    crate::support::harness::parse_response(&String::from_utf8_lossy(&out))
}

/// `POST /register` as a seed-002 extension does; returns the answer (asserting 200).
pub async fn register(d: &TestDaemon) -> Value {
    let body = json!({"userAgent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
        "windowId": 123});
    let (status, v) = http(d, "POST", "/register", &[], Some(&body.to_string())).await;
    assert_eq!(status, 200, "{v}");
    v
}

/// An upgrade the daemon refused: its HTTP status and JSON body.
pub async fn refused(url: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    match FakeExtension::raw(url, headers).await {
        Err(tungstenite::Error::Http(resp)) => {
            let body = resp
                .body()
                .as_ref()
                .and_then(|b| serde_json::from_slice(b).ok())
                .unwrap_or(Value::Null);
            (resp.status().as_u16(), body)
        }
        Err(e) => panic!("expected an HTTP refusal, got {e}"),
        Ok(_) => panic!("expected an HTTP refusal, the upgrade succeeded"),
    }
}

/// Reads until a message arrives; control frames are skipped (and pings answered by the
/// library as we read). `None` when the socket closes or nothing comes in time.
async fn next_json(ws: &mut Ws, limit: Duration) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let msg = tokio::time::timeout_at(deadline, ws.next()).await.ok()??;
        match msg.ok()? {
            Message::Text(t) => return Some(serde_json::from_str(t.as_str()).expect("JSON")),
            Message::Close(_) => return None,
            _ => continue,
        }
    }
}

/// Reads until the close frame and returns its code.
pub async fn close_code(ws: &mut Ws) -> Option<u16> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(deadline, ws.next()).await.ok()?? {
            Ok(Message::Close(frame)) => return frame.map(|f| u16::from(f.code)),
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
}

// ---- seed 002 -------------------------------------------------------------------------------

/// A register-dialect extension: registered over HTTP, connected with `hello`.
pub struct RegisterPeer {
    pub ws: Ws,
    pub instance_id: String,
}

impl RegisterPeer {
    /// Opens `ws://localhost:{port}` (seed 002's URL) and sends `hello {instanceId}`.
    pub async fn hello(d: &TestDaemon, instance_id: &str) -> Ws {
        let mut ws = FakeExtension::raw(&format!("ws://localhost:{}", d.port), &[])
            .await
            .expect("WebSocket connect");
        ws.send(Message::text(
            json!({"type": "hello", "instanceId": instance_id}).to_string(),
        ))
        .await
        .unwrap();
        ws
    }

    /// Registers, connects, and checks the `welcome`.
    pub async fn connect(d: &TestDaemon) -> RegisterPeer {
        let reg = register(d).await;
        let instance_id = reg["instanceId"].as_str().unwrap().to_owned();
        let mut ws = RegisterPeer::hello(d, &instance_id).await;
        let welcome = next_json(&mut ws, Duration::from_secs(10))
            .await
            .expect("welcome");
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        assert_eq!(welcome["instanceId"], instance_id.as_str());
        RegisterPeer { ws, instance_id }
    }

    pub async fn send(&mut self, v: Value) {
        self.ws.send(Message::text(v.to_string())).await.unwrap();
    }

    pub async fn recv(&mut self) -> Value {
        next_json(&mut self.ws, Duration::from_secs(10))
            .await
            .expect("a message from the daemon")
    }

    /// The next `tool_call`.
    pub async fn expect_call(&mut self) -> Value {
        loop {
            let m = self.recv().await;
            if m["type"] == "tool_call" {
                return m;
            }
        }
    }

    /// Answers the next `tool_call` with `tool_result`.
    pub async fn answer(&mut self, result: Value) -> Value {
        let call = self.expect_call().await;
        self.send(json!({"type": "tool_result", "id": call["id"], "result": result}))
            .await;
        call
    }
}

// ---- seed 003 -------------------------------------------------------------------------------

/// A JSON-RPC client of either kind. Messages that arrive while waiting for something else are
/// kept for later.
pub struct RpcPeer {
    pub ws: Ws,
    pub session: String,
    held: VecDeque<Value>,
    next_id: u64,
}

pub fn ws_url(d: &TestDaemon, session: &str, client_type: &str, token: Option<&str>) -> String {
    let mut url = format!(
        "ws://127.0.0.1:{}/ws?sessionId={session}&clientType={client_type}&version=1.0.0",
        d.port
    );
    if let Some(t) = token {
        url.push_str(&format!("&token={t}"));
    }
    url
}

impl RpcPeer {
    /// Connects (agents with the daemon's token) and checks the `welcome` notification.
    pub async fn connect(d: &TestDaemon, session: &str, client_type: &str) -> RpcPeer {
        let token = (client_type == "agent").then_some(d.token.as_str());
        let ws = FakeExtension::raw(&ws_url(d, session, client_type, token), &[])
            .await
            .expect("WebSocket connect");
        let mut p = RpcPeer {
            ws,
            session: session.to_owned(),
            held: VecDeque::new(),
            next_id: 1,
        };
        let welcome = p.recv().await;
        assert_eq!(welcome["method"], "welcome", "{welcome}");
        assert_eq!(welcome["params"]["sessionId"], session);
        assert!(welcome.get("id").is_none(), "welcome is a notification");
        p
    }

    /// A browser that said hello and registered these tools.
    pub async fn browser(d: &TestDaemon, session: &str, tools: Vec<Value>) -> RpcPeer {
        let mut p = RpcPeer::connect(d, session, "browser").await;
        let hello = p
            .request(
                "hello",
                json!({"clientType": "browser", "version": "1.0.0", "capabilities": ["dom:read"]}),
            )
            .await;
        assert_eq!(hello["result"]["clientType"], "browser", "{hello}");
        let r = p.request("tools/register", json!({"tools": tools})).await;
        assert!(r.get("result").is_some(), "{r}");
        p
    }

    /// An agent that said hello.
    pub async fn agent(d: &TestDaemon, session: &str) -> RpcPeer {
        let mut p = RpcPeer::connect(d, session, "agent").await;
        let hello = p
            .request("hello", json!({"clientType": "agent", "version": "1.0.0"}))
            .await;
        assert_eq!(hello["result"]["sessionId"], session, "{hello}");
        p
    }

    pub async fn send(&mut self, v: Value) {
        self.ws.send(Message::text(v.to_string())).await.unwrap();
    }

    pub async fn send_text(&mut self, t: &str) {
        self.ws.send(Message::text(t.to_owned())).await.unwrap();
    }

    async fn read(&mut self, limit: Duration) -> Option<Value> {
        if let Some(v) = self.held.pop_front() {
            return Some(v);
        }
        next_json(&mut self.ws, limit).await
    }

    pub async fn recv(&mut self) -> Value {
        self.read(Duration::from_secs(10))
            .await
            .expect("a message from the daemon")
    }

    pub async fn try_recv(&mut self, limit: Duration) -> Option<Value> {
        self.read(limit).await
    }

    /// The next message matching `pred`; others are kept.
    pub async fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let mut skipped = Vec::new();
        let found = loop {
            let m = match self.held.pop_front() {
                Some(m) => m,
                None => next_json(&mut self.ws, Duration::from_secs(10))
                    .await
                    .unwrap_or_else(|| panic!("no {what} from the daemon")),
            };
            if pred(&m) {
                break m;
            }
            skipped.push(m);
        };
        for m in skipped.into_iter().rev() {
            self.held.push_front(m);
        }
        found
    }

    pub fn id(&mut self) -> String {
        self.next_id += 1;
        format!("{}", self.next_id)
    }

    /// Sends a request with a fresh id and waits for its response.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.id();
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.response(&json!(id)).await
    }

    pub async fn response(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.wait_for("response", move |m| {
            m.get("id") == Some(&id) && m.get("method").is_none()
        })
        .await
    }

    /// The next request the daemon sends with this method (a browser's forwarded calls).
    pub async fn expect_request(&mut self, method: &str) -> Value {
        let m = method.to_owned();
        self.wait_for(method, move |v| {
            v["method"] == m.as_str() && v.get("id").is_some()
        })
        .await
    }

    /// Answers the next forwarded `tools/call` with this result.
    pub async fn answer_call(&mut self, result: Value) -> Value {
        let call = self.expect_request("tools/call").await;
        self.send(json!({"jsonrpc": "2.0", "id": call["id"], "result": result}))
            .await;
        call
    }
}

pub fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

pub fn greet_tool() -> Value {
    json!({"name": "greet", "description": "Greet a person by name",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}})
}
