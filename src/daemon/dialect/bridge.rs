//! The seed-001 dialect (primary): the daemon greets with `connect {sessionId}`, the extension
//! identifies itself with `connected {browser, tabs}` and then reports its tabs and tools; the
//! daemon sends `callTool`, `discoverTools`, `openTab`, `closeTab`.

use super::classify;
use super::driver::{Connection, Dialect, Flow, Link};
use crate::daemon::conn::{next_id, Request, Waiter};
use crate::daemon::context::Daemon;
use crate::daemon::registry::{BrowserKey, Initial, Target, Update};
use crate::error::{Error, ErrorCode};
use crate::protocol::bridge::{self, ExtensionMessage, ServerMessage, TabId};
use crate::protocol::consent;
use crate::protocol::control::event_kind;
use serde_json::value::RawValue;
use serde_json::Value;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

pub use crate::protocol::bridge::DIALECT;

/// Largest `data` of a page event (`tabEvent`); our extension sends well under 2 KiB.
const MAX_PAGE_EVENT_BYTES: usize = 8 * 1024;

struct Bridge {
    /// Ours until the extension names its own in `connected`.
    session: String,
    /// Whether `connected` came (the handshake of seed 001).
    attached: bool,
    /// Whether the extension takes `watch` (it said so in `connected`).
    watches: bool,
}

/// Serves a seed-001 connection. `first` is the peer's first message if it already sent one
/// (the listener reads it to tell the dialects of `GET /` apart).
pub async fn run<S>(
    ws: WebSocketStream<S>,
    d: Arc<Daemon>,
    origin: Option<String>,
    first: Option<String>,
    revoked: CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut conn = Connection::new(d).revoked_by(revoked);
    let session = format!("session_{}", conn.link.id());
    tracing::debug!(
        conn = conn.link.id(),
        origin = origin.as_deref().unwrap_or("-"),
        "extension connected"
    );
    conn.link.send(
        ServerMessage::Connect {
            session_id: &session,
        }
        .to_json(),
    );
    conn.run(
        ws,
        Bridge {
            session,
            attached: false,
            watches: false,
        },
        first,
    )
    .await;
}

impl Dialect for Bridge {
    const NAME: &'static str = DIALECT;
    const PINGS: bool = false;

