//! Wire types only: serde structs for each protocol, no I/O and no daemon state.
//!
//! - [`auth`]: the trust handshake that precedes a dialect on the loopback port (issue 21).
//! - [`bridge`]: seed 001, the primary extension protocol (`GET /` upgrade).
//! - [`control`]: the daemon's Unix-socket HTTP/JSON API under `/v1/`.
//! - [`register`]: seed 002, the register/hello dialect (`POST /register`, then `hello`).
//! - [`jsonrpc`]: seed 003, JSON-RPC 2.0 over WebSocket for browsers and agents (`GET /ws`).
//! - [`input`]: trusted input the daemon performs for its extension (issue 57), two additive
//!   bridge messages.
//! - [`tool`]: the MCP tool schema every dialect shares.
//! - [`native`]: Chrome native messaging (`browserctl native-host`) and the discovery file.
//! - [`upload`]: a file as `browser_file_upload` carries it (daemon and browserctl make it).

pub mod auth;
pub mod bridge;
pub mod consent;
pub mod control;
pub mod input;
pub mod jsonrpc;
pub mod managed;
pub mod native;
pub mod register;
pub mod tool;
pub mod upload;

pub use tool::Tool;

/// Why a peer's frame could not be decoded (seeds 001 and 002).
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("malformed message: {0}")]
    Malformed(#[from] serde_json::Error),
    #[error("{kind} message is missing `{field}`")]
    Missing {
        kind: &'static str,
        field: &'static str,
    },
}

/// A field a message of `kind` must have.
pub(crate) fn need<T>(
    v: Option<T>,
    kind: &'static str,
    field: &'static str,
) -> Result<T, DecodeError> {
    v.ok_or(DecodeError::Missing { kind, field })
}

/// Accepts a JSON string or number and keeps it as a string: peers echo our ids back in either
/// form, and a correlation id is only ever compared, never computed with.
pub(crate) mod string_or_number {
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw<'a> {
        Str(std::borrow::Cow<'a, str>),
        Int(i64),
        UInt(u64),
        Float(f64),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Ok(Option::<Raw>::deserialize(d)?.map(|raw| match raw {
            Raw::Str(s) => s.into_owned(),
            Raw::Int(i) => i.to_string(),
            Raw::UInt(u) => u.to_string(),
            Raw::Float(f) => f.to_string(),
        }))
    }
}
