//! The daemon's settings: [`config`] declares them ([`Config`]: the flags, their environment
//! variables, the config file's keys); this file loads them. A leaf: it imports nothing else
//! of the daemon, and most of it reads [`Config`].
//!
//! Where each setting comes from: a flag, else its environment variable, else the config file,
//! else the default. `--print-config` shows the result with the source of every value.
//!
//! The file is applied through clap itself: each file value the command line and environment
//! left unset becomes one more `--key=value` argument, so a value from the file is parsed and
//! checked by exactly the same code as the flag, and precedence is decided in one place.

pub mod config;

use clap::parser::ValueSource;
use clap::{ArgAction, CommandFactory, FromArgMatches};
use config::Config;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

/// Settings read only at start: a reload that changes them warns and keeps the old value.
pub const RESTART_ONLY: &[&str] = &[
    "port",
    "bind",
    "socket",
    "discovery-dir",
    "pairing-file",
    "token-file",
    "event-buffer",
    "event-stream-buffer",
    "log-format",
    "log-file",
    "log-file-max-bytes",
    "threads",
    "managed-dir",
];

/// Options that are not settings and so have no place in the file.
const NOT_IN_FILE: &[&str] = &["config", "print-config", "help", "version"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Default,
    Flag,
    Env(String),
    File,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::Flag => f.write_str("flag"),
            Source::Env(name) => write!(f, "env {name}"),
            Source::File => f.write_str("file"),
        }
    }
}

/// The config file as found (or not) at load time.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    pub path: Option<PathBuf>,
    pub present: bool,
}

/// Settings with the origin of each, and the raw values for printing.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    pub file: ConfigFile,
    /// key (long option name) → (raw values, source)
    pub values: BTreeMap<String, (Vec<String>, Source)>,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Usage errors, --help and --version: clap prints and exits.
    #[error(transparent)]
    Usage(#[from] clap::Error),
    #[error("config file {path}: {message}")]
    File { path: PathBuf, message: String },
}

pub use crate::paths::default_config_path;

fn file_error(path: &Path, message: impl Into<String>) -> LoadError {
    LoadError::File {
        path: path.to_owned(),
        message: message.into(),
    }
}

fn read_table(path: &Path, explicit: bool) -> Result<Option<toml::Table>, LoadError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound && !explicit => return Ok(None),
        Err(e) => return Err(file_error(path, e.to_string())),
    };
    toml::from_str::<toml::Table>(&text)
        .map(Some)
        .map_err(|e| file_error(path, e.to_string().trim_end().to_owned()))
}

/// The values one file entry stands for, as command-line strings.
fn scalar(key: &str, v: &toml::Value) -> Result<String, String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        _ => Err(format!("`{key}` must be a string, number or boolean")),
    }
}

