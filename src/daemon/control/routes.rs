//! What a control request asks for, read from its method, path and query alone: no state and
//! no I/O, so malformed requests are refused before anything else happens (and the parser can
//! be fuzzed on its own).

use crate::daemon::calls::MAX_TIMEOUT_MS;
use crate::daemon::http::{path_segments, query_param};
use crate::error::{Error, ErrorCode};
use crate::mcp::Scope;
use crate::protocol::control::event_kind;
use hyper::Method;

/// A control request's route and parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Status,
    Browsers,
    /// `POST /v1/browsers`: launch a managed browser (issue 32).
    Launch,
    /// `GET /v1/browsers/launchable`: what a launch could start.
    Launchable,
    /// `DELETE /v1/browsers/{browser}`: close a browser the daemon launched.
    CloseBrowser(String),
    Tabs {
        browser: Option<String>,
    },
    OpenTab,
    Tab(String),
    CloseTab {
        tab: String,
        timeout_ms: Option<u64>,
    },
    Discover {
        tab: String,
        timeout_ms: Option<u64>,
    },
    Tools {
        tab: Option<String>,
        browser: Option<String>,
        name: Option<String>,
    },
    Call,
    Cancel(String),
    Events(EventQuery),
    /// `GET /v1/mcp` (an upgrade): an MCP session scoped like `browserctl mcp`'s flags.
    Mcp(Scope),
    /// `POST /v1/pairing/codes`: a one-time pairing code (issue 21).
    NewPairingCode,
    /// `GET /v1/pairing/codes/{id}[?waitMs=N]`.
    PairingCode {
        id: String,
        wait_ms: Option<u64>,
    },
    /// `GET /v1/pairings`.
    Pairings,
    /// `DELETE /v1/pairings/{id}`.
    Revoke(String),
    /// `POST /v1/token/rotate`: a new token for the loopback port (`browserctl token rotate`).
    RotateToken,
    /// `GET /v1/consent`: the consent prompts that wait for the person (issue 60).
    ConsentPrompts,
    /// `POST /v1/consent/{id}`: the person's answer to one, from a terminal.
    AnswerConsent(String),
}

impl Route {
    /// Whether it is an agent's business with the browsers' pages
    /// (`daemon::registry::presence`), not the daemon's own state, its pairings or a launch.
    pub fn for_agents(&self) -> bool {
        matches!(
            self,
            Route::Tabs { .. }
                | Route::OpenTab
                | Route::Tab(_)
                | Route::CloseTab { .. }
                | Route::Discover { .. }
                | Route::Tools { .. }
                | Route::Call
                | Route::Events(_)
                | Route::Mcp(_)
        )
    }
}

/// The longest `waitMs` of `GET /v1/pairing/codes/{id}`: a code's lifetime and a bit.
pub const MAX_PAIRING_WAIT_MS: u64 = 10 * 60 * 1000;

/// The query of `GET /v1/events`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventQuery {
    pub since: Option<u64>,
    pub count: Option<u64>,
    pub kinds: Option<Vec<String>>,
    pub tab: Option<String>,
    pub browser: Option<String>,
}

fn number(q: &dyn Fn(&str) -> Option<String>, name: &str) -> Result<Option<u64>, Error> {
    q(name)
        .map(|s| {
            s.parse::<u64>()
                .map_err(|_| Error::bad_request(format!("`{name}` must be a number, not `{s}`")))
        })
        .transpose()
}

fn timeout_param(q: &dyn Fn(&str) -> Option<String>) -> Result<Option<u64>, Error> {
    match number(q, "timeoutMs")? {
        Some(t) if t == 0 || t > MAX_TIMEOUT_MS => Err(Error::bad_request(format!(
            "`timeoutMs` must be between 1 and {MAX_TIMEOUT_MS}"
        ))),
        t => Ok(t),
    }
}

