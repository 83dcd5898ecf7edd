//! The MCP front: rmcp's client over both transports, the conformance suite, sessions, the short way, agents' own tabs and lanes, upload roots, consent.

pub mod conformance;
pub mod consent;
pub mod front;
pub mod lanes;
pub mod own_tabs;
pub mod revisions;
pub mod rmcp_client;
pub mod scoping;
pub mod sessions;
pub mod shortcut;
pub mod upload_roots;
pub mod view;
