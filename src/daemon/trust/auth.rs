//! The daemon's side of the trust handshake ([`crate::protocol::auth`]) on a WebSocket of the
//! loopback port: prove we hold the key the browser named, check the browser's proof, and, for
//! a pairing code, save the pairing. It runs before the dialect's first message, on sockets
//! whose upgrade offered [`SUBPROTOCOL`](crate::protocol::auth::SUBPROTOCOL).

use super::pairing::Pairings;
use crate::protocol::auth::{
    b64, nonce, unb64, AuthErrorCode, FromDaemon, KeyId, ToDaemon, Transcript, NONCE_LEN, VERSION,
};
use futures_util::{SinkExt, StreamExt};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// What the daemon knows to prove itself with.
pub struct Keys<'a> {
    /// This run's token (the discovery file's).
    pub token: &'a str,
    pub pairings: &'a Pairings,
    /// Our loopback port: the one the browser dialled.
    pub port: u16,
}

/// On what evidence a connection was admitted, for the log and `browserctl browsers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evidence {
    /// It proved the daemon's token (our native host gave it to the extension).
    Token,
    /// It proved a pairing.
    Pairing(String),
    /// It proved a pairing code, which made this pairing.
    Paired(String),
}

impl std::fmt::Display for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Evidence::Token => f.write_str("token"),
            Evidence::Pairing(id) => write!(f, "pairing {id}"),
            Evidence::Paired(id) => write!(f, "new pairing {id}"),
        }
    }
}

/// Why the handshake did not end in [`Evidence`]; the socket is closed (1008) already.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub AuthErrorCode);

/// The next text message, within the time left; `None` when the peer left or was too slow.
async fn next_text<S>(ws: &mut WebSocketStream<S>, deadline: tokio::time::Instant) -> Option<String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    loop {
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => return Some(t.as_str().to_owned()),
            Ok(Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)))) => continue,
            _ => return None,
        }
    }
}

async fn send<S>(ws: &mut WebSocketStream<S>, msg: &FromDaemon) -> bool
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let text = serde_json::to_string(msg).expect("JSON");
    tokio::time::timeout(Duration::from_secs(5), ws.send(Message::text(text)))
        .await
        .is_ok_and(|r| r.is_ok())
}

async fn refuse<S>(ws: &mut WebSocketStream<S>, code: AuthErrorCode, message: &str) -> Refused
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    tracing::warn!(%code, "refused a trust handshake: {message}");
    let _ = send(
        ws,
        &FromDaemon::AuthError {
            code,
            message: message.to_owned(),
        },
    )
    .await;
    let frame = CloseFrame {
        code: CloseCode::Policy,
        reason: format!("not authenticated: {code}").into(),
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), ws.close(Some(frame))).await;
    Refused(code)
}

fn words(code: AuthErrorCode) -> &'static str {
    match code {
        AuthErrorCode::Malformed => "expected the trust handshake (auth, v 1)",
        AuthErrorCode::UnknownPairing => "no such pairing (revoked?); pair again: browserctl pair",
        AuthErrorCode::UnknownCode => "no such pairing code at this daemon",
        AuthErrorCode::CodeUsed => "this pairing code was used already",
        AuthErrorCode::CodeExpired => "this pairing code has expired",
        AuthErrorCode::BadProof => "the proof does not match the key",
        AuthErrorCode::Unavailable => "the pairing file cannot be read or written",
    }
}

