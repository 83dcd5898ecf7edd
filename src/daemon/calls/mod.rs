//! The call path (seed 000): target choice, argument validation, a timeout per attempt, and
//! retries with exponential backoff where repeating the call cannot do harm, all within the
//! caller's time budget (`timeoutMs`) when it gives one: an attempt never outlives the
//! budget, and a retry whose backoff would not leave room for it is not tried.
//!
//! When is a retry safe? A message that provably never reached the browser (SEND_ERROR) can
//! always be sent again. After a timeout or a connection that broke mid-call the tool may have
//! run, so those are retried only for tools annotated read-only or idempotent, or when the
//! caller asks for it. A tool's own failure is retried only when it reads as transient.
//! Retries go to the same browser and tab; when the browser reconnects (same session) within
//! `--reconnect-grace`, the retry uses the new connection, else the call fails with NO_BROWSER
//! (see [`reconnect`]).
//!
//! An agent's call (issue 60) may act only in its own tab or nobody's ([`lanes`]), and every
//! call waits for its tab's turn ([`queues`]): one tab's calls in order, different tabs' at
//! once.
//!
//! A hand-off to the person ([`handoffs`]) waits for them, not for the browser: one attempt,
//! never repeated, as long as the person may take; while it waits, the tab refuses other calls.
//!
//! Beside the path: [`args`] (a call's arguments, typed and validated), [`upload`] (the files
//! a call names, read and sent inline; [`beneath`] opens them), [`cancels`] (calls a caller may cancel by its id).
//! A new step of a call's way to its tab goes here. May import `context.rs` and what is below
//! it in `daemon/mod.rs`'s order; `args.rs`, `cancels.rs`, `handoffs.rs`, `prompts.rs` and `queues.rs` sit below
//! `context.rs` (the Daemon holds their state), so they import none of the folder.

pub(crate) mod args;
mod beneath;
pub(crate) mod cancels;
mod exchange;
pub(crate) mod handoffs;
mod lanes;
mod policy;
pub(crate) mod prompts;
pub(crate) mod queues;
mod reconnect;
mod tabs;
mod upload;

pub use policy::MAX_TIMEOUT_MS;
pub use tabs::{close_tab, close_tab_as, discover, group_tabs, open_tab, open_tab_as};

use crate::daemon::conn::{next_id, Request};
use crate::daemon::context::Daemon;
use crate::daemon::limits;
use crate::daemon::registry::{Focus, LaneId, Resolved, Target};
use crate::daemon::stats::Stats;
use crate::daemon::trust::via::Via;
use crate::error::{Error, ErrorCode};
use crate::protocol::control::{CallRequest, CallResponse};
use exchange::{exchange, shutting_down, Scope};
use policy::{should_retry, Policy};
use reconnect::{connection_lost, departed, wait_for_route};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// A call for as long as it lives: counted in flight, and when it ends, failed or not. A call
/// dropped before it ended (its caller went away: a closed connection, Ctrl-C on
/// browserctl) counts as cancelled; only a drop guard sees a future dropped mid-way.
struct InFlight<'a> {
    stats: &'a Stats,
    ended: bool,
}

