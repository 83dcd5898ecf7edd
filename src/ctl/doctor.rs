//! `browserctl doctor`: checks the pieces a working setup needs, each ✓ or ✗ with a fix.

use super::client::Client;
use super::install_host::{allowed_key, allowed_value, Family};
use super::output::{print, print_json, Stop};
use crate::protocol::control::{BrowserView, Status};
use crate::protocol::managed::Launchable;
use serde::Serialize;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The native messaging host name our extension connects to (`NATIVE_HOST` in
/// extension/worker/background.js).
pub const NATIVE_HOST: &str = crate::protocol::native::HOST_NAME;

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

/// A directory others must not be able to swap files in: [`crate::trust::check`], the same
/// judgement the daemon and the native host make.
fn trusted_dir(name: &str, dir: &Path) -> Check {
    match crate::trust::check(dir) {
        Ok(crate::trust::Owner::Us) => pass(name, format!("{}: yours", dir.display())),
        Ok(crate::trust::Owner::Root) => pass(
            name,
            format!("{}: root's, shared and sticky", dir.display()),
        ),
        Err(u) => fail(name, u.to_string(), u.fix()),
    }
}

/// The socket file, judged together with whether the daemon answered on it: a socket file
/// nobody answers on is what a crashed or failed start leaves behind.
fn socket_check(socket: &Path, answered: Option<&crate::error::Error>) -> Check {
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
        Ok(_) => match answered {
            None => pass(
                name,
                format!("{}: yours, mode 600, answering", socket.display()),
            ),
            Some(e) => fail(
                name,
                format!(
                    "{} exists but nobody answers on it ({})",
                    socket.display(),
                    e.message
                ),
                format!(
                    "a daemon that stopped uncleanly left it behind: rm {} and start browser-mcpd",
                    socket.display()
                ),
            ),
        },
    }
}

/// Which browsers the daemon can launch for pipelines (`browserctl browser launch`), as the
/// daemon finds them: its PATH and config, not this shell's.
async fn launchable_check(client: &Client) -> Check {
    let name = "browsers to launch";
    let l: Launchable = match client.get("/v1/browsers/launchable").await {
        Ok(l) => l,
        Err(e) => return fail(name, e.message, "restart the daemon after an upgrade"),
    };
    if let Some(why) = &l.extension_missing {
        return fail(
            name,
            why.clone(),
            "set the daemon's extension-dir to the extension/ directory",
        );
    }
    if l.browsers.is_empty() {
        return fail(
            name,
            format!(
                "none found on the daemon's PATH ({}) or in its browser-path",
                l.path
            ),
            "install one (apt-get install chromium, or firefox-esr), or set browser-path KIND=PATH in the daemon's config",
        );
    }
    let found: Vec<String> = l
        .browsers
        .iter()
        .map(|b| format!("{} ({})", b.kind, b.executable))
        .collect();
    pass(name, found.join(", "))
}

/// One check per browser whose profile exists: is our host manifest where it looks for it?
/// (The browsers and their directories are install-native-host's.)
/// Then one per custom user-data directory named (`--user-data-dir`, issue 59: a host there
/// worked while doctor showed ✗ and proposed a fix for the default profile).
fn native_host_checks(profiles: &[PathBuf]) -> Vec<Check> {
    let mut given: Vec<Check> = profiles
        .iter()
        .map(|dir| {
            let manifest = dir.join(format!("NativeMessagingHosts/{NATIVE_HOST}.json"));
            let name = format!("native host for {}", dir.display());
            let fix = format!(
                "browserctl install-native-host --user-data-dir {}",
                dir.display()
            );
            match (manifest.is_file(), host_runs(&manifest, Family::Chromium)) {
                (true, Ok(runs)) => pass(
                    name,
                    format!("{} (runs {})", manifest.display(), runs.display()),
                ),
                (true, Err(why)) => fail(name, why, fix),
                (false, _) => fail(name, format!("no {}", manifest.display()), fix),
            }
        })
        .collect();
    let browsers = match super::install_host::detected() {
        Ok(b) => b,
        Err(e) => return vec![fail("native host", e.message, "set HOME")],
    };
    if browsers.is_empty() && !given.is_empty() {
        return given;
    }
    if browsers.is_empty() {
        return vec![fail(
            "native host",
            "no Chrome, Chromium, Brave, Edge, Vivaldi or Firefox profile found",
            "start your browser once so it creates its profile",
        )];
    }
    browsers
        .into_iter()
        .map(|(browser, dir)| {
            let manifest = dir.join(format!("{NATIVE_HOST}.json"));
            let name = format!("native host for {}", browser.display_name());
            let reinstall = format!(
                "browserctl install-native-host --browser {} (run the browserctl you keep)",
                browser.name()
            );
            if manifest.is_file() {
                match host_runs(&manifest, browser.family()) {
                    Ok(runs) => pass(
                        name,
                        format!("{} (runs {})", manifest.display(), runs.display()),
                    ),
                    Err(why) => fail(name, why, reinstall),
                }
            } else {
                fail(
                    name,
                    format!("no {}", manifest.display()),
                    format!(
                        "browserctl install-native-host --browser {}",
                        browser.name()
                    ),
                )
            }
        })
        .chain(given.drain(..))
        .collect()
}

