//! `browserctl install-native-host`: registers `browserctl native-host` with this user's
//! browsers: each Chromium-family browser (a directory inside its user-data directory) and
//! Firefox (one directory per user, read by Firefox, Firefox ESR, Developer Edition and Nightly
//! alike, whatever the profile).
//!
//! Two files go into the browser's native-messaging-hosts directory: the host manifest
//! `dev.browsermcp.host.json`, and a small wrapper script that its `path` names. The wrapper is
//! needed because the browser runs `path` with arguments of its own (Chrome: the caller's
//! origin; Firefox: the manifest's path and the extension's id), and we need `browserctl
//! native-host` (plus a `--discovery-dir`, if one was chosen at install time, since the browser
//! does not pass our environment on reliably). The manifests differ by family: Chromium's names
//! the extension by origin (`allowed_origins`), Firefox's by id (`allowed_extensions`).

use super::output::{print, print_json, Stop};
use crate::error::Error;
use crate::protocol::native::{
    host_manifest, sh_quote, EXTENSION_ORIGIN, GECKO_EXTENSION_ID, HOST_NAME,
};
use serde::Serialize;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The wrapper script's file name, next to the manifest.
pub const WRAPPER_NAME: &str = "browser-mcp-native-host";

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Browser {
    Chromium,
    Chrome,
    ChromeBeta,
    #[value(alias = "chrome-unstable")]
    ChromeDev,
    ChromeCanary,
    Brave,
    Edge,
    Vivaldi,
    /// Every Firefox of this user (release, ESR, Developer Edition, Nightly): they share one
    /// directory of host manifests, independent of the profile.
    #[value(aliases = ["firefox-esr", "firefox-developer-edition", "firefox-nightly"])]
    Firefox,
}

/// The two native-messaging dialects: where the manifest goes and how it names our extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Chromium,
    Firefox,
}

impl Browser {
    const ALL: [Browser; 9] = [
        Browser::Chromium,
        Browser::Chrome,
        Browser::ChromeBeta,
        Browser::ChromeDev,
        Browser::ChromeCanary,
        Browser::Brave,
        Browser::Edge,
        Browser::Vivaldi,
        Browser::Firefox,
    ];

    pub fn family(self) -> Family {
        match self {
            Browser::Firefox => Family::Firefox,
            _ => Family::Chromium,
        }
    }

    /// The `--browser` value.
    pub fn name(self) -> &'static str {
        match self {
            Browser::Chromium => "chromium",
            Browser::Chrome => "chrome",
            Browser::ChromeBeta => "chrome-beta",
            Browser::ChromeDev => "chrome-dev",
            Browser::ChromeCanary => "chrome-canary",
            Browser::Brave => "brave",
            Browser::Edge => "edge",
            Browser::Vivaldi => "vivaldi",
            Browser::Firefox => "firefox",
        }
    }

    /// How people call it.
    pub fn display_name(self) -> &'static str {
        match self {
            Browser::Chromium => "Chromium",
            Browser::Chrome => "Google Chrome",
            Browser::ChromeBeta => "Google Chrome Beta",
            Browser::ChromeDev => "Google Chrome Dev",
            Browser::ChromeCanary => "Google Chrome Canary",
            Browser::Brave => "Brave",
            Browser::Edge => "Microsoft Edge",
            Browser::Vivaldi => "Vivaldi",
            Browser::Firefox => "Firefox",
        }
    }

    /// Whether this user has run the browser (its profile directory exists).
    fn present(self) -> Result<bool, Error> {
        let profiles = config_base()?.join(self.profile_dir()).is_dir();
        // Firefox on Linux keeps its profiles in ~/.mozilla/firefox, or (since it follows XDG,
        // when there is no ~/.mozilla) in $XDG_CONFIG_HOME/mozilla/firefox.
        let legacy = self == Browser::Firefox
            && !cfg!(target_os = "macos")
            && home()?.join(".mozilla/firefox").is_dir();
        Ok(profiles || legacy)
    }

    /// Where the browser looks for this user's host manifests.
    pub fn hosts_dir(self) -> Result<PathBuf, Error> {
        match self.family() {
            Family::Chromium => Ok(config_base()?
                .join(self.profile_dir())
                .join("NativeMessagingHosts")),
            // Measured with firefox-esr 153: it reads ~/.mozilla/native-messaging-hosts even
            // when its profiles live under XDG_CONFIG_HOME.
            Family::Firefox if cfg!(target_os = "macos") => {
                Ok(config_base()?.join("Mozilla/NativeMessagingHosts"))
            }
            Family::Firefox => Ok(home()?.join(".mozilla/native-messaging-hosts")),
        }
    }

    /// The default user-data (profiles) directory, relative to the per-user config base.
    fn profile_dir(self) -> &'static str {
        if cfg!(target_os = "macos") {
            match self {
                Browser::Chromium => "Chromium",
                Browser::Chrome => "Google/Chrome",
                Browser::ChromeBeta => "Google/Chrome Beta",
                Browser::ChromeDev => "Google/Chrome Dev",
                Browser::ChromeCanary => "Google/Chrome Canary",
                Browser::Brave => "BraveSoftware/Brave-Browser",
                Browser::Edge => "Microsoft Edge",
                Browser::Vivaldi => "Vivaldi",
                Browser::Firefox => "Firefox",
            }
        } else {
            match self {
                Browser::Chromium => "chromium",
                Browser::Chrome => "google-chrome",
                Browser::ChromeBeta => "google-chrome-beta",
                Browser::ChromeDev => "google-chrome-unstable",
                Browser::ChromeCanary => "google-chrome-canary",
                Browser::Brave => "BraveSoftware/Brave-Browser",
                Browser::Edge => "microsoft-edge",
                Browser::Vivaldi => "vivaldi",
                Browser::Firefox => "mozilla/firefox",
            }
        }
    }
}

