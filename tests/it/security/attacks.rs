//! Attacks, each a test: a web page (Origin, DNS rebinding), another local user (control
//! socket, discovery and socket directories they own or can write), a process without the
//! token, and the token's own secrecy (file modes, logs).

use crate::support::common::*;
use crate::support::harness::*;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

const EVIL: &str = "http://evil.example";

#[tokio::test(flavor = "multi_thread")]
async fn web_origins_and_foreign_hosts_are_refused_on_every_route() {
    let d = TestDaemon::start();
    let port = d.port;
    let auth = format!("Authorization: Bearer {}\r\n", d.token);
    let agent = format!("/ws?sessionId=s&clientType=agent&token={}", d.token);
    let routes: Vec<(String, String)> = vec![
        ("GET /".into(), upgrade_request("/", port, "")),
        ("GET /ws browser".into(), upgrade_request("/ws?sessionId=s&clientType=browser", port, "")),
        ("GET /ws agent".into(), upgrade_request(&agent, port, "")),
        (
            "POST /register".into(),
            format!("POST /register HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"),
        ),
        (
            "POST /mcp".into(),
            format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"),
        ),
    ];
    for (name, req) in &routes {
        let (head, rest) = req.split_once("\r\n").unwrap();
        // From a web page it is 403, and so it is through a rebound DNS name.
        for (what, extra) in [
            ("Origin", format!("Origin: {EVIL}\r\n")),
            ("Origin null", "Origin: null\r\n".to_owned()),
        ] {
            let answer = raw_http(
                port,
                &format!("{head}\r\nConnection: close\r\n{extra}{rest}"),
            )
            .await;
            let (status, v) = parse_response(&answer);
            assert_eq!(status, 403, "{name} with {what}: {answer}");
            assert_eq!(v["error"]["code"], "UNAUTHORIZED", "{name}");
        }
        let rebound = format!("{head}\r\nConnection: close\r\n{rest}").replace(
            &format!("Host: 127.0.0.1:{port}"),
            &format!("Host: evil.example:{port}"),
        );
        let (status, _) = parse_response(&raw_http(port, &rebound).await);
        assert_eq!(status, 403, "{name} with Host: evil.example");
    }
    let s = status(&d).await;
    assert_eq!(s["browsers"], 0, "nothing got in: {s}");
}

