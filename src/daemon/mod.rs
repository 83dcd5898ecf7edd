//! browser-mcpd: the long-running per-user daemon.
//!
//! Imports flow one way, from the top of this list down (no module imports one above it):
//! - [`service`]: start-up, signals, reload and the two-stage shutdown; with [`settings`]
//!   (flags, environment, config file), [`logging`], [`sd`] (sd_notify, watchdog, socket
//!   activation) and [`discovery`] (`/tmp/browser-mcp/server-<pid>.json` and its watcher).
//! - [`listener`]: the loopback port (`GET /`, `POST /register`, `GET /ws`, `/mcp`), and
//!   [`control`]: the Unix-socket HTTP/JSON API.
//! - [`dialect`]: the WebSocket dialects (seeds 001, 002, 003) on one connection driver, and
//!   [`mcp_http`]: MCP over Streamable HTTP.
//! - [`calls`]: the call path (target, validation, timeout, retry, backoff) and tab commands;
//!   [`managed`]: the browsers the daemon launches and looks after (issue 32).
//! - [`context`]: the [`Daemon`](context::Daemon) every task shares.
//! - [`registry`] (browsers → tabs → tools, events), [`conn`] (a connection's handle and
//!   pending calls), [`limits`], [`args`] (tool arguments), [`cancels`].
//! - [`auth`]: the daemon's side of the trust handshake, over [`pairing`] (the user's
//!   pairings and the codes that make them); [`peer`]: the uid at the other end of a
//!   loopback TCP connection (issue 21); [`refuse`]: another user's connection, refused
//!   before it takes a slot.
//! - Leaves: [`http`] (JSON answers, bodies, queries), [`access`] (Host, Origin, token),
//!   [`upload`] (files a call uploads), [`stats`], [`config`].
//!
//! Where things are defined: a message type in [`crate::protocol`]; a state change in
//! [`registry`] (its mutations in `registry::state`, published as a `registry::Change`); an
//! error in [`crate::error`] (worded where it arises; front ends add their hints).

pub(crate) mod access;
pub(crate) mod args;
pub(crate) mod auth;
pub(crate) mod calls;
pub(crate) mod cancels;
pub(crate) mod config;
pub(crate) mod conn;
pub(crate) mod context;
pub(crate) mod control;
pub(crate) mod dialect;
pub(crate) mod discovery;
pub(crate) mod http;
pub(crate) mod limits;
pub(crate) mod listener;
pub(crate) mod logging;
pub(crate) mod managed;
pub(crate) mod mcp_backend;
pub(crate) mod mcp_http;
pub(crate) mod mcp_sessions;
pub(crate) mod mcp_stream;
pub(crate) mod pairing;
pub(crate) mod peer;
pub(crate) mod presence;
pub(crate) mod refuse;
pub(crate) mod registry;
pub(crate) mod sd;
pub(crate) mod service;
pub(crate) mod settings;
pub(crate) mod stats;
pub(crate) mod upload;

// What the binary (and the man-page test) use.
pub use config::Config;
pub use sd::Activation;
pub use service::{run, Exit, Start, StartError, EXIT_CONFIG};
pub use settings::{load, LoadError, Loaded};

/// The parsers of what peers send, exposed for the fuzz targets in `fuzz/` and their smoke
/// test (`tests/it/daemon/fuzz_smoke.rs`). Not an API: it follows the code.
#[doc(hidden)]
pub mod fuzzing {
    pub use super::args::{prepare, ValidatorCache};
    pub use super::control::routes::{parse_route, Route};
    pub use super::http::{parse_body, query_param};
}
