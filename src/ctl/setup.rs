//! `browserctl setup [--uninstall]`: for users who installed with cargo, writes (or removes)
//! the systemd user units or the launchd LaunchAgent, from the same files the packages ship.

use super::output::{print, Stop};
use crate::error::Error;
use std::path::{Path, PathBuf};

const SERVICE: &str = include_str!("../../systemd/browser-mcpd.service");
const SOCKET: &str = include_str!("../../systemd/browser-mcpd.socket");
const PLIST: &str = include_str!("../../launchd/dev.browsermcp.browser-mcpd.plist");
pub const LAUNCHD_LABEL: &str = "dev.browsermcp.browser-mcpd";
/// The man pages, for those who installed with cargo (a package ships its own).
const MAN_PAGES: [(&str, &str); 2] = [
    ("browserctl.1", include_str!("../../man/browserctl.1")),
    ("browser-mcpd.1", include_str!("../../man/browser-mcpd.1")),
];
/// The ExecStart of the shipped unit, replaced by the daemon found here.
const PACKAGED_EXEC: &str = "ExecStart=/usr/bin/browser-mcpd";
/// Marks the files `setup` wrote, so `--uninstall` removes only those. (No `--` in it: it
/// also goes into an XML comment.)
const MARK: &str =
    "Written by browserctl setup, which removes it again when given the uninstall flag.";

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Manager {
    /// systemd user units in $XDG_CONFIG_HOME/systemd/user
    Systemd,
    /// a LaunchAgent in ~/Library/LaunchAgents
    Launchd,
}

#[derive(Debug, clap::Args)]
pub struct SetupArgs {
    /// Remove the files `setup` wrote (files it did not write are left alone).
    #[arg(long)]
    pub uninstall: bool,
    /// The service manager to set up [default: launchd on macOS, systemd elsewhere].
    #[arg(long, value_enum)]
    pub manager: Option<Manager>,
    /// The browser-mcpd to run [default: the one beside browserctl, else the first on PATH].
    #[arg(long, value_name = "PATH")]
    pub daemon: Option<PathBuf>,
    /// Print what was written or removed, and the commands to run next, as JSON.
    #[arg(long)]
    pub json: bool,
}

fn fail(message: impl Into<String>) -> Stop {
    Stop::Api(Error::bad_request(message))
}

fn home() -> Result<PathBuf, Stop> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| fail("HOME is not set"))
}

fn systemd_dir() -> Result<PathBuf, Stop> {
    Ok(
        match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
            Some(dir) => PathBuf::from(dir).join("systemd/user"),
            None => home()?.join(".config/systemd/user"),
        },
    )
}

fn find_daemon(given: Option<PathBuf>) -> Result<PathBuf, Stop> {
    let candidate = given.or_else(|| {
        let beside = std::env::current_exe().ok()?.with_file_name("browser-mcpd");
        beside.is_file().then_some(beside)
    });
    let candidate = candidate.or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join("browser-mcpd"))
            .find(|p| p.is_file())
    });
    let path = candidate.ok_or_else(|| {
        fail("cannot find browser-mcpd beside browserctl or on PATH; pass --daemon PATH")
    })?;
    let path = path
        .canonicalize()
        .map_err(|e| fail(format!("{}: {e}", path.display())))?;
    if !path.is_file() {
        return Err(fail(format!("{} is not a file", path.display())));
    }
    Ok(path)
}

/// The files to write for a manager: (path, contents).
fn files(manager: Manager, daemon: &Path) -> Result<Vec<(PathBuf, String)>, Stop> {
    let daemon = daemon.display().to_string();
    if daemon.contains(char::is_whitespace) {
        // Neither ExecStart= nor the plist template would keep such a path in one piece.
        return Err(fail(format!(
            "the path {daemon} contains whitespace; install browser-mcpd elsewhere or pass --daemon"
        )));
    }
    Ok(match manager {
        Manager::Systemd => {
            let dir = systemd_dir()?;
            let service = SERVICE.replace(PACKAGED_EXEC, &format!("ExecStart={daemon}"));
            vec![
                (
                    dir.join("browser-mcpd.service"),
                    format!("# {MARK}\n{service}"),
                ),
                (
                    dir.join("browser-mcpd.socket"),
                    format!("# {MARK}\n{SOCKET}"),
                ),
            ]
        }
        Manager::Launchd => {
            let home = home()?;
            let plist = PLIST
                .replace("@BIN@", &xml_escape(&daemon))
                .replace("@HOME@", &xml_escape(&home.display().to_string()))
                .replacen("<plist ", &format!("<!-- {MARK} -->\n<plist "), 1);
            vec![(
                home.join(format!("Library/LaunchAgents/{LAUNCHD_LABEL}.plist")),
                plist,
            )]
        }
    })
}

/// Where the man pages go: `share/man/man1` beside the `bin` this browserctl runs from, where
/// man looks for the pages of a PATH directory (`DIR/../share/man`): `~/.cargo/share/man` after
/// `cargo install`. None when run from a build directory, whose pages are in the tree.
fn man_files() -> Vec<(PathBuf, String)> {
    let exe = std::env::current_exe().and_then(|p| p.canonicalize());
    let Some(root) = exe
        .ok()
        .and_then(|e| Some(e.parent()?.parent()?.to_path_buf()))
    else {
        return Vec::new();
    };
    if super::install_host::build_dir(&root.join("bin/browserctl")).is_some() {
        return Vec::new();
    }
    let dir = root.join("share/man/man1");
    MAN_PAGES
        .iter()
        .map(|(name, page)| (dir.join(name), format!(".\\\" {MARK}\n{page}")))
        .collect()
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn ours(path: &Path) -> Option<bool> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(text.contains(MARK))
}