    fn awaiting(&self) -> Option<&'static str> {
        (!self.attached).then_some("a `connected` message")
    }

    fn text(&mut self, link: &mut Link, text: &str) -> Flow {
        let decoded = match bridge::decode(text) {
            Ok(d) => d,
            Err(e) => {
                link.bad_message(format_args!("a bad message from an extension: {e}"));
                return Flow::Continue;
            }
        };
        if let (Some(theirs), Some(_)) = (&decoded.session_id, link.key) {
            if *theirs != self.session {
                tracing::debug!(conn = link.id(), theirs, ours = %self.session, "message names another session");
            }
        }
        let message = decoded.message;
        if let ExtensionMessage::Connected {
            browser,
            tabs,
            features,
        } = message
        {
            self.watches = features.iter().any(|f| f == bridge::WATCH);
            self.connected(link, decoded.session_id, browser, tabs);
            return Flow::Continue;
        }
        let Some(key) = link.key else {
            match message {
                ExtensionMessage::Ping => link.send(ServerMessage::Pong.to_json()),
                other => {
                    tracing::warn!(conn = link.id(), message = ?std::mem::discriminant(&other), "message before `connected`; ignored");
                }
            }
            return Flow::Continue;
        };
        self.message(link, key, message)
    }

    fn request(&mut self, link: &mut Link, req: Request) {
        let session = &self.session;
        match req {
            Request::Call {
                tab: None, reply, ..
            } => {
                let _ = reply.send(Err(Error::new(
                    ErrorCode::TabNotFound,
                    "bridge browsers expose tools per tab; name a tab",
                )));
            }
            Request::Call {
                id,
                tab: Some(tab_id),
                tool,
                args,
                agent,
                reply,
            } => {
                let frame = ServerMessage::CallTool {
                    session_id: session,
                    call_id: &id,
                    tab_id,
                    tool_name: &tool,
                    args: &args,
                    agent: agent.as_deref(),
                }
                .to_json();
                link.ask(id, Waiter::Call(reply), frame);
            }
            Request::Discover { id, tab, reply } => {
                let frame = ServerMessage::DiscoverTools {
                    session_id: session,
                    call_id: &id,
                    tab_id: tab,
                }
                .to_json();
                link.ask(id, Waiter::Discover(reply), frame);
            }
            Request::OpenTab {
                id,
                url,
                focus,
                group,
                reply,
            } => {
                let frame = ServerMessage::OpenTab {
                    session_id: session,
                    url: &url,
                    focus,
                    request_id: &id,
                    group: group.as_ref(),
                }
                .to_json();
                link.ask(id, Waiter::Open(reply), frame);
            }
            // Answered by the tabClosed that follows, whoever asked for it.
            Request::CloseTab { tab, reply } => {
                let id = next_id("close");
                let frame = ServerMessage::CloseTab {
                    session_id: session,
                    tab_id: tab,
                    request_id: &id,
                }
                .to_json();
                link.pending.insert_close(tab, id, reply);
                link.send(frame);
            }
            Request::Watch { reply, .. } if !self.watches => {
                let _ = reply.send(Ok(()));
            }
            Request::Watch { id, on, reply } => {
                let frame = watch_frame(session, &id, on);
                link.ask(id, Waiter::Watch(reply), frame);
            }
            Request::EndHandoff { tab, answer } => link.send(
                ServerMessage::EndHandoff {
                    session_id: session,
                    tab_id: tab,
                    answer,
                }
                .to_json(),
            ),
            Request::AnswerConsent {
                id,
                prompt,
                choice,
                reply,
            } => {
                let frame = ServerMessage::AnswerConsent {
                    session_id: session,
                    request_id: &id,
                    prompt_id: &prompt,
                    choice,
                    by: "terminal",
                }
                .to_json();
                link.ask(id, Waiter::Answer(reply), frame);
            }
            Request::GroupTabs { tabs, group, reply } => {
                link.send(
                    ServerMessage::GroupTabs {
                        session_id: session,
                        tab_ids: &tabs,
                        group: &group,
                    }
                    .to_json(),
                );
                let _ = reply.send(Ok(()));
            }
        }
    }
}