fn home() -> Result<PathBuf, Error> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| Error::bad_request("HOME is not set; pass --user-data-dir"))
}

/// `~/Library/Application Support` on macOS; `$XDG_CONFIG_HOME` or `~/.config` elsewhere
/// (where Chromium-family browsers keep their user-data directories, and Firefox its profiles
/// when it follows XDG).
fn config_base() -> Result<PathBuf, Error> {
    if cfg!(target_os = "macos") {
        return Ok(home()?.join("Library/Application Support"));
    }
    match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => Ok(home()?.join(".config")),
    }
}

/// The browsers whose default profile exists here, each with the directory its native host
/// manifests go to.
pub fn detected() -> Result<Vec<(Browser, PathBuf)>, Error> {
    let mut found = Vec::new();
    for b in Browser::ALL {
        if b.present()? {
            found.push((b, b.hosts_dir()?));
        }
    }
    Ok(found)
}

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The browser to register with (repeatable) [default: every one whose profile directory
    /// exists]. `firefox` covers Firefox ESR, Developer Edition and Nightly too: all read
    /// ~/.mozilla/native-messaging-hosts, for every profile.
    #[arg(long = "browser", value_enum, value_name = "BROWSER")]
    pub browsers: Vec<Browser>,
    /// A custom user-data directory of a Chromium-family browser (its `--user-data-dir`): the
    /// host goes into DIR/NativeMessagingHosts. (Firefox has no per-profile hosts.)
    #[arg(long, value_name = "DIR")]
    pub user_data_dir: Option<PathBuf>,
    /// Remove the host instead.
    #[arg(long)]
    pub uninstall: bool,
    /// Bake this discovery directory into the host (default: the `discovery-dir` of the
    /// daemon's config file, else the host's own default, /tmp/browser-mcp, or
    /// BROWSER_MCP_DISCOVERY_DIR as the browser passes it on).
    #[arg(long, env = "BROWSER_MCP_DISCOVERY_DIR", value_name = "DIR")]
    pub discovery_dir: Option<PathBuf>,
    /// Print what was written or removed as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Where one installation goes.
#[derive(Debug)]
struct Target {
    browser: String,
    family: Family,
    dir: PathBuf,
}

#[derive(Debug, Serialize)]
struct Done {
    browser: String,
    manifest: PathBuf,
    wrapper: PathBuf,
    /// What the wrapper runs (install) or whether anything was there (uninstall).
    #[serde(skip_serializing_if = "Option::is_none")]
    runs: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    removed: Option<bool>,
}

fn targets(a: &InstallArgs) -> Result<Vec<Target>, Error> {
    if let Some(dir) = &a.user_data_dir {
        if a.browsers.contains(&Browser::Firefox) {
            return Err(Error::bad_request(
                "Firefox reads native hosts per user (~/.mozilla/native-messaging-hosts), not per \
                 profile: --user-data-dir is for Chromium-family browsers; use --browser firefox alone",
            ));
        }
        let dir = std::path::absolute(dir)
            .map_err(|e| Error::bad_request(format!("{}: {e}", dir.display())))?;
        return Ok(vec![Target {
            browser: "custom".into(),
            family: Family::Chromium,
            dir: dir.join("NativeMessagingHosts"),
        }]);
    }
    let chosen: Vec<(Browser, PathBuf)> = if a.browsers.is_empty() {
        detected()?
    } else {
        let mut chosen = Vec::new();
        for b in &a.browsers {
            chosen.push((*b, b.hosts_dir()?));
        }
        chosen
    };
    if chosen.is_empty() {
        return Err(Error::bad_request(format!(
            "found no browser profile under {}; name the browser with --browser (chromium, chrome, firefox, …) or give --user-data-dir",
            config_base()?.display()
        )));
    }
    Ok(chosen
        .into_iter()
        .map(|(b, dir)| Target {
            browser: b.name().into(),
            family: b.family(),
            dir,
        })
        .collect())
}

fn wrapper_script(browserctl: &Path, discovery_dir: Option<&Path>) -> Result<String, Error> {
    let text = |p: &Path| {
        p.to_str()
            .map(sh_quote)
            .ok_or_else(|| Error::bad_request(format!("{} is not UTF-8", p.display())))
    };
    let mut cmd = format!("exec {} native-host", text(browserctl)?);
    if let Some(dir) = discovery_dir {
        cmd.push_str(&format!(" --discovery-dir {}", text(dir)?));
    }
    Ok(format!(
        "#!/bin/sh\n# Written by `browserctl install-native-host`: the browser starts this with the\n# caller's origin as argument.\n{cmd} \"$@\"\n"
    ))
}

/// Reads back the browserctl a wrapper written by [`wrapper_script`] runs.
pub fn wrapper_target(script: &str) -> Option<PathBuf> {
    let line = script.lines().find_map(|l| l.strip_prefix("exec "))?;
    // One sh word of ours: '…' pieces, with '\'' standing for a quote.
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    loop {
        match chars.next()? {
            '\'' => loop {
                match chars.next()? {
                    '\'' => break,
                    c => out.push(c),
                }
            },
            '\\' => out.push(chars.next()?),
            ' ' => break,
            c => out.push(c),
        }
        if chars.peek().is_none_or(|c| *c == ' ') {
            break;
        }
    }
    Some(PathBuf::from(out))
}

/// The build directory `path` lies in, if any: a directory cargo marks with CACHEDIR.TAG, or
/// a `target` next to a Cargo.toml. What is there goes with the next `cargo clean`.
pub fn build_dir(path: &Path) -> Option<PathBuf> {
    path.ancestors().skip(1).find_map(|dir| {
        let cargo_target = dir.join("CACHEDIR.TAG").is_file()
            || (dir.file_name().is_some_and(|n| n == "target")
                && dir.parent().is_some_and(|p| p.join("Cargo.toml").is_file()));
        cargo_target.then(|| dir.to_path_buf())
    })
}

fn manifest(wrapper: &Path, family: Family) -> serde_json::Value {
    host_manifest(wrapper, family == Family::Firefox)
}

/// The manifest key that names who may start the host.
pub fn allowed_key(family: Family) -> &'static str {
    match family {
        Family::Chromium => "allowed_origins",
        Family::Firefox => "allowed_extensions",
    }
}

