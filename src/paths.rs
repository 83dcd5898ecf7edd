//! Where things live, computed the same way by the daemon and the CLI.

use std::path::PathBuf;

pub const SOCKET_ENV: &str = "BROWSER_MCP_SOCKET";
pub const DEFAULT_DISCOVERY_DIR: &str = "/tmp/browser-mcp";
pub const DEFAULT_PORT: u16 = 8765;
/// The last port the extension scans (`DEFAULT_PORT..=SCAN_LAST`, extension/shared/settings.js).
pub const SCAN_LAST: u16 = 8785;

/// `$XDG_RUNTIME_DIR/browser-mcp/browser-mcpd.sock`. Without a runtime directory (ssh without
/// pam_systemd, su, cron, containers), the user's state directory:
/// `$XDG_STATE_HOME/browser-mcp/browser-mcpd.sock`, else `~/.local/state/browser-mcp/…` —
/// never a name under the shared /tmp, which another user could create first and listen on.
/// Only with no home at all: a per-uid directory under /tmp, which the daemon refuses to use
/// and browserctl to talk through unless it is ours.
pub fn default_socket_path() -> PathBuf {
    let nonempty = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = nonempty("XDG_RUNTIME_DIR") {
        return PathBuf::from(dir).join("browser-mcp/browser-mcpd.sock");
    }
    let state = nonempty("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| nonempty("HOME").map(|h| PathBuf::from(h).join(".local/state")));
    match state {
        Some(dir) => dir.join("browser-mcp/browser-mcpd.sock"),
        None => PathBuf::from(format!("/tmp/browser-mcp-{}", nix::unistd::getuid()))
            .join("browser-mcpd.sock"),
    }
}

/// `$XDG_CONFIG_HOME/browser-mcp/config.toml`, else `~/.config/…` (on macOS,
/// `~/Library/Application Support/browser-mcp/config.toml` unless XDG_CONFIG_HOME is set).
pub fn default_config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(dir).join("browser-mcp/config.toml"));
    }
    let home = PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?);
    if cfg!(target_os = "macos") {
        Some(home.join("Library/Application Support/browser-mcp/config.toml"))
    } else {
        Some(home.join(".config/browser-mcp/config.toml"))
    }
}

/// The daemon's config file as the daemon finds it (`$BROWSER_MCP_CONFIG`, else
/// [`default_config_path`]), for the CLI commands that must agree with it (issue 59).
pub fn daemon_config_path() -> Option<PathBuf> {
    std::env::var_os("BROWSER_MCP_CONFIG")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(default_config_path)
}

/// Where `browserctl forward` puts the socket it brings from another machine (the browser's):
/// next to this user's own daemon socket, in the same 0700 directory.
pub fn forwarded_socket_path() -> PathBuf {
    default_socket_path().with_file_name("forwarded.sock")
}

/// The daemon's relay socket, beside its control socket (`browser-mcpd.sock` →
/// `browser-mcpd.relay.sock`): the one `browserctl dial-stdio` and `browserctl forward`
/// connect to, so that whatever comes from another machine reaches the daemon by a socket it
/// knows to be a relay (issue 58, item 1; `daemon::trust::via`).
pub fn relay_socket_path(control: &std::path::Path) -> PathBuf {
    let name = control
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let relay = match name.strip_suffix(".sock") {
        Some(stem) => format!("{stem}.relay.sock"),
        None => format!("{name}.relay"),
    };
    control.with_file_name(relay)
}

/// The file in which a daemon started with no socket path named (the user's: systemd's,
/// launchd's, or one started by hand) writes down the socket it listens on, so that a
/// client started without the daemon's environment (an MCP client gives a server only HOME,
/// PATH and a few more, never XDG_RUNTIME_DIR) still finds it (issue 59).
pub fn socket_pointer_file() -> PathBuf {
    default_pairing_file().with_file_name("socket-path")
}

/// `/run/user/UID` (systemd's runtime directory, there before any environment says so) when
/// it is ours alone: owned by us, mode 0700, a real directory.
fn run_user_dir(base: &std::path::Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let uid = nix::unistd::geteuid().as_raw();
    let dir = base.join(uid.to_string());
    let meta = std::fs::symlink_metadata(&dir).ok()?;
    (meta.is_dir() && meta.uid() == uid && meta.mode() & 0o777 == 0o700).then_some(dir)
}

/// The socket a daemon's pointer file names, when the file is ours and nobody else can
/// change it or its directory.
fn pointed_socket(pointer: &std::path::Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    crate::trust::check(pointer.parent()?).ok()?;
    let meta = std::fs::symlink_metadata(pointer).ok()?;
    let ours =
        meta.is_file() && meta.uid() == nix::unistd::geteuid().as_raw() && meta.mode() & 0o022 == 0;
    let text = ours.then(|| std::fs::read_to_string(pointer).ok())??;
    let socket = PathBuf::from(text.trim_end_matches('\n'));
    socket.is_absolute().then_some(socket)
}

