//! The route handlers: each reads the registry or runs the call path, and answers with the
//! control API's shapes ([`crate::protocol::control`]).

use super::events;
use super::routes::{parse_route, Route};
use crate::daemon::calls;
use crate::daemon::context::Daemon;
use crate::daemon::http::{self, Body};
use crate::daemon::managed;
use crate::daemon::mcp::stream as mcp_stream;
use crate::daemon::trust::pairing::CodeState;
use crate::daemon::trust::via::Via;
use crate::error::{Error, ErrorCode};
use crate::protocol::consent::{self, AnswerRequest, AnswerTaken, PromptList};
use crate::protocol::control::{
    Browsers, CallRequest, Cancelled, Closed, OpenTabRequest, PairingCode, PairingCodeState,
    PairingList, PairingRevoked, Status, Tabs, TokenRotated, Tools,
};
use crate::protocol::managed::LaunchRequest;
use hyper::body::Incoming;
use hyper::{Request, Response};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// How long a terminal's answer to a consent prompt waits for the browser to take it.
const ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
/// How long `token rotate` waits for the discovery file to carry the new token.
const DISCOVERY_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Largest request body accepted.
pub const MAX_BODY: usize = 8 << 20;

/// Largest call accepted: a `browser_file_upload` brings its files' bytes (browserctl reads
/// them where it runs), as much as one upload takes, in base64, and the rest of the call.
pub const MAX_CALL_BODY: usize =
    (crate::protocol::upload::MAX_TOTAL_BYTES as usize / 3 + 1) * 4 + (1 << 20);

pub async fn handle(req: Request<Incoming>, d: Arc<Daemon>) -> Response<Body> {
    match route(req, d).await {
        Ok(r) => r,
        Err(e) => http::error(e),
    }
}

async fn read_json<T: serde::de::DeserializeOwned>(
    req: Request<Incoming>,
    d: &Daemon,
    max: usize,
) -> Result<T, Error> {
    let body = http::read_body(req, max, d.config().handshake_timeout).await?;
    http::parse_body(&body)
}

