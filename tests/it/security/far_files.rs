//! Issue 58, item 1: files travel as bytes from the machine where the client runs. A dev box
//! reached by `browserctl forward`, or reaching the laptop with `--host`, named a path of the
//! laptop's (the laptop user's 0600 ssh key, which the dev box user cannot read) and the
//! laptop's daemon read it and put it into a page. Now `browserctl` reads the files it is given
//! where it runs and sends their bytes, and the daemon reads a path only for a connection of
//! its own machine: `dial-stdio` and a forward reach it by its relay socket, which only they
//! are pointed at, so whatever comes that way is far by construction, whatever its bytes say.
//! A far request's paths and an MCP client's roots through it are refused (REMOTE_PATH), and a
//! `path` it claims for an inline file is dropped.
//!
//! The real OpenSSH of support/sshd.rs, a throwaway dev box user; the far side is attacked with
//! browserctl, with raw requests of its own (perl or ssh, as the dev box user), and with an MCP
//! client (the official Python SDK's) that declares the laptop key's directory as its root.

use crate::mcp::upload_roots::upload_tool;
use crate::remote::forward::forward_to_devbox;
use crate::support::common::*;
use crate::support::python::*;
use crate::support::sshd::{read_until, Machines, Watchdog};
use base64::Engine;
use serde_json::{json, Value};
use std::ffi::OsStr;
use std::io::{BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

const KEY: &str = "LAPTOP PRIVATE KEY";

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn mode(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

/// The laptop user's key: 0600 in a 0700 directory of theirs (not a hidden name, so that the
/// rule against hidden files does not hide what this test is about).
fn laptop_key(m: &Machines) -> PathBuf {
    let dir = m.path("laptop/dot-ssh");
    std::fs::create_dir(&dir).unwrap();
    mode(&dir, 0o700);
    let key = dir.join("id_ed25519");
    std::fs::write(&key, KEY).unwrap();
    mode(&key, 0o600);
    key
}

/// A file of the dev box user's own, in their home (their working directory).
fn devbox_file(m: &Machines, name: &str, text: &str) {
    let path = m.home.join(name);
    std::fs::write(&path, text).unwrap();
    nix::unistd::chown(
        &path,
        Some(nix::unistd::Uid::from_raw(m.uid)),
        Some(nix::unistd::Gid::from_raw(m.gid)),
    )
    .unwrap();
}

/// Whether a call that reached the browser carried the key.
fn carries_key(call: &Option<Value>) -> bool {
    call.as_ref()
        .is_some_and(|c| c.to_string().contains(&b64(KEY)))
}

/// Runs `job` (a command of the dev box's) while the scripted browser answers whatever call
/// reaches it; returns the output and that call, if one came.
async fn beside(
    ext: &mut FakeExtension,
    job: impl FnOnce() -> Output + Send + 'static,
) -> (Output, Option<Value>) {
    let mut job = tokio::task::spawn_blocking(job);
    tokio::select! {
        out = &mut job => (out.unwrap(), None),
        call = ext.call_within(Duration::from_secs(60)) => (job.await.unwrap(), call),
    }
}

/// A control-API call as the far side may send it, bytes of its own: `connect` is the dev
/// box's command that joins stdin and stdout to the laptop's daemon.
fn raw_call(mut connect: Command, body: &Value) -> Output {
    let body = body.to_string();
    let request = format!(
        "POST /v1/call HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut child = connect
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(request.as_bytes()).unwrap();
    // Kept open until the answer is in: the daemon closes once it answered.
    let mut answer = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut answer)
        .unwrap();
    drop(stdin);
    let mut out = child.wait_with_output().unwrap();
    out.stdout = answer;
    out
}

/// The request a far attacker makes: the key by path, and its directory as an upload root.
fn stealing(key: &Path) -> Value {
    json!({"tool": "browser_file_upload", "tab": "b1:1",
        "args": {"paths": [key]}, "uploadRoots": [key.parent().unwrap()]})
}

/// A far request's own file, with a path of the laptop's claimed for the person's prompt.
fn claiming(key: &Path) -> Value {
    json!({"tool": "browser_file_upload", "tab": "b1:1", "args": {"files": [
        {"name": "cv.txt", "mimeType": "text/plain", "data": b64("FAR CV"), "path": key}]}})
}

/// What went wrong, each attack's own: every attack is tried, and the test fails at the end
/// naming all that got through.
#[derive(Default)]
struct Findings(Vec<String>);

impl Findings {
    fn check(&mut self, ok: bool, what: String) {
        eprintln!("{} {what}", if ok { "held:" } else { "BROKEN:" });
        if !ok {
            self.0.push(what);
        }
    }

    fn end(self) {
        assert!(self.0.is_empty(), "\n{}", self.0.join("\n"));
    }
}

/// The laptop's key never reached the page, and the far side was told why.
fn refused(f: &mut Findings, how: &str, out: &Output, reached: &Option<Value>) {
    let said = format!(
        "{} {}",
        stdout(out).lines().next().unwrap_or(""),
        stderr(out).lines().next().unwrap_or("")
    );
    f.check(
        !carries_key(reached) && reached.is_none() && !stdout(out).contains(&b64(KEY)),
        format!(
            "{how}: the laptop's key stays (reached the page: {}; said: {said})",
            carries_key(reached)
        ),
    );
}

/// A raw request was refused as what it is: paths from another machine.
fn raw_refused(f: &mut Findings, how: &str, out: &Output, reached: &Option<Value>) {
    refused(f, how, out, reached);
    let said = stdout(out);
    f.check(
        said.contains("REMOTE_PATH"),
        format!("{how}: REMOTE_PATH ({})", said.trim()),
    );
}

/// An MCP client on the dev box (the official Python SDK; `argv` starts its browserctl mcp)
/// whose root is the laptop key's directory: its upload of the key is refused as a path of
/// another machine, and never reaches the browser.
async fn mcp_roots_attack(
    f: &mut Findings,
    argv: Vec<String>,
    key: &Path,
    ext: &mut FakeExtension,
) {
    if !python_has_mcp() {
        return skip(
            "security::far_files (MCP roots)",
            "python3 cannot `import mcp`",
            "pip install mcp; .ci/run does",
        );
    }
    let argv = serde_json::to_string(&argv).unwrap();
    let uploads = json!([[key, "REMOTE_PATH"]]).to_string();
    // By the name it listed, and through the meta tool.
    for via in ["listed", "meta"] {
        let env = [
            ("BROWSERCTL_COMMAND", OsStr::new(&argv)),
            ("UPLOAD_ROOT", key.parent().unwrap().as_os_str()),
            ("UPLOADS", OsStr::new(&uploads)),
            ("UPLOAD_VIA", OsStr::new(via)),
        ];
        let client = PythonScript::start("upload client", "mcp_upload_client.py", &env);
        let (calls, ended) = client.serving(ext, "upload client: ok").await;
        let leaked = calls.iter().any(|c| c.to_string().contains(&b64(KEY)));
        f.check(
            !leaked && ended.is_ok(),
            format!(
                "an MCP client's root through the relay ({via}): the key stays (reached the \
                 page: {leaked}), refused REMOTE_PATH ({ended:?})"
            ),
        );
    }
}

/// browserctl on the dev box names `file`: what reached the page, if anything.
async fn devbox_upload(
    m: &Arc<Machines>,
    ext: &mut FakeExtension,
    host: &[&'static str],
    file: PathBuf,
) -> (Output, Option<Value>) {
    let (m, host) = (m.clone(), host.to_vec());
    beside(ext, move || {
        m.devbox_ctl()
            .args(host)
            .args(["call", "browser_file_upload", "--tab", "b1:1", "--paths"])
            .arg(&file)
            .output()
            .unwrap()
    })
    .await
}

/// The dev box's own file went as its bytes, with no path of the laptop's.
fn delivered_as_bytes(f: &mut Findings, how: &str, out: &Output, reached: Option<Value>) {
    let file = reached.map(|c| c["args"]["files"][0].clone());
    let ok = out.status.success()
        && file.as_ref().is_some_and(|file| {
            file["name"] == "notes.txt"
                && file["data"] == b64("DEVBOX NOTES")
                && file.get("path").is_none()
        });
    f.check(
        ok,
        format!(
            "{how}: the dev box's own file goes as its bytes, with no path ({file:?}; {})",
            stderr(out).trim()
        ),
    );
}

/// The two machines; on the laptop, its daemon with a form to upload into, and its user's key.
async fn laptop_with_a_form(
    test: &str,
) -> Option<(Arc<Machines>, TestDaemon, FakeExtension, PathBuf)> {
    let m = Arc::new(Machines::new(test)?);
    let d = m.laptop_daemon();
    let ext = FakeExtension::connect(&d, "s1", vec![tab(1, "Form", vec![upload_tool()])]).await;
    d.wait_tabs("the form", |t| t.len() == 1);
    let key = laptop_key(&m);
    Some((m, d, ext, key))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forward_lends_the_browser_not_the_laptops_files() {
    let Some((m, d, mut ext, key)) = laptop_with_a_form("security::far_files (forward)").await
    else {
        return;
    };
    let mut forward = forward_to_devbox(&m, &d.socket, Stdio::null());
    let _watch = Watchdog::new(forward.0.id(), Duration::from_secs(120));
    let mut lines = BufReader::new(forward.0.stdout.take().unwrap());
    tokio::task::block_in_place(|| {
        read_until(&mut lines, "the link up", |l| l.contains(r#""event":"up""#))
    });

    // browserctl on the dev box, naming the laptop's key: read there, where it is unreadable.
    let mut f = Findings::default();
    let (out, reached) = devbox_upload(&m, &mut ext, &[], key.clone()).await;
    refused(&mut f, "browserctl through a forward", &out, &reached);

    // The same, in bytes of the dev box's own through the forwarded socket.
    let perl = |m: &Machines| {
        let mut perl = m.as_devbox("/usr/bin/perl");
        // stdin to the socket in a child, the socket to stdout here until the daemon closes.
        perl.args([
            "-MIO::Socket::UNIX",
            "-e",
            "my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die \"connect: $!\"; \
             my $pid = fork; if (!$pid) { while (sysread(STDIN, my $b, 65536)) \
             { syswrite($s, $b) } exit 0 } local $/; print <$s>; kill 'TERM', $pid;",
        ])
        .arg(m.forwarded_socket());
        perl
    };
    let (m2, body) = (m.clone(), stealing(&key));
    let (out, reached) = beside(&mut ext, move || raw_call(perl(&m2), &body)).await;
    raw_refused(&mut f, "a raw request through a forward", &out, &reached);

    // A far request's inline file goes, without the laptop path it claims.
    let (m2, body) = (m.clone(), claiming(&key));
    let (out, reached) = beside(&mut ext, move || raw_call(perl(&m2), &body)).await;
    let file = reached.map(|c| c["args"]["files"][0].clone());
    f.check(
        file.as_ref()
            .is_some_and(|f| f["data"] == b64("FAR CV") && f.get("path").is_none()),
        format!(
            "a far inline file goes without the path it claims ({file:?}; {})",
            stdout(&out).trim()
        ),
    );

    // An MCP client on the dev box whose root is the laptop key's directory.
    mcp_roots_attack(&mut f, m.devbox_ctl_argv(&["mcp"]), &key, &mut ext).await;

    // A file of the dev box's own goes as its bytes (relative to where browserctl runs).
    devbox_file(&m, "notes.txt", "DEVBOX NOTES");
    let (out, reached) = devbox_upload(&m, &mut ext, &[], "notes.txt".into()).await;
    delivered_as_bytes(&mut f, "browserctl through a forward", &out, reached);
    f.end();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_through_ssh_uploads_its_own_files_not_the_laptops() {
    let Some((m, _d, mut ext, key)) = laptop_with_a_form("security::far_files (--host)").await
    else {
        return;
    };
    const HOST: &[&str] = &["--host", "ssh://laptop"];

    let mut f = Findings::default();
    let (out, reached) = devbox_upload(&m, &mut ext, HOST, key.clone()).await;
    refused(&mut f, "browserctl --host", &out, &reached);

    // Raw bytes through `ssh laptop browserctl dial-stdio`.
    let (m2, body) = (m.clone(), stealing(&key));
    let (out, reached) = beside(&mut ext, move || {
        let mut ssh = m2.as_devbox("/usr/bin/ssh");
        ssh.arg("-F").arg(m2.path("devbox/ssh_config")).args([
            "laptop",
            "browserctl",
            "dial-stdio",
        ]);
        raw_call(ssh, &body)
    })
    .await;
    raw_refused(&mut f, "a raw request through dial-stdio", &out, &reached);

    mcp_roots_attack(
        &mut f,
        m.devbox_ctl_argv(&["--host", "ssh://laptop", "mcp"]),
        &key,
        &mut ext,
    )
    .await;

    devbox_file(&m, "notes.txt", "DEVBOX NOTES");
    let (out, reached) = devbox_upload(&m, &mut ext, HOST, "notes.txt".into()).await;
    delivered_as_bytes(&mut f, "browserctl --host", &out, reached);
    f.end();
}
