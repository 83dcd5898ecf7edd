//! The WebSocket dialects of the loopback port, each an encoder/decoder plus its handshake on
//! top of one [`driver`] that owns the connection's loop:
//! - [`bridge`]: seed 001, the primary extension protocol (`GET /`);
//! - [`register`]: seed 002, `POST /register` then `hello` (`GET /` too, told apart by the
//!   first message);
//! - [`jsonrpc`]: seed 003, JSON-RPC 2.0 for browsers and agents (`GET /ws`).
//!
//! [`classify`] turns a browser's tool failure into one of our errors; [`keepalive`] paces the
//! pings of the dialects whose seeds have the server ping.
//!
//! A new WebSocket dialect goes here, on the same driver. May import what is below it in
//! `daemon/mod.rs`'s order, `managed/` on down (in use: `calls/`, `context.rs`, `registry/`,
//! `conn/`, `limits.rs`, `stats.rs`, `http.rs`).

pub mod bridge;
mod classify;
pub mod driver;
pub mod jsonrpc;
mod keepalive;
pub mod register;