impl<'a> InFlight<'a> {
    fn new(stats: &'a Stats) -> InFlight<'a> {
        stats.calls_in_flight.fetch_add(1, Ordering::Relaxed);
        Stats::bump(&stats.calls_total);
        InFlight {
            stats,
            ended: false,
        }
    }

    fn end(mut self, failed: bool) {
        self.ended = true;
        if failed {
            Stats::bump(&self.stats.calls_failed);
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.ended {
            Stats::bump(&self.stats.calls_cancelled);
            Stats::bump(&self.stats.calls_failed);
            tracing::info!("a caller went away before its call ended; cancelled");
        }
        if self.stats.calls_in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.stats.idle.notify_waiters();
        }
    }
}

/// The person's call (browserctl, the control API): see [`call_as`].
pub async fn call(d: &Daemon, req: CallRequest, via: Via) -> Result<CallResponse, Error> {
    call_as(d, req, None, via).await
}

/// A call through the daemon's call path, for an agent's lane (an MCP session, a JSON-RPC
/// agent) or, `None`, the person; `via` says whose machine its paths name (only this one's
/// are read, see [`upload`]).
pub async fn call_as(
    d: &Daemon,
    req: CallRequest,
    lane: Option<LaneId>,
    via: Via,
) -> Result<CallResponse, Error> {
    let in_flight = InFlight::new(&d.stats);
    let max = d.config().max_calls_in_flight;
    if d.stats.calls_in_flight.load(Ordering::Relaxed) > max as u64 {
        in_flight.end(true);
        let e = limits::exceeded(
            "max-calls-in-flight",
            max,
            format!("{max} calls are in flight, the most allowed (--max-calls-in-flight); try again shortly"),
        );
        limits::refused(&d.stats, 0, &e);
        return Err(e);
    }
    let result = match req.call_id.clone() {
        None => call_inner(d, req, lane, via).await,
        Some(id) => {
            let entry = d.cancels.register(&id)?;
            tokio::select! {
                r = call_inner(d, req, lane, via) => r,
                // Dropping call_inner drops the attempt in flight, whose guard tells the
                // connection to forget the pending entry (a later answer counts as late).
                _ = entry.token.cancelled() => {
                    Stats::bump(&d.stats.calls_cancelled);
                    Err(Error::new(ErrorCode::Cancelled, format!("call `{id}` was cancelled by its caller")))
                }
            }
        }
    };
    in_flight.end(result.is_err());
    result
}

async fn call_inner(
    d: &Daemon,
    mut req: CallRequest,
    lane: Option<LaneId>,
    via: Via,
) -> Result<CallResponse, Error> {
    if d.draining.is_cancelled() {
        return Err(shutting_down());
    }
    let started = Instant::now();
    let policy = Policy::for_request(d, &req)?;
    // An agent follows the person's focus, which another agent's action does not move.
    let focus = if lane.is_some() {
        Focus::Person
    } else {
        Focus::Browser
    };
    let first = d.registry.resolve_call(&req, focus)?;
    let tool = first.tool.clone();
    let args = args::prepare(req.args.take(), &req.flags, Some(&tool), &d.validators)?;
    let reach = lanes::reach(&req.tool, &tool, &args);
    let target = first.target;
    lanes::may(d, target, reach, lane)?;
    d.handoffs.refuse(target)?;
    let handoff = req.tool == handoffs::HANDOFF;
    let mut handed = match handoff {
        true => Some(Handing {
            held: hand_off(d, target, req.call_id.clone(), first.conn.clone())?,
            conn: first.conn.clone(),
            answered: false,
        }),
        false => None,
    };
    let args = match via {
        Via::Local => {
            let roots: Vec<std::path::PathBuf> = (d.config().upload_roots.iter().cloned())
                .chain(req.upload_roots.iter().map(std::path::PathBuf::from))
                .collect();
            upload::inline_paths(&req.tool, args, &roots).await?
        }
        Via::Relay => upload::from_afar(&req.tool, args)?,
    };
    // A tab's calls take turns; a browser-level target (a tab-less dialect's peer, a program
    // that orders its own work) is no tab.
    let mut place = match target.tab {
        Some(_) => Some(d.queues.enter(target, d.config().tab_queue)?),
        None => None,
    };
    let _turn = match &mut place {
        None => None,
        Some(place) => {
            // Waiting counts against the call's budget, else its attempt's timeout.
            let patience =
                (policy.budget).map_or(policy.timeout, |b| b.saturating_sub(started.elapsed()));
            let turn = tokio::time::timeout(patience, place.turn(reach.reads())).await;
            Some(turn.map_err(|_| no_turn(target, patience))?)
        }
    };
    let turn_started = Instant::now();
    let _moving = lanes::focus_guard(d, &req.tool, target, reach, lane);
    let policy = match handoff {
        true => policy.handoff(),
        false => policy,
    };
    let result = attempts(d, &req, &policy, first, &args, started).await;
    if let Some(h) = &mut handed {
        // The browser ended it (the person answered, or its time ran out); anything else
        // (a lost connection, the ceiling) leaves it on the person's screen.
        h.answered = match &result {
            Ok(_) => true,
            Err(e) => matches!(
                e.code,
                ErrorCode::HandoffDeclined | ErrorCode::HandoffTimeout
            ),
        };
    }
    if let Some(place) = &place {
        place.took(turn_started);
    }
    if let Ok(r) = &result {
        lanes::opened(d, target, reach, lane, &r.result).await;
    }
    result
}

/// A hand-off's call while it lasts. One that ends before the browser ended it (its caller
/// went away: Ctrl-C, a closed MCP session, a cancel) tells the browser, which takes it off
/// the person's screen rather than let them answer nobody.
struct Handing<'a> {
    held: handoffs::Held<'a>,
    conn: crate::daemon::conn::ConnHandle,
    answered: bool,
}

