//! How browserctl prints: tables for people, TSV or JSON for programs, errors on stderr. A
//! closed stdout (`browserctl tabs | head -1`) is not an error.
//!
//! Listings follow kubectl and gh: an aligned table on a terminal, tab-separated values
//! without padding when stdout is a pipe, `-o wide|tsv|json|jsonl` to choose, `--no-headers`
//! to drop the header row; an empty listing prints nothing on stdout and says why on stderr.

use serde::Serialize;
use std::io::{self, IsTerminal, Write};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Why a command stopped early.
#[derive(Debug)]
pub enum Stop {
    /// An error from the daemon or the request; printed with its code.
    Api(crate::error::Error),
    /// stdout was closed by the reader.
    BrokenPipe,
    /// Ctrl-C (SIGINT): exit 130, as shells expect.
    Interrupted,
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

/// The formats of `-o`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns, long cells shortened (the default on a terminal).
    Table,
    /// Aligned columns, nothing shortened, extra columns.
    Wide,
    /// Tab-separated values without padding (the default when stdout is not a terminal).
    Tsv,
    /// One JSON document.
    Json,
    /// One JSON object per line (one per row).
    Jsonl,
}

/// The output options of a listing command (browsers, tabs, tools, discover).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ListOutput {
    /// Output format [default: table on a terminal, tsv otherwise].
    #[arg(short = 'o', long = "output", value_enum, value_name = "FORMAT")]
    pub output: Option<Format>,
    /// Print JSON (the same as -o json).
    #[arg(long)]
    pub json: bool,
    /// Leave out the header row (table, wide and tsv).
    #[arg(long)]
    pub no_headers: bool,
}

impl ListOutput {
    /// These options with a `--json` given before the command folded in.
    pub fn with_json(&self, json: bool) -> ListOutput {
        ListOutput {
            json: self.json || json,
            ..self.clone()
        }
    }

    /// The format in force: `--json`, else `-o`, else by whether stdout is a terminal.
    pub fn format(&self) -> Format {
        match self.output {
            _ if self.json => Format::Json,
            Some(f) => f,
            None if is_tty() => Format::Table,
            None => Format::Tsv,
        }
    }
}

