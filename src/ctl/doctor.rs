//! `browserctl doctor`: checks the pieces a working setup needs, each ✓ or ✗ with a fix.

use super::client::Client;
use super::output::{print, print_json, Stop};
use crate::protocol::control::{BrowserView, Status};
use serde::Serialize;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The native messaging host name our extension connects to (`NATIVE_HOST` in
/// extension/background.js).
pub const NATIVE_HOST: &str = "dev.browsermcp.host";

#[derive(Debug, Serialize)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn pass(name: impl Into<String>, detail: impl Into<String>) -> Check {
    Check {
        name: name.into(),
        ok: true,
        detail: detail.into(),
        fix: None,
    }
}

fn fail(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Check {
    Check {
        name: name.into(),
        ok: false,
        detail: detail.into(),
        fix: Some(fix.into()),
    }
}

fn me() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// A private directory: ours, and not open to others (a sticky world-writable /tmp-like
/// directory is accepted for the discovery directory's parent, not for the directory itself).
fn private_dir(name: &str, dir: &Path) -> Check {
    match std::fs::symlink_metadata(dir) {
        Err(e) => fail(
            name,
            format!("{}: {e}", dir.display()),
            "start browser-mcpd once; it creates the directory",
        ),
        Ok(m) if !m.is_dir() => fail(
            name,
            format!("{} is not a directory", dir.display()),
            format!("remove {} and restart browser-mcpd", dir.display()),
        ),
        Ok(m) if m.uid() != me() => fail(
            name,
            format!("{} belongs to uid {}, not to you", dir.display(), m.uid()),
            format!(
                "remove {} (it may be another user's) or use --discovery-dir / --socket",
                dir.display()
            ),
        ),
        Ok(m) if m.mode() & 0o077 != 0 => fail(
            name,
            format!(
                "{} has mode {:o}; others can read or enter it",
                dir.display(),
                m.mode() & 0o7777
            ),
            format!("chmod 700 {}", dir.display()),
        ),
        Ok(_) => pass(name, format!("{}: yours, mode 700", dir.display())),
    }
}

fn socket_check(socket: &Path) -> Check {
    let name = "control socket";
    match std::fs::symlink_metadata(socket) {
        Err(_) => fail(
            name,
            format!("no socket at {}", socket.display()),
            "start the daemon: systemctl --user start browser-mcpd (or run browser-mcpd)",
        ),
        Ok(m) if !m.file_type().is_socket() => fail(
            name,
            format!("{} is not a socket", socket.display()),
            format!("remove {} and restart browser-mcpd", socket.display()),
        ),
        Ok(m) if m.uid() != me() => fail(
            name,
            format!("{} belongs to uid {}", socket.display(), m.uid()),
            "use your own socket path (--socket, BROWSER_MCP_SOCKET)",
        ),
        Ok(m) if m.mode() & 0o077 != 0 => fail(
            name,
            format!("{} has mode {:o}", socket.display(), m.mode() & 0o777),
            format!(
                "chmod 600 {} (browser-mcpd sets it at start)",
                socket.display()
            ),
        ),
        Ok(_) => pass(name, format!("{}: yours, mode 600", socket.display())),
    }
}

/// Browsers whose profile directory exists, with where their native host manifest belongs.
fn detected_browsers(home: &Path) -> Vec<(&'static str, &'static str, PathBuf)> {
    // (display name, --browser value for install-native-host, profile dir, manifest dir)
    let table: &[(&str, &str, &str, &str)] = if cfg!(target_os = "macos") {
        &[
            (
                "Google Chrome",
                "chrome",
                "Library/Application Support/Google/Chrome",
                "Library/Application Support/Google/Chrome/NativeMessagingHosts",
            ),
            (
                "Chromium",
                "chromium",
                "Library/Application Support/Chromium",
                "Library/Application Support/Chromium/NativeMessagingHosts",
            ),
            (
                "Brave",
                "brave",
                "Library/Application Support/BraveSoftware/Brave-Browser",
                "Library/Application Support/BraveSoftware/Brave-Browser/NativeMessagingHosts",
            ),
            (
                "Microsoft Edge",
                "edge",
                "Library/Application Support/Microsoft Edge",
                "Library/Application Support/Microsoft Edge/NativeMessagingHosts",
            ),
            (
                "Firefox",
                "firefox",
                "Library/Application Support/Firefox",
                "Library/Application Support/Mozilla/NativeMessagingHosts",
            ),
        ]
    } else {
        &[
            (
                "Google Chrome",
                "chrome",
                ".config/google-chrome",
                ".config/google-chrome/NativeMessagingHosts",
            ),
            (
                "Chromium",
                "chromium",
                ".config/chromium",
                ".config/chromium/NativeMessagingHosts",
            ),
            (
                "Brave",
                "brave",
                ".config/BraveSoftware/Brave-Browser",
                ".config/BraveSoftware/Brave-Browser/NativeMessagingHosts",
            ),
            (
                "Microsoft Edge",
                "edge",
                ".config/microsoft-edge",
                ".config/microsoft-edge/NativeMessagingHosts",
            ),
            (
                "Firefox",
                "firefox",
                ".mozilla",
                ".mozilla/native-messaging-hosts",
            ),
        ]
    };
    table
        .iter()
        .filter(|(_, _, profile, _)| home.join(profile).is_dir())
        .map(|(name, flag, _, hosts)| (*name, *flag, home.join(hosts)))
        .collect()
}

fn native_host_checks(home: Option<&Path>) -> Vec<Check> {
    let Some(home) = home else {
        return vec![fail("native host", "HOME is not set", "set HOME")];
    };
    let browsers = detected_browsers(home);
    if browsers.is_empty() {
        return vec![fail(
            "native host",
            "no Chrome, Chromium, Brave, Edge or Firefox profile found",
            "start your browser once so it creates its profile",
        )];
    }
    browsers
        .into_iter()
        .map(|(browser, flag, dir)| {
            let manifest = dir.join(format!("{NATIVE_HOST}.json"));
            let name = format!("native host for {browser}");
            if manifest.is_file() {
                pass(name, format!("{}", manifest.display()))
            } else {
                fail(
                    name,
                    format!("no {}", manifest.display()),
                    format!("browserctl install-native-host --browser {flag}"),
                )
            }
        })
        .collect()
}

pub async fn run(client: &Client, json: bool) -> Result<bool, Stop> {
    let mut checks = vec![socket_check(client.socket())];
    if let Some(dir) = client.socket().parent() {
        checks.push(private_dir("control socket directory", dir));
    }
    let status: Option<Status> = match client.get::<Status>("/v1/status").await {
        Ok(s) => {
            checks.push(pass(
                "daemon reachable",
                format!(
                    "browser-mcpd {} (pid {}), up {}s",
                    s.version,
                    s.pid,
                    s.uptime_ms / 1000
                ),
            ));
            Some(s)
        }
        Err(e) => {
            checks.push(fail(
                "daemon reachable",
                format!("{}: {}", e.code, e.message),
                "start it: systemctl --user start browser-mcpd (or run browser-mcpd; `browserctl setup` installs the service)",
            ));
            None
        }
    };
    let mine = env!("CARGO_PKG_VERSION");
    let discovery_dir = match &status {
        Some(s) => {
            checks.push(if s.version == mine {
                pass(
                    "versions match",
                    format!("browserctl {mine}, browser-mcpd {}", s.version),
                )
            } else {
                fail(
                    "versions match",
                    format!("browserctl {mine}, browser-mcpd {}", s.version),
                    "restart the daemon after an upgrade: systemctl --user restart browser-mcpd",
                )
            });
            Path::new(&s.discovery_file).parent().map(Path::to_path_buf)
        }
        None => Some(PathBuf::from(crate::paths::DEFAULT_DISCOVERY_DIR)),
    };
    if let Some(dir) = discovery_dir {
        checks.push(private_dir("discovery directory", &dir));
    }
    if let Some(s) = &status {
        let file = Path::new(&s.discovery_file);
        checks.push(match std::fs::symlink_metadata(file) {
            Ok(m) if m.is_file() && m.mode() & 0o077 == 0 && m.uid() == me() => pass(
                "discovery file",
                format!("{}: yours, mode 600", file.display()),
            ),
            Ok(m) => fail(
                "discovery file",
                format!(
                    "{}: mode {:o}, uid {}",
                    file.display(),
                    m.mode() & 0o7777,
                    m.uid()
                ),
                format!("rm {}; browser-mcpd writes it afresh", file.display()),
            ),
            Err(e) => fail(
                "discovery file",
                format!("{}: {e}", file.display()),
                "browser-mcpd puts it back within seconds; if not, restart it",
            ),
        });
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    checks.extend(native_host_checks(home.as_deref()));
    if status.is_some() {
        let browsers = client
            .get::<serde_json::Value>("/v1/browsers")
            .await
            .ok()
            .and_then(|v| serde_json::from_value::<Vec<BrowserView>>(v["browsers"].clone()).ok())
            .unwrap_or_default();
        checks.push(if browsers.is_empty() {
            fail(
                "extensions connected",
                "no browser is connected",
                "install the browser-mcp extension (extension/ in the source) and open the browser",
            )
        } else {
            let names: Vec<String> = browsers
                .iter()
                .map(|b| format!("{} {} {} ({} tabs)", b.id, b.name, b.version, b.tabs))
                .collect();
            pass("extensions connected", names.join(", "))
        });
    }

    let all_ok = checks.iter().all(|c| c.ok);
    if json {
        print_json(&serde_json::json!({"ok": all_ok, "checks": checks}))?;
    } else {
        let mut text = String::new();
        for c in &checks {
            let mark = if c.ok { "✓" } else { "✗" };
            text.push_str(&format!("{mark} {}: {}\n", c.name, c.detail));
            if let Some(fix) = &c.fix {
                text.push_str(&format!("    fix: {fix}\n"));
            }
        }
        print(&text)?;
    }
    Ok(all_ok)
}
