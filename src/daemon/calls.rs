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
//! the attempt's timeout, the retry uses the new connection.

use super::conn::{next_id, Command, ConnHandle};
use super::registry::{Resolved, Target};
use super::{Daemon, Stats};
use crate::error::{Error, ErrorCode};
use crate::protocol::bridge::TabInfo;
use crate::protocol::control::{CallRequest, CallResponse, OpenTabRequest, TabView};
use crate::protocol::Tool;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Retry and timeout settings of one call: the daemon's defaults, overridden per call.
#[derive(Debug, Clone)]
pub struct Policy {
    /// One attempt's timeout (`attemptTimeoutMs`, else `--call-timeout`).
    pub timeout: Duration,
    /// The whole call's budget (`timeoutMs`), retries and backoff included.
    pub budget: Option<Duration>,
    pub retries: u32,
    pub base: Duration,
    pub multiplier: f64,
    pub max_delay: Duration,
    pub retry_on_timeout: bool,
}

/// The most retries one call may ask for: each costs an attempt's timeout plus a backoff, and
/// a call that repeats for days is a mistake.
pub const MAX_RETRIES: u32 = 100;

/// A caller's `timeoutMs`, checked: between 1 ms and a day (deadlines further out would
/// overflow the clock arithmetic).
fn checked_timeout(ms: Option<u64>, default: Duration) -> Result<Duration, Error> {
    checked_ms("timeoutMs", ms).map(|t| t.unwrap_or(default))
}

/// A duration field of a request, checked as [`checked_timeout`] does.
fn checked_ms(field: &str, ms: Option<u64>) -> Result<Option<Duration>, Error> {
    const MAX: u64 = super::control::MAX_TIMEOUT_MS;
    match ms {
        None => Ok(None),
        Some(ms) if (1..=MAX).contains(&ms) => Ok(Some(Duration::from_millis(ms))),
        Some(ms) => Err(Error::bad_request(format!(
            "`{field}` must be between 1 and {MAX}, not {ms}"
        ))),
    }
}

impl Policy {
    pub fn for_request(d: &Daemon, req: &CallRequest) -> Result<Policy, Error> {
        let c = d.config();
        let retries = req.retries.unwrap_or(c.retries);
        if retries > MAX_RETRIES {
            return Err(Error::bad_request(format!(
                "`retries` must be at most {MAX_RETRIES}, not {retries}"
            )));
        }
        Ok(Policy {
            timeout: checked_ms("attemptTimeoutMs", req.attempt_timeout_ms)?
                .unwrap_or(c.call_timeout),
            budget: checked_ms("timeoutMs", req.timeout_ms)?,
            retries,
            base: c.backoff_base,
            multiplier: c.backoff_multiplier,
            max_delay: c.backoff_max,
            retry_on_timeout: req.retry_on_timeout,
        })
    }

    /// `base × multiplier^attempt`, clamped to the maximum (attempt counts from 0).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = self.multiplier.max(1.0).powi(attempt.min(64) as i32);
        let ms = (self.base.as_millis() as f64 * factor).min(self.max_delay.as_millis() as f64);
        Duration::from_millis(ms as u64)
    }
}

/// Whether a failed attempt may be repeated for this tool.
pub fn should_retry(e: &Error, tool: Option<&Tool>, retry_on_timeout: bool) -> bool {
    match e.code {
        ErrorCode::SendError => true,
        ErrorCode::MessageTimeout | ErrorCode::WebsocketError => {
            retry_on_timeout || tool.is_some_and(Tool::safe_to_repeat)
        }
        ErrorCode::ToolError => e.retryable,
        _ => false,
    }
}

/// Counts a call in flight for as long as it lives.
struct InFlight<'a>(&'a Stats);

