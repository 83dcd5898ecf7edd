//! `browserctl forward ssh://devbox`: lends this machine's browser to another machine that
//! cannot reach this one (a dev box, a cloud workstation, a CI runner behind NAT), over the
//! user's own ssh. Each round:
//!
//! 1. `ssh devbox browserctl forward-end` makes the far end's place (see [`end`]) and says
//!    where it is;
//! 2. `ssh -R FAR:LOCAL devbox browserctl forward-end --hold` forwards the daemon's relay
//!    socket there (issue 58, item 1: the daemon reads no file of its machine for what
//!    comes by it) and, as its session command, checks it answers; its first line says the
//!    link is up;
//! 3. when that ssh ends, the link is down: a new round after a pause that doubles from 1 s
//!    to 30 s (back to 1 s once a link was up).
//!
//! The first round failing for a reason waiting cannot mend (no ssh, an unknown host key,
//! refused keys, no browserctl there, another version) ends the command with that error;
//! once a link was up, every failure is waited out. Ctrl-C or SIGTERM end it, and ssh with it.

pub mod end;
pub mod state;

pub use end::{end, EndArgs};

use super::args::SocketArg;
use super::client::Client;
use super::output::Stop;
use crate::client::ssh::{failure_of, Sharing, SshTarget};
use crate::error::{Error, ErrorCode};
use crate::protocol::control::CONTROL_API;
use serde_json::json;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

#[derive(Debug, Clone, clap::Args)]
pub struct ForwardArgs {
    /// The machine to lend the browser to: ssh://[user@]host[:port].
    #[arg(value_name = "URL")]
    pub destination: SshTarget,
    #[command(flatten)]
    pub socket: SocketArg,
    /// Print each change of the link as a JSON line.
    #[arg(long)]
    pub json: bool,
}

/// `browserctl forward --help`.
pub const LONG_HELP: &str = "Lend this machine's browser to another one you can ssh to (a dev \
box, a cloud workstation, a CI runner behind NAT).

Forwards the daemon's control socket there (`ssh -R`, to a 0600 socket in a 0700 directory of \
the remote user), reconnects when ssh drops, and says what to set on the other side; there, a \
plain `browserctl` (and `browserctl mcp`) finds it without flags. Anyone who is root there can \
use it too. Runs until Ctrl-C or SIGTERM; `browserctl doctor` on either machine says whether \
the link is up.";

const FIRST_PAUSE: Duration = Duration::from_secs(1);
const LONGEST_PAUSE: Duration = Duration::from_secs(30);

/// `--host` where it means nothing: on the command that runs on the browser's machine.
pub fn no_host(command: &str) -> Error {
    Error::bad_request(format!(
        "`browserctl {command}` runs on the machine of the daemon it serves; it takes no --host \
         (unset BROWSER_MCP_HOST)"
    ))
}

/// One line about the link: for people on stderr, or JSON on stdout.
fn say(json: bool, event: &str, target: &SshTarget, text: &str, extra: serde_json::Value) {
    if json {
        let mut line = json!({"event": event, "host": target.to_string(), "message": text});
        if let (Some(l), Some(e)) = (line.as_object_mut(), extra.as_object()) {
            l.extend(e.clone());
        }
        println!("{line}");
    } else {
        eprintln!("browserctl forward: {text}");
    }
}

