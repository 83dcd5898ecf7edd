//! Who may connect, and the handshake that proves it:
//! - [`peer`]: the uid at the other end of a loopback TCP connection (issue 21);
//! - [`access`]: what a request to the loopback port must show (Host, Origin, the token);
//! - [`auth`]: the daemon's side of the trust handshake on a WebSocket, over [`pairing`] (the
//!   user's pairings and the codes that make them);
//! - [`refuse`]: another user's connection, refused before it takes a slot;
//! - [`via`]: whether a request comes from this machine or through ssh from another.
//!
//! A new check on who may connect goes here, and the front door that needs it (`listener.rs`,
//! `control/`) calls it. May import `settings/` and `http.rs` (see `daemon/mod.rs` for the
//! order); the file-system side of trust (which directories may hold our files) is
//! `crate::trust`, shared with the CLI.

pub(crate) mod access;
pub(crate) mod auth;
pub(crate) mod pairing;
pub(crate) mod peer;
pub(crate) mod refuse;
pub(crate) mod via;