impl<'a> InFlight<'a> {
    fn new(stats: &'a Stats) -> InFlight<'a> {
        stats.calls_in_flight.fetch_add(1, Ordering::Relaxed);
        Stats::bump(&stats.calls_total);
        InFlight(stats)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.0.calls_in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

fn shutting_down() -> Error {
    Error::new(ErrorCode::ShuttingDown, "browser-mcpd is shutting down")
}

/// The calls in flight that carry a caller-chosen `callId`, so that `DELETE /v1/calls/{id}`
/// can end them. Calls without an id never touch it, which keeps the common path free of an
/// extra lock.
#[derive(Debug, Default)]
pub struct Cancels(Mutex<HashMap<String, (u64, CancellationToken)>>);

impl Cancels {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, CancellationToken)>> {
        // Each critical section is one map operation: a poisoned map is still consistent.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn register(&self, id: &str) -> Result<Registered<'_>, Error> {
        static GENERATION: AtomicU64 = AtomicU64::new(1);
        let generation = GENERATION.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        match self.lock().entry(id.to_owned()) {
            Entry::Occupied(_) => {
                return Err(Error::bad_request(format!(
                    "callId `{id}` is already in flight; choose a unique one"
                )))
            }
            Entry::Vacant(slot) => {
                slot.insert((generation, token.clone()));
            }
        }
        Ok(Registered {
            cancels: self,
            id: id.to_owned(),
            generation,
            token,
        })
    }

    /// Cancels the call with this id; false when no such call is in flight.
    pub fn cancel(&self, id: &str) -> bool {
        match self.lock().remove(id) {
            Some((_, token)) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A call's entry in [`Cancels`], removed when the call ends however it ends.
struct Registered<'a> {
    cancels: &'a Cancels,
    id: String,
    generation: u64,
    token: CancellationToken,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut map = self.cancels.lock();
        // Only our own entry: after a cancel the id may already be reused by a new call.
        if map
            .get(&self.id)
            .is_some_and(|(g, _)| *g == self.generation)
        {
            map.remove(&self.id);
        }
    }
}

/// Counts a call whose caller went away before it ended (a closed connection, Ctrl-C on
/// browserctl) as cancelled: its future is dropped mid-way, and only a drop guard sees that.
struct Abandoned<'a> {
    stats: &'a Stats,
    ended: bool,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if !self.ended {
            Stats::bump(&self.stats.calls_cancelled);
            Stats::bump(&self.stats.calls_failed);
            tracing::info!("a caller went away before its call ended; cancelled");
        }
    }
}

pub async fn call(d: &Daemon, req: CallRequest) -> Result<CallResponse, Error> {
    let mut abandoned = Abandoned {
        stats: &d.stats,
        ended: false,
    };
    let result = call_counted(d, req).await;
    abandoned.ended = true;
    result
}

async fn call_counted(d: &Daemon, req: CallRequest) -> Result<CallResponse, Error> {
    let in_flight = InFlight::new(&d.stats);
    let max = d.config().max_calls_in_flight;
    if d.stats.calls_in_flight.load(Ordering::Relaxed) > max as u64 {
        drop(in_flight);
        Stats::bump(&d.stats.calls_failed);
        let e = Error::new(
            ErrorCode::LimitExceeded,
            format!("{max} calls are in flight, the most allowed (--max-calls-in-flight); try again shortly"),
        )
        .with_details(json!({"limit": "maxCallsInFlight", "max": max}));
        super::limits::refused(&d.stats, 0, &e);
        return Err(e);
    }
    let result = match req.call_id.clone() {
        None => call_inner(d, req).await,
        Some(id) => {
            let entry = d.cancels.register(&id)?;
            tokio::select! {
                r = call_inner(d, req) => r,
                // Dropping call_inner drops the attempt in flight, whose guard tells the
                // connection to forget the pending entry (a later answer counts as late).
                _ = entry.token.cancelled() => {
                    Stats::bump(&d.stats.calls_cancelled);
                    Err(Error::new(ErrorCode::Cancelled, format!("call `{id}` was cancelled by its caller")))
                }
            }
        }
    };
    if result.is_err() {
        Stats::bump(&d.stats.calls_failed);
    }
    drop(in_flight);
    result
}

async fn call_inner(d: &Daemon, req: CallRequest) -> Result<CallResponse, Error> {
    if d.draining.is_cancelled() {
        return Err(shutting_down());
    }
    let started = Instant::now();
    let policy = Policy::for_request(d, &req)?;
    let first = d
        .registry()
        .resolve_call(&req.tool, req.tab.as_deref(), req.browser.as_deref())?;
    let tool = first.tool.clone();
    let args = super::args::prepare(req.args, &req.flags, tool.as_deref(), &d.validators)?;
    let args = super::upload::inline_paths(&req.tool, args).await?;
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
        let outcome = match route.take() {
            Some(r) => Ok(r),
            None => wait_for_route(d, target, &req.tool, timeout).await,
        };
        let outcome = match outcome {
            Ok(r) => attempt_once(d, &r, &req.tool, &args, timeout).await,
            Err(e) => Err(e),
        };
        let outcome = match (outcome, policy.budget) {
            (Err(e), Some(budget)) if cut && e.code == ErrorCode::MessageTimeout => {
                Err(out_of_budget(&req.tool, target, budget, attempt + 1))
            }
            (outcome, _) => outcome,
        };
        let e = match outcome {
            Ok(result) => {
                return Ok(CallResponse {
                    tab: target.display(),
                    tool: req.tool,
                    attempts: attempt + 1,
                    elapsed_ms: started.elapsed().as_millis() as u64,
                    result,
                })
            }
            Err(e) => e,
        };
        let repeatable =
            should_retry(&e, tool.as_deref(), policy.retry_on_timeout) && !is_out_of_budget(&e);
        let delay = policy.delay(attempt);
        // A retry must have room for its backoff and then some time to run.
        let fits = left().is_none_or(|rest| rest > delay);
        let retry = attempt < policy.retries && repeatable && fits;
        let delay = if retry { delay } else { Duration::ZERO };
        tracing::warn!(
            message_type = "callTool",
            tab = %target.display(),
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
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = d.shutdown.cancelled() => return Err(with_history(shutting_down(), history, target)),
        }
    }
    let last = last.expect("the loop ran at least once");
    let attempts = history.len();
    Err(Error::new(
        ErrorCode::MaxRetriesExceeded,
        format!(
            "`{}` on {} failed after {attempts} attempts; last error {}: {}",
            req.tool,
            target.display(),
            last.code,
            last.message
        ),
    )
    .retryable(false)
    .with_details(json!({
        "attempts": attempts,
        "tab": target.display(),
        "lastError": {"code": last.code, "message": last.message},
        "history": history,
    })))
}

