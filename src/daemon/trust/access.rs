//! Who may use the loopback port: the peer must be a program of our own user (issue 21), the
//! `Host` must be a loopback name (a page elsewhere cannot reach us through DNS rebinding), an
//! `Origin`, when present, must be allowed (extension origins by default; web pages never,
//! except on `/mcp` pages served from a loopback host, which DNS rebinding cannot fake), and
//! the daemon's token must match when presented (or when required).
//!
//! Per dialect, who is admitted on what evidence (docs/threat-model.md):
//! - every route: the uid owning the peer's socket is ours (the kernel says so, [`PeerUser`]);
//!   another uid is refused before anything else, token or not;
//! - where the uid cannot be learned, and with `--require-token`: proof of the user's secret,
//!   the token presented (`?token=`, `Authorization: Bearer`) or, on `GET /`, the trust
//!   handshake (token or pairing) announced by the `browser-mcp.auth.v1` subprotocol;
//! - `/mcp` and JSON-RPC agents: the token as well (their own rule), whoever asks.

pub use super::peer::PeerUser;
use crate::daemon::http::{self, Body};
use crate::daemon::settings::config::Config;
use crate::error::{Error, ErrorCode};
use hyper::header;
use hyper::{Request, Response, StatusCode};
use subtle::ConstantTimeEq;

/// A refused request: the error and the status to answer with.
#[derive(Debug)]
pub struct Refusal {
    pub status: StatusCode,
    pub error: Error,
}

impl Refusal {
    fn forbidden(message: String) -> Refusal {
        Refusal {
            status: StatusCode::FORBIDDEN,
            error: Error::new(ErrorCode::Unauthorized, message),
        }
    }

    fn unauthorized(message: &str) -> Refusal {
        Refusal {
            status: StatusCode::UNAUTHORIZED,
            error: Error::new(ErrorCode::Unauthorized, message),
        }
    }

    pub fn response(self) -> Response<Body> {
        http::json(self.status, &crate::error::ErrorBody { error: self.error })
    }
}

/// `localhost`, `127.x.y.z`, `[::1]`, optionally with a port.
pub fn loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// An Origin naming a loopback host (`http://localhost:3000`, `http://127.0.0.1:8765`,
/// `http://[::1]`): a page served from this machine, never one reached through DNS
/// rebinding, whose Origin names the attacker's host. Only a bare origin counts (scheme,
/// host, optional port), as browsers send it.
pub fn loopback_origin(origin: &str) -> bool {
    let Some((scheme, host)) = origin.split_once("://") else {
        return false;
    };
    matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https")
        && !host.is_empty()
        && !host.contains(['/', '?', '#', '@'])
        && loopback_host(host)
}

/// Whether the peer may talk to us at all: only programs of our own user. Checked before the
/// request is looked at.
pub fn admit_peer(peer: &PeerUser) -> Result<(), Refusal> {
    match peer {
        PeerUser::Other(uid) => Err(Refusal::forbidden(format!(
            "browser-mcpd serves only its own user (uid {}); a program of uid {uid} may not \
             connect to it",
            nix::unistd::geteuid()
        ))),
        PeerUser::Same | PeerUser::Unknown(_) => Ok(()),
    }
}

/// What else a request has to show for itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct Demands {
    /// The peer's uid could not be learned: it must prove the user's secret.
    pub peer_unknown: bool,
    /// It needs no token: the trust handshake follows (an upgrade of `GET /` offering the
    /// subprotocol), or it is the plain `GET /` that only says who we are.
    pub token_optional: bool,
    /// Loopback origins are welcome too (`/mcp`, as the MCP transport's DNS-rebinding
    /// guidance says); the token rules are unchanged.
    pub loopback_origins: bool,
}

