//! What the rest of the daemon knows of a browser connection: a handle to send it commands
//! ([`ConnHandle`], [`Command`]), and the connection's table of calls waiting for an answer
//! ([`Pending`]). The connection's task itself is the driver in [`crate::daemon::dialect`].
//! Near the bottom of `daemon/mod.rs`'s order: it imports nothing else of the daemon.

mod pending;

pub use pending::{Match, Pending, Reply, Waiter};

use crate::error::{Error, ErrorCode};
use crate::protocol::bridge::{TabGroup, TabId, TabInfo};
use crate::protocol::Tool;
use serde_json::value::RawValue;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::mpsc;

/// Ids are unique within the process (seed 000), whichever connection a message goes to.
pub fn next_id(prefix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{prefix}_{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

pub fn next_conn_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A command for one browser connection.
#[derive(Debug)]
pub enum Command {
    /// Something for the browser to do; the dialect turns it into its wire message.
    Request(Request),
    /// The caller stopped waiting (timeout or cancel): drop the waiter; a later answer is late.
    Forget { id: String },
    /// Close the connection with this WebSocket close code.
    Close { code: u16, reason: String },
}

/// What a caller may ask of a browser, with where the answer goes.
#[derive(Debug)]
pub enum Request {
    Call {
        id: String,
        tab: Option<TabId>,
        tool: String,
        args: Box<RawValue>,
        /// Who asks (`CallRequest::agent`), for the browser's consent prompt.
        agent: Option<String>,
        reply: Reply<Box<RawValue>>,
    },
    Discover {
        id: String,
        tab: TabId,
        reply: Reply<Vec<Tool>>,
    },
    OpenTab {
        id: String,
        url: String,
        focus: bool,
        group: Option<TabGroup>,
        reply: Reply<TabInfo>,
    },
    CloseTab {
        tab: TabId,
        reply: Reply<()>,
    },
    /// Whether an agent is at work (issue 30, `daemon::registry::presence`). Answered when the
    /// browser says it is done (`watching`), or at once by a browser that does not take it.
    Watch {
        id: String,
        on: bool,
        reply: Reply<()>,
    },
    /// A hand-off whose call ended before the person answered (its caller went away), or that
    /// the person answered in the agent's client (`answer`: `done`, `cant`): the browser takes
    /// it off the person's screen. Sent, never answered.
    EndHandoff {
        tab: TabId,
        answer: Option<&'static str>,
    },
    /// The person's answer to consent prompt `prompt`, given at a terminal (issue 60):
    /// `choice` in the extension's words. Answered with the choice the browser took.
    AnswerConsent {
        id: String,
        prompt: String,
        choice: &'static str,
        reply: Reply<String>,
    },
    /// Answered once sent: the browser says nothing back.
    GroupTabs {
        tabs: Vec<TabId>,
        group: TabGroup,
        reply: Reply<()>,
    },
}

impl Request {
    /// Answers the request with an error instead of sending it (a waiter that already gave up
    /// is fine to ignore).
    pub fn refuse(self, e: Error) {
        match self {
            Request::Call { reply, .. } => drop(reply.send(Err(e))),
            Request::Discover { reply, .. } => drop(reply.send(Err(e))),
            Request::OpenTab { reply, .. } => drop(reply.send(Err(e))),
            Request::CloseTab { reply, .. } => drop(reply.send(Err(e))),
            Request::GroupTabs { reply, .. } => drop(reply.send(Err(e))),
            Request::Watch { reply, .. } => drop(reply.send(Err(e))),
            Request::AnswerConsent { reply, .. } => drop(reply.send(Err(e))),
            Request::EndHandoff { .. } => {}
        }
    }

    /// For dialects whose browsers have no tabs (seeds 002 and 003): the request when it is
    /// a call without a tab; anything else is refused with an error that says why, naming
    /// the `browser`, its `dialect` and what to use `instead` of tab commands.
    pub fn tabless(self, browser: &str, dialect: &str, instead: &str) -> Option<TablessCall> {
        match self {
            Request::Call {
                id,
                tab: None,
                tool,
                args,
                reply,
                ..
            } => Some(TablessCall {
                id,
                tool,
                args,
                reply,
            }),
            // Nothing of theirs to watch: their tools are all the browser's own.
            Request::Watch { reply, .. } => {
                let _ = reply.send(Ok(()));
                None
            }
            Request::Call {
                tab: Some(tab),
                reply,
                ..
            } => {
                let _ = reply.send(Err(Error::new(
                    ErrorCode::TabNotFound,
                    format!("browser {browser} has no tabs ({dialect}); there is no tab {tab}"),
                )));
                None
            }
            other => {
                let what = other.name();
                other.refuse(Error::bad_request(format!(
                    "{what}: browser {browser} speaks {dialect}, which has no tab commands{instead}"
                )));
                None
            }
        }
    }

    /// The name of the request in the seeds' vocabulary (for messages).
    pub fn name(&self) -> &'static str {
        match self {
            Request::Call { .. } => "callTool",
            Request::Discover { .. } => "discoverTools",
            Request::OpenTab { .. } => "openTab",
            Request::CloseTab { .. } => "closeTab",
            Request::GroupTabs { .. } => "groupTabs",
            Request::Watch { .. } => "watch",
            Request::EndHandoff { .. } => "endHandoff",
            Request::AnswerConsent { .. } => "answerConsent",
        }
    }
}

/// A tool call to a browser without tabs (see [`Request::tabless`]).
#[derive(Debug)]
pub struct TablessCall {
    pub id: String,
    pub tool: String,
    pub args: Box<RawValue>,
    pub reply: Reply<Box<RawValue>>,
}

#[derive(Debug, Clone)]
pub struct ConnHandle {
    pub id: u64,
    pub tx: mpsc::Sender<Command>,
}

impl ConnHandle {
    #[cfg(test)]
    pub fn test(id: u64) -> ConnHandle {
        let (tx, _rx) = mpsc::channel(1);
        ConnHandle { id, tx }
    }
}
