//! The daemon's MCP transports, in front of one MCP server (`crate::mcp`, which the CLI's
//! offline answers share):
//! - [`http`]: Streamable HTTP at `/mcp` on the loopback port, and its [`sessions`] bounded;
//! - [`stream`]: `GET /v1/mcp` on the control socket, for `browserctl mcp`;
//! - [`backend`]: the daemon as the server's `Backend` (the registry and the call path).
//!
//! A new way to speak MCP goes here, beside these two, routed from `listener.rs` or
//! `control/`. May import what is below it in `daemon/mod.rs`'s order, `dialect/` on down (it
//! uses `managed/`, `calls/`, `context.rs`, `registry/`, `trust/`, `limits.rs`, `settings/`).

pub(crate) mod backend;
pub(crate) mod http;
pub(crate) mod priming;
pub(crate) mod sessions;
pub(crate) mod stream;
