//! Another machine, reached through the system's OpenSSH (as `DOCKER_HOST=ssh://` does): the
//! `ssh://[user@]host[:port]` address, the `ssh` command line that runs a `browserctl`
//! subcommand there, and ssh's failures as errors a person can act on.
//!
//! Nothing here listens on a network: ssh carries the bytes, with the user's own keys, known
//! hosts and config. Host keys are checked as ssh checks them; `BatchMode` only keeps ssh from
//! asking on a terminal nobody watches (an MCP client's child has none).

use crate::error::{Error, ErrorBody, ErrorCode};
use serde_json::json;
use std::fmt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::str::FromStr;

/// `--host`'s environment variable.
pub const HOST_ENV: &str = "BROWSER_MCP_HOST";
/// The ssh program and options of its own, split on spaces (`ssh -F ~/.ssh/work_config`).
pub const SSH_COMMAND_ENV: &str = "BROWSER_MCP_SSH_COMMAND";
/// Seconds the shared SSH connection outlives the last command (ssh's `ControlPersist`);
/// `0`: one connection per command, none shared.
pub const PERSIST_ENV: &str = "BROWSER_MCP_SSH_PERSIST";
const DEFAULT_PERSIST: u32 = 60;

/// Why a link to another machine failed: `details.link` of the error, for scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkFailure {
    /// No `ssh` program here.
    NoSsh,
    /// ssh does not know the other machine's host key (and will not guess).
    HostKeyUnknown,
    /// The other machine's host key is not the one ssh knows.
    HostKeyChanged,
    /// The other machine refused our keys.
    AuthFailed,
    /// No connection: name not resolved, refused, timed out.
    Unreachable,
    /// ssh got in, but no `browserctl` runs there.
    NoRemoteBrowserctl,
    /// The `browserctl` there speaks another control API, or predates remote use.
    VersionMismatch,
    /// Any other failure of ssh (its own words follow).
    SshFailed,
}

impl LinkFailure {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkFailure::NoSsh => "NO_SSH",
            LinkFailure::HostKeyUnknown => "HOST_KEY_UNKNOWN",
            LinkFailure::HostKeyChanged => "HOST_KEY_CHANGED",
            LinkFailure::AuthFailed => "AUTH_FAILED",
            LinkFailure::Unreachable => "UNREACHABLE",
            LinkFailure::NoRemoteBrowserctl => "NO_REMOTE_BROWSERCTL",
            LinkFailure::VersionMismatch => "VERSION_MISMATCH",
            LinkFailure::SshFailed => "SSH_FAILED",
        }
    }

    /// Whether trying again later can help (the forward keeps trying only then).
    pub fn transient(self) -> bool {
        matches!(self, LinkFailure::Unreachable | LinkFailure::SshFailed)
    }
}

/// The error of a failed link: DAEMON_UNAVAILABLE (exit 3), with `details.link` and `host`.
pub fn link_error(kind: LinkFailure, target: &SshTarget, message: String) -> Error {
    Error::new(ErrorCode::DaemonUnavailable, message)
        .retryable(kind.transient())
        .with_details(json!({"link": kind.as_str(), "host": target.to_string()}))
}

/// A word for the far side's shell, which is handed ssh's remote command as one line.
pub fn shell_quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=,:@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// The kind of a link error, if it is one.
pub fn failure_of(e: &Error) -> Option<&str> {
    e.details.as_ref()?.get("link")?.as_str()
}

/// `ssh://[user@]host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
}

impl FromStr for SshTarget {
    type Err = String;