impl Bridge {
    /// A message after `connected`. Refusals by a limit are logged and counted by the link;
    /// the extension is not told (seed 001 has no message for it).
    fn message(&mut self, link: &mut Link, key: BrowserKey, message: ExtensionMessage) -> Flow {
        match message {
            ExtensionMessage::Connected { .. } => unreachable!("handled by the caller"),
            ExtensionMessage::Disconnected => {
                tracing::info!(browser = %key, "extension says it is disconnecting");
                return Flow::Stop;
            }
            ExtensionMessage::TabCreated { tab, request_id } => {
                let info = tab.clone();
                let _ = link.update(Update::Tab {
                    info: tab,
                    request_id: request_id.clone(),
                });
                match link.pending.take(request_id.as_deref()) {
                    Ok(Waiter::Open(reply)) => {
                        let _ = reply.send(Ok(info));
                    }
                    Ok(other) => mismatch(other, "tabCreated"),
                    Err(_) => {}
                }
            }
            ExtensionMessage::TabUpdated { tab } => {
                let _ = link.update(Update::Tab {
                    info: tab,
                    request_id: None,
                });
            }
            ExtensionMessage::TabClosed { tab_id } => {
                let _ = link.update(Update::TabClosed(tab_id));
                link.pending.tab_closed(tab_id);
                if let Some(b) = link.d.managed.bidi(&self.session, key) {
                    b.forget(tab_id);
                }
            }
            ExtensionMessage::TabFocused {
                tab_id,
                tools,
                hidden,
            } => {
                let _ = link.update(Update::TabFocused {
                    tab: tab_id,
                    tools,
                    hidden,
                });
            }
            ExtensionMessage::ToolsChanged {
                tab_id,
                tools,
                hidden,
            } => {
                let _ = link.update(Update::Tools {
                    tab: tab_id,
                    tools,
                    hidden,
                });
            }
            ExtensionMessage::ToolsDiscovered {
                call_id,
                tab_id,
                tools,
                hidden,
                error,
            } => match (link.pending.take(Some(&call_id)), error) {
                (Ok(w), Some(failure)) => w.fail(classify::tool_failure(failure)),
                (Ok(Waiter::Discover(reply)), None) => {
                    if let Some(tab) = tab_id {
                        let tools = tools.clone();
                        let _ = link.update(Update::Tools { tab, tools, hidden });
                    }
                    let _ = reply.send(Ok(tools));
                }
                (Ok(other), None) => mismatch(other, "toolsDiscovered"),
                (Err(m), _) => link.stray(m, "toolsDiscovered", Some(&call_id)),
            },
            ExtensionMessage::ToolResult { call_id, outcome } => {
                match link.pending.take(call_id.as_deref()) {
                    Ok(Waiter::Call(reply)) => {
                        let _ = reply.send(outcome.map_err(classify::tool_failure));
                    }
                    Ok(other) => mismatch(other, "toolResult"),
                    Err(m) => link.stray(m, "toolResult", call_id.as_deref()),
                }
            }
            ExtensionMessage::Error {
                request_id,
                failure,
            } => match link.pending.take(request_id.as_deref()) {
                Ok(w) => w.fail(classify::tool_failure(failure)),
                Err(m) => {
                    let e = classify::tool_failure(failure);
                    let id = request_id.as_deref();
                    if !id.is_some_and(|id| link.pending.fail_close(id, e)) {
                        link.stray(m, "error", id);
                    }
                }
            },
            ExtensionMessage::TabEvent {
                tab_id,
                event,
                data,
            } => page_event(link, key, tab_id, &event, &data),
            ExtensionMessage::Consent(consent::Note::Taken(t)) => {
                match link.pending.take(t.request_id.as_deref()) {
                    Ok(Waiter::Answer(reply)) => {
                        let _ = reply.send(Ok(t.choice));
                    }
                    Ok(other) => mismatch(other, "answeredConsent"),
                    Err(m) => link.stray(m, "answeredConsent", t.request_id.as_deref()),
                }
            }
            ExtensionMessage::Consent(note) => consent_event(link, key, note),
            ExtensionMessage::Watching { request_id } => {
                match link.pending.take(request_id.as_deref()) {
                    Ok(Waiter::Watch(reply)) => {
                        let _ = reply.send(Ok(()));
                    }
                    Ok(other) => mismatch(other, "watching"),
                    // The answer to the `watch` a new connection is sent unasked (below).
                    Err(_) => {}
                }
            }
            ExtensionMessage::Input(req) => {
                let (d, session) = (link.d.clone(), self.session.clone());
                link.later(async move {
                    Some(crate::daemon::managed::input(&d, &session, key, req).await)
                });
            }
            ExtensionMessage::Ping => link.send(ServerMessage::Pong.to_json()),
            ExtensionMessage::Pong => {}
            ExtensionMessage::Unknown { kind } => {
                tracing::info!(browser = %key, kind, "ignored a message of unknown type");
            }
        }
        Flow::Continue
    }

    /// `connected`: the browser joins the registry with its tabs, or (on a live connection)
    /// resyncs them.
    fn connected(
        &mut self,
        link: &mut Link,
        session: Option<String>,
        browser: bridge::BrowserInfo,
        tabs: Vec<bridge::TabInfo>,
    ) {
        if link.key.is_some() {
            let _ = link.update(Update::Resync {
                info: browser,
                tabs,
            });
            return;
        }
        if let Some(s) = session.filter(|s| !s.is_empty()) {
            self.session = s;
        }
        let name = format!("{} {}", browser.name, browser.version);
        let key = link.attach(DIALECT, &self.session, browser, Initial::Tabs(tabs));
        self.attached = true;
        // A browser that joins while an agent is at work is told at once; nobody waits for
        // its answer (its page tools follow as `toolsChanged`).
        if self.watches && link.d.presence.watching() {
            link.send(watch_frame(&self.session, &next_id("watch"), true));
        }
        tracing::info!(browser = %key, session = %self.session, name = name.trim(), "browser connected");
    }
}

