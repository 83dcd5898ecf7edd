//! browser-mcp: a bridge between the tools that live in browser tabs and everything outside
//! the browser — shell scripts, automation pipelines and AI agents.
//!
//! Layout (one package, a library and two thin binaries):
//! - [`protocol`]: wire types only (serde), no I/O.
//! - [`error`]: the error-code enum shared by the daemon, the API and the CLI.
//! - [`daemon`]: `browser-mcpd` — registry, call path, extension listener, control API,
//!   discovery file, service life.
//! - [`client`]: a typed async client of the control API.
//! - [`ctl`]: `browserctl` — a thin client of the control API, built on [`client`].
//! - [`mcp`]: the MCP server (tool naming, listing, calls) shared by `browserctl mcp` (stdio)
//!   and the daemon's `/mcp` (Streamable HTTP).
//! - `src/bin/*`: parse flags, call `daemon::run` / `ctl::run`.
#![deny(clippy::await_holding_lock)]

pub mod client;
pub mod ctl;
pub mod daemon;
pub mod error;
pub(crate) mod mcp;
pub(crate) mod paths;
pub(crate) mod pattern;
pub mod protocol;
pub(crate) mod time;

pub use error::{Error, ErrorCode};