    /// ```
    /// use browser_mcp::client::SshTarget;
    /// let t: SshTarget = "ssh://me@laptop:2222".parse().unwrap();
    /// assert_eq!((t.user.as_deref(), t.host.as_str(), t.port), (Some("me"), "laptop", Some(2222)));
    /// assert!("laptop".parse::<SshTarget>().is_err());
    /// ```
    fn from_str(s: &str) -> Result<SshTarget, String> {
        let bad = |why: &str| format!("`{s}` is not an ssh://[user@]host[:port] address: {why}");
        let rest = s
            .strip_prefix("ssh://")
            .ok_or_else(|| bad("it must start with ssh://"))?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#']) {
            return Err(bad("no path, query or fragment"));
        }
        let (user, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) => (Some(u.to_owned()), h),
            None => (None, rest),
        };
        let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or_else(|| bad("unclosed ["))?;
            match after.strip_prefix(':') {
                Some(p) => (h, Some(p)),
                None if after.is_empty() => (h, None),
                None => return Err(bad("junk after ]")),
            }
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            }
        };
        let port = port
            .map(|p| {
                p.parse::<u16>()
                    .map_err(|_| bad("the port is not a number"))
            })
            .transpose()?;
        // ssh reads a word that starts with `-` as an option (`-oProxyCommand=…` runs a
        // program): neither the host nor the user may look like one.
        let word_ok = |w: &str| {
            !w.is_empty()
                && !w.starts_with('-')
                && !w.chars().any(|c| c.is_whitespace() || c.is_control())
        };
        if !word_ok(host) {
            return Err(bad("the host is empty or starts with -"));
        }
        if let Some(u) = &user {
            if !word_ok(u) {
                return Err(bad("the user is empty or starts with -"));
            }
        }
        Ok(SshTarget {
            user,
            host: host.to_owned(),
            port,
        })
    }
}

impl fmt::Display for SshTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ssh://")?;
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            f.write_str(&self.host)?;
        }
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

/// Whether the ssh connection is shared between commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// `ControlMaster=auto` with `ControlPersist` from [`PERSIST_ENV`] (unless it is 0).
    Shared,
    /// A connection of its own (the forward, which lives as long as it does).
    Own,
}

/// Where shared connections' control sockets live: the user's 0700 browser-mcp directory.
fn control_dir() -> Option<PathBuf> {
    let dir = crate::paths::default_socket_path().parent()?.to_path_buf();
    crate::trust::ensure(&dir).ok()?;
    Some(dir)
}

/// The longest socket path the kernel takes (`sun_path` is 108 bytes with its NUL), less the
/// 17 characters ssh adds to a control socket's name while it makes it.
const MAX_CONTROL_PATH: usize = 107 - 17;

fn persist() -> u32 {
    std::env::var(PERSIST_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_PERSIST)
}

