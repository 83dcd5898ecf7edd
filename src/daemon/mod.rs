//! browser-mcpd: the long-running per-user daemon, a folder per concern.
//!
//! Imports flow one way, down this list: a file may import its own entry and the entries below
//! it, never one above (`tests/it/house/architecture.rs` reads this list and checks it). An
//! entry is a folder or a file; a file named on a line of its own (`managed/table.rs`) is an
//! entry apart from its folder: state the [`Daemon`](context::Daemon) holds, which sits below
//! `context.rs` while the rest of its folder works with the Daemon, above it.
//!
//! ```text
//! service/            the daemon's life: start-up, signals, reload, two-stage shutdown; logs,
//!                     sd_notify and socket activation, the discovery file
//! listener.rs         the loopback port: the access checks, then WebSocket upgrades and /mcp
//! control/            the Unix-socket HTTP/JSON API (/v1/…)
//! mcp/                the MCP transports: /mcp (Streamable HTTP) and /v1/mcp (stdio framing),
//!                     their sessions, the daemon as the MCP Backend
//! dialect/            the WebSocket dialects (seeds 001, 002, 003) on one connection driver
//! managed/            the browsers the daemon launches and looks after (issue 32)
//! calls/              the call path: target, validation, timeout, retry; tab commands; uploads
//! context.rs          the Daemon every task shares; below it, what it holds
//! managed/table.rs    what the daemon launched and runs now
//! managed/process.rs  process groups, and the thread that starts browsers
//! managed/bidi.rs     WebDriver BiDi with a Firefox it launched: trusted input (issue 57)
//! calls/args.rs       tool arguments: flags typed by schema, validation and its cache
//! calls/cancels.rs    the calls a caller may cancel by its callId
//! calls/queues.rs     each tab's calls in turn, the wait bounded
//! calls/handoffs.rs   the tabs handed to the person, which refuse other calls
//! calls/prompts.rs    the consent prompts that wait, which the person answers from a terminal
//! registry/           browsers → tabs → tools, the event log; presence (an agent at work)
//! conn/               a connection's handle and its pending calls
//! trust/              who may connect: peer uid, Host/Origin/token, the trust handshake,
//!                     pairings, another user's connections refused
//! limits.rs           counted slots and maxima, and the refusals they word
//! settings/           flags, environment and config file → Config
//! stats.rs            counters
//! http.rs             JSON answers, request bodies, queries
//! ```
//!
//! Where a new piece goes: a check on who may connect, in [`trust`] (called from
//! `listener.rs` or [`control`]); a new way to speak MCP, in [`mcp`] beside `/mcp` and
//! `/v1/mcp` (routed from `listener.rs` or `control/`); a new WebSocket dialect, in
//! [`dialect`]; something a call does on its way to a tab, in [`calls`].
//!
//! Where things are defined: a message type in [`crate::protocol`]; a state change in
//! [`registry`] (its mutations in `registry::state`, published as a `registry::Change`); an
//! error in [`crate::error`] (worded where it arises; front ends add their hints). This file is
//! the daemon's face to the rest of the crate; no file of the daemon imports it.

pub(crate) mod calls;
pub(crate) mod conn;
pub(crate) mod context;
pub(crate) mod control;
pub(crate) mod dialect;
pub(crate) mod http;
pub(crate) mod limits;
pub(crate) mod listener;
pub(crate) mod managed;
pub(crate) mod mcp;
pub(crate) mod registry;
pub(crate) mod service;
pub(crate) mod settings;
pub(crate) mod stats;
pub(crate) mod trust;

// What the binary (and the man-page test) use.
pub use service::{run, Activation, Exit, Start, StartError, EXIT_CONFIG};
pub use settings::config::Config;
pub use settings::{load, LoadError, Loaded};

/// The parsers of what peers send, exposed for the fuzz targets in `fuzz/` and their smoke
/// test (`tests/it/daemon/fuzz_smoke.rs`). Not an API: it follows the code.
#[doc(hidden)]
pub mod fuzzing {
    pub use super::calls::args::{prepare, ValidatorCache};
    pub use super::control::routes::{parse_route, Route};
    pub use super::http::{parse_body, query_param};
}