/// Checks Host, Origin and token.
pub fn admit<B>(
    req: &Request<B>,
    config: &Config,
    token: &str,
    demands: Demands,
) -> Result<(), Refusal> {
    let mut hosts = req.headers().get_all(header::HOST).iter();
    let host = hosts.next().and_then(|h| h.to_str().ok()).unwrap_or("");
    // Two Host headers are malformed (RFC 9112 §3.2), and the second may be the real one.
    if hosts.next().is_some() {
        return Err(Refusal::forbidden(
            "several Host headers; browser-mcpd only answers to localhost".into(),
        ));
    }
    if !loopback_host(host) {
        return Err(Refusal::forbidden(format!(
            "Host `{host}` is not a loopback name; browser-mcpd only answers to localhost"
        )));
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("<invalid>");
        let loopback = demands.loopback_origins && loopback_origin(origin);
        if !loopback && !config.origin_allowed(origin) {
            return Err(Refusal::forbidden(format!(
                "Origin `{origin}` may not connect to browser-mcpd"
            )));
        }
        // Another installed extension would otherwise join as a browser and be sent what
        // agents ask of tabs (an uploaded file's contents among it): it proves first.
        if config.origin_needs_proof(origin)
            && !demands.token_optional
            && presented_token(req).is_none()
        {
            return Err(Refusal::unauthorized(&format!(
                "Origin `{origin}` is not the browser-mcp extension (or cannot say so): it \
                 joins only with the daemon's token or a pairing (the {} handshake)",
                crate::protocol::auth::SUBPROTOCOL
            )));
        }
    }
    match presented_token(req) {
        Some(t) if !tokens_match(&t, token) => Err(Refusal::unauthorized("wrong token")),
        None if (config.require_token || demands.peer_unknown) && !demands.token_optional => {
            Err(Refusal::unauthorized(if demands.peer_unknown {
                "this system cannot tell whose program you are: present the token (see the \
                 discovery file), or pair (browserctl pair)"
            } else {
                "this daemon requires a token (see the discovery file)"
            }))
        }
        _ => Ok(()),
    }
}

/// The token a request presents, as `?token=` or `Authorization: Bearer`.
pub fn presented_token<B>(req: &Request<B>) -> Option<String> {
    http::query_param(req.uri().query(), "token").or_else(|| bearer(req).map(str::to_owned))
}

/// The token of an `Authorization: Bearer` header.
pub fn bearer<B>(req: &Request<B>) -> Option<&str> {
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

/// Compares tokens in constant time: how long it takes says nothing of how much matched.
pub fn tokens_match(presented: &str, ours: &str) -> bool {
    presented.as_bytes().ct_eq(ours.as_bytes()).into()
}

/// A query string fit for the log: the value of `token` is replaced.
pub fn redacted_query(query: Option<&str>) -> String {
    let Some(query) = query else {
        return String::new();
    };
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, _)) if is_token_key(k) => format!("{k}=<redacted>"),
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

fn is_token_key(k: &str) -> bool {
    form_urlencoded::parse(k.as_bytes())
        .next()
        .is_some_and(|(k, _)| k.eq_ignore_ascii_case("token"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        for ok in [
            "localhost",
            "localhost:8765",
            "127.0.0.1:1",
            "127.1.2.3",
            "[::1]:80",
            "[::1]",
            "LOCALHOST",
        ] {
            assert!(loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8765",
            "",
            "10.0.0.1",
            "localhost.evil.example",
            "[::2]:1",
        ] {
            assert!(!loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn loopback_origins() {
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1:8765",
            "https://localhost",
            "http://[::1]:9",
            "HTTP://LOCALHOST:1",
        ] {
            assert!(loopback_origin(ok), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example",
            "http://localhost@evil.example",
            "http://localhost:1/path",
            "null",
            "chrome-extension://abc",
            "file://localhost",
            "http://",
            "localhost:3000",
        ] {
            assert!(!loopback_origin(bad), "{bad}");
        }
    }

    #[test]
    fn tokens_are_redacted_from_logged_queries() {
        assert_eq!(
            redacted_query(Some("sessionId=s&token=abc&x")),
            "sessionId=s&token=<redacted>&x"
        );
        assert_eq!(redacted_query(Some("%74oken=abc")), "%74oken=<redacted>");
        assert_eq!(redacted_query(None), "");
    }

    #[test]
    fn tokens_match_only_when_equal() {
        assert!(tokens_match("abc", "abc"));
        assert!(!tokens_match("abd", "abc"));
        assert!(!tokens_match("ab", "abc"));
    }
}
