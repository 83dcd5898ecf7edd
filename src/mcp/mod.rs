//! The MCP front: the tools of every connected tab, offered to AI clients as MCP tools.
//!
//! One server, in the daemon, on two transports: Streamable HTTP at `/mcp`, and a control-socket
//! connection upgraded to MCP's stdio framing (`GET /v1/mcp`), which `browserctl mcp` relays
//! to its own stdin and stdout unchanged, so the MCP work happens once, next to the registry.
//! The server drives a [`Backend`] (the daemon's registry and call path); naming, listing,
//! the meta tools, error mapping, cancellation and `list_changed` are written once.
//!
//! - [`backend`]: what the server drives (the daemon's registry and call path).
//! - [`calls`]: a call's way to its tab (the current tab, scope, cancellation).
//! - [`elicit`]: a hand-off asked in the client too, where it can answer a form.
//! - [`expose`]: which tools are in scope and the names clients see.
//! - [`identity`]: who the server is and which protocol revisions it speaks.
//! - [`groups`]: the tab groups that show which tabs an agent drives.
//! - [`log`]: `logging/setLevel` and the messages a client asked for.
//! - [`meta`]: the meta tools, offered beside the tab tools under names that never change.
//! - [`names`]: how a model reads a tool's name, and the names a page's tool may not have.
//! - [`progress`]: progress notifications while a long call runs.
//! - [`result`]: a page's answer as an MCP result every client shows in full.
//! - [`server`]: the rmcp `ServerHandler` and the [`Backend`] it drives.
//! - [`shortcut`]: a listed tab tool's call answered by the transport, past rmcp's service.
//! - [`view`]: the tool list one session sees: built-ins once, the current tab's page tools.
//! - [`offline`]: what `browserctl mcp` answers while no daemon is there.

pub mod backend;
pub mod calls;
pub mod elicit;
pub mod expose;
pub mod groups;
pub mod identity;
pub mod log;
pub mod meta;
pub mod names;
pub mod offline;
pub mod progress;
pub mod result;
pub mod roots;
pub mod server;
pub mod shortcut;
pub mod view;

pub use backend::Backend;
pub use expose::{Scope, Snapshot};
pub use server::McpServer;
