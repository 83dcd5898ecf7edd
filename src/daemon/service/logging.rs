//! Where logs go: the journal when stderr is connected to it (running under systemd), else
//! stderr as text or JSON. The filter sits behind a reload handle so SIGHUP can change the
//! level without restarting.

use crate::daemon::settings::config::{Config, LogFormat};
use std::io::IsTerminal;
use tracing_subscriber::layer::{Layer, Layered, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter, Registry};

type Base = Layered<reload::Layer<EnvFilter, Registry>, Registry>;

/// Where the log lines went at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    Journal,
    Stderr(LogFormat),
    /// `--log-file`, rotated by size.
    File(LogFormat),
}

/// As the start line says it: `journal`, `stderr` or `stderr-json`.
impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Destination::Journal => "journal",
            Destination::Stderr(LogFormat::Text) => "stderr",
            Destination::Stderr(LogFormat::Json) => "stderr-json",
            Destination::File(LogFormat::Text) => "file",
            Destination::File(LogFormat::Json) => "file-json",
        })
    }
}

pub struct Logging {
    filter: reload::Handle<EnvFilter, Registry>,
    pub destination: Destination,
}

/// RUST_LOG wins over BROWSER_MCP_LOG_LEVEL/--log-level/the file when set, as tracing users
/// expect.
fn filter_for(level: &str) -> Result<EnvFilter, String> {
    match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.is_empty() => {
            EnvFilter::try_new(&directives).map_err(|e| format!("RUST_LOG={directives}: {e}"))
        }
        // rmcp logs every MCP message at info; keep the default log about our own events.
        _ if level == "info" => Ok(EnvFilter::new("info,rmcp=warn")),
        _ => EnvFilter::try_new(level).map_err(|e| format!("log level `{level}`: {e}")),
    }
}

/// Whether stderr is the journal stream systemd set up for us. JOURNAL_STREAM is inherited by
/// children whose stderr may point elsewhere, so its `device:inode` must match stderr's.
fn stderr_is_journal() -> bool {
    let Some(value) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    let Some((dev, ino)) = value.to_str().and_then(|v| v.split_once(':')) else {
        return false;
    };
    let (Ok(dev), Ok(ino)) = (dev.parse::<u64>(), ino.parse::<u64>()) else {
        return false;
    };
    // The field types differ by platform (u64 on Linux, i32 for st_dev on macOS).
    #[allow(clippy::unnecessary_cast)]
    nix::sys::stat::fstat(std::io::stderr())
        .is_ok_and(|st| st.st_dev as u64 == dev && st.st_ino as u64 == ino)
}

/// Installs the global subscriber. Problems (a bad level, an unreachable journal) are logged
/// once through the logger that did get installed.
pub fn init(config: &Config) -> Logging {
    let mut notes: Vec<String> = Vec::new();
    let filter = filter_for(&config.log_level).unwrap_or_else(|e| {
        notes.push(format!("{e}; using `info`"));
        EnvFilter::new("info")
    });
    let (filter_layer, handle) = reload::Layer::new(filter);

    let mut destination = Destination::Stderr(config.log_format);
    let mut journal = None;
    if stderr_is_journal() {
        match tracing_journald::layer() {
            Ok(layer) => {
                journal = Some(layer);
                destination = Destination::Journal;
            }
            Err(e) => notes.push(format!(
                "stderr is the journal but its socket cannot be reached ({e}); logging to stderr"
            )),
        }
    }
    let file = match (&journal, &config.log_file) {
        (None, Some(path)) => match RotatingFile::open(path, config.log_file_max_bytes) {
            Ok(f) => {
                destination = Destination::File(config.log_format);
                Some(f)
            }
            Err(e) => {
                notes.push(format!(
                    "cannot write the log file {} ({e}); logging to stderr",
                    path.display()
                ));
                None
            }
        },
        _ => None,
    };
    let output: Box<dyn Layer<Base> + Send + Sync> = match (journal, config.log_format) {
        (Some(layer), _) => Box::new(layer),
        (None, format) if file.is_some() => {
            let writer = file.expect("checked");
            match format {
                LogFormat::Text => Box::new(
                    tracing_subscriber::fmt::layer()
                        .with_writer(writer)
                        .with_ansi(false)
                        .with_target(false),
                ),
                LogFormat::Json => Box::new(
                    tracing_subscriber::fmt::layer()
                        .json()
                        .with_writer(writer)
                        .with_target(false),
                ),
            }
        }
        (None, LogFormat::Text) => Box::new(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(
                    std::io::stderr().is_terminal()
                        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
                )
                .with_target(false),
        ),
        (None, LogFormat::Json) => Box::new(
            tracing_subscriber::fmt::layer()
                .json()
                .with_writer(std::io::stderr)
                .with_target(false),
        ),
    };
    let _ = tracing_subscriber::registry()
        .with(filter_layer)
        .with(output)
        .try_init();
    for note in notes {
        tracing::warn!("{note}");
    }
    Logging {
        filter: handle,
        destination,
    }
}

