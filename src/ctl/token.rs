//! `browserctl token`: the user's token for the daemon's loopback port (issue 59), which MCP
//! clients' saved HTTP configurations carry. It stays the same across daemon restarts;
//! `rotate` replaces it (the running daemon takes the new one at once, the old one stops
//! opening `/mcp`) and names the client configurations that still hold the old one.

use super::clients::{self, Agent};
use super::output::{print, print_json, Stop};
use crate::client::Client;
use crate::error::{Error, ErrorCode};
use crate::protocol::control::{Status, TokenRotated};
use crate::protocol::native::DiscoveryFile;
use hyper::Method;
use serde_json::json;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
pub struct TokenArgs {
    /// What to do.
    #[arg(value_enum)]
    pub action: TokenAction,
    #[command(flatten)]
    pub socket: super::args::SocketArg,
    /// Print JSON instead of text (errors too, on stderr).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum TokenAction {
    /// Replace the token: saved HTTP configurations of MCP clients stop working until they
    /// get the new one (stdio configurations need nothing). Names the files that hold the
    /// old one.
    Rotate,
}

/// The token of the daemon behind `status`, from its discovery file.
fn daemon_token(status: &Status) -> Option<String> {
    let text = std::fs::read(&status.discovery_file).ok()?;
    serde_json::from_slice::<DiscoveryFile>(&text).ok()?.token
}

/// The client configurations, among the files each client keeps, that hold `old`.
fn holding(old: &str) -> Vec<(Agent, PathBuf)> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let Some(home) = home else { return Vec::new() };
    let mut found: Vec<(Agent, PathBuf)> = Vec::new();
    for agent in clients::ALL {
        for file in agent.config_files(&home, &cwd) {
            let holds = std::fs::read(&file)
                .is_ok_and(|t| t.windows(old.len()).any(|w| w == old.as_bytes()));
            if holds && !found.iter().any(|(_, f)| f == &file) {
                found.push((agent, file));
            }
        }
    }
    found
}

fn tilde(p: &Path) -> String {
    match std::env::var_os("HOME").map(PathBuf::from) {
        Some(home) if p.starts_with(&home) => {
            format!("~/{}", p.strip_prefix(&home).unwrap_or(p).display())
        }
        _ => p.display().to_string(),
    }
}

pub async fn run(c: &Client, args: TokenArgs, json: bool) -> Result<(), Stop> {
    match args.action {
        TokenAction::Rotate => rotate(c, json).await,
    }
}

async fn rotate(c: &Client, json: bool) -> Result<(), Stop> {
    if c.host().is_some() {
        return Err(Stop::Api(Error::bad_request(
            "rotate the token on the machine whose daemon it opens (without --host)",
        )));
    }
    // The daemon rotates its own (it knows its token file, and takes the new one at once);
    // without one, the file is replaced here and the next daemon reads it.
    let (old, rotated, daemon) = match c.status().await {
        Ok(status) => {
            let old = daemon_token(&status);
            let r: TokenRotated = c
                .json(Method::POST, "/v1/token/rotate", None::<&()>)
                .await?;
            (old, r, true)
        }
        Err(e) if e.code == ErrorCode::DaemonUnavailable => {
            let file = crate::paths::default_token_file();
            let old = crate::token::read(&file).ok().flatten();
            crate::token::write(&file, &crate::token::random(), true).map_err(|e| {
                Error::new(
                    ErrorCode::Internal,
                    format!("cannot write the new token to {}: {e}", file.display()),
                )
            })?;
            let r = TokenRotated {
                token_file: file.display().to_string(),
                port: crate::paths::DEFAULT_PORT,
            };
            (old, r, false)
        }
        Err(e) => return Err(e.into()),
    };
    let stale = old.as_deref().map(holding).unwrap_or_default();
    if json {
        return print_json(&json!({
            "tokenFile": rotated.token_file,
            "daemon": daemon,
            "stale": stale.iter().map(|(a, f)| json!({
                "client": a.name(), "file": f.display().to_string()})).collect::<Vec<_>>(),
        }));
    }
    let mut out = format!(
        "New token in {}{}. Saved HTTP configurations of MCP clients need it (stdio ones \
         need nothing).\n",
        rotated.token_file,
        if daemon {
            "; browser-mcpd uses it now and refuses the old one"
        } else {
            " (no daemon is running: the next one uses it)"
        }
    );
    if stale.is_empty() {
        out.push_str(
            "No client configuration of yours holds the old token. Print a new one with \
             `browserctl mcp --print-config --client NAME --transport http`.\n",
        );
    } else {
        out.push_str("These hold the old token; replace their entry with the new one:\n");
        for (agent, file) in &stale {
            out.push_str(&format!(
                "  {}  ({}: browserctl mcp --print-config --client {} --transport http)\n",
                tilde(file),
                agent.name(),
                agent.name()
            ));
        }
    }
    print(&out)
}