/// The call's budget ran out during an attempt: MESSAGE_TIMEOUT in the caller's terms.
fn out_of_budget(tool: &str, target: Target, budget: Duration, attempts: u32) -> Error {
    Error::new(
        ErrorCode::MessageTimeout,
        format!(
            "`{tool}` on {} did not answer within the call's time budget of {} ms ({attempts} attempt{})",
            target.display(),
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
    details.insert("tab".into(), json!(target.display()));
    details.insert("history".into(), Value::Array(history));
    e.details = Some(Value::Object(details));
    e
}

/// Before a retry: the target again, waiting (up to `timeout`) for its browser to come back
/// if the connection is gone.
async fn wait_for_route(
    d: &Daemon,
    target: Target,
    tool: &str,
    timeout: Duration,
) -> Result<Resolved, Error> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let (mut events, _, _) = {
            let reg = d.registry();
            match reg.resolve_target(target, tool) {
                Ok(r) => return Ok(r),
                Err(e) if e.code != ErrorCode::NoBrowser => return Err(e),
                Err(_) => {}
            }
            reg.subscribe(None)
        };
        tokio::select! {
            _ = events.recv() => {}
            _ = tokio::time::sleep_until(deadline) => {
                return Err(Error::new(ErrorCode::NoBrowser, format!(
                    "browser {} did not come back within {} ms", super::registry::browser_ref(target.browser), timeout.as_millis())));
            }
            _ = d.shutdown.cancelled() => return Err(shutting_down()),
        }
    }
}