impl Logging {
    /// Swaps the filter; on error the old one stays.
    pub fn set_level(&self, level: &str) -> Result<(), String> {
        let filter = filter_for(level)?;
        self.filter.reload(filter).map_err(|e| e.to_string())
    }
}

/// The log file of `--log-file`: appended to, and once it would pass `max` bytes renamed to
/// `FILE.1` (replacing the one before) and started afresh, so it never grows without bound
/// under a service manager that does not rotate (launchd). One lock around the file keeps
/// lines whole and the rename single.
#[derive(Clone)]
pub struct RotatingFile(std::sync::Arc<std::sync::Mutex<Rotating>>);

pub struct Rotating {
    path: std::path::PathBuf,
    file: std::fs::File,
    written: u64,
    max: u64,
}

impl RotatingFile {
    pub fn open(path: &std::path::Path, max: u64) -> std::io::Result<RotatingFile> {
        let file = Rotating::append(path)?;
        let written = file.metadata()?.len();
        Ok(RotatingFile(std::sync::Arc::new(std::sync::Mutex::new(
            Rotating {
                path: path.to_owned(),
                file,
                written,
                max: max.max(1),
            },
        ))))
    }
}

impl Rotating {
    fn append(path: &std::path::Path) -> std::io::Result<std::fs::File> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        std::fs::rename(&self.path, old)?;
        self.file = Rotating::append(&self.path)?;
        self.written = 0;
        Ok(())
    }
}

impl std::io::Write for &RotatingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut f = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if f.written > 0 && f.written + buf.len() as u64 > f.max {
            // A failed rotation keeps appending: losing lines is worse than a big file.
            let _ = f.rotate();
        }
        let n = f.file.write(buf)?;
        f.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .file
            .flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for RotatingFile {
    type Writer = &'a RotatingFile;

    fn make_writer(&'a self) -> Self::Writer {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn the_log_file_rotates_by_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.log");
        let f = RotatingFile::open(&path, 100).unwrap();
        // One write per line, as the fmt layer does it.
        for i in 0..30 {
            (&f).write_all(format!("line {i:02} of the log\n").as_bytes())
                .unwrap();
        }
        let now = std::fs::read_to_string(&path).unwrap();
        let old = std::fs::read_to_string(dir.path().join("d.log.1")).unwrap();
        assert!(now.len() <= 100 && old.len() <= 100, "{now:?} {old:?}");
        assert!(now.ends_with("line 29 of the log\n"), "{now}");
        // Whole lines only, and the two files continue each other.
        let joined = format!("{old}{now}");
        assert!(joined.lines().all(|l| l.starts_with("line ")));
        let last_old: u32 = old.lines().last().unwrap()[5..7].parse().unwrap();
        let first_now: u32 = now.lines().next().unwrap()[5..7].parse().unwrap();
        assert_eq!(first_now, last_old + 1);
    }
}