impl Drop for Handing<'_> {
    fn drop(&mut self) {
        let Some(tab) = self.held.target().tab else {
            return;
        };
        if !self.answered {
            let end = Request::EndHandoff { tab, answer: None };
            let _ = self
                .conn
                .tx
                .try_send(crate::daemon::conn::Command::Request(end));
        }
    }
}

/// Marks a tab as handed to the person, where there is one: a browser the daemon launched
/// headless shows nobody anything (NO_PERSON).
fn hand_off(
    d: &Daemon,
    target: Target,
    call_id: Option<String>,
    conn: crate::daemon::conn::ConnHandle,
) -> Result<handoffs::Held<'_>, Error> {
    if target.tab.is_none() {
        return Err(Error::new(
            ErrorCode::InvalidArguments,
            format!(
                "`{}` hands a tab to the person; {target} is a browser",
                handoffs::HANDOFF
            ),
        ));
    }
    if d.managed.headless(target.browser) == Some(true) {
        return Err(Error::new(
            ErrorCode::NoPerson,
            format!("{} was launched headless by browser-mcpd: nobody sees it to take over; launch it with --headed on a display", target.browser),
        )
        .with_details(json!({"tab": target.to_string()})));
    }
    d.handoffs.hold(target, call_id, conn)
}

/// A call that waited its whole patience for its tab's turn: it never ran, and may be tried
/// again (BUSY).
fn no_turn(target: Target, waited: Duration) -> Error {
    let ms = waited.as_millis() as u64;
    Error::new(
        ErrorCode::Busy,
        format!(
            "waited {ms} ms for a turn on tab {target} behind other calls there; it did not run"
        ),
    )
    .with_details(json!({"tab": target.to_string(), "retryAfterMs": 1000, "waitedMs": ms}))
}

/// The attempts of a call on its target (the first on `first`'s route), with retries.
async fn attempts(
    d: &Daemon,
    req: &CallRequest,
    policy: &Policy,
    first: Resolved,
    args: &RawValue,
    started: Instant,
) -> Result<CallResponse, Error> {
    let tool = first.tool.clone();
    let target = first.target;
    let mut route = Some(first);
    let mut history: Vec<Value> = Vec::new();
    let mut last: Option<Error> = None;
    let deadline = policy.budget.map(|b| started + b);
    let left = || deadline.map(|d| d.saturating_duration_since(Instant::now()));

    for attempt in 0..=policy.retries {
        // Each attempt gets its own timeout, cut to what is left of the budget.
        let (timeout, cut) = match left() {
            Some(rest) if rest < policy.timeout => (rest.max(Duration::from_millis(1)), true),
            _ => (policy.timeout, false),
        };
        let outcome = match (route.take(), &last) {
            (Some(r), _) => Ok(r),
            (None, last) => {
                let after = last.as_ref().map_or(ErrorCode::Internal, |e| e.code);
                let limits = (timeout, policy.grace);
                wait_for_route(d, target, &req.tool, after, limits).await
            }
        };
        let outcome = match outcome {
            Ok(r) => {
                let caller = (req.agent.as_deref(), req.call_id.as_deref());
                attempt_once(d, &r, &req.tool, args, caller, timeout).await
            }
            Err(e) => Err(e),
        };
        let outcome = match (outcome, policy.budget) {
            (Err(e), Some(budget)) if cut && e.code == ErrorCode::MessageTimeout => {
                Err(out_of_budget(&req.tool, target, budget, attempt + 1))
            }
            (outcome, _) => outcome,
        };
        let mut e = match outcome {
            Ok(result) => {
                return Ok(CallResponse {
                    tab: target.to_string(),
                    tool: req.tool.clone(),
                    attempts: attempt + 1,
                    elapsed_ms: started.elapsed().as_millis() as u64,
                    result,
                })
            }
            Err(e) => e,
        };
        if e.code == ErrorCode::PageNavigated {
            // Running it again on the new page is safe only for a tool that changes nothing.
            e.retryable = tool.safe_to_repeat();
        }
        let repeatable = should_retry(&e, &tool, policy.retry_on_timeout) && !is_out_of_budget(&e);
        // A lost connection is retried as soon as the browser is back: its new connection
        // owes nothing to the old one's trouble.
        let delay = match connection_lost(&e) {
            true => Duration::ZERO,
            false => policy.delay(attempt),
        };
        // A retry must have room for its backoff and then some time to run.
        let fits = left().is_none_or(|rest| rest > delay);
        let retry = attempt < policy.retries && repeatable && fits;
        let delay = if retry { delay } else { Duration::ZERO };
        tracing::warn!(
            message_type = "callTool",
            tab = %target,
            tool = %req.tool,
            attempt = attempt + 1,
            code = %e.code,
            retry,
            delay_ms = delay.as_millis() as u64,
            "call failed: {}", e.message
        );
        history.push(json!({
            "attempt": attempt + 1,
            "code": e.code,
            "message": e.message,
            "delayMs": delay.as_millis() as u64,
        }));
        if !retry {
            if repeatable && !fits {
                // The budget, not the retry count, ends the call: say so with the last error.
                let budget = policy.budget.unwrap_or_default().as_millis();
                let mut e = e;
                e.message = format!(
                    "{} (no time left in the call's {budget} ms budget for another attempt)",
                    e.message
                );
                return Err(with_history(e, history, target));
            }
            if repeatable && attempt > 0 {
                // Every attempt failed in a way that was worth repeating: out of retries.
                last = Some(e);
                break;
            }
            return Err(with_history(e, history, target));
        }
        last = Some(e);
        // A browser that leaves meanwhile ends the backoff: the retry then waits for it only
        // as long as `--reconnect-grace`.
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = departed(d, target.browser) => {}
            _ = d.shutdown.cancelled() => return Err(with_history(shutting_down(), history, target)),
        }
    }
    let last = last.expect("the loop ran at least once");
    let attempts = history.len();
    Err(Error::new(
        ErrorCode::MaxRetriesExceeded,
        format!(
            "`{}` on {target} failed after {attempts} attempts; last error {}: {}",
            req.tool, last.code, last.message
        ),
    )
    .retryable(false)
    .with_details(json!({
        "attempts": attempts,
        "tab": target.to_string(),
        "lastError": {"code": last.code, "message": last.message},
        "history": history,
    })))
}

