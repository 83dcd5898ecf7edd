//! browser-mcp: a bridge between the tools that live in browser tabs and everything outside
//! the browser — shell scripts, automation pipelines and AI agents. `ARCHITECTURE.md` at the
//! root of the repository has the picture; this is where to look for what:
//!
//! - A **message** on any wire: [`protocol`] — [`protocol::bridge`] (seed 001, extensions),
//!   [`protocol::register`] (seed 002), [`protocol::jsonrpc`] (seed 003, browsers and agents),
//!   [`protocol::control`] (the Unix-socket API `/v1/…` and its events),
//!   [`protocol::native`] (native messaging and the discovery file). Serde types, no I/O; the
//!   daemon writes and the clients read the same types.
//! - A **state change**: the daemon's registry (`daemon::registry`): what connections report
//!   is a typed `Update` (`registry/state.rs`), every change is published as a typed `Change`
//!   (`registry/events.rs`), and its wire form is [`protocol::control::Event`].
//! - An **error**: [`error`] — one [`Error`] with a stable [`ErrorCode`] (HTTP status, exit
//!   code, retryable); worded where it arises, with a front end's hint added by
//!   [`Error::hint`].
//! - The **daemon** (`browser-mcpd`): [`daemon`], whose docs list its modules in import order.
//! - The **clients**: [`client`] (typed async client of the control API) and [`ctl`]
//!   (`browserctl`, built on it); the MCP server the daemon serves at `/mcp` and on its socket
//!   (which `browserctl mcp` relays to stdio) lives in `mcp`.
//! - Whether a directory may hold files others rely on (the discovery directory, the control
//!   socket's): `trust`, one implementation for the daemon, the native host and doctor.
//! - `src/bin/*`: parse flags, call [`daemon::run`] / [`ctl::run`].
#![deny(clippy::await_holding_lock)]
// Module docs link the crate-private modules for maintainers, who read them with
// `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

pub mod client;
pub mod ctl;
pub mod daemon;
pub mod error;
pub(crate) mod mcp;
pub(crate) mod paths;
pub(crate) mod pattern;
pub mod protocol;
pub(crate) mod time;
pub(crate) mod token;
pub(crate) mod trust;

pub use error::{Error, ErrorCode};
