//! The MCP clients people use (issue 59), each in its own words: how to add our server to it
//! (its command, or the file and format it reads), over stdio and over Streamable HTTP, for
//! `browserctl mcp --print-config --client NAME`; and where each keeps a saved HTTP entry, for
//! `browserctl token rotate` to name the files that hold the old token.

use serde_json::json;
use std::path::{Path, PathBuf};

/// A client `--print-config --client` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code: `claude mcp add`.
    ClaudeCode,
    /// Codex CLI: `~/.codex/config.toml`.
    Codex,
    /// Gemini CLI: `gemini mcp add`.
    Gemini,
    /// Cursor: `~/.cursor/mcp.json` (or a project's `.cursor/mcp.json`).
    Cursor,
    /// VS Code: a workspace's `.vscode/mcp.json` (or the user's `mcp.json`).
    Vscode,
    /// The MCP Inspector's command line.
    Inspector,
}

pub const ALL: [Agent; 6] = [
    Agent::ClaudeCode,
    Agent::Codex,
    Agent::Gemini,
    Agent::Cursor,
    Agent::Vscode,
    Agent::Inspector,
];

/// Which transport a printed configuration is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Transport {
    /// `browserctl mcp`, started by the client.
    Stdio,
    /// The daemon's `/mcp`, with the user's token.
    Http,
}

/// Our server, as a client is to reach it.
pub struct Server<'a> {
    /// The name the entry gets in the client.
    pub name: &'a str,
    /// The stdio command: browserctl's path, then its arguments.
    pub command: &'a str,
    pub args: &'a [String],
    /// `/mcp`'s URL and the token, when the daemon's port is reachable from here.
    pub http: Option<(&'a str, &'a str)>,
}

/// A word as a POSIX shell reads it back.
fn sh(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn line(words: &[&str]) -> String {
    words.iter().map(|w| sh(w)).collect::<Vec<_>>().join(" ")
}

/// A TOML basic string.
fn toml(s: &str) -> String {
    serde_json::to_string(s).expect("a JSON string is a TOML basic string")
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).expect("JSON")
}