/// The call's budget ran out during an attempt: MESSAGE_TIMEOUT in the caller's terms.
fn out_of_budget(tool: &str, target: Target, budget: Duration, attempts: u32) -> Error {
    Error::new(
        ErrorCode::MessageTimeout,
        format!(
            "`{tool}` on {target} did not answer within the call's time budget of {} ms ({attempts} attempt{})",
            budget.as_millis(),
            if attempts == 1 { "" } else { "s" }
        ),
    )
    .with_details(json!({"budgetMs": budget.as_millis() as u64}))
}

fn is_out_of_budget(e: &Error) -> bool {
    e.details
        .as_ref()
        .is_some_and(|d| d.get("budgetMs").is_some())
}

/// Adds the attempt history to a final error, keeping any details it already had.
fn with_history(mut e: Error, history: Vec<Value>, target: Target) -> Error {
    if history.len() <= 1 && e.details.is_some() {
        return e;
    }
    let mut details = match e.details.take() {
        Some(Value::Object(map)) => map,
        Some(other) => {
            let mut m = serde_json::Map::new();
            m.insert("detail".into(), other);
            m
        }
        None => serde_json::Map::new(),
    };
    details.insert("attempts".into(), json!(history.len()));
    details.insert("tab".into(), json!(target.to_string()));
    details.insert("history".into(), Value::Array(history));
    e.details = Some(Value::Object(details));
    e
}

async fn attempt_once(
    d: &Daemon,
    route: &Resolved,
    tool: &str,
    args: &RawValue,
    (agent, call_id): (Option<&str>, Option<&str>),
    timeout: Duration,
) -> Result<Box<RawValue>, Error> {
    let id = next_id("call");
    let _carried = call_id.map(|c| d.cancels.carried(&id, c));
    let (reply, rx) = oneshot::channel();
    let request = Request::Call {
        id: id.clone(),
        tab: route.target.tab,
        tool: tool.to_owned(),
        args: args.to_owned(),
        agent: agent.map(str::to_owned),
        reply,
    };
    let what = format!("callTool `{tool}` on {}", route.target);
    let scope = Scope {
        stop: &d.shutdown,
        tasks: &d.tasks,
    };
    exchange(scope, &route.conn, Some(id), request, rx, timeout, &what).await
}