/// Parses a request line into a [`Route`]; unknown routes are NOT_FOUND, known routes with
/// the wrong method METHOD_NOT_ALLOWED, malformed parameters BAD_REQUEST.
pub fn parse_route(method: &Method, path: &str, query: Option<&str>) -> Result<Route, Error> {
    let q = |name: &str| query_param(query, name);
    let segments = path_segments(path);
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    let not_allowed = || {
        Err(Error::new(
            ErrorCode::MethodNotAllowed,
            format!("{method} is not allowed on {path}"),
        ))
    };
    match (method, segs.as_slice()) {
        (&Method::GET, ["v1", "status"]) => Ok(Route::Status),
        (&Method::GET, ["v1", "browsers"]) => Ok(Route::Browsers),
        (&Method::POST, ["v1", "browsers"]) => Ok(Route::Launch),
        (&Method::GET, ["v1", "browsers", "launchable"]) => Ok(Route::Launchable),
        (&Method::DELETE, ["v1", "browsers", browser]) => {
            Ok(Route::CloseBrowser((*browser).to_owned()))
        }
        (&Method::GET, ["v1", "tabs"]) => Ok(Route::Tabs {
            browser: q("browser"),
        }),
        (&Method::POST, ["v1", "tabs"]) => Ok(Route::OpenTab),
        (&Method::GET, ["v1", "tabs", tab]) => Ok(Route::Tab((*tab).to_owned())),
        (&Method::DELETE, ["v1", "tabs", tab]) => Ok(Route::CloseTab {
            tab: (*tab).to_owned(),
            timeout_ms: timeout_param(&q)?,
        }),
        (&Method::POST, ["v1", "tabs", tab, "discover"]) => Ok(Route::Discover {
            tab: (*tab).to_owned(),
            timeout_ms: timeout_param(&q)?,
        }),
        (&Method::GET, ["v1", "tools"]) => Ok(Route::Tools {
            tab: q("tab"),
            browser: q("browser"),
            name: q("name"),
        }),
        (&Method::POST, ["v1", "call"]) => Ok(Route::Call),
        (&Method::GET, ["v1", "mcp"]) => Scope::from_query(query.unwrap_or(""))
            .map(Route::Mcp)
            .map_err(|bad| {
                Error::bad_request(format!(
                    "unknown parameter `{bad}`; /v1/mcp takes tab, url, browser and session"
                ))
            }),
        (&Method::DELETE, ["v1", "calls", id]) => Ok(Route::Cancel((*id).to_owned())),
        (&Method::GET, ["v1", "events"]) => {
            let kinds = q("type").map(|t| t.split(',').map(str::to_owned).collect::<Vec<_>>());
            if let Some(bad) = kinds
                .iter()
                .flatten()
                .find(|k| !event_kind::ALL.contains(&k.as_str()))
            {
                return Err(Error::bad_request(format!(
                    "unknown event type `{bad}`; known: {}",
                    event_kind::ALL.join(", ")
                )));
            }
            Ok(Route::Events(EventQuery {
                since: number(&q, "since")?,
                count: number(&q, "count")?,
                kinds,
                tab: q("tab"),
                browser: q("browser"),
            }))
        }
        (&Method::POST, ["v1", "pairing", "codes"]) => Ok(Route::NewPairingCode),
        (&Method::GET, ["v1", "pairing", "codes", id]) => Ok(Route::PairingCode {
            id: (*id).to_owned(),
            wait_ms: number(&q, "waitMs")?.map(|w| w.min(MAX_PAIRING_WAIT_MS)),
        }),
        (&Method::GET, ["v1", "pairings"]) => Ok(Route::Pairings),
        (&Method::POST, ["v1", "token", "rotate"]) => Ok(Route::RotateToken),
        (&Method::GET, ["v1", "consent"]) => Ok(Route::ConsentPrompts),
        (&Method::POST, ["v1", "consent", id]) => Ok(Route::AnswerConsent((*id).to_owned())),
        (_, ["v1", "consent", ..]) => not_allowed(),
        (_, ["v1", "token", ..]) => not_allowed(),
        (&Method::DELETE, ["v1", "pairings", id]) => Ok(Route::Revoke((*id).to_owned())),
        (_, ["v1", "pairing", "codes", ..] | ["v1", "pairings", ..]) => not_allowed(),
        (_, ["v1", "calls", _] | ["v1", "browsers", _]) => not_allowed(),
        (_, ["v1", "status" | "browsers" | "tools" | "call" | "events"])
        | (_, ["v1", "tabs", ..]) => not_allowed(),
        _ => Err(Error::new(
            ErrorCode::NotFound,
            format!("no route {method} {path}"),
        )),
    }
}