#[test]
fn non_loopback_binds_are_refused_at_start_from_flags_env_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(&file, "bind = \"0.0.0.0\"\n").unwrap();
    let run = |args: &[&str], env: Option<(&str, &str)>| {
        let mut c = Command::new(DAEMON);
        c.args(["--port", "0", "--socket"])
            .arg(dir.path().join("s"))
            .arg("--discovery-dir")
            .arg(dir.path().join("d"))
            .args(args)
            .env_remove("BROWSER_MCP_BIND")
            .env("XDG_CONFIG_HOME", dir.path().join("none"));
        if let Some((k, v)) = env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    for (args, env) in [
        (vec!["--bind", "0.0.0.0"], None),
        (vec!["--bind", "::"], None),
        (vec!["--bind", "192.0.2.7"], None),
        (vec![], Some(("BROWSER_MCP_BIND", "0.0.0.0"))),
        (vec!["--config", file.to_str().unwrap()], None),
    ] {
        let out = run(&args, env);
        assert!(!out.status.success(), "{args:?} {env:?}");
        assert!(
            stderr(&out).contains("loopback"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

/// Runs a command as `nobody` (uid/gid 65534), or says why it cannot.
fn as_nobody(program: &Path, args: &[&str]) -> Result<std::process::Output, String> {
    if !nix::unistd::geteuid().is_root() {
        return Err("not running as root, so no other user to become".into());
    }
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let runuser = ["/usr/sbin/runuser", "/sbin/runuser"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    let mut c = match (setpriv, runuser) {
        (Some(s), _) => {
            let mut c = Command::new(s);
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(program);
            c
        }
        (None, Some(r)) => {
            let mut c = Command::new(r);
            c.args(["-u", "nobody", "--"]).arg(program);
            c
        }
        (None, None) => return Err("neither setpriv nor runuser is installed".into()),
    };
    c.args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())
}

#[test]
fn the_control_socket_is_private_and_other_users_are_refused() {
    // The default layout: the daemon makes the socket's directory 0700 and the socket 0600.
    let d = TestDaemon::start();
    let private = tempfile::tempdir().unwrap();
    let sock_dir = private.path().join("run/browser-mcp");
    let d2 = {
        let dir = tempfile::tempdir().unwrap();
        let socket = sock_dir.join("browser-mcpd.sock");
        let mut c = Command::new(DAEMON);
        c.args(["--port", "0", "--socket"])
            .arg(&socket)
            .arg("--discovery-dir")
            .arg(dir.path().join("d"));
        let child = c.stderr(Stdio::null()).spawn().unwrap();
        let guard = KillOnDrop(child);
        wait_until(std::time::Duration::from_secs(20), "the socket", || {
            socket.exists().then_some(())
        });
        (guard, dir, socket)
    };
    assert_eq!(
        std::fs::metadata(&sock_dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(
        std::fs::metadata(&d2.2).unwrap().permissions().mode() & 0o777,
        0o600
    );
    drop(d2);

    // Another user, twice: the socket's mode stops them in the kernel; and with the mode
    // loosened (a umask accident, a copied socket), the daemon's own peer-uid check does.
    let world = tempfile::Builder::new()
        .prefix("bmcp-attack")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(world.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let ctl = world.path().join("browserctl");
    std::fs::copy(CTL, &ctl).unwrap();
    std::fs::set_permissions(&ctl, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = tempfile::Builder::new()
        .prefix("bmcp-sock")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let socket = dir.path().join("ctl.sock");
    let disco = tempfile::tempdir().unwrap();
    let child = Command::new(DAEMON)
        .args(["--port", "0", "--socket"])
        .arg(&socket)
        .arg("--discovery-dir")
        .arg(disco.path().join("d"))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _guard = KillOnDrop(child);
    wait_until(std::time::Duration::from_secs(20), "the socket", || {
        socket.exists().then_some(())
    });
    let sock = socket.to_str().unwrap();
    let out = match as_nobody(&ctl, &["--socket", sock, "--json", "status"]) {
        Ok(out) => out,
        Err(why) => {
            return skip(
                "attacks: the other-user part",
                &why,
                "run the tests as root with setpriv or runuser installed",
            )
        }
    };
    assert_eq!(
        exit_code(&out),
        3,
        "EACCES on a 0600 socket: {}",
        stderr(&out)
    );
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = as_nobody(&ctl, &["--socket", sock, "--json", "status"]).unwrap();
    assert_eq!(
        exit_code(&out),
        10,
        "the daemon refuses uid 65534: {}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("UNAUTHORIZED") && stderr(&out).contains("another user"),
        "{}",
        stderr(&out)
    );
    // Nor may they list or answer the person's consent prompts (issue 60).
    for words in [
        &["consent", "list"][..],
        &["consent", "answer", "browser-mcp-consent-1-1", "allow-once"][..],
    ] {
        let mut args = vec!["--socket", sock, "--json"];
        args.extend_from_slice(words);
        let out = as_nobody(&ctl, &args).unwrap();
        assert_eq!(exit_code(&out), 10, "{words:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("another user"), "{}", stderr(&out));
    }
    // Root and the owner are served.
    let out = Command::new(CTL)
        .args(["--socket", sock, "--json", "status"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    drop(d);
}

#[tokio::test(flavor = "multi_thread")]
async fn agents_and_mcp_need_the_token() {
    let d = TestDaemon::start();
    let port = d.port;
    for (what, path, extra) in [
        (
            "agent without token",
            "/ws?sessionId=s&clientType=agent".to_owned(),
            String::new(),
        ),
        (
            "agent, wrong token",
            "/ws?sessionId=s&clientType=agent&token=wrong".to_owned(),
            String::new(),
        ),
        (
            "agent, token of another length",
            format!("/ws?sessionId=s&clientType=agent&token={}x", d.token),
            String::new(),
        ),
        (
            "agent, wrong bearer",
            "/ws?sessionId=s&clientType=agent".to_owned(),
            "Authorization: Bearer nope\r\n".to_owned(),
        ),
    ] {
        let (status, v) =
            parse_response(&raw_http(port, &upgrade_request(&path, port, &extra)).await);
        assert_eq!(status, 401, "{what}: {v}");
        assert_eq!(v["error"]["code"], "UNAUTHORIZED");
    }
    let mcp = |auth: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n{auth}Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
        )
    };
    for auth in [
        String::new(),
        "Authorization: Bearer wrong\r\n".to_owned(),
        format!("Authorization: Basic {}\r\n", d.token),
        format!("Authorization: Bearer {}0\r\n", d.token),
    ] {
        let answer = raw_http(port, &mcp(&auth)).await;
        assert_eq!(parse_response(&answer).0, 401, "{auth:?}: {answer}");
    }
    // The token in the query does not count for /mcp (URLs end up in logs and histories).
    let answer = raw_http(
        port,
        &mcp("").replace("POST /mcp ", &format!("POST /mcp?token={} ", d.token)),
    )
    .await;
    assert_eq!(parse_response(&answer).0, 401, "{answer}");
    let answer = raw_http(
        port,
        &mcp(&format!("Authorization: Bearer {}\r\n", d.token)),
    )
    .await;
    assert_ne!(parse_response(&answer).0, 401, "{answer}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_token_never_reaches_the_log() {
    for level in ["debug", "trace"] {
        let dir = tempfile::tempdir().unwrap();
        // Short handshakes: the accepted WebSockets below are left to time out.
        let d = TestDaemon::builder()
            .dir(dir)
            .args(&["--handshake-timeout", "200ms", "--sniff-window", "50ms"])
            .env("BROWSER_MCP_LOG_LEVEL", level)
            .start();
        let port = d.port;
        let token = d.token.clone();
        let mode = std::fs::metadata(&d.discovery_file)
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600, "the file with the token");
        // Every way the token travels, accepted and refused.
        let mut agent = crate::support::peers::RpcPeer::connect(&d, "s", "agent").await;
        agent.request("ping", serde_json::json!({})).await;
        for req in [
            upgrade_request(&format!("/?token={token}"), port, ""),
            upgrade_request(&format!("/?token={token}"), port, &format!("Origin: {EVIL}\r\n")),
            upgrade_request(&format!("/ws?sessionId=s&clientType=agent&token={token}"), port, "Origin: https://evil.example\r\n"),
            upgrade_request(&format!("/ws?sessionId=bad%20id&clientType=agent&token={token}"), port, ""),
            upgrade_request("/ws?sessionId=s&clientType=agent", port, &format!("Authorization: Bearer {token}\r\nOrigin: {EVIL}\r\n")),
            format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer {token}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"),
            format!("POST /mcp?token={token} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"),
        ] {
            let _ = raw_http(port, &req).await;
        }
        drop(agent);
        let mut d = d;
        d.terminate();
        let log = d.log();
        assert!(
            log.len() > 1000,
            "{level}: the daemon logged something:\n{log}"
        );
        assert!(
            !log.contains(&token),
            "{level}: the token is in the log:\n{log}"
        );
    }
}

/// A directory `name` under `root` with this mode (and owner 65534 when `nobody`).
fn dir_with(root: &Path, name: &str, mode: u32, nobody: bool) -> std::path::PathBuf {
    let dir = root.join(name);
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
    if nobody {
        let (uid, gid) = (
            nix::unistd::Uid::from_raw(65534),
            nix::unistd::Gid::from_raw(65534),
        );
        nix::unistd::chown(&dir, Some(uid), Some(gid)).unwrap();
    }
    dir
}

/// The daemon did not start, and said `why`.
fn refused(out: &std::process::Output, why: &str) {
    assert!(!out.status.success(), "started: {}", stderr(out));
    assert!(stderr(out).contains(why), "{}", stderr(out));
}

#[test]
fn discovery_directories_others_control_are_refused() {
    let start = |disco: &Path| {
        let dir = tempfile::tempdir().unwrap();
        Command::new(DAEMON)
            .args(["--port", "0", "--socket"])
            .arg(dir.path().join("s.sock"))
            .arg("--discovery-dir")
            .arg(disco)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let root = tempfile::tempdir().unwrap();
    // World-writable without the sticky bit.
    let open = dir_with(root.path(), "open", 0o777, false);
    refused(
        &start(&open),
        "writable by other users (mode 777) and not sticky",
    );
    // A symlink to a directory (whoever made it).
    let real = dir_with(root.path(), "real", 0o700, false);
    let link = root.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    refused(&start(&link), "symlink");
    assert_eq!(
        std::fs::read_dir(&real).unwrap().count(),
        0,
        "nothing written through it"
    );
    // Owned by another user (needs root to make one).
    if nix::unistd::geteuid().is_root() {
        let theirs = dir_with(root.path(), "theirs", 0o700, true);
        // Someone else's directory blocks nobody (issue 18): the daemon starts, with its
        // discovery file in its own runtime directory, says why, and puts nothing in theirs.
        let run = tempfile::tempdir().unwrap();
        let log = root.path().join("theirs.log");
        let child = Command::new(DAEMON)
            .args(["--port", "0", "--socket"])
            .arg(run.path().join("s.sock"))
            .arg("--discovery-dir")
            .arg(&theirs)
            .env("XDG_RUNTIME_DIR", run.path())
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let pid = child.id();
        let _guard = KillOnDrop(child);
        let file = run
            .path()
            .join(format!("browser-mcp/discovery/server-{pid}.json"));
        wait_until(
            std::time::Duration::from_secs(20),
            "the fallback file",
            || file.exists().then_some(()),
        );
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("belongs to uid 65534"), "{text}");
        assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 0);
    } else {
        skip(
            "attacks: the other-owner case",
            "not running as root",
            "run the tests as root",
        );
    }
}

#[test]
fn a_socket_directory_others_can_write_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let start = |sock_dir: &Path| {
        Command::new(DAEMON)
            .args(["--port", "0", "--socket"])
            .arg(sock_dir.join("ctl.sock"))
            .arg("--discovery-dir")
            .arg(root.path().join("d"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let open = dir_with(root.path(), "open", 0o777, false);
    refused(&start(&open), "writable by other users");
    let group = dir_with(root.path(), "group", 0o770, false);
    assert!(!start(&group).status.success(), "group-writable");
    let link = root.path().join("link");
    std::os::unix::fs::symlink(&open, &link).unwrap();
    refused(&start(&link), "symlink");
    if nix::unistd::geteuid().is_root() {
        let theirs = dir_with(root.path(), "theirs", 0o755, true);
        refused(&start(&theirs), "belongs to uid 65534");
    }
    // A sticky world-writable directory (like /tmp) is fine: nobody can replace our socket.
    let sticky = dir_with(root.path(), "sticky", 0o1777, false);
    let mut child = Command::new(DAEMON)
        .args(["--port", "0", "--socket"])
        .arg(sticky.join("ctl.sock"))
        .arg("--discovery-dir")
        .arg(root.path().join("d"))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(std::time::Duration::from_secs(20), "the socket", || {
        sticky.join("ctl.sock").exists().then_some(())
    });
    let _ = child.kill();
    let _ = child.wait();
}
