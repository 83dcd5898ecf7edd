//! Issue 58, item 7: an upload root others may write in (a shared folder) is a race course.
//! The daemon checked a path with its symlinks resolved, then opened it again by name; another
//! user (`nobody`, through setpriv) who swaps the file for a symlink to the person's key between
//! the two got the key uploaded, about one try in ten. Now the file is opened beneath its root
//! with no symlink followed anywhere (openat2, or one component at a time), and judged on the
//! descriptor it was read from: of N tries while the swap runs, none delivers the key.

use crate::mcp::upload_roots::upload_tool;
use crate::support::common::*;
use crate::support::harness::{post_request, raw_request_at};
use crate::support::impostor::{become_nobody, other_user_or_skip, NOBODY};
use base64::Engine;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const TRIES: usize = 400;
const KEY: &str = "RACE-SECRET-KEY";

/// Puts a symlink to the key at `doc.txt`, then a harmless file, over and over, each by an
/// atomic rename, as fast as it can.
const SWAP: &str = r#"
my ($dir, $key) = @ARGV;
while (1) {
    symlink($key, "$dir/.bad") or die "symlink: $!";
    rename("$dir/.bad", "$dir/doc.txt") or die "rename: $!";
    open(my $f, '>', "$dir/.good") or die "open: $!";
    print $f "harmless";
    close $f;
    rename("$dir/.good", "$dir/doc.txt") or die "rename: $!";
}
"#;

fn post_call(socket: &Path, path: &Path) -> (u16, String) {
    let body = json!({"tool": "browser_file_upload", "tab": "b1:1", "args": {"paths": [path]}});
    raw_request_at(socket, &post_request("/v1/call", &body))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_symlink_swapped_in_a_shared_root_never_uploads_what_it_points_to() {
    if other_user_or_skip("security::upload_race").is_none() {
        return;
    }
    let base = tempfile::Builder::new()
        .prefix("bmcp-race")
        .tempdir_in("/tmp")
        .unwrap();
    set_mode(base.path(), 0o755);
    // The person's key, theirs alone.
    let private = base.path().join("private");
    std::fs::create_dir(&private).unwrap();
    set_mode(&private, 0o700);
    let key = private.join("id_ed25519");
    std::fs::write(&key, KEY).unwrap();
    // The shared folder the person made an upload root: another user writes in it.
    let shared: PathBuf = base.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    nix::unistd::chown(
        &shared,
        Some(nix::unistd::Uid::from_raw(NOBODY)),
        Some(nix::unistd::Gid::from_raw(NOBODY)),
    )
    .unwrap();
    set_mode(&shared, 0o755);
    let d = TestDaemon::builder()
        .args(&["--upload-root", shared.to_str().unwrap()])
        .start();
    let mut ext = FakeExtension::connect(&d, "s1", vec![tab(1, "Form", vec![upload_tool()])]).await;
    d.wait_tabs("the form", |t| t.len() == 1);

    let mut words = become_nobody().expect("setpriv or runuser");
    words.extend(["/usr/bin/perl".into(), "-e".into(), SWAP.into()]);
    let mut swapper = KillOnDrop(
        Command::new(&words[0])
            .args(&words[1..])
            .arg(&shared)
            .arg(&key)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let doc = shared.join("doc.txt");
    wait_until(Duration::from_secs(10), "the swap to begin", || {
        std::fs::symlink_metadata(&doc).ok()
    });

    let socket = d.socket.clone();
    let (path, tries) = (doc.clone(), TRIES);
    let mut poster = tokio::task::spawn_blocking(move || {
        (0..tries).map(|_| post_call(&socket, &path)).collect()
    });
    let mut delivered: Vec<Value> = Vec::new();
    let answers: Vec<(u16, String)> = loop {
        tokio::select! {
            done = &mut poster => break done.unwrap(),
            call = ext.call_within(Duration::from_secs(60)) => {
                delivered.push(call.expect("a call, or the end of the tries"));
            }
        }
    };
    assert!(
        swapper.0.try_wait().unwrap().is_none(),
        "the swap ran all along"
    );
    let data = |c: &Value| {
        let d = c["args"]["files"][0]["data"].as_str().unwrap_or_default();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(d)
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let leaked = delivered.iter().filter(|c| data(c) == KEY).count();
    let harmless = delivered.iter().filter(|c| data(c) == "harmless").count();
    let refused = answers.iter().filter(|(s, _)| *s == 400).count();
    eprintln!(
        "{TRIES} tries while the file was swapped: {harmless} harmless uploads, {refused} \
         refused, {leaked} delivered the key"
    );
    assert_eq!(
        leaked, 0,
        "the key went to the page {leaked} times of {TRIES}"
    );
    assert!(harmless > 0, "uploads from the root still work");
    assert!(
        answers.iter().all(|(_, text)| !text.contains(KEY)),
        "never the key's bytes in an answer"
    );
}
