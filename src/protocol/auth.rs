//! The trust handshake (issue 21): an additive preface to a WebSocket on the loopback port in
//! which the daemon proves first that it holds a key the browser also holds, then the browser
//! proves the same, and neither sends the key. Until it ends, the browser says nothing about
//! itself: an impostor daemon learns a key id and a random nonce, nothing it can replay.
//!
//! ```text
//! WebSocket with Sec-WebSocket-Protocol: browser-mcp.auth.v1
//! browser → daemon  {"type":"auth","v":1,"key":KEY_ID,"nonce":Nb}
//! daemon → browser  {"type":"authChallenge","nonce":Nd,"proof":HMAC(K, daemon label | KEY_ID | port | Nb | Nd)}
//!                   (or {"type":"authError","code":…} and close 1008)
//! browser → daemon  {"type":"authProof","proof":HMAC(K, browser label | KEY_ID | port | Nb | Nd)}
//! daemon → browser  {"type":"authOk","key":KEY_ID}   (or authError and close 1008)
//! … then the dialect's own first message (`connected`, `hello`).
//! ```
//!
//! Keys (`KEY_ID`):
//! - `token`: the daemon's per-run token, which only the user can read (the discovery file in
//!   a trusted directory); our native-messaging host hands it to the extension.
//! - `pairing:ID`: a long-term key made by pairing, kept by the daemon in the user's pairing
//!   file and by the extension in its profile's storage.
//! - `code:ID`: a one-time pairing code printed by `browserctl pair`; a successful handshake
//!   with it consumes the code and makes a pairing whose key both sides derive from the code
//!   and the two nonces (never sent). `ID` is a commitment to the code, so the daemon can say
//!   "unknown", "used" or "expired" without seeing the code.
//!
//! The port the browser dialled is in every MAC, so a proof made for one daemon is worth
//! nothing at another port; the labels differ per direction, so a proof cannot be reflected.
//! Nonces are 32 random bytes; nonces and MACs travel as standard base64.
//!
//! The extension (extension/worker/connection/auth.js) computes the same with WebCrypto; the test
//! vectors below are checked on both sides.

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::fmt;

/// The WebSocket subprotocol a client offers when it will start with [`ToDaemon::Auth`]. A
/// daemon that picks it promises to answer the preface; one that does not is not ours.
pub const SUBPROTOCOL: &str = "browser-mcp.auth.v1";

/// The handshake's version (`v` in [`ToDaemon::Auth`]).
pub const VERSION: u32 = 1;

/// Random bytes per nonce.
pub const NONCE_LEN: usize = 32;

const DAEMON_LABEL: &[u8] = b"browser-mcp daemon proof v1";
const BROWSER_LABEL: &[u8] = b"browser-mcp browser proof v1";
const PAIRING_KEY_LABEL: &[u8] = b"browser-mcp pairing key v1";
const PAIRING_ID_LABEL: &[u8] = b"browser-mcp pairing id v1";
const CODE_ID_LABEL: &[u8] = b"browser-mcp code id v1";

/// Browser → daemon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ToDaemon {
    Auth {
        v: u32,
        key: String,
        nonce: String,
    },
    AuthProof {
        proof: String,
        /// With a pairing code: who is pairing, for `browserctl pair --list`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        browser: Option<BrowserLabel>,
    },
}

/// What a browser says of itself when it pairs (shown by `browserctl pair --list`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowserLabel {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
    /// The extension's per-profile session id: two profiles of one browser are two pairings.
    #[serde(default)]
    pub session_id: String,
}

/// Daemon → browser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum FromDaemon {
    AuthChallenge {
        nonce: String,
        proof: String,
    },
    AuthOk {
        key: String,
    },
    AuthError {
        code: AuthErrorCode,
        message: String,
    },
}

/// Why a handshake failed, in words a script (and the extension) can branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AuthErrorCode {
    /// Not a handshake message, a bad field, or a version we do not speak.
    Malformed,
    /// This user's daemons know no such pairing (revoked, or made with another user's).
    UnknownPairing,
    /// No such pairing code (a typo, or a code of another daemon).
    UnknownCode,
    /// The code was used already; codes are single use.
    CodeUsed,
    /// The code is older than its lifetime.
    CodeExpired,
    /// The browser's proof is wrong: it does not hold the key it named.
    BadProof,
    /// The daemon could not read or write its pairing file.
    Unavailable,
}

