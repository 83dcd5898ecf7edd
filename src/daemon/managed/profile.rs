//! A launched browser's directory and command line: the profile, with our extension loaded
//! and our native host installed into it, so the browser is connected to this daemon by
//! construction (no scan, no pairing, no person).
//!
//! ```text
//! ROOT/profile   Chromium's --user-data-dir, or Firefox's profile
//! ROOT/home      Firefox's HOME: its native-messaging-hosts directory is per user, not per profile
//! ROOT/host      the native host's wrapper script (browserctl native-host --managed SESSION …)
//! ROOT/tmp       TMPDIR, where Chromium keeps its singleton socket
//! ROOT/extension Chromium: our extension with the debugger permission granted (below)
//! ROOT/browser.log
//! ```

use super::find::{Found, Kind};
use crate::protocol::managed::InputChoice;
use crate::protocol::native::{host_manifest, sh_quote, GECKO_EXTENSION_ID, HOST_NAME};
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where the pieces of one launched browser live.
#[derive(Debug, Clone)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    pub fn profile(&self) -> PathBuf {
        self.root.join("profile")
    }
    fn home(&self) -> PathBuf {
        self.root.join("home")
    }
    fn host(&self) -> PathBuf {
        self.root.join("host")
    }
    fn tmp(&self) -> PathBuf {
        self.root.join("tmp")
    }
    fn extension(&self) -> PathBuf {
        self.root.join("extension")
    }
    pub fn log(&self) -> PathBuf {
        self.root.join("browser.log")
    }
}

/// What the native host in the profile needs to know.
pub struct HostSpec<'a> {
    pub browserctl: &'a Path,
    pub discovery_dir: &'a Path,
    pub session: &'a str,
    pub daemon_pid: u32,
}

/// What the browser is started with.
pub struct Launch<'a> {
    pub found: &'a Found,
    pub headless: bool,
    pub url: &'a str,
    pub extension: &'a Path,
    /// `browser-flag` entries for this kind.
    pub flags: Vec<String>,
    pub input: InputChoice,
}

fn text(p: &Path) -> io::Result<&str> {
    p.to_str().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not UTF-8", p.display()),
        )
    })
}

fn write(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    let _ = fs::remove_file(path);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    f.write_all(contents)?;
    f.set_permissions(fs::Permissions::from_mode(mode))
}

fn dir(path: &Path) -> io::Result<()> {
    fs::create_dir_all(path)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o700))
}

/// Creates (or refreshes, for a persistent profile) the directories, the native host and,
/// for Firefox, the preferences and the extension's entry; the extension the browser loads.
pub fn prepare(
    layout: &Layout,
    kind: Kind,
    host: &HostSpec,
    extension: &Path,
    input: InputChoice,
) -> io::Result<PathBuf> {
    for d in [
        layout.root.clone(),
        layout.profile(),
        layout.host(),
        layout.tmp(),
    ] {
        dir(&d)?;
    }
    if !kind.firefox() {
        forget_singleton_dirs(&layout.profile());
    }
    let wrapper = layout.host().join("browser-mcp-native-host");
    let script = format!(
        "#!/bin/sh\n# Written by browser-mcpd for a browser it launched.\nexec {} native-host --discovery-dir {} --managed {} --daemon-pid {} --input {} \"$@\"\n",
        sh_quote(text(host.browserctl)?),
        sh_quote(text(host.discovery_dir)?),
        sh_quote(host.session),
        host.daemon_pid,
        input.as_str()
    );
    write(&wrapper, script.as_bytes(), 0o700)?;
    let hosts = if kind.firefox() {
        layout.home().join(".mozilla/native-messaging-hosts")
    } else {
        layout.profile().join("NativeMessagingHosts")
    };
    dir(&hosts)?;
    let mut manifest = serde_json::to_vec_pretty(&host_manifest(&wrapper, kind.firefox()))
        .map_err(io::Error::other)?;
    manifest.push(b'\n');
    write(&hosts.join(format!("{HOST_NAME}.json")), &manifest, 0o600)?;
    if kind.firefox() {
        // A proxy file: the extension is loaded from its directory, as an unsigned add-on,
        // which Firefox ESR, Developer Edition and Nightly take once signatures are not required.
        let extensions = layout.profile().join("extensions");
        dir(&extensions)?;
        write(
            &extensions.join(GECKO_EXTENSION_ID),
            text(extension)?.as_bytes(),
            0o600,
        )?;
        write(
            &layout.profile().join("user.js"),
            FIREFOX_PREFS.as_bytes(),
            0o600,
        )?;
        return Ok(extension.to_path_buf());
    }
    if !input.is_trusted() {
        // As installed: trusted input is the person's grant, which nobody gives here.
        let _ = fs::remove_dir_all(layout.extension());
        return Ok(extension.to_path_buf());
    }
    granted_copy(extension, &layout.extension())
}

/// Our extension with its optional `debugger` permission among the required ones, for a
/// Chromium the daemon launches (issue 57): nobody is there to grant an optional permission
/// (Chromium asks for a click on its prompt), and an unpacked extension gets its required ones
/// at load. Trusted input (and one-capture screenshots) is then on by default, where nobody
/// sees Chromium's debugging bar (`--silent-debugger-extension-api`, `command`). The manifest
/// keeps its `key`, so the copy has the extension's id and its native host admits it. A copy,
/// not links: Chromium reads an unpacked extension's files from its own directory. Made anew
/// at each launch (about 0.8 MB), so a persistent profile runs the extension installed now.
fn granted_copy(extension: &Path, to: &Path) -> io::Result<PathBuf> {
    let _ = fs::remove_dir_all(to);
    copy_dir(extension, to)?;
    let path = to.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(&path)?).map_err(io::Error::other)?;
    if let Some(optional) = manifest["optional_permissions"].as_array_mut() {
        optional.retain(|p| p != "debugger");
    }
    manifest["permissions"]
        .as_array_mut()
        .ok_or_else(|| io::Error::other("the extension's manifest has no permissions"))?
        .push("debugger".into());
    fs::write(
        &path,
        serde_json::to_vec_pretty(&manifest).map_err(io::Error::other)?,
    )?;
    Ok(to.to_path_buf())
}

