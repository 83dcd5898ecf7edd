//! A typed async client of browser-mcpd's control API (the one browserctl uses).
//!
//! ```no_run
//! // no_run: it needs a running browser-mcpd with a connected browser.
//! # async fn demo() -> Result<(), browser_mcp::Error> {
//! use browser_mcp::client::Client;
//! use std::time::Duration;
//!
//! let client = Client::from_env();
//! let found = client.wait_for_tool("search", None, Duration::from_secs(30)).await?;
//! let answer = client
//!     .call("search", serde_json::json!({"query": "test"}))
//!     .await?;
//! println!("{} answered: {}", found[0].tab, answer.result.get());
//! # Ok(()) }
//! ```
//!
//! Every method returns the daemon's [`Error`](crate::Error) (with its stable
//! [`ErrorCode`](crate::ErrorCode)) on failure;
//! `DAEMON_UNAVAILABLE` when the daemon cannot be reached.

mod events;
mod link;
mod mcp_stream;
pub mod peer;
pub mod ssh;
mod transport;
mod typed;

pub use events::{EventFilter, EventStream};
pub use mcp_stream::McpStream;
pub use ssh::SshTarget;
pub use transport::{body_bytes, encode, Client};
pub use typed::ToolFilter;