/// What `setup` did: the text report and the JSON one come from this.
#[derive(Debug, Default, serde::Serialize)]
struct Report {
    manager: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    daemon: Option<PathBuf>,
    wrote: Vec<PathBuf>,
    removed: Vec<PathBuf>,
    #[serde(rename = "leftAlone")]
    left_alone: Vec<PathBuf>,
    #[serde(rename = "notPresent")]
    not_present: Vec<PathBuf>,
    /// Commands to run next.
    next: Vec<&'static str>,
}

impl Report {
    fn print(&self, json: bool) -> Result<(), Stop> {
        if json {
            return super::output::print_json(self);
        }
        let mut text = String::new();
        for p in &self.wrote {
            text.push_str(&format!("wrote {}\n", p.display()));
        }
        if let Some(d) = &self.daemon {
            text.push_str(&format!("the service runs {}\n", d.display()));
        }
        for p in &self.not_present {
            text.push_str(&format!("not present: {}\n", p.display()));
        }
        for p in &self.left_alone {
            text.push_str(&format!(
                "left alone (not written by browserctl setup): {}\n",
                p.display()
            ));
        }
        for p in &self.removed {
            text.push_str(&format!("removed {}\n", p.display()));
        }
        if !self.next.is_empty() {
            text.push_str(if self.wrote.is_empty() {
                "next, if it is running:\n"
            } else {
                "next:\n"
            });
            for c in &self.next {
                text.push_str(&format!("  {c}\n"));
            }
        }
        if self.manager == "systemd" && !self.wrote.is_empty() {
            text.push_str(
                "(or enable browser-mcpd.socket instead, to start the daemon on first use)\n",
            );
        }
        print(&text)
    }
}

fn manager_name(m: Manager) -> &'static str {
    match m {
        Manager::Systemd => "systemd",
        Manager::Launchd => "launchd",
    }
}

pub fn run(args: SetupArgs, json: bool) -> Result<(), Stop> {
    let manager = args.manager.unwrap_or(if cfg!(target_os = "macos") {
        Manager::Launchd
    } else {
        Manager::Systemd
    });
    if args.uninstall {
        return uninstall(manager)?.print(json);
    }
    let daemon = find_daemon(args.daemon)?;
    let files = files(manager, &daemon)?;
    for (path, _) in &files {
        if ours(path) == Some(false) {
            return Err(fail(format!(
                "{} exists and was not written by browserctl setup; remove it or edit it by hand",
                path.display()
            )));
        }
    }
    let mut report = Report {
        manager: manager_name(manager),
        ..Report::default()
    };
    for (path, contents) in &files {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
        }
        std::fs::write(path, contents)
            .map_err(|e| fail(format!("cannot write {}: {e}", path.display())))?;
        report.wrote.push(path.clone());
    }
    for (path, page) in man_files() {
        if ours(&path) == Some(false) {
            report.left_alone.push(path);
            continue;
        }
        let written = path.parent().map(std::fs::create_dir_all).transpose();
        match written.and_then(|_| std::fs::write(&path, page)) {
            Ok(()) => report.wrote.push(path),
            // Man pages are a help, not the service: a directory not ours to write is skipped.
            Err(e) => tracing::debug!("{}: {e}", path.display()),
        }
    }
    report.daemon = Some(daemon);
    report.next = match manager {
        Manager::Systemd => vec![
            "systemctl --user daemon-reload",
            "systemctl --user enable --now browser-mcpd.service",
        ],
        Manager::Launchd => vec![
            "launchctl bootstrap gui/$(id -u) ~/Library/LaunchAgents/dev.browsermcp.browser-mcpd.plist",
        ],
    };
    report.print(json)
}

fn uninstall(manager: Manager) -> Result<Report, Stop> {
    // The daemon path does not matter for knowing which files to remove.
    let mut files = files(manager, Path::new("/usr/bin/browser-mcpd"))?;
    files.extend(man_files());
    let mut report = Report {
        manager: manager_name(manager),
        ..Report::default()
    };
    for (path, _) in &files {
        match ours(path) {
            None => report.not_present.push(path.clone()),
            Some(false) => report.left_alone.push(path.clone()),
            Some(true) => {
                remove_enablement(path, &mut report.removed);
                std::fs::remove_file(path)
                    .map_err(|e| fail(format!("cannot remove {}: {e}", path.display())))?;
                report.removed.push(path.clone());
            }
        }
    }
    report.next = match manager {
        Manager::Systemd => vec![
            "systemctl --user stop browser-mcpd.service browser-mcpd.socket",
            "systemctl --user daemon-reload",
        ],
        Manager::Launchd => vec!["launchctl bootout gui/$(id -u)/dev.browsermcp.browser-mcpd"],
    };
    Ok(report)
}

/// What `systemctl --user disable` would remove: the `*.wants/` links to a unit we wrote, so
/// none is left dangling once the unit is gone.
fn remove_enablement(unit: &Path, removed: &mut Vec<PathBuf>) {
    let (Some(dir), Some(name)) = (unit.parent(), unit.file_name()) else {
        return;
    };
    for wants in ["default.target.wants", "sockets.target.wants"] {
        let link = dir.join(wants).join(name);
        if std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink())
            && std::fs::remove_file(&link).is_ok()
        {
            removed.push(link);
        }
    }
}
