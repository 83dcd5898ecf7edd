//! Option pieces several commands share, kept apart from the commands so that they and the
//! completions can all use them without importing one another.

use crate::client::SshTarget;
use std::path::PathBuf;

/// The daemon's control socket, for the commands that talk to the daemon.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SocketArg {
    /// The daemon's control socket; with --host, the one on that machine [env:
    /// BROWSER_MCP_SOCKET, not passed through --host] [default:
    /// $XDG_RUNTIME_DIR/browser-mcp/browser-mcpd.sock].
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Talk to the daemon of another machine through ssh: ssh://[user@]host[:port] [env:
    /// BROWSER_MCP_HOST]. It runs `browserctl dial-stdio` there, with your ssh config, keys and
    /// known hosts; see README's "Remote use".
    #[arg(long, value_name = "URL")]
    pub host: Option<SshTarget>,
}

/// `--socket`, `--host` and `--json` of a command with subcommands (`browser`, `consent`),
/// taken before or after its subcommand.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Globals {
    /// The daemon's control socket [env: BROWSER_MCP_SOCKET] [default:
    /// $XDG_RUNTIME_DIR/browser-mcp/browser-mcpd.sock].
    #[arg(long, value_name = "PATH", global = true)]
    pub socket: Option<PathBuf>,
    /// Talk to the daemon of another machine through ssh: ssh://[user@]host[:port] [env:
    /// BROWSER_MCP_HOST]; see README's "Remote use".
    #[arg(long, value_name = "URL", global = true)]
    pub host: Option<SshTarget>,
    /// Print JSON instead of text (errors too, on stderr).
    #[arg(long, global = true)]
    pub json: bool,
}

impl Globals {
    pub fn socket(&self) -> SocketArg {
        SocketArg {
            socket: self.socket.clone(),
            host: self.host.clone(),
        }
    }
}

/// browserctl's own options of `call`, which may also follow TOOL: (name, takes a value).
pub const CALL_OWN_OPTIONS: &[(&str, bool)] = &[
    ("tab", true),
    ("browser", true),
    ("timeout", true),
    ("attempt-timeout", true),
    ("retries", true),
    ("retry-on-timeout", false),
    ("args", true),
    ("json", false),
    ("verbose", false),
    ("socket", true),
    ("host", true),
    ("help", false),
];
