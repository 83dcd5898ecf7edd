//! The consent prompts that wait for the person (issue 60): what the extensions reported with
//! `consentRequested` and not yet ended with `consentAnswered`, so that the person may list
//! them (`browserctl consent list`) and answer one from a terminal (`browserctl consent
//! answer`), which goes to the browser that asked as `answerConsent`. Only the control socket
//! reaches this: the person's own uid, never an agent's MCP session or token. Below
//! `context.rs` (the Daemon holds the table): it imports none of its folder.

use crate::daemon::conn::{next_id, Command, ConnHandle, Request};
use crate::daemon::registry::Target;
use crate::error::{Error, ErrorCode};
use crate::protocol::consent::{self, PromptView};
use serde_json::json;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// At most this many prompts wait at once (a browser that reports more is misbehaving: the
/// oldest go), and this many ended ones are remembered to tell "answered" from "unknown".
const MAX_WAITING: usize = 256;
const MAX_ENDED: usize = 256;
/// A prompt whose browser never said it ended is dropped this long after its own deadline.
const AFTER_DEADLINE: Duration = Duration::from_secs(5);

#[derive(Debug)]
struct Waiting {
    target: Target,
    conn: ConnHandle,
    note: consent::Requested,
    /// The caller's call id, as the event names it.
    call_id: Option<String>,
    since: Instant,
}

impl Waiting {
    fn deadline(&self) -> Option<Instant> {
        self.note
            .timeout_ms
            .map(|t| self.since + Duration::from_millis(t))
    }

    /// Whether it can no longer be answered: its browser's connection is gone, or it is well
    /// past its deadline (its end was never reported).
    fn stale(&self, now: Instant) -> bool {
        self.conn.tx.is_closed() || self.deadline().is_some_and(|d| now > d + AFTER_DEADLINE)
    }
}

#[derive(Debug, Default)]
struct Table {
    waiting: HashMap<String, Waiting>,
    /// Prompt id → how it ended (`allowed`, `denied`, `unanswered`, `gone`), oldest first.
    ended: VecDeque<(String, String)>,
}

impl Table {
    fn end(&mut self, id: &str, outcome: &str) {
        self.waiting.remove(id);
        self.ended.retain(|(i, _)| i != id);
        if self.ended.len() == MAX_ENDED {
            self.ended.pop_front();
        }
        self.ended.push_back((id.to_owned(), outcome.to_owned()));
    }

    fn sweep(&mut self) {
        let now = Instant::now();
        let stale: Vec<(String, bool)> = self
            .waiting
            .iter()
            .filter(|(_, w)| w.stale(now))
            .map(|(id, w)| (id.clone(), w.conn.tx.is_closed()))
            .collect();
        for (id, gone) in stale {
            self.end(&id, if gone { "gone" } else { "unanswered" });
        }
    }
}

#[derive(Debug, Default)]
pub struct Prompts(Mutex<Table>);

impl Prompts {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A browser's `consentRequested`: the prompt waits (a call that joins one already on
    /// screen names the same prompt, which stays as it was).
    pub fn requested(
        &self,
        target: Target,
        conn: ConnHandle,
        note: consent::Requested,
        call_id: Option<String>,
    ) {
        let mut t = self.lock();
        t.sweep();
        if t.waiting.contains_key(&note.prompt_id) {
            return;
        }
        if t.waiting.len() >= MAX_WAITING {
            if let Some(oldest) = t
                .waiting
                .iter()
                .min_by_key(|(_, w)| w.since)
                .map(|(id, _)| id.clone())
            {
                t.end(&oldest, "gone");
            }
        }
        let id = note.prompt_id.clone();
        t.waiting.insert(
            id,
            Waiting {
                target,
                conn,
                note,
                call_id,
                since: Instant::now(),
            },
        );
    }

    /// A browser's `consentAnswered`: the prompt no longer waits. Only the browser that asked
    /// ends it.
    pub fn answered(&self, conn: u64, prompt: &str, outcome: &str) {
        let mut t = self.lock();
        match t.waiting.get(prompt) {
            Some(w) if w.conn.id != conn => {}
            _ => t.end(prompt, outcome),
        }
    }

    /// The prompts that wait now, oldest first.
    pub fn list(&self) -> Vec<PromptView> {
        let mut t = self.lock();
        t.sweep();
        let now = Instant::now();
        let mut all: Vec<&Waiting> = t.waiting.values().collect();
        all.sort_by_key(|w| w.since);
        all.into_iter()
            .map(|w| PromptView {
                id: w.note.prompt_id.clone(),
                tab: w.target.to_string(),
                agent: w.note.agent.clone(),
                site: w.note.site.clone(),
                tool: w.note.tool.clone(),
                args_summary: w.note.args_summary.clone(),
                age_ms: now.duration_since(w.since).as_millis() as u64,
                remaining_ms: w
                    .deadline()
                    .map(|d| d.saturating_duration_since(now).as_millis() as u64),
                choices: choices(&w.note),
                call_id: w.call_id.clone(),
            })
            .collect()
    }

