//! Who is at the other end of a loopback TCP connection (issue 21). Any local program can
//! connect to the extension port and say it is a browser; on one machine shared by several
//! users, the uid that owns the peer's socket is what tells the user's own programs apart from
//! everyone else's.
//!
//! Linux: the kernel's socket diagnostics (`NETLINK_SOCK_DIAG`) look up the one socket whose
//! local end is the peer's address and whose remote end is ours, and report its owner. Where
//! that cannot be learned (another OS, a sandbox without netlink), the answer is
//! [`PeerUser::Unknown`] and the caller asks for proof of the user's secret instead.
//! A leaf module: std, nix and the netlink crates.

use std::io;
use std::net::SocketAddr;

/// Whose program is at the other end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerUser {
    /// Ours (the daemon's effective uid).
    Same,
    /// Another user's.
    Other(u32),
    /// Could not be learned; why.
    Unknown(String),
}

impl PeerUser {
    /// Classifies the connection `peer` → `local` (both as seen by us).
    pub fn of(local: SocketAddr, peer: SocketAddr) -> PeerUser {
        match peer_uid(local, peer) {
            Ok(uid) if uid == nix::unistd::geteuid().as_raw() => PeerUser::Same,
            Ok(uid) => PeerUser::Other(uid),
            Err(e) => PeerUser::Unknown(e.to_string()),
        }
    }
}

/// The uid owning the socket at `peer` that is connected to our `local`.
#[cfg(target_os = "linux")]
pub fn peer_uid(local: SocketAddr, peer: SocketAddr) -> io::Result<u32> {
    use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_REQUEST};
    use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
    use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};
    use netlink_packet_sock_diag::SockDiagMessage;
    use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket, SocketAddr as NlAddr};

    // An IPv4 peer of a dual-stack listener shows as ::ffff:a.b.c.d; the kernel files that
    // connection under IPv6.
    let family = if peer.is_ipv4() { AF_INET } else { AF_INET6 };
    let mut header = NetlinkHeader::default();
    // No NLM_F_DUMP: an exact lookup of one socket, not a walk through all of them.
    header.flags = NLM_F_REQUEST;
    let mut msg = NetlinkMessage::new(
        header,
        SockDiagMessage::InetRequest(InetRequest {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::empty(),
            states: StateFlags::all(),
            socket_id: SocketId {
                source_port: peer.port(),
                destination_port: local.port(),
                source_address: peer.ip(),
                destination_address: local.ip(),
                interface_id: 0,
                // INET_DIAG_NOCOOKIE: any socket with this address pair.
                cookie: [0xff; 8],
            },
        })
        .into(),
    );
    msg.finalize();
    let mut out = vec![0; msg.buffer_len()];
    msg.serialize(&mut out);

    let mut socket = Socket::new(NETLINK_SOCK_DIAG)?;
    socket.bind_auto()?;
    socket.connect(&NlAddr::new(0, 0))?;
    socket.send(&out, 0)?;
    let mut buf = vec![0u8; 8192];
    let n = socket.recv(&mut &mut buf[..], 0)?;
    let reply = <NetlinkMessage<SockDiagMessage>>::deserialize(&buf[..n])
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    match reply.payload {
        NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => {
            let id = &r.header.socket_id;
            // The kernel answers for the socket asked about; check it anyway.
            if id.source_port != peer.port() || id.destination_port != local.port() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the kernel described another socket",
                ));
            }
            Ok(r.header.uid)
        }
        NetlinkPayload::Error(e) => Err(e.to_io()),
        other => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unexpected sock_diag answer: {other:?}"),
        )),
    }
}

#[cfg(not(target_os = "linux"))]
pub fn peer_uid(_local: SocketAddr, _peer: SocketAddr) -> io::Result<u32> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "this system does not tell who owns a TCP peer",
    ))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn a_connection_of_ours_is_ours() {
        for bind in ["127.0.0.1:0", "[::1]:0"] {
            let Ok(listener) = TcpListener::bind(bind) else {
                continue; // no IPv6 loopback here
            };
            let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (server, peer) = listener.accept().unwrap();
            let local = server.local_addr().unwrap();
            assert_eq!(peer, client.local_addr().unwrap());
            assert_eq!(
                peer_uid(local, peer).unwrap(),
                nix::unistd::geteuid().as_raw(),
                "{bind}"
            );
            assert_eq!(PeerUser::of(local, peer), PeerUser::Same);
        }
    }

    #[test]
    fn a_socket_that_is_gone_is_unknown() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let local = listener.local_addr().unwrap();
        let nobody: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert!(matches!(PeerUser::of(local, nobody), PeerUser::Unknown(_)));
    }
}
