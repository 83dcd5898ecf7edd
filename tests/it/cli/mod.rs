//! browserctl and the client library as people and scripts meet them; setup, the native host, man pages.

pub mod client;
pub mod consent_wait;
pub mod man;
pub mod native_host;
pub mod pair;
pub mod setup;
pub mod unix_tool;