/// Parses flags and environment (`argv[0]` is the program name), then the config file.
pub fn load(argv: &[OsString]) -> Result<Loaded, LoadError> {
    let cmd = Config::command();
    let first = cmd.clone().try_get_matches_from(argv)?;
    let (path, explicit) = match first.get_one::<PathBuf>("config") {
        Some(p) => (Some(p.clone()), true),
        None => (default_config_path(), false),
    };
    let table = match &path {
        Some(p) => read_table(p, explicit)?,
        None => None,
    };
    let mut extra: Vec<OsString> = Vec::new();
    let mut from_file: Vec<String> = Vec::new();
    if let (Some(table), Some(path)) = (&table, &path) {
        for (key, value) in table {
            let arg = cmd
                .get_arguments()
                .find(|a| {
                    a.get_long() == Some(key.as_str()) && !NOT_IN_FILE.contains(&key.as_str())
                })
                .ok_or_else(|| {
                    let known: Vec<&str> = cmd
                        .get_arguments()
                        .filter_map(|a| a.get_long())
                        .filter(|k| !NOT_IN_FILE.contains(k))
                        .collect();
                    file_error(
                        path,
                        format!("unknown key `{key}`; known keys: {}", known.join(", ")),
                    )
                })?;
            if matches!(
                first.value_source(arg.get_id().as_str()),
                Some(ValueSource::CommandLine | ValueSource::EnvVariable)
            ) {
                continue;
            }
            let items = match value {
                toml::Value::Array(items) => items.iter().collect(),
                one => vec![one],
            };
            if matches!(arg.get_action(), ArgAction::SetTrue) {
                match value {
                    toml::Value::Boolean(true) => extra.push(format!("--{key}").into()),
                    toml::Value::Boolean(false) => {}
                    _ => return Err(file_error(path, format!("`{key}` must be true or false"))),
                }
            } else {
                if items.len() > 1 && !matches!(arg.get_action(), ArgAction::Append) {
                    return Err(file_error(
                        path,
                        format!("`{key}` takes one value, not a list"),
                    ));
                }
                for item in items {
                    let s = scalar(key, item).map_err(|m| file_error(path, m))?;
                    extra.push(format!("--{key}={s}").into());
                }
            }
            from_file.push(key.clone());
        }
    }
    let mut full = argv.to_vec();
    full.extend(extra);
    let matches = cmd
        .clone()
        .try_get_matches_from(&full)
        .map_err(|e| match &path {
            // The flags alone parsed, so the file is at fault.
            Some(p) => file_error(p, e.render().to_string().trim_end().replace("error: ", "")),
            None => LoadError::Usage(e),
        })?;
    let config = Config::from_arg_matches(&matches)?;

    let mut values = BTreeMap::new();
    for arg in cmd.get_arguments() {
        let Some(key) = arg.get_long() else { continue };
        if NOT_IN_FILE.contains(&key) {
            continue;
        }
        let id = arg.get_id().as_str();
        let raw: Vec<String> = matches
            .get_raw(id)
            .map(|r| r.map(|v| v.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let source = if from_file.iter().any(|k| k == key) {
            Source::File
        } else {
            match first.value_source(id) {
                Some(ValueSource::CommandLine) => Source::Flag,
                Some(ValueSource::EnvVariable) => Source::Env(
                    arg.get_env()
                        .map(|e| e.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                ),
                _ => Source::Default,
            }
        };
        values.insert(key.to_owned(), (raw, source));
    }
    Ok(Loaded {
        config,
        file: ConfigFile {
            present: table.is_some(),
            path,
        },
        values,
    })
}

/// A TOML rendering of one value: numbers and booleans bare, everything else quoted.
fn toml_value(raw: &str) -> String {
    let numeric = raw.parse::<f64>().is_ok() && raw.starts_with(|c: char| c.is_ascii_digit());
    if raw == "true" || raw == "false" || numeric {
        raw.to_owned()
    } else {
        toml_string(raw)
    }
}

fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Loaded {
    /// The settings in force as a TOML document, each with its source as a comment.
    pub fn render(&self) -> String {
        let mut out = format!(
            "# browser-mcpd {}: settings in force and where each comes from\n",
            env!("CARGO_PKG_VERSION")
        );
        match (&self.file.path, self.file.present) {
            (Some(p), true) => {
                let _ = writeln!(out, "# config file: {}", p.display());
            }
            (Some(p), false) => {
                let _ = writeln!(out, "# config file: {} (not present)", p.display());
            }
            (None, _) => out.push_str("# config file: none (no HOME or XDG_CONFIG_HOME)\n"),
        }
        let mut lines = Vec::new();
        for (key, (raw, source)) in &self.values {
            let value = match (key.as_str(), raw.as_slice()) {
                ("socket", []) => toml_string(&self.config.socket_path().display().to_string()),
                (_, []) => continue,
                ("allow-origin" | "upload-root" | "agent-profile", many) => format!(
                    "[{}]",
                    many.iter()
                        .map(|v| toml_string(v))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                (_, [one, ..]) => toml_value(one),
            };
            let mut note = source.to_string();
            if key == "log-level" {
                if let Some(rust_log) = std::env::var_os("RUST_LOG") {
                    let _ = write!(
                        note,
                        "; overridden by RUST_LOG={}",
                        rust_log.to_string_lossy()
                    );
                }
            }
            if RESTART_ONLY.contains(&key.as_str()) {
                note.push_str("; restart to change");
            }
            lines.push((format!("{key} = {value}"), note));
        }
        // Align the comments, except after the odd long line.
        let width = lines
            .iter()
            .map(|(l, _)| l.len())
            .filter(|&n| n <= 48)
            .max()
            .unwrap_or(0);
        for (line, note) in lines {
            let _ = writeln!(out, "{line:width$}  # {note}");
        }
        out
    }

    /// Restart-only settings whose value differs from `old`'s.
    pub fn restart_only_changes(&self, old: &Loaded) -> Vec<&'static str> {
        RESTART_ONLY
            .iter()
            .copied()
            .filter(|k| self.values.get(*k).map(|v| &v.0) != old.values.get(*k).map(|v| &v.0))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<OsString> {
        std::iter::once("browser-mcpd")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect()
    }

    fn with_file(text: &str, args: &[&str]) -> Result<Loaded, LoadError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, text).unwrap();
        let mut all = vec!["--config", path.to_str().unwrap()];
        all.extend_from_slice(args);
        load(&argv(&all))
    }

    #[test]
    fn file_fills_what_flags_leave_unset() {
        let l = with_file(
            "retries = 5\ncall-timeout = \"2s\"\nallow-origin = [\"moz-extension://*\"]\nrequire-token = true\n",
            &["--retries", "7"],
        )
        .unwrap();
        assert_eq!(l.config.retries, 7);
        assert_eq!(l.values["retries"].1, Source::Flag);
        assert_eq!(l.config.call_timeout, std::time::Duration::from_secs(2));
        assert_eq!(l.values["call-timeout"].1, Source::File);
        assert_eq!(l.config.allow_origins, vec!["moz-extension://*"]);
        assert!(l.config.require_token);
        assert_eq!(l.values["port"].1, Source::Default);
        let text = l.render();
        assert!(text.contains("retries = 7"), "{text}");
        assert!(text.contains("# file"), "{text}");
    }

    #[test]
    fn bad_files_name_the_file_and_the_key() {
        let e = with_file("colour = 1\n", &[]).unwrap_err().to_string();
        assert!(e.contains("unknown key `colour`"), "{e}");
        let e = with_file("retries = \"many\"\n", &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("c.toml") && e.contains("many"), "{e}");
        let e = with_file("retries = [1, 2]\n", &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("one value"), "{e}");
        let e = with_file("port = \n", &[]).unwrap_err().to_string();
        assert!(e.contains("c.toml"), "{e}");
        let e = load(&argv(&["--config", "/nonexistent/c.toml"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/c.toml"), "{e}");
    }

    #[test]
    fn rendered_output_is_toml_that_loads_back() {
        let l = with_file("log-level = \"debug\"\nbackoff-multiplier = 1.5\n", &[]).unwrap();
        let text = l.render();
        let table: toml::Table = toml::from_str(&text).expect(&text);
        assert_eq!(table["log-level"].as_str(), Some("debug"));
        assert_eq!(table["backoff-multiplier"].as_float(), Some(1.5));
        assert!(table["allow-origin"].is_array());
    }
}
