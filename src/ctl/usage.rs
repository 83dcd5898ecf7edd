//! Refused command lines: clap's own errors and browserctl's, printed as text or, when the
//! command line asks for JSON, as a JSON error with the usage and clap's tip.

use super::output;
use crate::error::ErrorCode;
use std::ffi::OsString;
use std::process::ExitCode;

/// Why a command line was refused.
#[derive(Debug)]
pub enum UsageError {
    /// clap's own: unknown options, missing values, and --help and --version.
    Clap(clap::Error),
    /// An option the command does not take, or words `call` cannot sort out.
    Refused(String),
}

/// A usage error, or a request for --help or --version (which print and exit 0).
#[derive(Debug)]
pub struct ParseError(UsageError);

impl From<UsageError> for ParseError {
    fn from(e: UsageError) -> ParseError {
        ParseError(e)
    }
}

impl ParseError {
    /// Prints the error (as JSON on stderr when the command line asked for JSON) and returns
    /// the exit code: 0 for --help and --version, 2 otherwise.
    pub fn report(self, argv: &[OsString]) -> ExitCode {
        let e = match self.0 {
            UsageError::Clap(e) if !e.use_stderr() => {
                // --help, --version: clap prints them.
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            UsageError::Clap(e) => e,
            UsageError::Refused(message) => {
                output::print_error(&crate::error::Error::bad_request(message), wants_json(argv));
                return ExitCode::from(ErrorCode::BadRequest.exit_code());
            }
        };
        if !wants_json(argv) {
            let _ = e.print();
            return ExitCode::from(ErrorCode::BadRequest.exit_code());
        }
        let text = e.render().to_string();
        let mut lines = text.lines();
        let message = lines
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ")
            .to_owned();
        let usage = text
            .lines()
            .find_map(|l| l.strip_prefix("Usage: "))
            .map(str::to_owned);
        let tip = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("tip: "))
            .map(str::to_owned);
        let mut details = serde_json::Map::new();
        details.insert("kind".into(), format!("{:?}", e.kind()).into());
        if let Some(u) = usage {
            details.insert("usage".into(), u.into());
        }
        if let Some(t) = tip {
            details.insert("tip".into(), t.into());
        }
        let error = crate::error::Error::bad_request(message)
            .with_details(serde_json::Value::Object(details));
        output::print_error(&error, true);
        ExitCode::from(ErrorCode::BadRequest.exit_code())
    }
}

/// Whether the command line asks for JSON (`--json`, `-o json`), read from the raw words
/// when it did not parse.
pub fn wants_json(argv: &[OsString]) -> bool {
    let words: Vec<&str> = argv
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .take_while(|a| *a != "--")
        .collect();
    words.iter().enumerate().any(|(i, w)| {
        *w == "--json"
            || *w == "--output=json"
            || *w == "-ojson"
            || ((*w == "-o" || *w == "--output") && words.get(i + 1) == Some(&"json"))
    })
}