async fn route(req: Request<Incoming>, d: Arc<Daemon>) -> Result<Response<Body>, Error> {
    let route = parse_route(req.method(), req.uri().path(), req.uri().query())?;
    let reg = &d.registry;
    // What an agent asks of the browsers' pages: they watch them from now on (issue 30). A
    // stream or session that outlives the answer keeps a hold of its own.
    let _present = if route.for_agents() {
        Some(d.presence.attend(&d.registry).await)
    } else {
        None
    };
    match route {
        Route::Status => Ok(http::ok(&status(&d))),
        Route::Browsers => Ok(http::ok(&browsers(&d))),
        Route::Launch => {
            let body: LaunchRequest = read_json(req, &d, MAX_BODY).await?;
            Ok(http::ok(&managed::launch(&d, body).await?))
        }
        Route::Launchable => Ok(http::ok(&managed::launchable(&d))),
        Route::CloseBrowser(browser) => Ok(http::ok(&managed::close(&d, &browser).await?)),
        Route::Tabs { browser } => {
            let browser = browser.map(|b| reg.parse_browser(&b)).transpose()?;
            Ok(http::ok(&Tabs {
                tabs: reg.tab_views(browser),
            }))
        }
        Route::OpenTab => {
            let body: OpenTabRequest = read_json(req, &d, MAX_BODY).await?;
            if body.url.is_empty() {
                return Err(Error::bad_request("`url` is required"));
            }
            Ok(http::ok(&calls::open_tab(&d, body).await?))
        }
        Route::Tab(tab) => {
            let target = reg.parse_tab(&tab)?;
            reg.tab_view(target)
                .map(|v| http::ok(&v))
                .ok_or_else(|| Error::new(ErrorCode::TabNotFound, format!("`{tab}` is not a tab")))
        }
        Route::CloseTab { tab, timeout_ms } => {
            let closed = calls::close_tab(&d, &tab, timeout_ms).await?;
            Ok(http::ok(&Closed { closed }))
        }
        Route::Discover { tab, timeout_ms } => {
            Ok(http::ok(&calls::discover(&d, &tab, timeout_ms).await?))
        }
        Route::Tools { tab, browser, name } => {
            let target = tab.map(|t| reg.parse_tab(&t)).transpose()?;
            let browser = browser.map(|b| reg.parse_browser(&b)).transpose()?;
            Ok(http::ok(&Tools {
                tools: reg.tool_views(target, browser, name.as_deref()),
            }))
        }
        Route::Call => {
            let via = Via::of(&req);
            let body: CallRequest = read_json(req, &d, MAX_CALL_BODY).await?;
            if body.tool.is_empty() {
                return Err(Error::bad_request("`tool` is required"));
            }
            Ok(http::ok(&calls::call(&d, body, via).await?))
        }
        Route::Cancel(id) => match d.cancels.cancel(&id) {
            true => Ok(http::ok(&Cancelled { cancelled: id })),
            false => Err(Error::new(
                ErrorCode::NotFound,
                format!("no call with callId `{id}` is in flight"),
            )),
        },
        Route::Events(query) => events::stream(&d, query),
        Route::Mcp(scope) => {
            let via = Via::of(&req);
            mcp_stream::accept(req, d.clone(), scope, via)
        }
        Route::NewPairingCode => {
            let c = d.pairings.new_code();
            Ok(http::ok(&PairingCode {
                code: c.code,
                code_id: c.id,
                expires_in_ms: c.expires_in.as_millis() as u64,
            }))
        }
        Route::PairingCode { id, wait_ms } => {
            let state = match wait_ms {
                Some(ms) => {
                    let wait = d
                        .pairings
                        .wait_code(&id, std::time::Duration::from_millis(ms));
                    // A daemon that shuts down answers rather than leaving the waiter hanging.
                    tokio::select! {
                        s = wait => s,
                        _ = d.draining.cancelled() => d.pairings.code_state(&id),
                    }
                }
                None => d.pairings.code_state(&id),
            };
            let (state, pairing) = match state {
                CodeState::Pending => ("pending", None),
                CodeState::Paired(p) => ("paired", Some(p)),
                CodeState::Expired => ("expired", None),
                CodeState::Burned => ("burned", None),
                CodeState::Unknown => {
                    return Err(Error::new(
                        ErrorCode::NotFound,
                        format!("no pairing code `{id}` at this daemon"),
                    ))
                }
            };
            Ok(http::ok(&PairingCodeState {
                state: state.to_owned(),
                pairing,
            }))
        }
        Route::Pairings => Ok(http::ok(&PairingList {
            pairings: d.pairings.list().map_err(unavailable)?,
            file: d.pairings.file().display().to_string(),
        })),
        Route::RotateToken => {
            let file = d.config().token_path();
            let token = crate::token::write(&file, &crate::token::random(), true).map_err(|e| {
                Error::new(
                    ErrorCode::Internal,
                    format!("cannot write the new token to {}: {e}", file.display()),
                )
            })?;
            d.put_token_in_force(token.into(), DISCOVERY_WAIT).await;
            tracing::info!(file = %file.display(), "the token was rotated");
            Ok(http::ok(&TokenRotated {
                token_file: file.display().to_string(),
                port: d.runtime.port,
            }))
        }
        Route::ConsentPrompts => Ok(http::ok(&PromptList {
            prompts: d.prompts.list(),
        })),
        Route::AnswerConsent(id) => {
            let body: AnswerRequest = read_json(req, &d, MAX_BODY).await?;
            let (target, taken) = d.prompts.answer(&id, &body.choice)?;
            // The browser answers at once: it only settles a prompt it holds.
            let choice = match tokio::time::timeout(ANSWER_WAIT, taken).await {
                Ok(Ok(r)) => r?,
                Ok(Err(_)) => return Err(crate::daemon::calls::prompts::not_found(&id, "gone")),
                Err(_) => {
                    return Err(Error::new(
                        ErrorCode::MessageTimeout,
                        format!(
                            "browser {} did not confirm the answer to prompt {id} within {} s (an extension older than `answerConsent`?); answer it in the browser",
                            target.browser,
                            ANSWER_WAIT.as_secs()
                        ),
                    ))
                }
            };
            Ok(http::ok(&AnswerTaken {
                id,
                choice: consent::typed_choice(&choice)
                    .unwrap_or(&body.choice)
                    .to_owned(),
                tab: target.to_string(),
            }))
        }
        Route::Revoke(id) => match d.pairings.revoke(&id).map_err(unavailable)? {
            Some(closed) => Ok(http::ok(&PairingRevoked {
                revoked: id,
                closed,
            })),
            None => Err(Error::new(
                ErrorCode::NotFound,
                format!("no pairing `{id}`; see browserctl pair --list"),
            )),
        },
    }
}

/// The connected browsers, those the daemon launched marked, and every launched one.
fn browsers(d: &Daemon) -> Browsers {
    let sessions = d.managed.sessions();
    let mut browsers = d.registry.browser_views();
    for b in &mut browsers {
        b.managed = sessions.contains(&b.session_id);
    }
    Browsers {
        browsers,
        managed: managed::views(d),
    }
}

/// The pairing file could not be read or written.
fn unavailable(e: std::io::Error) -> Error {
    Error::internal(format!("the pairing file: {e}"))
}

fn status(d: &Daemon) -> Status {
    let summary = d.registry.summary();
    let s = &d.stats;
    let r = &d.runtime;
    let get = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    Status {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        pid: std::process::id(),
        port: r.port,
        socket: r.socket.display().to_string(),
        discovery_file: r.discovery_file.display().to_string(),
        started_at: r.started_at.clone(),
        uptime_ms: r.started.elapsed().as_millis() as u64,
        browsers: summary.browsers,
        tabs: summary.tabs,
        tools: summary.tools,
        calls_in_flight: get(&s.calls_in_flight),
        pending_calls: get(&s.pending),
        calls_total: get(&s.calls_total),
        calls_failed: get(&s.calls_failed),
        calls_cancelled: get(&s.calls_cancelled),
        late_responses: get(&s.late_responses),
        unknown_responses: get(&s.unknown_responses),
        bad_messages: get(&s.bad_messages),
        last_event_seq: summary.last_seq,
        extension_connections: get(&s.extension_connections),
        control_connections: get(&s.control_connections),
        mcp_sessions: get(&s.mcp_sessions),
        // Every task of the runtime, tracked or not: a leak of any kind shows here.
        tasks: tokio::runtime::Handle::try_current()
            .map(|h| h.metrics().num_alive_tasks() as u64)
            .unwrap_or(0),
        limits_exceeded: get(&s.limits_exceeded),
        agent_at_work: d.presence.watching(),
    }
}