/// Our extension, as that key names it.
pub fn allowed_value(family: Family) -> &'static str {
    match family {
        Family::Chromium => EXTENSION_ORIGIN,
        Family::Firefox => GECKO_EXTENSION_ID,
    }
}

/// Writes `contents` to `path` through a temp file and a rename, so a browser never reads
/// half a manifest.
fn write_file(path: &Path, contents: &[u8], mode: u32) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let _ = fs::remove_file(&tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)?;
    f.write_all(contents)?;
    f.set_permissions(fs::Permissions::from_mode(mode))?;
    drop(f);
    fs::rename(&tmp, path)
}

fn install(t: &Target, browserctl: &Path, discovery_dir: Option<&Path>) -> Result<Done, Error> {
    let io = |what: &Path, e: std::io::Error| {
        Error::internal(format!("cannot write {}: {e}", what.display()))
    };
    fs::create_dir_all(&t.dir).map_err(|e| io(&t.dir, e))?;
    let wrapper = t.dir.join(WRAPPER_NAME);
    let manifest_path = t.dir.join(format!("{HOST_NAME}.json"));
    let script = wrapper_script(browserctl, discovery_dir)?;
    write_file(&wrapper, script.as_bytes(), 0o755).map_err(|e| io(&wrapper, e))?;
    let mut body = serde_json::to_vec_pretty(&manifest(&wrapper, t.family)).expect("JSON");
    body.push(b'\n');
    write_file(&manifest_path, &body, 0o644).map_err(|e| io(&manifest_path, e))?;
    let mut runs = format!("{} native-host", browserctl.display());
    if let Some(dir) = discovery_dir {
        runs.push_str(&format!(" --discovery-dir {}", dir.display()));
    }
    Ok(Done {
        browser: t.browser.clone(),
        manifest: manifest_path,
        wrapper,
        runs: Some(runs),
        removed: None,
    })
}

