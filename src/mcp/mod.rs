//! The MCP front: the tools of every connected tab, offered to AI clients as MCP tools.
//!
//! One server, two transports. `browserctl mcp` serves it on stdio as a thin client of the
//! control API; the daemon serves it over Streamable HTTP at `/mcp` and calls its registry
//! directly. Both plug a [`Backend`] into the same [`McpServer`], so naming, listing, the
//! meta tools, error mapping, cancellation and `list_changed` are written once.
//!
//! - [`expose`]: which tools are in scope and the names clients see.
//! - [`log`]: `logging/setLevel` and the messages a client asked for.
//! - [`meta`]: the meta tools, offered beside the tab tools under names that never change.
//! - [`progress`]: progress notifications while a long call runs.
//! - [`result`]: a page's answer as an MCP result every client shows in full.
//! - [`server`]: the rmcp `ServerHandler` and the [`Backend`] it drives.

pub mod expose;
pub mod log;
pub mod meta;
pub mod progress;
pub mod result;
pub mod server;

pub use expose::{Scope, Snapshot};
pub use server::{Backend, McpServer};
