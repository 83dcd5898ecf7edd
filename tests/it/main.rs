//! Integration tests: a real browser-mcpd process, real sockets, a scripted extension and
//! browserctl as a subprocess. One test binary (faster to build and link than many).

mod agents;
mod browser;
mod cli;
mod daemon;
mod house;
mod mcp;
mod remote;
mod security;
mod service;
mod support;