impl AuthErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthErrorCode::Malformed => "MALFORMED",
            AuthErrorCode::UnknownPairing => "UNKNOWN_PAIRING",
            AuthErrorCode::UnknownCode => "UNKNOWN_CODE",
            AuthErrorCode::CodeUsed => "CODE_USED",
            AuthErrorCode::CodeExpired => "CODE_EXPIRED",
            AuthErrorCode::BadProof => "BAD_PROOF",
            AuthErrorCode::Unavailable => "UNAVAILABLE",
        }
    }
}

impl fmt::Display for AuthErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which key a handshake uses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KeyId {
    Token,
    Pairing(String),
    Code(String),
}

impl KeyId {
    /// `token`, `pairing:ID` or `code:ID`; ids are 16 lowercase hex digits.
    pub fn parse(s: &str) -> Option<KeyId> {
        let id_ok = |id: &str| id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit());
        match s.split_once(':') {
            None if s == "token" => Some(KeyId::Token),
            Some(("pairing", id)) if id_ok(id) => Some(KeyId::Pairing(id.to_ascii_lowercase())),
            Some(("code", id)) if id_ok(id) => Some(KeyId::Code(id.to_ascii_lowercase())),
            _ => None,
        }
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyId::Token => f.write_str("token"),
            KeyId::Pairing(id) => write!(f, "pairing:{id}"),
            KeyId::Code(id) => write!(f, "code:{id}"),
        }
    }
}

pub type Nonce = [u8; NONCE_LEN];
pub type Proof = [u8; 32];

/// A fresh nonce from the OS random source.
pub fn nonce() -> Nonce {
    let mut n = [0u8; NONCE_LEN];
    getrandom::fill(&mut n).expect("the OS random source works");
    n
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes exactly `N` bytes of standard base64.
pub fn unb64<const N: usize>(s: &str) -> Option<[u8; N]> {
    let v = base64::engine::general_purpose::STANDARD.decode(s).ok()?;
    v.try_into().ok()
}

fn mac(key: &[u8], parts: &[&[u8]]) -> Hmac<Sha256> {
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key");
    for p in parts {
        m.update(p);
    }
    m
}

fn transcript<'a>(
    label: &'a [u8],
    key_id: &'a str,
    port: &'a [u8; 2],
    browser_nonce: &'a Nonce,
    daemon_nonce: &'a Nonce,
) -> [&'a [u8]; 7] {
    [
        label,
        b"\0",
        key_id.as_bytes(),
        b"\0",
        port,
        browser_nonce,
        daemon_nonce,
    ]
}

/// The two proofs of one handshake, from the key both sides hold.
pub struct Transcript<'a> {
    pub key: &'a [u8],
    pub key_id: &'a KeyId,
    /// The daemon's loopback port, the one the browser dialled.
    pub port: u16,
    pub browser_nonce: &'a Nonce,
    pub daemon_nonce: &'a Nonce,
}

impl Transcript<'_> {
    fn mac(&self, label: &[u8]) -> Hmac<Sha256> {
        let id = self.key_id.to_string();
        let port = self.port.to_be_bytes();
        mac(
            self.key,
            &transcript(label, &id, &port, self.browser_nonce, self.daemon_nonce),
        )
    }

    /// What the daemon sends to show it holds the key.
    pub fn daemon_proof(&self) -> Proof {
        self.mac(DAEMON_LABEL).finalize().into_bytes().into()
    }

    /// What the browser sends to show it holds the key.
    pub fn browser_proof(&self) -> Proof {
        self.mac(BROWSER_LABEL).finalize().into_bytes().into()
    }

    /// Checks a daemon's proof in constant time.
    pub fn daemon_proof_ok(&self, proof: &[u8]) -> bool {
        self.mac(DAEMON_LABEL).verify_slice(proof).is_ok()
    }

    /// Checks a browser's proof in constant time.
    pub fn browser_proof_ok(&self, proof: &[u8]) -> bool {
        self.mac(BROWSER_LABEL).verify_slice(proof).is_ok()
    }
}

