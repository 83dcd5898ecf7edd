//! Issue 58, item 10: an MCP client's roots are asked for the upload it makes by the name it
//! listed. Every real client lists tools before it calls one, and a call of a listed tool takes
//! the short way (src/mcp/shortcut.rs); that way once skipped `roots/list`, so an agent's own
//! workspace was refused (`not inside an upload root`) and only `browserctl_call_tool`, or a
//! call before any listing, could upload. The official Python SDK (tests/python/
//! mcp_upload_client.py) lists first, then calls `browser_file_upload` as listed, over
//! `browserctl mcp` and over `/mcp`.

use crate::mcp::upload_roots::{got, upload_tool, Home};
use crate::support::common::*;
use crate::support::python::*;
use serde_json::json;
use std::ffi::OsStr;

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_lists_first_uploads_from_its_own_roots() {
    if !python_has_mcp() {
        return skip(
            "security::listed_upload",
            "python3 cannot `import mcp`",
            "pip install mcp; .ci/run does",
        );
    }
    let home = Home::new();
    let d = TestDaemon::start(); // no --upload-root: the client's roots alone
    let mut ext = FakeExtension::connect(&d, "s1", vec![tab(1, "Form", vec![upload_tool()])]).await;
    d.wait_tabs("tab", |t| t.len() == 1);
    let root = home.path("docs");
    let uploads = json!([
        [home.path("docs/cv.txt"), "ok"],
        [home.path(".ssh/id_ed25519"), "not inside an upload root"],
    ])
    .to_string();
    let url = format!("http://127.0.0.1:{}/mcp", d.port);
    let stdio: Vec<(&str, &OsStr)> = vec![
        ("BROWSERCTL", OsStr::new(CTL)),
        ("BROWSER_MCP_SOCKET", d.socket.as_os_str()),
    ];
    let http: Vec<(&str, &OsStr)> = vec![
        ("BROWSER_MCP_URL", OsStr::new(&url)),
        ("BROWSER_MCP_TOKEN", OsStr::new(&d.token)),
    ];
    for (how, mut env) in [("browserctl mcp", stdio), ("/mcp", http)] {
        env.push(("UPLOAD_ROOT", root.as_os_str()));
        env.push(("UPLOADS", OsStr::new(&uploads)));
        let client = PythonScript::start("upload client", "mcp_upload_client.py", &env);
        let (calls, ended) = client.serving(&mut ext, "upload client: ok").await;
        let files: Vec<_> = calls.iter().map(got).collect();
        assert_eq!(
            files,
            vec![("cv.txt".to_owned(), "bXkgY3Y=".to_owned())],
            "over {how}, the workspace's file and nothing else reached the page"
        );
        ended.unwrap_or_else(|e| panic!("over {how}: {e}"));
    }
}