fn uninstall(t: &Target) -> Result<Done, Error> {
    let manifest = t.dir.join(format!("{HOST_NAME}.json"));
    let wrapper = t.dir.join(WRAPPER_NAME);
    let mut removed = false;
    for path in [&manifest, &wrapper] {
        match fs::remove_file(path) {
            Ok(()) => removed = true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(Error::internal(format!(
                    "cannot remove {}: {e}",
                    path.display()
                )))
            }
        }
    }
    Ok(Done {
        browser: t.browser.clone(),
        manifest,
        wrapper,
        runs: None,
        removed: Some(removed),
    })
}

/// This user's running native hosts (`browserctl native-host`, as the wrapper starts it), by
/// pid; none where there is no /proc.
fn running_hosts() -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;
    let me = (std::process::id(), nix::unistd::geteuid().as_raw());
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out: Vec<u32> = entries
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let ours = e.metadata().ok()?.uid() == me.1 && pid != me.0;
            let cmdline = ours.then(|| fs::read(e.path().join("cmdline")).ok())??;
            let mut argv = cmdline.split(|&b| b == 0);
            let program = argv.next()?;
            let host = program.ends_with(b"browserctl") && argv.next()? == b"native-host";
            host.then_some(pid)
        })
        .collect();
    out.sort_unstable();
    out
}

/// The `discovery-dir` of the daemon's config file: a host installed without `--discovery-dir`
/// looks where the daemon writes (issue 59: it looked in the default and found nothing).
fn configured_discovery_dir() -> Option<PathBuf> {
    let text = fs::read_to_string(crate::paths::daemon_config_path()?).ok()?;
    let table = toml::from_str::<toml::Table>(&text).ok()?;
    table.get("discovery-dir")?.as_str().map(PathBuf::from)
}