/// The long-term key and id of a pairing made with `code` in the handshake with these nonces.
pub fn pairing_from_code(
    code: &CodeSecret,
    browser_nonce: &Nonce,
    daemon_nonce: &Nonce,
) -> ([u8; 32], String) {
    let key: [u8; 32] = mac(
        &code.0,
        &[PAIRING_KEY_LABEL, b"\0", browser_nonce, daemon_nonce],
    )
    .finalize()
    .into_bytes()
    .into();
    let id: [u8; 32] = mac(
        &code.0,
        &[PAIRING_ID_LABEL, b"\0", browser_nonce, daemon_nonce],
    )
    .finalize()
    .into_bytes()
    .into();
    (key, hex(&id[..8]))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Crockford's base32 alphabet: no I, L, O or U, so a code read aloud or retyped survives.
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Characters in a pairing code: 16 × 5 bits = 80 bits, too many to guess online (a code is
/// single use, expires in minutes and allows a few tries) or offline from a transcript.
pub const CODE_CHARS: usize = 16;

/// The secret of a pairing code (10 bytes).
#[derive(Clone, PartialEq, Eq)]
pub struct CodeSecret(pub [u8; 10]);

impl fmt::Debug for CodeSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CodeSecret(…)")
    }
}

impl CodeSecret {
    pub fn random() -> CodeSecret {
        let mut b = [0u8; 10];
        getrandom::fill(&mut b).expect("the OS random source works");
        CodeSecret(b)
    }

    /// `ABCD-EFGH-JKMN-PQRS`.
    pub fn display(&self) -> String {
        let mut bits: u128 = 0;
        for b in self.0 {
            bits = (bits << 8) | u128::from(b);
        }
        let chars: Vec<char> = (0..CODE_CHARS)
            .map(|i| CROCKFORD[((bits >> (75 - 5 * i)) & 31) as usize] as char)
            .collect();
        chars
            .chunks(4)
            .map(|c| c.iter().collect::<String>())
            .collect::<Vec<_>>()
            .join("-")
    }

    /// Reads a code as a person may type it: any case, with or without dashes and spaces,
    /// O for 0 and I or L for 1.
    pub fn parse(typed: &str) -> Result<CodeSecret, String> {
        let mut bits: u128 = 0;
        let mut n = 0;
        for c in typed.chars() {
            let c = match c.to_ascii_uppercase() {
                '-' | ' ' => continue,
                'O' => '0',
                'I' | 'L' => '1',
                c => c,
            };
            let v = CROCKFORD
                .iter()
                .position(|&a| a as char == c)
                .ok_or_else(|| format!("`{c}` is not in a pairing code"))?;
            bits = (bits << 5) | v as u128;
            n += 1;
            if n > CODE_CHARS {
                return Err(format!("a pairing code has {CODE_CHARS} characters"));
            }
        }
        if n != CODE_CHARS {
            return Err(format!(
                "a pairing code has {CODE_CHARS} characters, not {n}"
            ));
        }
        let mut out = [0u8; 10];
        for (i, b) in out.iter_mut().enumerate() {
            *b = (bits >> (72 - 8 * i)) as u8;
        }
        Ok(CodeSecret(out))
    }