fn copy_dir(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// The preferences of a launched Firefox: our add-on enabled without asking, no first-run
/// pages, nothing restored after a crash.
const FIREFOX_PREFS: &str = r#"// Written by browser-mcpd at each launch.
user_pref("xpinstall.signatures.required", false);
user_pref("extensions.autoDisableScopes", 0);
user_pref("extensions.update.enabled", false);
user_pref("app.update.auto", false);
user_pref("app.update.disabledForTesting", true);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("browser.aboutwelcome.enabled", false);
user_pref("startup.homepage_welcome_url", "about:blank");
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("browser.sessionstore.resume_from_crash", false);
user_pref("browser.tabs.warnOnClose", false);
// The Remote Agent (trusted input, bidi.rs) leaves the preferences as they are: the browser
// behaves as a person's would, not as an automation profile's.
user_pref("remote.prefs.recommended", false);
// An agent works in tabs nobody looks at: their timers keep the page's own pace (a search
// box's debounce, a poll), not one a second as in a person's background tab.
user_pref("dom.min_background_timeout_value", 4);
user_pref("dom.min_background_timeout_value_without_budget_throttling", 4);
user_pref("dom.timeout.enable_budget_timer_throttling", false);
"#;

/// The directories a Chromium that was stopped by a signal left in its profile for its
/// singleton socket (see `command`); the profile is not in use when it is prepared.
fn forget_singleton_dirs(profile: &Path) {
    let Ok(entries) = fs::read_dir(profile) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(SINGLETON_DIR) {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// What Chromium names the directory of its singleton socket, in its TMPDIR.
const SINGLETON_DIR: &str = "org.chromium.Chromium.";

/// The command line that starts the browser on this layout.
pub fn command(layout: &Layout, l: &Launch) -> io::Result<Command> {
    let log = fs::File::create(layout.log())?;
    let mut cmd = Command::new(&l.found.exe);
    let profile = layout.profile();
    if l.found.kind.firefox() {
        cmd.args(["-no-remote", "-new-instance", "-profile"])
            .arg(&profile)
            .env("HOME", layout.home())
            .env("MOZ_CRASHREPORTER_DISABLE", "1");
        if l.input.is_trusted() {
            // WebDriver BiDi on a loopback port Firefox picks and writes into the profile, for
            // the daemon's trusted input (bidi.rs says why no other program can use it). Its
            // Remote Agent is also what makes `navigator.webdriver` true.
            cmd.arg("--remote-debugging-port=0");
        }
        if l.headless {
            cmd.arg("-headless");
        }
    } else {
        cmd.arg(format!("--user-data-dir={}", text(&profile)?))
            .arg(format!("--load-extension={}", text(l.extension)?))
            // Google Chrome 137+ ignores --load-extension without this.
            .arg("--disable-features=DisableLoadExtensionCommandLineSwitch")
            .args([
                "--no-first-run",
                "--no-default-browser-check",
                "--hide-crash-restore-bubble",
                // No keyring, so no D-Bus session is needed.
                "--password-store=basic",
                // The extension's trusted input shows no "started debugging" bar: nobody
                // watches this browser (granted_copy).
                "--silent-debugger-extension-api",
                // An agent works in tabs nobody looks at: their timers keep the page's own
                // pace (a search box's debounce, a poll), not one a second as in a person's
                // background tab, and their renderers are not put to sleep.
                "--disable-background-timer-throttling",
                "--disable-renderer-backgrounding",
                "--disable-backgrounding-occluded-windows",
            ]);
        if l.headless {
            cmd.arg("--headless");
        }
        // Chromium refuses to run as root with its sandbox (containers, CI).
        if nix::unistd::geteuid().is_root() {
            cmd.arg("--no-sandbox");
        }
        // Chromium puts its singleton socket in a new directory of TMPDIR and aborts (SIGABRT,
        // "Socket path too long") when that path passes the 108 bytes of a Unix socket's
        // name, which a profile under ~/.local/… does. A relative TMPDIR from the profile keeps
        // the name short, the profile's SingletonSocket link resolvable, and what a killed
        // browser leaves inside the profile, where the next launch clears it.
        cmd.current_dir(&profile).env("TMPDIR", ".");
    }
    if l.found.kind.firefox() {
        cmd.env("TMPDIR", layout.tmp());
    }
    cmd.args(&l.flags)
        .arg(l.url)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    Ok(cmd)
}

/// The last `n` lines of a launched browser's log.
pub fn log_tail(layout: &Layout, n: usize) -> Vec<String> {
    let text = fs::read_to_string(layout.log()).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| l.chars().take(300).collect())
        .collect()
}

/// A profile name: letters, digits, `.`, `_`, `-`, not starting with `.`, at most 64.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names() {
        assert!(valid_name("work-1.main_x"));
        for bad in ["", ".hidden", "a/b", "..", "a b", &"x".repeat(65)] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }
}