/// Follows a host manifest to the browserctl its wrapper runs; why not, when any link of the
/// chain is gone (the usual case: the wrapper named a build directory since cleaned) or when the
/// manifest does not let our extension in (e.g. a Chromium manifest copied for Firefox).
fn host_runs(manifest: &Path, family: Family) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let text =
        std::fs::read_to_string(manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not JSON: {e}", manifest.display()))?;
    let (key, ours) = (allowed_key(family), allowed_value(family));
    let allowed = v[key]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x == ours));
    if !allowed {
        return Err(format!(
            "{} does not list our extension ({ours}) in {key}",
            manifest.display()
        ));
    }
    let wrapper = PathBuf::from(v["path"].as_str().unwrap_or_default());
    let script = std::fs::read_to_string(&wrapper).map_err(|e| {
        format!(
            "{} names the wrapper {}, which cannot be read ({e})",
            manifest.display(),
            wrapper.display()
        )
    })?;
    let Some(target) = super::install_host::wrapper_target(&script) else {
        return Err(format!(
            "{} does not look like a wrapper written by install-native-host",
            wrapper.display()
        ));
    };
    let runnable = std::fs::metadata(&target)
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if !runnable {
        return Err(format!(
            "the wrapper {} runs {}, which is gone (a `cargo clean`, or a moved browserctl?)",
            wrapper.display(),
            target.display()
        ));
    }
    Ok(target)
}

pub async fn run(client: &Client, json: bool, profiles: &[PathBuf]) -> Result<bool, Stop> {
    let answer = client.get::<Status>("/v1/status").await;
    let remote = client.host().cloned();
    let mut checks = Vec::new();
    if let Some(host) = &remote {
        // The local socket and files are not the daemon's here: the link is checked instead.
        checks.push(match &answer {
            Ok(_) => pass(
                "ssh link",
                format!("up: {host}, through `browserctl dial-stdio` there"),
            ),
            Err(e) => fail(
                "ssh link",
                format!("{host}: {}: {}", e.code, e.message),
                "see above; `ssh HOST browserctl doctor` checks the other side",
            ),
        });
    } else {
        checks.push(socket_check(client.socket(), answer.as_ref().err()));
        if let Some(dir) = client.socket().parent() {
            checks.push(trusted_dir("control socket directory", dir));
        }
    }
    let status: Option<Status> = match answer {
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
    if let Some(s) = &status {
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
        if let Some(dir) = Path::new(&s.discovery_file)
            .parent()
            .filter(|_| remote.is_none())
        {
            checks.push(trusted_dir("discovery directory", dir));
        }
    }
    if let Some(s) = status.as_ref().filter(|_| remote.is_none()) {
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
    if remote.is_none() {
        checks.extend(native_host_checks(profiles));
        checks.extend(super::forward::state::checks().into_iter().map(|c| Check {
            name: c.name,
            ok: c.ok,
            detail: c.detail,
            fix: c.fix,
        }));
    }
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

    if status.is_some() {
        checks.push(launchable_check(client).await);
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