impl Agent {
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Cursor => "cursor",
            Agent::Vscode => "vscode",
            Agent::Inspector => "inspector",
        }
    }

    /// Where the configuration goes (a comment above it).
    pub fn where_to(self, t: Transport) -> &'static str {
        match (self, t) {
            (Agent::ClaudeCode, _) => "run it (--scope project writes the project's .mcp.json)",
            (Agent::Codex, _) => "add it to ~/.codex/config.toml; `codex mcp list` shows it",
            (Agent::Gemini, _) => "run it (--scope project writes the project's .gemini/settings.json)",
            (Agent::Cursor, _) => "merge it into ~/.cursor/mcp.json, or a project's .cursor/mcp.json",
            (Agent::Vscode, _) => {
                "merge it into a workspace's .vscode/mcp.json (or the user's mcp.json: MCP: Open User Configuration)"
            }
            (Agent::Inspector, Transport::Stdio) => {
                "run it (without --cli and --method, the Inspector's web UI)"
            }
            (Agent::Inspector, Transport::Http) => "run it",
        }
    }

    /// The configuration for `t`; `None` for HTTP without a reachable port.
    pub fn config(self, s: &Server, t: Transport) -> Option<String> {
        let mut argv = vec![s.command];
        argv.extend(s.args.iter().map(String::as_str));
        if t == Transport::Http {
            let (url, token) = s.http?;
            let bearer = format!("Bearer {token}");
            let header = format!("Authorization: {bearer}");
            return Some(match self {
                // The two take the same flags.
                Agent::ClaudeCode | Agent::Gemini => line(&[
                    if self == Agent::ClaudeCode {
                        "claude"
                    } else {
                        "gemini"
                    },
                    "mcp",
                    "add",
                    "--scope",
                    "user",
                    "--transport",
                    "http",
                    s.name,
                    url,
                    "--header",
                    &header,
                ]),
                Agent::Codex => format!(
                    "[mcp_servers.{}]\nurl = {}\nhttp_headers = {{ Authorization = {} }}",
                    s.name,
                    toml(url),
                    toml(&bearer)
                ),
                Agent::Cursor => pretty(&json!({"mcpServers": {s.name: {
                    "url": url, "headers": {"Authorization": bearer}}}})),
                Agent::Vscode => pretty(&json!({"servers": {s.name: {
                    "type": "http", "url": url, "headers": {"Authorization": bearer}}}})),
                Agent::Inspector => line(&[
                    "npx",
                    "@modelcontextprotocol/inspector",
                    "--cli",
                    url,
                    "--transport",
                    "http",
                    "--header",
                    &header,
                    "--method",
                    "tools/list",
                ]),
            });
        }
        Some(match self {
            Agent::ClaudeCode => {
                let mut words = vec!["claude", "mcp", "add", "--scope", "user", s.name, "--"];
                words.extend(&argv);
                line(&words)
            }
            Agent::Codex => format!(
                "[mcp_servers.{}]\ncommand = {}\nargs = [{}]",
                s.name,
                toml(s.command),
                s.args
                    .iter()
                    .map(|a| toml(a))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Agent::Gemini => {
                let mut words = vec!["gemini", "mcp", "add", "--scope", "user", s.name];
                words.extend(&argv);
                line(&words)
            }
            Agent::Cursor => pretty(&json!({"mcpServers": {s.name: {
                "command": s.command, "args": s.args}}})),
            Agent::Vscode => pretty(&json!({"servers": {s.name: {
                "type": "stdio", "command": s.command, "args": s.args}}})),
            Agent::Inspector => {
                let mut words = vec!["npx", "@modelcontextprotocol/inspector", "--cli"];
                words.extend(&argv);
                words.extend(["--method", "tools/list"]);
                line(&words)
            }
        })
    }

    /// The files in which this client may keep a saved HTTP entry (its token with it).
    pub fn config_files(self, home: &Path, cwd: &Path) -> Vec<PathBuf> {
        match self {
            Agent::ClaudeCode => vec![home.join(".claude.json"), cwd.join(".mcp.json")],
            Agent::Codex => vec![std::env::var_os("CODEX_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(".codex"))
                .join("config.toml")],
            Agent::Gemini => vec![
                home.join(".gemini/settings.json"),
                cwd.join(".gemini/settings.json"),
            ],
            Agent::Cursor => vec![home.join(".cursor/mcp.json"), cwd.join(".cursor/mcp.json")],
            Agent::Vscode => vec![
                home.join(".config/Code/User/mcp.json"),
                home.join(".config/Code/User/settings.json"),
                cwd.join(".vscode/mcp.json"),
            ],
            Agent::Inspector => vec![home.join(".mcp-inspector/mcp.json")],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_in_its_own_words() {
        let args = vec![
            "mcp".to_owned(),
            "--url".to_owned(),
            "https://a.example/*".to_owned(),
        ];
        let s = Server {
            name: "browser",
            command: "/opt/my tools/browserctl",
            args: &args,
            http: Some(("http://127.0.0.1:8765/mcp", "t0k")),
        };
        assert_eq!(
            Agent::ClaudeCode.config(&s, Transport::Stdio).unwrap(),
            "claude mcp add --scope user browser -- '/opt/my tools/browserctl' mcp --url 'https://a.example/*'"
        );
        assert_eq!(
            Agent::Gemini.config(&s, Transport::Http).unwrap(),
            "gemini mcp add --scope user --transport http browser http://127.0.0.1:8765/mcp --header 'Authorization: Bearer t0k'"
        );
        let codex: toml::Value =
            toml::from_str(&Agent::Codex.config(&s, Transport::Http).unwrap()).unwrap();
        assert_eq!(
            codex["mcp_servers"]["browser"]["http_headers"]["Authorization"].as_str(),
            Some("Bearer t0k")
        );
        let codex: toml::Value =
            toml::from_str(&Agent::Codex.config(&s, Transport::Stdio).unwrap()).unwrap();
        assert_eq!(
            codex["mcp_servers"]["browser"]["args"][2].as_str(),
            Some("https://a.example/*")
        );
        let vscode: serde_json::Value =
            serde_json::from_str(&Agent::Vscode.config(&s, Transport::Http).unwrap()).unwrap();
        assert_eq!(vscode["servers"]["browser"]["type"], "http");
        let no_port = Server { http: None, ..s };
        assert!(Agent::Cursor.config(&no_port, Transport::Http).is_none());
        assert_eq!(sh("it's"), r"'it'\''s'");
    }
}