/// Hands a command to a connection and waits for its answer under a timeout. `id` is the
/// command's correlation id, forgotten by the connection when we stop waiting.
async fn exchange<T>(
    stop: &CancellationToken,
    conn: &ConnHandle,
    id: Option<String>,
    command: Command,
    rx: oneshot::Receiver<Result<T, Error>>,
    timeout: Duration,
    what: &str,
) -> Result<T, Error> {
    // The connection's queue is bounded: when a browser stops reading, the wait for room
    // counts against the call's timeout like the wait for the answer.
    let started = tokio::time::Instant::now();
    let full = timeout;
    let queued = tokio::select! {
        biased;
        _ = stop.cancelled() => return Err(shutting_down()),
        queued = tokio::time::timeout(timeout, conn.tx.send(command)) => queued,
    };
    match queued {
        Ok(Ok(())) => {}
        Ok(Err(_)) => {
            return Err(Error::new(
                ErrorCode::SendError,
                format!("{what}: the browser connection closed before the message was sent"),
            ))
        }
        Err(_) => {
            return Err(Error::new(
                ErrorCode::SendError,
                format!(
                    "{what}: the browser connection accepted nothing for {} ms (it is not reading); not sent",
                    timeout.as_millis()
                ),
            ))
        }
    }
    let timeout = timeout.saturating_sub(started.elapsed());
    // From here on, if we stop waiting for any reason (timeout, cancel, a caller that went
    // away), the connection must forget the pending entry.
    let mut forget = ForgetOnDrop { conn, id };
    // At the last stage of shutdown a call still waiting fails as SHUTTING_DOWN, whatever the
    // connection does meanwhile.
    let outcome = tokio::select! {
        biased;
        _ = stop.cancelled() => return Err(shutting_down()),
        outcome = tokio::time::timeout(timeout, rx) => outcome,
    };
    if outcome.is_ok() {
        forget.id = None;
    }
    drop(forget);
    match outcome {
        Ok(Ok(answer)) => answer,
        // The connection dropped the command before writing it: it never reached the browser.
        Ok(Err(_)) => Err(Error::new(
            ErrorCode::SendError,
            format!("{what}: the browser connection closed before the message was sent"),
        )),
        Err(_) => Err(Error::new(
            ErrorCode::MessageTimeout,
            format!(
                "{what}: no answer from the browser within {} ms",
                full.as_millis()
            ),
        )),
    }
}

/// Tells a connection to forget a pending command unless disarmed (`id = None`).
struct ForgetOnDrop<'a> {
    conn: &'a ConnHandle,
    id: Option<String>,
}

impl Drop for ForgetOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            // The connection must drop its waiter or the table grows without bound; when
            // its queue is full, hand the notice to a task rather than delay our caller.
            if let Err(mpsc::error::TrySendError::Full(forget)) =
                self.conn.tx.try_send(Command::Forget { id })
            {
                let tx = self.conn.tx.clone();
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    rt.spawn(async move {
                        let _ = tx.send(forget).await;
                    });
                }
            }
        }
    }
}

async fn attempt_once(
    d: &Daemon,
    route: &Resolved,
    tool: &str,
    args: &RawValue,
    timeout: Duration,
) -> Result<Box<RawValue>, Error> {
    let id = next_id("call");
    let (reply, rx) = oneshot::channel();
    let command = Command::Call {
        id: id.clone(),
        tab: route.target.tab,
        tool: tool.to_owned(),
        args: args.to_owned(),
        reply,
    };
    let what = format!("callTool `{tool}` on {}", route.target.display());
    exchange(
        &d.shutdown,
        &route.conn,
        Some(id),
        command,
        rx,
        timeout,
        &what,
    )
    .await
}

fn open_timeout(d: &Daemon, ms: Option<u64>) -> Result<Duration, Error> {
    checked_timeout(ms, d.config().call_timeout)
}

/// Opens a tab and answers once the browser reports it (tabCreated with our requestId).
pub async fn open_tab(d: &Daemon, req: OpenTabRequest) -> Result<TabView, Error> {
    if d.draining.is_cancelled() {
        return Err(shutting_down());
    }
    let (target, conn) = {
        let reg = d.registry();
        let key = match &req.browser {
            Some(b) => reg.parse_browser(b)?,
            None => reg.default_browser()?,
        };
        let target = Target {
            browser: key,
            tab: None,
        };
        (target, reg.connection(target)?.0)
    };
    let id = next_id("open");
    let (reply, rx) = oneshot::channel();
    let command = Command::OpenTab {
        id: id.clone(),
        url: req.url.clone(),
        focus: req.focus,
        reply,
    };
    let what = format!("openTab {}", req.url);
    let timeout = open_timeout(d, req.timeout_ms)?;
    let tab: TabInfo = exchange(&d.shutdown, &conn, Some(id), command, rx, timeout, &what).await?;
    let view = d.registry().tab_view(Target {
        browser: target.browser,
        tab: Some(tab.id),
    });
    view.ok_or_else(|| Error::new(ErrorCode::TabNotFound, "the new tab closed at once"))
}

/// Closes a tab and answers once the browser reports it closed.
pub async fn close_tab(d: &Daemon, tab: &str, timeout_ms: Option<u64>) -> Result<String, Error> {
    let (target, conn) = {
        let reg = d.registry();
        let target = reg.parse_tab(tab)?;
        (target, reg.connection(target)?.0)
    };
    let Some(tab_id) = target.tab else {
        return Err(Error::new(
            ErrorCode::TabNotFound,
            format!("`{tab}` is a browser, not a tab"),
        ));
    };
    let (reply, rx) = oneshot::channel();
    let what = format!("closeTab {}", target.display());
    let timeout = open_timeout(d, timeout_ms)?;
    exchange(
        &d.shutdown,
        &conn,
        None,
        Command::CloseTab { tab: tab_id, reply },
        rx,
        timeout,
        &what,
    )
    .await?;
    Ok(target.display())
}