impl SshTarget {
    /// `ssh [options] -- host` and the remote command's words: the system's ssh (or
    /// [`SSH_COMMAND_ENV`]'s), with the user's own config, keys and known hosts, and
    /// `options` of the caller's.
    pub fn command(&self, sharing: Sharing, options: &[&str], remote: &[&str]) -> Command {
        let words: Vec<String> = std::env::var(SSH_COMMAND_ENV)
            .ok()
            .map(|v| v.split_whitespace().map(str::to_owned).collect())
            .filter(|w: &Vec<String>| !w.is_empty())
            .unwrap_or_else(|| vec!["ssh".to_owned()]);
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..]);
        cmd.args(["-T", "-x", "-o", "BatchMode=yes", "-o", "ConnectTimeout=20"]);
        if let Some(u) = &self.user {
            cmd.arg("-l").arg(u);
        }
        if let Some(p) = self.port {
            cmd.arg("-p").arg(p.to_string());
        }
        let seconds = persist();
        match (sharing, self.control_path(&words)) {
            (Sharing::Shared, Some(path)) if seconds > 0 => {
                cmd.arg("-o").arg("ControlMaster=auto");
                cmd.arg("-o").arg(format!("ControlPath={path}"));
                cmd.arg("-o").arg(format!("ControlPersist={seconds}"));
            }
            _ => {
                cmd.args(["-o", "ControlMaster=no", "-o", "ControlPath=none"]);
            }
        }
        cmd.args(options);
        cmd.arg("--").arg(&self.host).args(remote);
        cmd
    }

    /// The error of an ssh that could not be started.
    pub fn spawn_error(&self, e: &std::io::Error) -> Error {
        if e.kind() == std::io::ErrorKind::NotFound {
            return link_error(
                LinkFailure::NoSsh,
                self,
                format!(
                    "cannot reach {self}: no `ssh` program here ({e}); install OpenSSH's \
                     client (Debian: apt install openssh-client) or name one in \
                     {SSH_COMMAND_ENV}"
                ),
            );
        }
        link_error(
            LinkFailure::SshFailed,
            self,
            format!("cannot run ssh for {self}: {e}"),
        )
    }

    /// The error of an ssh that ended with `status`, from what it (and the remote
    /// browserctl, which reports as JSON) said on stderr.
    pub fn exit_error(&self, status: ExitStatus, stderr: &str) -> Error {
        let said = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" / ");
        // The remote browserctl's own error: its last line, as JSON.
        if let Some(e) = stderr
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<ErrorBody>(l.trim()).ok())
        {
            let mut e = e.error;
            e.message = format!("on {}: {}", self.host, e.message);
            let mut details = e.details.take().unwrap_or_else(|| json!({}));
            if details.is_object() {
                details["host"] = json!(self.to_string());
            }
            return e.with_details(details);
        }
        let has = |w: &str| stderr.contains(w);
        let (kind, message) = if status.code() == Some(255) {
            if has("REMOTE HOST IDENTIFICATION HAS CHANGED") {
                (
                    LinkFailure::HostKeyChanged,
                    format!(
                        "{} presented a host key other than the one known for it: it may be \
                         another machine. Check with its owner; once sure, remove the old key \
                         with `ssh-keygen -R {}`",
                        self.host, self.host
                    ),
                )
            } else if has("Host key verification failed") || has("host key is known") {
                (
                    LinkFailure::HostKeyUnknown,
                    format!(
                        "ssh does not know {}'s host key, and browserctl will not accept one \
                         unseen: run `ssh {}` once in a terminal, check the fingerprint and \
                         answer yes",
                        self.host,
                        self.ssh_words()
                    ),
                )
            } else if has("Permission denied") || has("Too many authentication failures") {
                (
                    LinkFailure::AuthFailed,
                    format!(
                        "{} refused our keys{}: add your public key to its \
                         ~/.ssh/authorized_keys (ssh-copy-id), or load the key into ssh-agent; \
                         browserctl never asks for a password",
                        self.host,
                        self.user
                            .as_deref()
                            .map(|u| format!(" for user {u}"))
                            .unwrap_or_default()
                    ),
                )
            } else if has("Could not resolve")
                || has("Connection refused")
                || has("timed out")
                || has("No route to host")
                || has("Network is unreachable")
                || has("Connection closed by")
                || has("Connection reset")
            {
                (
                    LinkFailure::Unreachable,
                    format!("cannot reach {self}: {said}"),
                )
            } else {
                (
                    LinkFailure::SshFailed,
                    format!("ssh to {self} failed: {said}"),
                )
            }
        } else if status.code() == Some(127)
            || (has("browserctl") && (has("not found") || has("No such file")))
        {
            (
                LinkFailure::NoRemoteBrowserctl,
                format!(
                    "{} has no `browserctl` on the PATH of a non-interactive ssh command; \
                     install browser-mcp there, or put browserctl's directory on that PATH \
                     (e.g. in ~/.bashrc above its interactive-only part, or sshd's SetEnv)",
                    self.host
                ),
            )
        } else if has("dial-stdio") || has("forward-end") {
            (
                LinkFailure::VersionMismatch,
                format!(
                    "the browserctl on {} predates remote use (it has no dial-stdio); \
                     install the same browser-mcp version there",
                    self.host
                ),
            )
        } else {
            (
                LinkFailure::SshFailed,
                format!("ssh to {self} ended ({status}): {said}"),
            )
        };
        link_error(kind, self, message)
    }

    /// The shared connection's control socket, named by a short hash of everything that
    /// picks the connection (ssh's own `%C` is 40 characters, too long for most homes), or
    /// `None` when even that is too long.
    fn control_path(&self, ssh: &[String]) -> Option<String> {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        h.update(self.to_string());
        for w in ssh {
            h.update([0]);
            h.update(w);
        }
        let name: String = h.finalize()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let path = control_dir()?.join(format!("ssh-{name}"));
        let path = path.to_str()?.replace('%', "%%");
        (path.len() <= MAX_CONTROL_PATH).then_some(path)
    }

    /// The words to type for a plain `ssh` to the same place.
    fn ssh_words(&self) -> String {
        let mut w = String::new();
        if let Some(p) = self.port {
            w.push_str(&format!("-p {p} "));
        }
        if let Some(u) = &self.user {
            w.push_str(&format!("{u}@"));
        }
        w.push_str(&self.host);
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_for_the_far_shell_is_quoted_only_when_it_must_be() {
        assert_eq!(
            shell_quote("/run/user/1000/b.sock"),
            "/run/user/1000/b.sock"
        );
        assert_eq!(shell_quote("/tmp/a b/s"), "'/tmp/a b/s'");
        assert_eq!(shell_quote("/tmp/it's;$x"), r"'/tmp/it'\''s;$x'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn addresses() {
        let t = |s: &str| s.parse::<SshTarget>();
        assert_eq!(
            t("ssh://devbox").unwrap(),
            SshTarget {
                user: None,
                host: "devbox".into(),
                port: None
            }
        );
        assert_eq!(t("ssh://u@[::1]:22").unwrap().host, "::1");
        assert_eq!(
            t("ssh://u@[::1]:22").unwrap().to_string(),
            "ssh://u@[::1]:22"
        );
        assert_eq!(t("ssh://a@b@c").unwrap().user.as_deref(), Some("a@b"));
        for bad in [
            "devbox",
            "ssh://",
            "ssh://host:port",
            "ssh://host/path",
            "http://host",
            "ssh://u@",
        ] {
            assert!(t(bad).is_err(), "{bad}");
        }
    }

    /// A host or user that ssh would read as an option never reaches it.
    #[test]
    fn option_words_are_refused() {
        for bad in [
            "ssh://-oProxyCommand=touch${IFS}/tmp/x",
            "ssh://-oProxyCommand=x@host",
            "ssh://u@-p1",
            "ssh://a b",
        ] {
            assert!(bad.parse::<SshTarget>().is_err(), "{bad}");
        }
    }

    #[test]
    fn ssh_failures_are_named() {
        use std::os::unix::process::ExitStatusExt;
        let t: SshTarget = "ssh://me@box:2222".parse().unwrap();
        let st = |c: i32| ExitStatus::from_raw(c << 8);
        let kind = |status, err: &str| {
            let e = t.exit_error(status, err);
            failure_of(&e).unwrap_or("").to_owned()
        };
        for (status, stderr, failure) in [
            (255, "No ED25519 host key is known for [127.0.0.1]:2222 and you have requested strict checking.\r\nHost key verification failed.\r\n", "HOST_KEY_UNKNOWN"),
            (255, "me@127.0.0.1: Permission denied (publickey).", "AUTH_FAILED"),
            (255, "ssh: connect to host box port 2222: Connection refused", "UNREACHABLE"),
            (127, "bash: line 1: browserctl: command not found", "NO_REMOTE_BROWSERCTL"),
            (2, "error: unrecognized subcommand 'dial-stdio'", "VERSION_MISMATCH"),
        ] {
            assert_eq!(kind(st(status), stderr), failure, "{stderr}");
        }
        let remote = r#"{"error":{"code":"DAEMON_UNAVAILABLE","message":"browser-mcpd is not running","retryable":true}}"#;
        let e = t.exit_error(st(3), remote);
        assert_eq!(e.code, ErrorCode::DaemonUnavailable);
        assert!(e.message.starts_with("on box: "), "{}", e.message);
    }
}