/// Runs the handshake whose first message (`auth`) the listener already read.
pub async fn handshake<S>(
    ws: &mut WebSocketStream<S>,
    first: &str,
    keys: &Keys<'_>,
    timeout: Duration,
) -> Result<Evidence, Refused>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let (key_id, browser_nonce) = match serde_json::from_str::<ToDaemon>(first) {
        Ok(ToDaemon::Auth { v, key, nonce }) if v == VERSION => {
            match (KeyId::parse(&key), unb64::<NONCE_LEN>(&nonce)) {
                (Some(k), Some(n)) => (k, n),
                _ => {
                    let m = AuthErrorCode::Malformed;
                    return Err(refuse(ws, m, "a bad key id or nonce").await);
                }
            }
        }
        _ => {
            let m = AuthErrorCode::Malformed;
            return Err(refuse(ws, m, words(m)).await);
        }
    };
    let key: Vec<u8> = match &key_id {
        KeyId::Token => keys.token.as_bytes().to_vec(),
        KeyId::Pairing(id) => match keys.pairings.pairing_key(id) {
            Ok(k) => k.to_vec(),
            Err(code) => return Err(refuse(ws, code, words(code)).await),
        },
        KeyId::Code(id) => match keys.pairings.code_secret(id) {
            Ok(s) => s.0.to_vec(),
            Err(code) => return Err(refuse(ws, code, words(code)).await),
        },
    };
    let daemon_nonce = nonce();
    let t = Transcript {
        key: &key,
        key_id: &key_id,
        port: keys.port,
        browser_nonce: &browser_nonce,
        daemon_nonce: &daemon_nonce,
    };
    let challenge = FromDaemon::AuthChallenge {
        nonce: b64(&daemon_nonce),
        proof: b64(&t.daemon_proof()),
    };
    if !send(ws, &challenge).await {
        return Err(Refused(AuthErrorCode::Malformed));
    }
    let Some(answer) = next_text(ws, deadline).await else {
        if let KeyId::Code(id) = &key_id {
            // It has our proof for this code and left: nobody gets another.
            keys.pairings.burn_code(id);
        }
        let m = AuthErrorCode::Malformed;
        return Err(refuse(ws, m, "no proof in time").await);
    };
    let (proof, browser) = match serde_json::from_str::<ToDaemon>(&answer) {
        Ok(ToDaemon::AuthProof { proof, browser }) => (proof, browser),
        _ => (String::new(), None),
    };
    let proven = unb64::<32>(&proof).is_some_and(|p| t.browser_proof_ok(&p));
    if !proven {
        if let KeyId::Code(id) = &key_id {
            keys.pairings.burn_code(id);
        }
        let m = AuthErrorCode::BadProof;
        return Err(refuse(ws, m, words(m)).await);
    }
    let evidence = match &key_id {
        KeyId::Token => Evidence::Token,
        KeyId::Pairing(id) => Evidence::Pairing(id.clone()),
        KeyId::Code(id) => {
            let secret = crate::protocol::auth::CodeSecret(
                key.as_slice()
                    .try_into()
                    .expect("a code secret is 10 bytes"),
            );
            match keys.pairings.complete_code(
                id,
                &secret,
                &browser_nonce,
                &daemon_nonce,
                browser.unwrap_or_default(),
            ) {
                Ok(info) => Evidence::Paired(info.id),
                Err(code) => return Err(refuse(ws, code, words(code)).await),
            }
        }
    };
    let ok = FromDaemon::AuthOk {
        key: key_id.to_string(),
    };
    if !send(ws, &ok).await {
        return Err(Refused(AuthErrorCode::Malformed));
    }
    tracing::info!(%evidence, "a browser proved who it is");
    Ok(evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::auth::{pairing_from_code, BrowserLabel, CodeSecret};
    use tokio_tungstenite::tungstenite::protocol::Role;

    async fn pair() -> (
        WebSocketStream<tokio::io::DuplexStream>,
        WebSocketStream<tokio::io::DuplexStream>,
    ) {
        let (a, b) = tokio::io::duplex(1 << 16);
        let server = WebSocketStream::from_raw_socket(a, Role::Server, None).await;
        let client = WebSocketStream::from_raw_socket(b, Role::Client, None).await;
        (server, client)
    }

    async fn recv(ws: &mut WebSocketStream<tokio::io::DuplexStream>) -> Option<FromDaemon> {
        match ws.next().await {
            Some(Ok(Message::Text(t))) => serde_json::from_str(t.as_str()).ok(),
            _ => None,
        }
    }

    /// A browser that holds `key` for `key_id`, or pretends to.
    async fn browser(
        mut ws: WebSocketStream<tokio::io::DuplexStream>,
        key_id: KeyId,
        key: Vec<u8>,
        port: u16,
        honest: bool,
    ) -> (
        Option<FromDaemon>,
        Option<(crate::protocol::auth::Nonce, crate::protocol::auth::Nonce)>,
    ) {
        let nb = nonce();
        let auth = ToDaemon::Auth {
            v: 1,
            key: key_id.to_string(),
            nonce: b64(&nb),
        };
        ws.send(Message::text(serde_json::to_string(&auth).unwrap()))
            .await
            .unwrap();
        let Some(FromDaemon::AuthChallenge { nonce: nd, proof }) = recv(&mut ws).await else {
            return (None, None);
        };
        let nd: [u8; 32] = unb64(&nd).unwrap();
        let t = Transcript {
            key: &key,
            key_id: &key_id,
            port,
            browser_nonce: &nb,
            daemon_nonce: &nd,
        };
        assert!(
            t.daemon_proof_ok(&unb64::<32>(&proof).unwrap()),
            "the daemon proves itself"
        );
        let mine = if honest { t.browser_proof() } else { [0; 32] };
        let p = ToDaemon::AuthProof {
            proof: b64(&mine),
            browser: Some(BrowserLabel {
                name: "Test".into(),
                ..Default::default()
            }),
        };
        ws.send(Message::text(serde_json::to_string(&p).unwrap()))
            .await
            .unwrap();
        (recv(&mut ws).await, Some((nb, nd)))
    }

    async fn run(
        keys: &Keys<'_>,
        key_id: KeyId,
        key: Vec<u8>,
        honest: bool,
    ) -> (
        Result<Evidence, Refused>,
        Option<FromDaemon>,
        Option<([u8; 32], [u8; 32])>,
    ) {
        let (mut server, client) = pair().await;
        let b = tokio::spawn(async move { browser(client, key_id, key, 8765, honest).await });
        // The listener reads the first message (`auth`) itself; here, the test does.
        let first = match server.next().await {
            Some(Ok(Message::Text(t))) => t.as_str().to_owned(),
            other => panic!("{other:?}"),
        };
        let r = handshake(&mut server, &first, keys, Duration::from_secs(5)).await;
        drop(server);
        let (last, nonces) = b.await.unwrap();
        (r, last, nonces)
    }

    /// The daemon's keys in these tests: the token "tok", the given pairings, port 8765.
    fn test_keys(pairings: &Pairings) -> Keys<'_> {
        Keys {
            token: "tok",
            pairings,
            port: 8765,
        }
    }

    #[tokio::test]
    async fn token_pairing_and_code_and_their_failures() {
        let tmp = tempfile::tempdir().unwrap();
        let pairings = Pairings::new(tmp.path().join("p/pairings.json"));
        let keys = test_keys(&pairings);
        // The token.
        let (r, last, _) = run(&keys, KeyId::Token, b"tok".to_vec(), true).await;
        assert_eq!(r, Ok(Evidence::Token));
        assert_eq!(
            last,
            Some(FromDaemon::AuthOk {
                key: "token".into()
            })
        );
        // A browser that does not hold it gets BAD_PROOF after the daemon's proof.
        let (r, last, _) = run(&keys, KeyId::Token, b"tok".to_vec(), false).await;
        assert_eq!(r, Err(Refused(AuthErrorCode::BadProof)));
        assert!(matches!(
            last,
            Some(FromDaemon::AuthError {
                code: AuthErrorCode::BadProof,
                ..
            })
        ));
        // A code makes a pairing both sides derive; the pairing then works on its own.
        let code = pairings.new_code();
        let secret = CodeSecret::parse(&code.code).unwrap();
        let (r, last, nonces) =
            run(&keys, KeyId::Code(code.id.clone()), secret.0.to_vec(), true).await;
        let (nb, nd) = nonces.unwrap();
        let (pkey, pid) = pairing_from_code(&secret, &nb, &nd);
        assert_eq!(r, Ok(Evidence::Paired(pid.clone())));
        assert!(matches!(last, Some(FromDaemon::AuthOk { .. })));
        assert_eq!(pairings.list().unwrap()[0].browser.name, "Test");
        let (r, _, _) = run(&keys, KeyId::Pairing(pid.clone()), pkey.to_vec(), true).await;
        assert_eq!(r, Ok(Evidence::Pairing(pid.clone())));
        // The code again: used.
        let (r, last, _) = run(&keys, KeyId::Code(code.id), secret.0.to_vec(), true).await;
        assert_eq!(r, Err(Refused(AuthErrorCode::CodeUsed)));
        assert!(last.is_none(), "no challenge for a used code");
        // A wrong proof with a code burns it.
        let code = pairings.new_code();
        let secret = CodeSecret::parse(&code.code).unwrap();
        let (r, _, _) = run(
            &keys,
            KeyId::Code(code.id.clone()),
            secret.0.to_vec(),
            false,
        )
        .await;
        assert_eq!(r, Err(Refused(AuthErrorCode::BadProof)));
        let (r, _, _) = run(&keys, KeyId::Code(code.id), secret.0.to_vec(), true).await;
        assert_eq!(r, Err(Refused(AuthErrorCode::CodeExpired)));
        // Revoked: unknown.
        assert_eq!(pairings.revoke(&pid).unwrap(), Some(0));
        let (r, _, _) = run(&keys, KeyId::Pairing(pid), pkey.to_vec(), true).await;
        assert_eq!(r, Err(Refused(AuthErrorCode::UnknownPairing)));
    }

    #[tokio::test]
    async fn anything_but_auth_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let pairings = Pairings::new(tmp.path().join("p/pairings.json"));
        let keys = test_keys(&pairings);
        for first in [
            r#"{"type":"connected","sessionId":"s","tabs":[]}"#,
            r#"{"type":"auth","v":2,"key":"token","nonce":"AA=="}"#,
            r#"{"type":"auth","v":1,"key":"token","nonce":"AA=="}"#,
            r#"{"type":"auth","v":1,"key":"nope","nonce":"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="}"#,
            "not json",
        ] {
            let (mut server, mut client) = pair().await;
            let r = handshake(&mut server, first, &keys, Duration::from_secs(5)).await;
            assert_eq!(r, Err(Refused(AuthErrorCode::Malformed)), "{first}");
            drop(server);
            assert!(matches!(
                recv(&mut client).await,
                Some(FromDaemon::AuthError {
                    code: AuthErrorCode::Malformed,
                    ..
                })
            ));
        }
    }
}
