//! The agents people use (issue 59): what an MCP client sees when it starts `browserctl mcp`
//! with the bare environment clients give a server, and the real clients themselves.

pub mod bare_env;
pub mod clients;
pub mod token;