/// The `--json` of a command that prints one result (status, call, open, …).
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct JsonOutput {
    /// Print JSON instead of text (errors too, on stderr).
    #[arg(long)]
    pub json: bool,
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

/// Writes a JSON document to stdout: indented on a terminal, one line otherwise.
pub fn print_json(value: &impl Serialize) -> Result<(), Stop> {
    let text = if is_tty() {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .expect("JSON");
    print(&text)
}

/// A note for the person at the terminal (an empty listing, a warning): `browserctl: …` on
/// stderr, never on stdout where a script reads data.
pub fn note(text: &str) {
    let _ = writeln!(io::stderr().lock(), "browserctl: {text}");
}

/// Display width of text in terminal cells (CJK and most emoji take two).
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// Shortens text to at most `max` terminal cells, ending in `…` when cut.
pub fn clip(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// One column of a listing.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    /// Longest cell in `table` format, in terminal cells (longer ones are shortened).
    pub clip: Option<usize>,
    /// Shown only with `-o wide`.
    pub wide_only: bool,
}

impl Column {
    pub const fn new(name: &'static str) -> Column {
        Column {
            name,
            clip: None,
            wide_only: false,
        }
    }

    pub const fn clip(self, max: usize) -> Column {
        Column {
            clip: Some(max),
            ..self
        }
    }

    pub const fn wide(self) -> Column {
        Column {
            wide_only: true,
            ..self
        }
    }
}

/// The text of a listing in one of the row formats (table, wide, tsv).
pub fn render(columns: &[Column], rows: &[Vec<String>], format: Format, headers: bool) -> String {
    let shown: Vec<usize> = (0..columns.len())
        .filter(|&i| format == Format::Wide || !columns[i].wide_only)
        .collect();
    let cell = |row: &[String], i: usize| -> String {
        let text = row.get(i).map(String::as_str).unwrap_or("");
        match (format, columns[i].clip) {
            // A tab or newline inside a cell would break the row apart.
            (Format::Table, Some(max)) => clip(&text.replace(['\t', '\n', '\r'], " "), max),
            _ => text.replace(['\t', '\n', '\r'], " "),
        }
    };
    let mut lines: Vec<Vec<String>> = Vec::with_capacity(rows.len() + 1);
    if headers {
        lines.push(shown.iter().map(|&i| columns[i].name.to_owned()).collect());
    }
    for row in rows {
        lines.push(shown.iter().map(|&i| cell(row, i)).collect());
    }
    let mut out = String::new();
    if format == Format::Tsv {
        for line in lines {
            out.push_str(&line.join("\t"));
            out.push('\n');
        }
        return out;
    }
    let mut widths = vec![0; shown.len()];
    for line in &lines {
        for (j, c) in line.iter().enumerate() {
            widths[j] = widths[j].max(width(c));
        }
    }
    for line in lines {
        let mut s = String::new();
        for (j, c) in line.iter().enumerate() {
            s.push_str(c);
            if j + 1 < line.len() {
                s.push_str(&" ".repeat(widths[j] - width(c) + 2));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    }
    out
}

/// Prints a listing: `items` as `{"<key>": [...]}` (json) or one per line (jsonl), else
/// `rows` under `columns`. An empty listing prints nothing in the row formats and says
/// `why_empty` on stderr.
pub fn print_listing<T: Serialize>(
    key: &str,
    items: &[T],
    columns: &[Column],
    rows: &[Vec<String>],
    format: Format,
    headers: bool,
    why_empty: impl FnOnce() -> String,
) -> Result<(), Stop> {
    match format {
        Format::Json => {
            let mut map = serde_json::Map::new();
            map.insert(
                key.to_owned(),
                serde_json::to_value(items).expect("listings serialize"),
            );
            print_json(&map)
        }
        Format::Jsonl => {
            let mut text = String::new();
            for item in items {
                text.push_str(&serde_json::to_string(item).expect("listings serialize"));
                text.push('\n');
            }
            if items.is_empty() {
                note(&why_empty());
                return Ok(());
            }
            print(&text)
        }
        _ if rows.is_empty() => {
            note(&why_empty());
            Ok(())
        }
        _ => print(&render(columns, rows, format, headers)),
    }
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
                    let tab = other["tab"]
                        .as_str()
                        .or(other["browser"].as_str())
                        .unwrap_or("");
                    let title = other["title"]
                        .as_str()
                        .or(other["name"].as_str())
                        .unwrap_or("");
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
    // One attempt's story is the message itself; several are worth listing.
    if let Some(history) = details
        .get("history")
        .and_then(|h| h.as_array())
        .filter(|h| h.len() > 1)
    {
        for h in history {
            let delay = h["delayMs"].as_u64().unwrap_or(0);
            let then = if delay > 0 {
                format!(", retried after {delay} ms")
            } else {
                String::new()
            };
            let _ = writeln!(
                err,
                "  attempt {}: {}: {}{then}",
                h["attempt"],
                h["code"].as_str().unwrap_or(""),
                h["message"].as_str().unwrap_or(""),
            );
        }
    }
}

/// The exit codes, for `browserctl --help` and the man page; each is [`ErrorCode::exit_code`]
/// of the codes it names.
///
/// [`ErrorCode::exit_code`]: crate::error::ErrorCode::exit_code
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0   success
  1   internal error (INTERNAL)
  2   usage error, or a request the daemon did not understand (BAD_REQUEST, NOT_FOUND)
  3   the daemon is not running or not reachable (DAEMON_UNAVAILABLE)
  4   no such browser, tab or tool (NO_BROWSER, TAB_NOT_FOUND, TOOL_NOT_FOUND)
  5   the target is ambiguous: name a tab with --tab (AMBIGUOUS_TARGET)
  6   invalid tool arguments (INVALID_ARGUMENTS, PAYLOAD_TOO_LARGE, REMOTE_PATH)
  7   the tool ran and reported an error (TOOL_ERROR)
  8   no answer within the timeout (MESSAGE_TIMEOUT)
  9   the browser connection failed (SEND_ERROR, WEBSOCKET_ERROR, MAX_RETRIES_EXCEEDED)
  10  not allowed (UNAUTHORIZED)
  11  the daemon is shutting down (SHUTTING_DOWN)
  12  a limit was hit (LIMIT_EXCEEDED)
  13  the call was cancelled (CANCELLED)
  14  the page navigated away before the call finished (PAGE_NAVIGATED)
  15  no browser to launch is installed (BROWSER_NOT_INSTALLED)
  16  a launched browser exited or did not connect in time (LAUNCH_FAILED)
  17  the tab is another agent's: read it, do not act in it (TAB_OWNED)
  18  the tab has too many calls waiting; try again after details.retryAfterMs (BUSY)
  19  the action's element is covered by another; nothing was done (ELEMENT_COVERED)
  20  the person denied the call in the browser's prompt (USER_DENIED)
  21  nobody answered the browser's prompt in time (USER_CONSENT_TIMEOUT)
  22  the tab is handed to the person; nothing else runs there until they answer (HANDOFF_IN_PROGRESS)
  23  the person answered a hand-off with I can't (HANDOFF_DECLINED)
  24  nobody answered a hand-off in its time (HANDOFF_TIMEOUT)
  25  a hand-off to a browser nobody sees: the daemon launched it headless (NO_PERSON)
  26  the person stopped trusted input mid-action; the page saw part of it (INPUT_CANCELLED)
  27  no consent prompt of that id waits: never asked, lapsed, or gone (CONSENT_NOT_FOUND)
  28  the consent prompt was answered already; the first answer stands (CONSENT_ANSWERED)
  130 interrupted (Ctrl-C); a call in flight is cancelled in the daemon";

#[cfg(test)]
mod tests {
    use super::*;

    const COLS: [Column; 3] = [
        Column::new("TAB"),
        Column::new("TITLE").clip(8),
        Column::new("URL").wide(),
    ];

    fn rows() -> Vec<Vec<String>> {
        vec![
            vec!["b1:1".into(), "検索ページです".into(), "https://a/".into()],
            vec!["b1:22".into(), "x\ty".into(), "https://b/".into()],
        ]
    }

    #[test]
    fn columns_align_by_display_width() {
        let text = render(&COLS, &rows(), Format::Table, true);
        // 検索ページです is 14 cells: shortened to 7 cells plus the ellipsis.
        assert_eq!(text, "TAB    TITLE\nb1:1   検索ペ…\nb1:22  x y\n");
        let wide = render(&COLS, &rows(), Format::Wide, false);
        assert_eq!(
            wide,
            format!(
                "b1:1   検索ページです  https://a/\nb1:22  x y{}https://b/\n",
                " ".repeat(13)
            )
        );
    }

    #[test]
    fn tsv_has_no_padding_and_no_tabs_inside_cells() {
        let text = render(&COLS, &rows(), Format::Tsv, true);
        assert_eq!(text, "TAB\tTITLE\nb1:1\t検索ページです\nb1:22\tx y\n");
    }

    #[test]
    fn clipping_counts_cells() {
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("😀😀😀", 5), "😀😀…");
        assert_eq!(width("😀a"), 3);
    }
}
