//! What an agent may upload (issue 31): `browser_file_upload`'s `paths` are read only inside an
//! upload root — the daemon's `--upload-root`, an MCP client's own roots (`roots/list`) for its
//! calls, the files a person names to `browserctl call` — symlinks resolved first, and nothing
//! hidden below a root. A real daemon and `browserctl`; the browser is scripted, since the
//! daemon decides before anything reaches it. (Roots are deprecated by SEP-2577 in the newest
//! protocol drafts; the clients of today still declare them, see src/mcp/roots.rs.)
#![allow(deprecated)]

use super::rmcp_client::stdio_with;
use crate::support::common::*;
use crate::support::harness::{post_request, raw_request_at};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, JsonObject,
    ListRootsResult, Root,
};
use rmcp::service::{RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) fn upload_tool() -> Value {
    json!({"name": "browser_file_upload", "description": "Set files on a file input",
        "inputSchema": {"type": "object", "properties": {
            "selector": {"type": "string"}, "paths": {"type": "array", "items": {"type": "string"}},
            "files": {"type": "array"}}}})
}

/// A home with documents, a hidden `.ssh` and a symlink from the documents into it.
pub(crate) struct Home {
    pub(crate) dir: tempfile::TempDir,
}

impl Home {
    pub(crate) fn new() -> Home {
        let dir = tempfile::Builder::new().prefix("home").tempdir().unwrap();
        let docs = dir.path().join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::create_dir_all(dir.path().join(".ssh")).unwrap();
        std::fs::write(docs.join("cv.txt"), "my cv").unwrap();
        std::fs::write(docs.join(".env"), "TOKEN=1").unwrap();
        std::fs::write(dir.path().join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "notes").unwrap();
        std::os::unix::fs::symlink(dir.path().join(".ssh/id_ed25519"), docs.join("key.txt"))
            .unwrap();
        Home { dir }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
}

fn request(body: &Value) -> String {
    post_request("/v1/call", body)
}

fn post_call(d: &TestDaemon, body: &Value) -> (u16, Value) {
    let (status, text) = raw_request_at(&d.socket, &request(body));
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The same on a thread of its own, while the scripted browser answers.
fn post_call_later(d: &TestDaemon, body: Value) -> tokio::task::JoinHandle<u16> {
    let socket = d.socket.clone();
    tokio::task::spawn_blocking(move || raw_request_at(&socket, &request(&body)).0)
}

/// The file the browser got, as the call carried it to the extension.
pub(crate) fn got(call: &Value) -> (String, String) {
    let f = &call["args"]["files"][0];
    (
        f["name"].as_str().unwrap().to_owned(),
        f["data"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn only_files_inside_an_upload_root_reach_the_page() {
    let home = Home::new();
    let docs = home.path("docs");
    let d = TestDaemon::builder()
        .args(&["--upload-root", docs.to_str().unwrap()])
        .start();
    let mut ext = FakeExtension::connect(&d, "s1", vec![tab(1, "Form", vec![upload_tool()])]).await;
    d.wait_tabs("tab", |t| t.len() == 1);
    let call =
        |p: &Path| json!({"tool": "browser_file_upload", "tab": "b1:1", "args": {"paths": [p]}});

    // Inside the root: read, sent inline.
    let sent = post_call_later(&d, call(&docs.join("cv.txt")));
    let seen = ext.answer_call(json!({"content": []})).await;
    assert_eq!(sent.await.unwrap(), 200);
    assert_eq!(got(&seen), ("cv.txt".into(), "bXkgY3Y=".into()));

    // Outside it, through a symlink, hidden below it, or a root's parent by `..`: refused by
    // the daemon, with the setting named; the browser hears nothing.
    for (p, says) in [
        (home.path(".ssh/id_ed25519"), "not inside an upload root"),
        (docs.join("key.txt"), "not inside an upload root"),
        (docs.join(".env"), "hidden"),
        (docs.join("../.ssh/id_ed25519"), "not inside an upload root"),
        (home.path("notes.txt"), "--upload-root"),
    ] {
        let (status, v) = post_call(&d, &call(&p));
        assert_eq!(status, 400, "{}: {v}", p.display());
        assert_eq!(v["error"]["code"], "INVALID_ARGUMENTS", "{v}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains(says), "{}: {msg}", p.display());
        assert!(!msg.contains("PRIVATE KEY"), "{msg}");
    }
    // The extension got no call meanwhile: the next message it sees is the next call's.
    let sent = post_call_later(&d, call(&docs.join("cv.txt")));
    let seen = ext.answer_call(json!({"content": []})).await;
    assert_eq!(
        got(&seen).0,
        "cv.txt",
        "no refused file reached the browser"
    );
    assert_eq!(sent.await.unwrap(), 200);

    // browserctl call: the file a person names on the command line is theirs to upload, from
    // where they are, though it is outside every root.
    let (socket, cwd) = (d.socket.clone(), home.dir.path().to_owned());
    let cli = tokio::task::spawn_blocking(move || {
        Command::new(CTL)
            .arg("--socket")
            .arg(&socket)
            .args([
                "call",
                "browser_file_upload",
                "--tab",
                "b1:1",
                "--paths",
                "notes.txt",
            ])
            .current_dir(cwd)
            .output()
            .unwrap()
    });
    let seen = ext.answer_call(json!({"content": []})).await;
    let out = cli.await.unwrap();
    assert_eq!(exit_code(&out), 0, "{}", stderr(&out));
    assert_eq!(got(&seen), ("notes.txt".into(), "bm90ZXM=".into()));
}

/// An MCP client whose workspace is one directory.
#[derive(Clone)]
pub(crate) struct Workspace(pub(crate) String);

impl ClientHandler for Workspace {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_roots().build(),
            Implementation::new("workspace-agent", "1.0"),
        )
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(vec![Root::new(format!(
            "file://{}",
            self.0
        ))]))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_clients_roots_are_where_its_uploads_come_from() {
    let home = Home::new();
    let d = TestDaemon::start(); // no --upload-root: the client's roots alone
    let mut ext = FakeExtension::connect(&d, "s1", vec![tab(1, "Form", vec![upload_tool()])]).await;
    d.wait_tabs("tab", |t| t.len() == 1);
    let docs = home.path("docs").display().to_string();
    let client = stdio_with(&d, &[], Workspace(docs.clone())).await;
    let upload = |p: PathBuf| {
        let Value::Object(args) = json!({"paths": [p], "tab": "b1:1"}) else {
            unreachable!()
        };
        CallToolRequestParams::new("browser_file_upload").with_arguments(args as JsonObject)
    };

    let call = client.call_tool(upload(home.path("docs/cv.txt")));
    let (r, seen) = tokio::join!(call, ext.answer_call(json!({"content": []})));
    let r = serde_json::to_value(r.expect("tools/call")).unwrap();
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(got(&seen).0, "cv.txt");

    for p in [
        home.path(".ssh/id_ed25519"),
        home.path("docs/key.txt"),
        home.path("notes.txt"),
    ] {
        let r = client
            .call_tool(upload(p.clone()))
            .await
            .expect("tools/call");
        let r = serde_json::to_value(r).unwrap();
        assert_eq!(r["isError"], true, "{}: {r}", p.display());
        let text = r.to_string();
        assert!(text.contains("not inside an upload root"), "{text}");
        assert!(!text.contains("PRIVATE KEY"), "{text}");
    }
    client.cancel().await.ok();
}
