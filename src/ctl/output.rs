//! How browserctl prints: tables for people, JSON for programs, errors on stderr. A closed
//! stdout (`browserctl tabs | head -1`) is not an error.

use std::io::{self, IsTerminal, Write};

/// Why a command stopped early.
#[derive(Debug)]
pub enum Stop {
    /// An error from the daemon or the request; printed with its code.
    Api(crate::error::Error),
    /// stdout was closed by the reader.
    BrokenPipe,
}

impl Stop {
    /// Adds browserctl's words for what to do (a flag) to a daemon error of this code; the
    /// daemon words its errors for no front end in particular.
    pub fn hint(self, code: crate::error::ErrorCode, hint: &str) -> Stop {
        match self {
            Stop::Api(e) => Stop::Api(e.hint(code, hint)),
            other => other,
        }
    }
}

impl From<crate::error::Error> for Stop {
    fn from(e: crate::error::Error) -> Stop {
        Stop::Api(e)
    }
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Stop {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Stop::BrokenPipe
        } else {
            Stop::Api(crate::error::Error::internal(format!(
                "cannot write output: {e}"
            )))
        }
    }
}

pub fn is_tty() -> bool {
    io::stdout().is_terminal()
}

/// Writes text to stdout.
pub fn print(text: &str) -> Result<(), Stop> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

pub fn print_json(value: &impl serde::Serialize) -> Result<(), Stop> {
    let text = if is_tty() {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .expect("JSON");
    print(&text)
}

/// Shortens text for a terminal column.
pub fn clip(s: &str, max: usize) -> String {
    if !is_tty() || s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Aligned columns with a header row.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                s.push_str(cell);
                s.push_str(&" ".repeat(widths[i] - cell.chars().count() + 2));
            }
        }
        s.trim_end().to_owned() + "\n"
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// Prints an error as `browserctl: CODE: message` (or its JSON with --json), with hints.
pub fn print_error(e: &crate::error::Error, json: bool) {
    let mut err = io::stderr().lock();
    if json {
        let body = crate::error::ErrorBody { error: e.clone() };
        let _ = writeln!(err, "{}", serde_json::to_string(&body).expect("JSON"));
        return;
    }
    let _ = writeln!(err, "browserctl: {}: {}", e.code, e.message);
    let Some(details) = &e.details else { return };
    if let Some(c) = details.get("candidates").and_then(|c| c.as_array()) {
        let _ = writeln!(err, "candidates:");
        for cand in c {
            match cand {
                serde_json::Value::String(s) => {
                    let _ = writeln!(err, "  {s}");
                }
                other => {
                    let tab = other["tab"].as_str().unwrap_or("");
                    let title = other["title"].as_str().unwrap_or("");
                    let url = other["url"].as_str().unwrap_or("");
                    let _ = writeln!(err, "  {tab}  {title}  {url}");
                }
            }
        }
    }
    if let Some(errors) = details.get("errors").and_then(|c| c.as_array()) {
        for e in errors.iter().skip(1) {
            let _ = writeln!(
                err,
                "  {}: {}",
                e["path"].as_str().unwrap_or("/"),
                e["message"].as_str().unwrap_or("")
            );
        }
    }
    if let Some(history) = details.get("history").and_then(|h| h.as_array()) {
        for h in history {
            let _ = writeln!(
                err,
                "  attempt {}: {}: {} (then waited {} ms)",
                h["attempt"],
                h["code"].as_str().unwrap_or(""),
                h["message"].as_str().unwrap_or(""),
                h["delayMs"]
            );
        }
    }
}