fn watch_frame(session: &str, id: &str, on: bool) -> String {
    ServerMessage::Watch {
        session_id: session,
        request_id: id,
        watching: on,
    }
    .to_json()
}

/// A page event becomes a registry event. The extension keeps its data small; bigger data,
/// data that is not an object, or an event name we do not know is dropped with a warning.
fn page_event(link: &mut Link, key: BrowserKey, tab: TabId, event: &str, data: &RawValue) {
    let Some(kind) = event_kind::page(event) else {
        tracing::info!(browser = %key, event, "ignored a page event of unknown type");
        return;
    };
    let data = match serde_json::from_str::<Value>(data.get()) {
        Ok(v @ Value::Object(_)) if data.get().len() <= MAX_PAGE_EVENT_BYTES => v,
        _ => {
            let bytes = data.get().len();
            return link.bad_message(format_args!(
                "a page event `{event}` whose data is not an object of at most \
                 {MAX_PAGE_EVENT_BYTES} bytes ({bytes} bytes)"
            ));
        }
    };
    let _ = link.update(Update::PageEvent { tab, kind, data });
}

/// A consent prompt the extension reports, published as an event (issue 59) that names the
/// caller's call (its `callId`, when it named one) rather than our message to the browser.
/// What the extension wrote is cut to sizes a person reads.
/// The daemon's table of waiting prompts follows them, for `browserctl consent`.
fn consent_event(link: &mut Link, key: BrowserKey, note: consent::Note) {
    let cut = |s: &str, max: usize| -> String {
        match s.char_indices().nth(max) {
            Some((i, _)) => format!("{}…", &s[..i]),
            None => s.to_owned(),
        }
    };
    let caller = |call: &Option<String>| call.as_deref().and_then(|c| link.d.cancels.caller_of(c));
    let (tab, kind, data) = match note {
        consent::Note::Requested(mut r) => {
            let call_id = caller(&r.call_id);
            r.prompt_id = cut(&r.prompt_id, 200);
            r.agent = r.agent.as_deref().map(|a| cut(a, 100));
            r.site = cut(&r.site, 2048);
            r.tool = cut(&r.tool, 200);
            r.args_summary = r.args_summary.as_deref().map(|a| cut(a, 200));
            if let Some(c) = &mut r.choices {
                c.truncate(consent::CHOICES.len());
            }
            let data = serde_json::json!({
                "id": r.prompt_id,
                "agent": r.agent,
                "site": r.site,
                "tool": r.tool,
                "argsSummary": r.args_summary,
                "timeoutMs": r.timeout_ms,
                "callId": call_id,
            });
            let tab = r.tab_id;
            let target = Target::tab(key, tab);
            link.d
                .prompts
                .requested(target, link.handle.clone(), r, call_id);
            (tab, event_kind::CONSENT_REQUESTED, data)
        }
        consent::Note::Answered(a) => {
            let id = cut(&a.prompt_id, 200);
            let outcome = cut(&a.outcome, 40);
            link.d.prompts.answered(link.id(), &id, &outcome);
            let mut data = serde_json::json!({
                "id": id,
                "outcome": outcome,
                "callId": caller(&a.call_id),
            });
            if let Some(by) = &a.by {
                data["by"] = cut(by, 40).into();
            }
            (a.tab_id, event_kind::CONSENT_ANSWERED, data)
        }
        consent::Note::Taken(_) => return,
    };
    let _ = link.update(Update::PageEvent { tab, kind, data });
}

fn mismatch(w: Waiter, kind: &str) {
    w.fail(Error::internal(format!(
        "the browser answered with an unexpected {kind}"
    )));
}