    /// Sends the person's answer (`typed`: a name of [`consent::CHOICES`]) to the browser
    /// whose prompt `id` waits; the receiver has the browser's word on it.
    pub fn answer(
        &self,
        id: &str,
        typed: &str,
    ) -> Result<(Target, oneshot::Receiver<Result<String, Error>>), Error> {
        let Some(choice) = consent::wire_choice(typed) else {
            let names: Vec<&str> = consent::CHOICES.iter().map(|(t, _)| *t).collect();
            return Err(Error::new(
                ErrorCode::InvalidArguments,
                format!("`{typed}` is not an answer; one of: {}", names.join(", ")),
            ));
        };
        let mut t = self.lock();
        t.sweep();
        let Some(w) = t.waiting.get(id) else {
            return Err(match t.ended.iter().rev().find(|(i, _)| i == id) {
                Some((_, outcome)) => ended(id, outcome),
                None => not_found(id, "unknown"),
            });
        };
        let offered = choices(&w.note);
        if !offered.iter().any(|c| c == typed) {
            return Err(Error::new(
                ErrorCode::InvalidArguments,
                format!(
                    "prompt {id} does not offer `{typed}` (a call that acts takes no read-only \
                     answer, and one with no agent named no answer for its agent); it offers: {}",
                    offered.join(", ")
                ),
            ));
        }
        let (reply, rx) = oneshot::channel();
        let request = Request::AnswerConsent {
            id: next_id("consent"),
            prompt: id.to_owned(),
            choice,
            reply,
        };
        let target = w.target;
        w.conn
            .tx
            .try_send(Command::Request(request))
            .map_err(|_| not_found(id, "gone"))?;
        Ok((target, rx))
    }
}

/// The answers a prompt offers, as typed; all of them when its browser did not say.
fn choices(note: &consent::Requested) -> Vec<String> {
    match &note.choices {
        Some(wire) => wire
            .iter()
            .filter_map(|c| consent::typed_choice(c))
            .map(str::to_owned)
            .collect(),
        None => consent::CHOICES
            .iter()
            .map(|(t, _)| (*t).to_owned())
            .collect(),
    }
}

/// Prompt `id` ended with `outcome` before this answer.
pub fn ended(id: &str, outcome: &str) -> Error {
    match outcome {
        "allowed" | "denied" => Error::new(
            ErrorCode::ConsentAnswered,
            format!("prompt {id} was answered already ({outcome}); the first answer stands"),
        )
        .with_details(json!({"id": id, "outcome": outcome})),
        other => not_found(id, other),
    }
}

/// No prompt `id` waits: `state` is `unknown` (never asked here), `unanswered` (it lapsed) or
/// `gone` (its browser went away).
pub fn not_found(id: &str, state: &str) -> Error {
    let why = match state {
        "unanswered" => "it lapsed unanswered, and its call failed with USER_CONSENT_TIMEOUT",
        "gone" => "its browser went away",
        _ => "no browser asked one of that id; see `browserctl consent list`",
    };
    Error::new(
        ErrorCode::ConsentNotFound,
        format!("no consent prompt {id} waits: {why}"),
    )
    .with_details(json!({"id": id, "state": state}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::registry::BrowserKey;

    fn note(id: &str, choices: Option<&[&str]>) -> consent::Requested {
        consent::Requested {
            call_id: None,
            tab_id: 7,
            prompt_id: id.into(),
            agent: Some("claude-code".into()),
            site: "https://a.example".into(),
            tool: "browser_click".into(),
            args_summary: None,
            timeout_ms: Some(60_000),
            choices: choices.map(|c| c.iter().map(|s| (*s).to_owned()).collect()),
        }
    }

    #[test]
    fn a_prompt_waits_until_answered_and_then_says_so() {
        let p = Prompts::default();
        let (tx, mut rx) = tokio::sync::mpsc::channel(4);
        let conn = ConnHandle { id: 1, tx };
        let tab = Target::tab(BrowserKey(1), 7);
        let offered = ["once", "always", "agent", "deny"];
        p.requested(
            tab,
            conn.clone(),
            note("p1", Some(&offered)),
            Some("c1".into()),
        );
        let listed = p.list();
        assert_eq!(listed.len(), 1);
        assert_eq!(
            listed[0].choices,
            ["allow-once", "allow-site", "allow-agent", "deny"]
        );
        assert_eq!(
            (listed[0].tab.as_str(), listed[0].call_id.as_deref()),
            ("b1:7", Some("c1"))
        );
        let e = p.answer("p1", "allow-agent-read").unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArguments, "{e:?}");
        assert_eq!(
            p.answer("p1", "yes").unwrap_err().code,
            ErrorCode::InvalidArguments
        );
        assert_eq!(
            p.answer("p2", "deny").unwrap_err().code,
            ErrorCode::ConsentNotFound
        );
        let (target, _reply) = p.answer("p1", "allow-once").unwrap();
        assert_eq!(target, tab);
        match rx.try_recv() {
            Ok(Command::Request(Request::AnswerConsent { prompt, choice, .. })) => {
                assert_eq!((prompt.as_str(), choice), ("p1", "once"))
            }
            other => panic!("{other:?}"),
        }
        p.answered(2, "p1", "denied");
        assert_eq!(p.list().len(), 1, "another browser cannot end it");
        p.answered(1, "p1", "allowed");
        assert!(p.list().is_empty());
        let e = p.answer("p1", "deny").unwrap_err();
        assert_eq!(e.code, ErrorCode::ConsentAnswered);
        assert_eq!(e.details.unwrap()["outcome"], "allowed");
        p.requested(tab, conn.clone(), note("p3", None), None);
        p.answered(1, "p3", "unanswered");
        let e = p.answer("p3", "deny").unwrap_err();
        assert_eq!(
            (e.code, e.details.unwrap()["state"].clone()),
            (ErrorCode::ConsentNotFound, json!("unanswered"))
        );
    }

    #[test]
    fn a_prompt_of_a_closed_connection_is_gone() {
        let p = Prompts::default();
        let tab = Target::tab(BrowserKey(1), 7);
        p.requested(tab, ConnHandle::test(1), note("p1", None), None);
        assert!(p.list().is_empty());
        let e = p.answer("p1", "deny").unwrap_err();
        assert_eq!(e.details.unwrap()["state"], "gone");
    }
}
