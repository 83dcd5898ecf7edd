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

/// Where `browserctl forward` puts the socket it brings from another machine (the browser's):
/// next to this user's own daemon socket, in the same 0700 directory.
pub fn forwarded_socket_path() -> PathBuf {
    default_socket_path().with_file_name("forwarded.sock")
}

/// The socket a client talks to when told none: this machine's daemon when its socket is
/// there, else one `browserctl forward` brought from another machine, else the daemon's
/// (whose absence the error then names).
pub fn client_socket_path() -> PathBuf {
    let own = default_socket_path();
    if own.exists() {
        return own;
    }
    let forwarded = forwarded_socket_path();
    if forwarded.exists() {
        return forwarded;
    }
    own
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
    fn durations() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("3m").unwrap(), Duration::from_secs(180));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1").is_err());
    }
}
