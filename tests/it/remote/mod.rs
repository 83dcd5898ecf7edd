//! Remote use over OpenSSH (issue 33), between two "machines" on this one: the laptop (the
//! test's user, with the browser) and a dev box (a second local user), joined by a real sshd
//! on 127.0.0.1 (support/sshd.rs). Both directions, the errors a person meets, and the round
//! trip of a call through ssh beside a local one.

pub mod agent;
pub mod errors;
pub mod forward;
pub mod timing;

use crate::support::common::*;
use crate::support::python::*;
use serde_json::json;

/// tests/python/mcp_stdio_client.py (the official Python SDK) launching `argv` as its MCP
/// server, while the scripted browser answers its one call.
pub async fn python_mcp_client(argv: &[String], mut ext: FakeExtension) {
    if !python_has_mcp() {
        skip(
            "the Python SDK over ssh",
            "python3 cannot `import mcp`",
            "pip install mcp; .ci/run does",
        );
        return;
    }
    let argv = serde_json::to_string(argv).unwrap();
    let env = [("BROWSERCTL_COMMAND", argv.as_ref())];
    let mut client = PythonScript::start("client", "mcp_stdio_client.py", &env);
    let call = client
        .beside(ext.answer_call(json!("results for test")))
        .await;
    assert_eq!(call["args"], json!({"query": "test"}));
    client.finish("client: ok").await;
}