pub async fn run(client: &Client, args: ForwardArgs, json: bool) -> Result<(), Stop> {
    if client.host().is_some() {
        return Err(no_host("forward").into());
    }
    let target = args.destination;
    // The daemon's relay socket, not its control socket: what comes through it is from the
    // far side, and the daemon reads no file of this machine for it (issue 58, item 1). The
    // far side cannot choose another: ssh's `-R` takes this end from this machine alone.
    let local = crate::paths::relay_socket_path(client.socket());
    // A path ssh cannot take is said now, not met at every round.
    forwardable(&local.to_string_lossy()).map_err(Error::bad_request)?;
    // The daemon must be there (and ours) before its socket is lent to anyone.
    let status = client.status().await?;
    super::dial_stdio::connect_relay(client.socket())?;
    let mut file = state::StateFile::new(target.to_string(), &local);
    file.set("connecting", None);
    let mut pause = FIRST_PAUSE;
    let mut was_up = false;
    let mut told = false;
    loop {
        let round = tokio::select! {
            r = round(&target, &local, &mut file, json, &mut told) => r,
            _ = stop_signal() => return Ok(()),
        };
        let (e, up) = match round {
            Ok(up) => (None, up),
            Err((e, up)) => (Some(e), up),
        };
        was_up |= up;
        if up {
            pause = FIRST_PAUSE;
        }
        if let Some(e) = &e {
            let transient = failure_of(e).is_none() || e.retryable;
            if !was_up && !transient {
                return Err(e.clone().into());
            }
        }
        let why = e
            .as_ref()
            .map(|e| e.message.clone())
            .unwrap_or_else(|| "ssh ended".into());
        file.set("down", Some(why.clone()));
        say(
            json,
            "down",
            &target,
            &format!(
                "link to {target} down ({why}); trying again in {}s",
                pause.as_secs()
            ),
            json!({"retryInMs": pause.as_millis() as u64, "daemon": status.version}),
        );
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = stop_signal() => return Ok(()),
        }
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

async fn stop_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(t) => t,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// One round: the far end made ready, the forward up, until its ssh ends. Returns whether
/// the link was up at some point.
async fn round(
    target: &SshTarget,
    local: &Path,
    file: &mut state::StateFile,
    json: bool,
    told: &mut bool,
) -> Result<bool, (Error, bool)> {
    let api = CONTROL_API.to_string();
    let ready = run_once(
        target,
        &["browserctl", "forward-end", "--control-api", &api],
    )
    .await
    .map_err(|e| (e, false))?;
    let far: serde_json::Value = serde_json::from_str(ready.trim()).map_err(|_| {
        (
            Error::internal(format!(
                "the browserctl on {} answered forward-end with `{}`",
                target.host,
                ready.trim()
            )),
            false,
        )
    })?;
    let far = far["socket"].as_str().unwrap_or_default().to_owned();
    if far.is_empty() {
        return Err((Error::internal("forward-end named no socket"), false));
    }
    file.state.remote_socket = Some(far.clone());
    // The reverse forward of a Unix socket, refused at once if it cannot be made, and
    // ended when the other side stops answering.
    let forward =
        forward_spec(&far, &local.to_string_lossy()).map_err(|e| (Error::internal(e), false))?;
    let mut cmd = tokio::process::Command::from(target.command(
        Sharing::Own,
        &[
            "-o",
            "ExitOnForwardFailure=yes",
            "-o",
            "StreamLocalBindUnlink=yes",
            "-o",
            "ServerAliveInterval=10",
            "-o",
            "ServerAliveCountMax=3",
            "-R",
            &forward,
        ],
        &["browserctl", "forward-end", "--hold", "--control-api", &api],
    ));
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| (target.spawn_error(&e), false))?;
    let mut stderr = child.stderr.take().expect("piped");
    let said = tokio::spawn(async move {
        let mut text = Vec::new();
        let _ = (&mut stderr).take(64 << 10).read_to_end(&mut text).await;
        String::from_utf8_lossy(&text).into_owned()
    });
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let mut up = false;
    if let Ok(Some(line)) = lines.next_line().await {
        if serde_json::from_str::<serde_json::Value>(&line).is_ok_and(|v| v["up"] == true) {
            up = true;
            file.set("up", None);
            let text = if *told {
                format!("link to {target} up again")
            } else {
                format!(
                    "link to {target} up: this machine's browser answers at {far} there. \
                     There, `browserctl tabs` and `browserctl mcp` find it without flags \
                     (or set BROWSER_MCP_SOCKET={far}). Anyone who is root there can use it \
                     too. Ctrl-C here ends it."
                )
            };
            *told = true;
            say(json, "up", target, &text, json!({"socket": far}));
        }
    }
    // Drains what else comes (nothing is expected) until ssh ends.
    while let Ok(Some(_)) = lines.next_line().await {}
    let status = child.wait().await;
    let said = said.await.unwrap_or_default();
    match status {
        Ok(s) if s.success() => Ok(up),
        Ok(s) => Err((target.exit_error(s, &said), up)),
        Err(e) => Err((target.spawn_error(&e), up)),
    }
}

/// Runs a remote browserctl subcommand to its end and returns its stdout.
async fn run_once(target: &SshTarget, remote: &[&str]) -> Result<String, Error> {
    let mut cmd = tokio::process::Command::from(target.command(Sharing::Own, &[], remote));
    cmd.stdin(Stdio::null()).kill_on_drop(true);
    let out = cmd.output().await.map_err(|e| target.spawn_error(&e))?;
    if !out.status.success() {
        return Err(target.exit_error(out.status, &String::from_utf8_lossy(&out.stderr)));
    }
    String::from_utf8(out.stdout).map_err(|_| {
        Error::new(
            ErrorCode::Internal,
            "the remote browserctl answered in bytes that are not text",
        )
    })
}

/// ssh's `-R` for two socket paths. Bracketed, as ssh takes an IPv6 address, so that a `:` in
/// either path does not split it.
fn forward_spec(far: &str, local: &str) -> Result<String, String> {
    forwardable(far)?;
    forwardable(local)?;
    Ok(format!("[{far}]:[{local}]"))
}

/// A `]` cannot be said in a bracketed path.
fn forwardable(path: &str) -> Result<(), String> {
    if path.contains(']') {
        return Err(format!(
            "cannot forward {path}: ssh -R takes no path with a `]`"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::forward_spec;

    /// ssh itself reads the spec back (`ssh -G` parses and prints, connecting nowhere).
    #[test]
    fn a_path_with_a_colon_is_forwarded_whole() {
        let spec = forward_spec(
            "/run/user/1000/browser-mcp/forwarded.sock",
            "/tmp/a:b/c d.sock",
        )
        .unwrap();
        let out = std::process::Command::new("ssh")
            .args(["-G", "-F", "/dev/null", "-R", &spec, "localhost"])
            .output()
            .expect("ssh (OpenSSH's client) is needed for this test");
        let config = String::from_utf8_lossy(&out.stdout);
        assert!(
            config.contains(
                "remoteforward /run/user/1000/browser-mcp/forwarded.sock /tmp/a:b/c d.sock"
            ),
            "{config}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(forward_spec("/x", "/tmp/a]b").is_err());
    }
}