/// Where a client looks for the user's daemon when told no socket, in order: the runtime
/// directory the environment names; without one, systemd's `/run/user/UID`; the socket the
/// user's daemon wrote down ([`socket_pointer_file`]); the state directory; then a socket
/// `browserctl forward` brought from another machine. Every one is still checked before a
/// byte is sent (`client::peer`).
pub fn socket_candidates() -> Vec<PathBuf> {
    let own = default_socket_path();
    let mut out = Vec::new();
    if std::env::var_os("XDG_RUNTIME_DIR").is_none_or(|v| v.is_empty()) {
        if let Some(dir) = run_user_dir(std::path::Path::new("/run/user")) {
            out.push(dir.join("browser-mcp/browser-mcpd.sock"));
        }
    }
    out.extend(pointed_socket(&socket_pointer_file()));
    out.push(own);
    out.push(forwarded_socket_path());
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(p.clone()));
    out
}

/// The socket a client talks to when told none: the first of [`socket_candidates`] that is
/// there, else the daemon's default (whose absence the error then names).
pub fn client_socket_path() -> PathBuf {
    socket_candidates()
        .into_iter()
        .find(|p| p.exists())
        .unwrap_or_else(default_socket_path)
}

/// Where a daemon puts its discovery file when the shared directory is another user's (or
/// unusable): the per-user runtime directory, next to the control socket. Native hosts look
/// here too, so such a daemon is still found.
pub fn private_discovery_dir() -> PathBuf {
    match default_socket_path().parent() {
        Some(dir) => dir.join("discovery"),
        None => PathBuf::from(DEFAULT_DISCOVERY_DIR),
    }
}

/// The user's pairings with browser profiles (issue 21): `$XDG_STATE_HOME/browser-mcp/
/// pairings.json`, else `~/.local/state/browser-mcp/pairings.json`, else (no home) next to the
/// control socket.
pub fn default_pairing_file() -> PathBuf {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        });
    match state {
        Some(dir) => dir.join("browser-mcp/pairings.json"),
        None => default_socket_path()
            .parent()
            .map(|d| d.join("pairings.json"))
            .unwrap_or_else(|| PathBuf::from("pairings.json")),
    }
}

/// The user's token for the daemon's loopback port (issue 59): `token` beside the pairings,
/// `$XDG_STATE_HOME/browser-mcp/token`, else `~/.local/state/browser-mcp/token`.
pub fn default_token_file() -> PathBuf {
    default_pairing_file().with_file_name("token")
}

/// `$NAME/browser-mcp`, else `~/FALLBACK/browser-mcp`, else (no home) beside the control
/// socket.
fn xdg_dir(name: &str, fallback: &str) -> PathBuf {
    let base = std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(fallback))
        });
    match base {
        Some(dir) => dir.join("browser-mcp"),
        None => default_socket_path()
            .parent()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(".")),
    }
}

/// Named profiles of the browsers the daemon launches (issue 32):
/// `$XDG_DATA_HOME/browser-mcp/profiles`, else `~/.local/share/browser-mcp/profiles`.
pub fn default_profiles_dir() -> PathBuf {
    xdg_dir("XDG_DATA_HOME", ".local/share").join("profiles")
}

/// Temporary profiles of launched browsers and the record of what runs:
/// `$XDG_STATE_HOME/browser-mcp/managed`, else `~/.local/state/browser-mcp/managed`.
pub fn default_managed_dir() -> PathBuf {
    xdg_dir("XDG_STATE_HOME", ".local/state").join("managed")
}

/// Parses a human duration: `500ms`, `2s`, `1.5s`, `3m`; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    let value: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (try 500ms, 2s, 1m)"))?;
    if !value.is_finite() || value < 0.0 || value * scale > 86_400.0 * 365.0 {
        return Err(format!("`{s}` is out of range"));
    }
    Ok(std::time::Duration::from_secs_f64(value * scale))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn run_user_counts_only_when_it_is_ours_alone() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        assert_eq!(run_user_dir(base.path()), None, "missing");
        let dir = base
            .path()
            .join(nix::unistd::geteuid().as_raw().to_string());
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(run_user_dir(base.path()), None, "others may look in");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(run_user_dir(base.path()), Some(dir));
    }

    #[test]
    fn a_pointer_counts_only_when_nobody_else_can_change_it() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let pointer = t.path().join("socket-path");
        std::fs::write(&pointer, "/run/x/browser-mcpd.sock\n").unwrap();
        std::fs::set_permissions(&pointer, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            pointed_socket(&pointer),
            Some(PathBuf::from("/run/x/browser-mcpd.sock"))
        );
        std::fs::set_permissions(&pointer, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(pointed_socket(&pointer), None, "writable by others");
        std::fs::set_permissions(&pointer, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&pointer, "relative.sock").unwrap();
        assert_eq!(pointed_socket(&pointer), None, "not absolute");
        std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::write(&pointer, "/run/x/browser-mcpd.sock").unwrap();
        assert_eq!(
            pointed_socket(&pointer),
            None,
            "a directory others can write in"
        );
    }

    #[test]
    fn the_relay_socket_stands_beside_the_control_socket() {
        let relay = |p: &str| relay_socket_path(std::path::Path::new(p));
        assert_eq!(
            relay("/run/b/browser-mcpd.sock"),
            PathBuf::from("/run/b/browser-mcpd.relay.sock")
        );
        assert_eq!(relay("/tmp/x/ctl"), PathBuf::from("/tmp/x/ctl.relay"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("3m").unwrap(), Duration::from_secs(180));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1").is_err());
    }
}