pub fn run(a: InstallArgs, json: bool) -> Result<(), Stop> {
    let targets = targets(&a)?;
    let browserctl = std::env::current_exe()
        .map_err(|e| Error::internal(format!("cannot find this program's path: {e}")))?;
    let discovery_dir = match a.discovery_dir.clone().or_else(configured_discovery_dir) {
        Some(d) => Some(std::path::absolute(d).map_err(|e| Error::bad_request(e.to_string()))?),
        None => None,
    };
    let mut warnings = Vec::new();
    if let (false, Some(dir)) = (a.uninstall, build_dir(&browserctl)) {
        warnings.push(format!(
            "the native host will run {}, which is inside the build directory {}: it stops \
             working after `cargo clean`. Install browserctl for good (`cargo install --locked \
             --path .`, or a package) and run `browserctl install-native-host` again from there",
            browserctl.display(),
            dir.display()
        ));
    }
    let hosts = running_hosts();
    if let (false, Some(pid)) = (a.uninstall, hosts.first()) {
        warnings.push(format!(
            "a native host runs already (pid {pid}{}): a browser keeps the host it started \
             until it exits, so restart the browser for this install to take effect",
            if hosts.len() > 1 { ", and more" } else { "" }
        ));
    }
    let mut done = Vec::new();
    for t in &targets {
        done.push(if a.uninstall {
            uninstall(t)?
        } else {
            install(t, &browserctl, discovery_dir.as_deref())?
        });
    }
    if json {
        let key = if a.uninstall {
            "uninstalled"
        } else {
            "installed"
        };
        return print_json(&serde_json::json!({ key: done, "warnings": warnings }));
    }
    for w in &warnings {
        super::output::note(&format!("warning: {w}"));
    }
    let lines: Vec<String> = done
        .iter()
        .map(|d| match (&d.runs, d.removed) {
            (Some(runs), _) => format!(
                "{}: wrote {} and {} (runs {runs})",
                d.browser,
                d.manifest.display(),
                d.wrapper.display()
            ),
            (None, Some(true)) => format!(
                "{}: removed {} and {}",
                d.browser,
                d.manifest.display(),
                d.wrapper.display()
            ),
            (None, _) => format!(
                "{}: nothing installed in {}",
                d.browser,
                d.manifest.parent().unwrap_or(Path::new("")).display()
            ),
        })
        .collect();
    print(&lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_odd_paths() {
        assert_eq!(sh_quote("/a b/c"), "'/a b/c'");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        let s = wrapper_script(Path::new("/x/browser ctl"), Some(Path::new("/tmp/d'd"))).unwrap();
        assert!(
            s.ends_with(
                "exec '/x/browser ctl' native-host --discovery-dir '/tmp/d'\\''d' \"$@\"\n"
            ),
            "{s}"
        );
    }

    #[test]
    fn the_wrapper_target_reads_back() {
        for path in ["/usr/bin/browserctl", "/x/browser ctl", "/it's/here"] {
            let script = wrapper_script(Path::new(path), Some(Path::new("/d"))).unwrap();
            assert_eq!(
                wrapper_target(&script),
                Some(PathBuf::from(path)),
                "{script}"
            );
        }
    }

    #[test]
    fn build_directories_are_recognised() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("proj/target");
        std::fs::create_dir_all(target.join("release")).unwrap();
        assert_eq!(build_dir(&target.join("release/browserctl")), None);
        std::fs::write(tmp.path().join("proj/Cargo.toml"), "").unwrap();
        assert_eq!(build_dir(&target.join("release/browserctl")), Some(target));
        assert_eq!(build_dir(Path::new("/usr/bin/browserctl")), None);
    }

    #[test]
    fn manifest_names_our_extension() {
        let m = manifest(Path::new("/h/browser-mcp-native-host"), Family::Chromium);
        assert_eq!(m["name"], "dev.browsermcp.host");
        assert_eq!(m["type"], "stdio");
        assert_eq!(m["path"], "/h/browser-mcp-native-host");
        assert_eq!(
            m["allowed_origins"],
            serde_json::json!(["chrome-extension://jldadifenendlhihnlmegbljijfhnffa/"])
        );
        assert!(m.get("allowed_extensions").is_none(), "{m}");
    }

    #[test]
    fn firefox_manifest_names_our_gecko_id() {
        let m = manifest(Path::new("/h/browser-mcp-native-host"), Family::Firefox);
        assert_eq!(m["name"], "dev.browsermcp.host");
        assert_eq!(m["type"], "stdio");
        assert_eq!(
            m["allowed_extensions"],
            serde_json::json!(["browser-mcp@browsermcp.dev"])
        );
        assert!(m.get("allowed_origins").is_none(), "{m}");
    }

    #[test]
    fn the_gecko_id_is_the_manifests() {
        let text = include_str!("../../extension/manifest.json");
        let m: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            m["browser_specific_settings"]["gecko"]["id"],
            GECKO_EXTENSION_ID
        );
    }
}