/// Asks a tab for its tools afresh (discoverTools) and returns the updated tab.
pub async fn discover(d: &Daemon, tab: &str, timeout_ms: Option<u64>) -> Result<TabView, Error> {
    let (target, conn) = {
        let reg = d.registry();
        let target = reg.parse_tab(tab)?;
        (target, reg.connection(target)?.0)
    };
    let Some(tab_id) = target.tab else {
        return Err(Error::new(
            ErrorCode::TabNotFound,
            format!("`{tab}` is a browser, not a tab"),
        ));
    };
    let id = next_id("discover");
    let (reply, rx) = oneshot::channel();
    let command = Command::Discover {
        id: id.clone(),
        tab: tab_id,
        reply,
    };
    let what = format!("discoverTools on {}", target.display());
    exchange(
        &d.shutdown,
        &conn,
        Some(id),
        command,
        rx,
        open_timeout(d, timeout_ms)?,
        &what,
    )
    .await?;
    d.registry().tab_view(target).ok_or_else(|| {
        Error::new(
            ErrorCode::TabNotFound,
            format!("tab {} is gone", target.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_clamped() {
        let p = Policy {
            timeout: Duration::from_secs(1),
            budget: None,
            retries: 5,
            base: Duration::from_millis(1000),
            multiplier: 2.0,
            max_delay: Duration::from_millis(5000),
            retry_on_timeout: false,
        };
        let delays: Vec<u64> = (0..5).map(|a| p.delay(a).as_millis() as u64).collect();
        assert_eq!(delays, vec![1000, 2000, 4000, 5000, 5000]);
    }

    #[tokio::test]
    async fn a_message_that_never_left_is_a_send_error() {
        let stop = CancellationToken::new();
        // The connection is gone before the send.
        let (tx, rx) = mpsc::channel(1);
        drop(rx);
        let conn = ConnHandle { id: 1, tx };
        let (reply, answer) = oneshot::channel::<Result<(), Error>>();
        let cmd = Command::CloseTab { tab: 1, reply };
        let e = exchange(&stop, &conn, None, cmd, answer, Duration::from_secs(5), "x").await;
        assert_eq!(e.unwrap_err().code, ErrorCode::SendError);
        // The connection ends with the command still queued: it never reached the browser.
        let (tx, mut rx) = mpsc::channel(1);
        let conn = ConnHandle { id: 2, tx };
        let (reply, answer) = oneshot::channel::<Result<(), Error>>();
        let cmd = Command::CloseTab { tab: 1, reply };
        let dropper = tokio::spawn(async move { drop(rx.recv().await) });
        let e = exchange(&stop, &conn, None, cmd, answer, Duration::from_secs(5), "x").await;
        assert_eq!(e.unwrap_err().code, ErrorCode::SendError);
        dropper.await.unwrap();
    }

    #[test]
    fn timeouts_are_retried_only_for_safe_tools() {
        let plain: Tool = serde_json::from_value(json!({"name": "click"})).unwrap();
        let ro: Tool =
            serde_json::from_value(json!({"name": "read", "annotations": {"readOnlyHint": true}}))
                .unwrap();
        let timeout = Error::new(ErrorCode::MessageTimeout, "t");
        assert!(!should_retry(&timeout, Some(&plain), false));
        assert!(should_retry(&timeout, Some(&plain), true));
        assert!(should_retry(&timeout, Some(&ro), false));
        assert!(should_retry(
            &Error::new(ErrorCode::SendError, "s"),
            Some(&plain),
            false
        ));
        let transient = Error::new(ErrorCode::ToolError, "network").retryable(true);
        assert!(should_retry(&transient, Some(&plain), false));
        let unknown = Error::new(ErrorCode::ToolError, "boom").retryable(false);
        assert!(!should_retry(&unknown, Some(&ro), false));
        assert!(!should_retry(
            &Error::new(ErrorCode::InvalidArguments, "x"),
            Some(&ro),
            true
        ));
    }
}