    /// The code's public id (`code:ID`): a commitment that names it without giving it away.
    pub fn id(&self) -> String {
        let m: [u8; 32] = mac(&self.0, &[CODE_ID_LABEL])
            .finalize()
            .into_bytes()
            .into();
        hex(&m[..8])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fixed inputs whose outputs extension/worker/connection/auth.js must reproduce (tests/it
    /// checks it in the real extension; keep the two in step).
    pub const VECTOR_CODE: &str = "K7QM-2XHD-9RTA-4FNV";

    #[test]
    fn codes_read_as_people_type_them() {
        let c = CodeSecret::parse(VECTOR_CODE).unwrap();
        assert_eq!(c.display(), VECTOR_CODE);
        assert_eq!(CodeSecret::parse("k7qm2xhd9rta4fnv").unwrap(), c);
        assert_eq!(CodeSecret::parse(" k7qm 2xhd-9rta 4fnv ").unwrap(), c);
        let o = CodeSecret::parse("O1LI-0000-0000-0000").unwrap();
        assert_eq!(o.display(), "0111-0000-0000-0000");
        assert!(CodeSecret::parse("K7QM-2XHD-9RTA-4FN").is_err(), "short");
        assert!(CodeSecret::parse("K7QM-2XHD-9RTA-4FNVV").is_err(), "long");
        assert!(CodeSecret::parse("K7QM-2XHD-9RTA-4FNU").is_err(), "no U");
        for _ in 0..100 {
            let r = CodeSecret::random();
            assert_eq!(CodeSecret::parse(&r.display()).unwrap(), r);
        }
        assert_eq!(c.id().len(), 16);
        assert_ne!(c.id(), CodeSecret::random().id());
    }

    #[test]
    fn key_ids() {
        for s in ["token", "pairing:0123456789abcdef", "code:0123456789abcdef"] {
            assert_eq!(KeyId::parse(s).unwrap().to_string(), s);
        }
        for bad in [
            "",
            "tok",
            "pairing:",
            "pairing:xyz",
            "code:0123",
            "other:0123456789abcdef",
        ] {
            assert_eq!(KeyId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn proofs_bind_the_key_the_port_and_the_direction() {
        let (nb, nd) = ([1u8; 32], [2u8; 32]);
        let id = KeyId::Token;
        let t = Transcript {
            key: b"secret",
            key_id: &id,
            port: 8765,
            browser_nonce: &nb,
            daemon_nonce: &nd,
        };
        let d = t.daemon_proof();
        assert!(t.daemon_proof_ok(&d));
        assert!(!t.browser_proof_ok(&d), "no reflection");
        assert!(t.browser_proof_ok(&t.browser_proof()));
        let other_port = Transcript { port: 8766, ..t };
        assert!(!other_port.daemon_proof_ok(&d));
        let other_key = Transcript {
            key: b"secreT",
            ..other_port
        };
        assert!(!other_key.daemon_proof_ok(&d));
        let pid = KeyId::Pairing("0123456789abcdef".into());
        let other_id = Transcript {
            key: b"secret",
            key_id: &pid,
            port: 8765,
            browser_nonce: &nb,
            daemon_nonce: &nd,
        };
        assert!(!other_id.daemon_proof_ok(&d));
        let swapped = Transcript {
            key: b"secret",
            key_id: &id,
            port: 8765,
            browser_nonce: &nd,
            daemon_nonce: &nb,
        };
        assert!(!swapped.daemon_proof_ok(&d));
    }

    /// The values extension/worker/connection/auth.js is checked against
    /// (tests/it/security/trust.rs computes them with this code; security/trust_browser.rs and
    /// browser/face/firefox.rs compare auth.js's in the real extension).
    #[test]
    fn test_vectors() {
        let code = CodeSecret::parse(VECTOR_CODE).unwrap();
        let (nb, nd) = ([1u8; 32], [2u8; 32]);
        let id = KeyId::Code(code.id());
        let t = Transcript {
            key: &code.0,
            key_id: &id,
            port: 8765,
            browser_nonce: &nb,
            daemon_nonce: &nd,
        };
        let (key, pairing) = pairing_from_code(&code, &nb, &nd);
        let v = serde_json::json!({
            "codeId": code.id(),
            "daemonProof": b64(&t.daemon_proof()),
            "browserProof": b64(&t.browser_proof()),
            "pairingKey": b64(&key),
            "pairingId": pairing,
        });
        assert_eq!(
            v,
            vectors(),
            "update vectors() and extension/worker/connection/auth.js's test together"
        );
    }

    /// Computed once by this code, checked against Python's hmac module by hand, and kept, so
    /// a change of the scheme shows up here. One file for both sides: the extension's unit
    /// tests (tests/extension/auth.test.mjs) check auth.js against the same values.
    pub fn vectors() -> serde_json::Value {
        serde_json::from_str(include_str!("../../tests/extension/auth-vectors.json")).unwrap()
    }

    #[test]
    fn wire_shapes() {
        let m: ToDaemon =
            serde_json::from_str(r#"{"type":"auth","v":1,"key":"token","nonce":"AA=="}"#).unwrap();
        assert_eq!(
            m,
            ToDaemon::Auth {
                v: 1,
                key: "token".into(),
                nonce: "AA==".into()
            }
        );
        let e = FromDaemon::AuthError {
            code: AuthErrorCode::CodeUsed,
            message: "m".into(),
        };
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({"type":"authError","code":"CODE_USED","message":"m"})
        );
        assert_eq!(
            serde_json::to_value(FromDaemon::AuthOk {
                key: "token".into()
            })
            .unwrap(),
            serde_json::json!({"type":"authOk","key":"token"})
        );
        let p: ToDaemon = serde_json::from_str(
            r#"{"type":"authProof","proof":"x","browser":{"name":"Chromium","version":"156","sessionId":"s"}}"#,
        )
        .unwrap();
        assert!(
            matches!(p, ToDaemon::AuthProof { browser: Some(ref b), .. } if b.name == "Chromium")
        );
    }
}
