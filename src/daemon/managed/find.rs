//! Which browser a launch starts, and where its executable is: named in the config
//! (`browser-path KIND=PATH`), else looked for on PATH. Nothing is ever downloaded.

use crate::error::{Error, ErrorCode};
use serde_json::json;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Chromium,
    Chrome,
    Edge,
    Brave,
    Firefox,
}

impl Kind {
    /// In the order a launch that names no browser tries them.
    pub const ALL: [Kind; 5] = [
        Kind::Chromium,
        Kind::Chrome,
        Kind::Edge,
        Kind::Brave,
        Kind::Firefox,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Chromium => "chromium",
            Kind::Chrome => "chrome",
            Kind::Edge => "edge",
            Kind::Brave => "brave",
            Kind::Firefox => "firefox",
        }
    }

    pub fn firefox(self) -> bool {
        self == Kind::Firefox
    }

    /// A `--browser` value; the names people also use are taken too.
    pub fn parse(s: &str) -> Result<Kind, Error> {
        match s.to_ascii_lowercase().as_str() {
            "chromium" | "chromium-browser" => Ok(Kind::Chromium),
            "chrome" | "google-chrome" => Ok(Kind::Chrome),
            "edge" | "msedge" | "microsoft-edge" => Ok(Kind::Edge),
            "brave" | "brave-browser" => Ok(Kind::Brave),
            "firefox" | "firefox-esr" => Ok(Kind::Firefox),
            _ => Err(Error::bad_request(format!(
                "unknown browser `{s}`; one of {}",
                crate::protocol::managed::KINDS.join(", ")
            ))),
        }
    }

    /// The commands looked for on PATH, best first.
    pub fn commands(self) -> &'static [&'static str] {
        match self {
            Kind::Chromium => &["chromium", "chromium-browser"],
            Kind::Chrome => &["google-chrome", "google-chrome-stable", "chrome"],
            Kind::Edge => &["microsoft-edge", "microsoft-edge-stable", "msedge"],
            Kind::Brave => &["brave-browser", "brave"],
            // ESR first: release Firefox refuses the unsigned extension.
            Kind::Firefox => &["firefox-esr", "firefox"],
        }
    }

    fn install_hint(self) -> &'static str {
        match self {
            Kind::Chromium => "Debian/Ubuntu: apt-get install chromium",
            Kind::Firefox => "Debian: apt-get install firefox-esr",
            _ => "install it from its vendor",
        }
    }
}

/// A browser to launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub kind: Kind,
    pub exe: PathBuf,
}

fn executable(p: &Path) -> bool {
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The `browser-path` entries, as (kind, path); a malformed one is an error worth saying.
fn configured(entries: &[String]) -> Result<Vec<(Kind, PathBuf)>, Error> {
    entries
        .iter()
        .map(|e| {
            let (kind, path) = e.split_once('=').ok_or_else(|| {
                Error::bad_request(format!(
                    "browser-path `{e}` is not KIND=PATH (e.g. chrome=/opt/google/chrome/chrome)"
                ))
            })?;
            Ok((Kind::parse(kind.trim())?, PathBuf::from(path.trim())))
        })
        .collect()
}

fn on_path(command: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(command))
        .find(|p| executable(p))
}

/// The browser to launch: `want`, or the first of [`Kind::ALL`] found. `paths` is the
/// config's `browser-path`, `path` the PATH to search.
pub fn find(want: Option<Kind>, paths: &[String], path: Option<&OsStr>) -> Result<Found, Error> {
    let named = configured(paths)?;
    let kinds: Vec<Kind> = match want {
        Some(k) => vec![k],
        None => Kind::ALL.to_vec(),
    };
    let mut looked = Vec::new();
    for kind in &kinds {
        if let Some((_, exe)) = named.iter().find(|(k, _)| k == kind) {
            if executable(exe) {
                return Ok(Found {
                    kind: *kind,
                    exe: exe.clone(),
                });
            }
            looked.push(exe.display().to_string());
            continue;
        }
        for command in kind.commands() {
            if let Some(exe) = on_path(command, path) {
                return Ok(Found { kind: *kind, exe });
            }
            looked.push((*command).to_owned());
        }
    }
    let path_text = path
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let what = match want {
        Some(k) => format!("no {} to launch", k.name()),
        None => "no browser to launch".to_owned(),
    };
    let hint = match want {
        Some(k) => k.install_hint(),
        None => "Debian/Ubuntu: apt-get install chromium (or firefox-esr)",
    };
    Err(Error::new(
        ErrorCode::BrowserNotInstalled,
        format!(
            "{what}: looked for {} on PATH ({path_text}) and in browser-path; install one \
             ({hint}) or name its executable with the daemon's --browser-path KIND=PATH",
            looked.join(", ")
        ),
    )
    .with_details(json!({"lookedFor": looked, "path": path_text})))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_on_path_or_as_configured_and_says_what_it_looked_for() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("firefox-esr");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().as_os_str();
        let found = find(None, &[], Some(path)).unwrap();
        assert_eq!((found.kind, found.exe), (Kind::Firefox, exe.clone()));
        let e = find(Some(Kind::Chromium), &[], Some(path)).unwrap_err();
        assert_eq!(e.code, ErrorCode::BrowserNotInstalled);
        assert!(e.message.contains("chromium, chromium-browser"), "{e}");
        let chrome = format!("chrome={}", exe.display());
        let found = find(Some(Kind::Chrome), &[chrome], None).unwrap();
        assert_eq!(found.kind, Kind::Chrome);
        let e = find(None, &["chromium=/nowhere".into()], Some(OsStr::new(""))).unwrap_err();
        assert!(e.message.contains("/nowhere"), "{e}");
        assert_eq!(e.details.unwrap()["lookedFor"][0], "/nowhere");
        assert_eq!(
            find(None, &["nonsense".into()], None).unwrap_err().code,
            ErrorCode::BadRequest
        );
    }
}
