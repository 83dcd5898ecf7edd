//! Whether a request comes from this machine or from another one (issue 58, item 1). A path
//! names a file of the machine where its client runs: the daemon may read one for a client of
//! its own machine, never for one on the far side of ssh (`browserctl --host`, `browserctl
//! forward`, `browserctl dial-stdio`), whose paths and MCP roots are another machine's, and
//! whose user may be someone the daemon's user would not show their files.
//!
//! The daemon tells them apart by the socket a connection came in by, never by anything the
//! connection says: the far side controls every byte that comes through ssh, so no mark in
//! them (nor its absence) could be believed. The relay socket (`paths::relay_socket_path`) is
//! the daemon's own, made beside its control socket, and the relays are pointed at it by
//! programs of the daemon's machine: `dial-stdio` runs there and always connects to it, and
//! `browserctl forward` there hands ssh the relay socket as the local end of `-R`; the far
//! side names neither. Every connection accepted on the relay socket is far by construction.
//! What still reaches the control socket from afar is someone who can run commands as the
//! daemon's user on its machine (an ssh login without a forced command), who could read the
//! files directly anyway.
//!
//! The loopback port (`/mcp`, the JSON-RPC agents) is local: it takes connections from this
//! machine only, with the daemon's token.

/// How a request came, and so which machine its paths belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// From this machine: the control socket, the loopback port.
    Local,
    /// From another machine, through ssh: the relay socket.
    Relay,
}

impl Via {
    /// How a request came, as its connection recorded it; a request with none recorded came
    /// by the relay, so that a way in that forgot to say is refused paths, not given them.
    pub fn of<B>(req: &hyper::Request<B>) -> Via {
        req.extensions().get::<Via>().copied().unwrap_or(Via::Relay)
    }
}
