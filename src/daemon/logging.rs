//! Where logs go: the journal when stderr is connected to it (running under systemd), else
//! stderr as text or JSON. The filter sits behind a reload handle so SIGHUP can change the
//! level without restarting.

use super::config::Config;
use super::config::LogFormat;
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
}

pub struct Logging {
    filter: reload::Handle<EnvFilter, Registry>,
    pub destination: Destination,
}

/// RUST_LOG wins over LOG_LEVEL/--log-level/the file when set, as tracing users expect.
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
    let output: Box<dyn Layer<Base> + Send + Sync> = match (journal, config.log_format) {
        (Some(layer), _) => Box::new(layer),
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
