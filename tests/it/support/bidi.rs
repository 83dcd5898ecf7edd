//! A small WebDriver BiDi client (https://w3c.github.io/webdriver-bidi/) over a WebSocket,
//! enough to drive Firefox from a test: a session, extensions, browsing contexts, and script
//! evaluation. Used synchronously (it owns a current-thread runtime); events are skipped.

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A BiDi session.
pub struct Bidi {
    rt: tokio::runtime::Runtime,
    ws: Ws,
    next_id: u64,
    timeout: Duration,
}

/// A browsing context (a tab), by its BiDi id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context(pub String);

impl Bidi {
    /// Connects to `ws://HOST:PORT` (what the browser printed) and starts a session; `timeout`
    /// bounds every command.
    pub fn connect(endpoint: &str, timeout: Duration) -> Result<Bidi, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let url = format!("{}/session", endpoint.trim_end_matches('/'));
        let (ws, _) = rt
            .block_on(tokio_tungstenite::connect_async(url.as_str()))
            .map_err(|e| format!("BiDi at {url}: {e}"))?;
        let mut b = Bidi {
            rt,
            ws,
            next_id: 0,
            timeout,
        };
        // Prompts are the page's and the extension's business: BiDi answers none of them (by
        // default it would dismiss alerts and accept "Leave page?" by itself).
        let capabilities =
            json!({"alwaysMatch": {"unhandledPromptBehavior": {"default": "ignore"}}});
        let session = b.command("session.new", json!({"capabilities": capabilities}))?;
        if session["capabilities"]["unhandledPromptBehavior"]["default"] != "ignore" {
            return Err(format!(
                "session.new did not take our prompt behaviour: {session}"
            ));
        }
        Ok(b)
    }

    /// One command and its result; `Err` carries the BiDi error and message.
    pub fn command(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({"id": id, "method": method, "params": params});
        let ws = &mut self.ws;
        let timeout = self.timeout;
        self.rt.block_on(async {
            ws.send(Message::text(msg.to_string()))
                .await
                .map_err(|e| format!("{method}: {e}"))?;
            let deadline = tokio::time::Instant::now() + timeout;
            loop {
                let frame = tokio::time::timeout_at(deadline, ws.next())
                    .await
                    .map_err(|_| format!("{method}: no answer within {timeout:?}"))?
                    .ok_or_else(|| format!("{method}: the browser closed BiDi"))?
                    .map_err(|e| format!("{method}: {e}"))?;
                let Message::Text(text) = frame else { continue };
                let v: Value = serde_json::from_str(text.as_str()).map_err(|e| e.to_string())?;
                if v["id"] != id {
                    continue; // an event, or another command's late answer
                }
                return match v["type"].as_str() {
                    Some("success") => Ok(v["result"].clone()),
                    _ => Err(format!("{method}: {} — {}", v["error"], v["message"])),
                };
            }
        })
    }

    /// Installs an unpacked extension (a temporary add-on in Firefox); returns its id.
    pub fn install_extension(&mut self, dir: &std::path::Path) -> Result<String, String> {
        let r = self.command(
            "webExtension.install",
            json!({"extensionData": {"type": "path", "path": dir}}),
        )?;
        r["extension"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("webExtension.install gave {r}"))
    }

    /// The top-level contexts (tabs), oldest first.
    pub fn tabs(&mut self) -> Result<Vec<Context>, String> {
        let r = self.command("browsingContext.getTree", json!({"maxDepth": 0}))?;
        Ok(r["contexts"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| c["context"].as_str())
                    .map(|c| Context(c.to_owned()))
                    .collect()
            })
            .unwrap_or_default())
    }

    pub fn new_tab(&mut self) -> Result<Context, String> {
        let r = self.command("browsingContext.create", json!({"type": "tab"}))?;
        r["context"]
            .as_str()
            .map(|c| Context(c.to_owned()))
            .ok_or_else(|| format!("browsingContext.create gave {r}"))
    }

    /// Navigates and waits until the document has loaded.
    pub fn navigate(&mut self, ctx: &Context, url: &str) -> Result<(), String> {
        self.command(
            "browsingContext.navigate",
            json!({"context": ctx.0, "url": url, "wait": "complete"}),
        )
        .map(|_| ())
    }

    pub fn close(&mut self, ctx: &Context) -> Result<(), String> {
        self.command("browsingContext.close", json!({"context": ctx.0}))
            .map(|_| ())
    }

    /// A trusted left click at viewport coordinates (`input.performActions`): what a person's
    /// click gives a page and synthetic events do not, such as user activation.
    pub fn click_at(&mut self, ctx: &Context, x: f64, y: f64) -> Result<(), String> {
        let actions = json!([{"type": "pointer", "id": "mouse", "actions": [
            {"type": "pointerMove", "x": x as i64, "y": y as i64},
            {"type": "pointerDown", "button": 0},
            {"type": "pointerUp", "button": 0}]}]);
        self.command(
            "input.performActions",
            json!({"context": ctx.0, "actions": actions}),
        )
        .map(|_| ())
    }

    /// Types `text` with the keyboard (`input.performActions`) into the focused element; "\n"
    /// presses Enter.
    pub fn type_text(&mut self, ctx: &Context, text: &str) -> Result<(), String> {
        let keys: Vec<Value> = text
            .chars()
            .map(|c| if c == '\n' { '\u{E007}' } else { c })
            .flat_map(|c| {
                let key = c.to_string();
                [
                    json!({"type": "keyDown", "value": key}),
                    json!({"type": "keyUp", "value": key}),
                ]
            })
            .collect();
        let actions = json!([{"type": "key", "id": "keyboard", "actions": keys}]);
        self.command(
            "input.performActions",
            json!({"context": ctx.0, "actions": actions}),
        )
        .map(|_| ())
    }

    /// Evaluates `expr` in the context's page (promises awaited) and returns its JSON value.
    /// (The value travels as a JSON string, so no BiDi remote-value decoding is needed.)
    pub fn eval(&mut self, ctx: &Context, expr: &str) -> Result<Value, String> {
        let wrapped = format!("(async () => JSON.stringify(await ({expr}) ?? null))()");
        let r = self.command(
            "script.evaluate",
            json!({"expression": wrapped, "target": {"context": ctx.0}, "awaitPromise": true}),
        )?;
        if r["type"] == "exception" {
            return Err(format!(
                "{expr}: {}",
                r["exceptionDetails"]["text"]
                    .as_str()
                    .unwrap_or("exception")
            ));
        }
        let text = r["result"]["value"].as_str().unwrap_or("null");
        serde_json::from_str(text).map_err(|e| format!("{expr}: {e}"))
    }
}
