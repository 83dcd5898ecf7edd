//! `browserctl pair`: pair a browser profile with this user's daemons (issue 21), list the
//! pairings, revoke one.
//!
//! Without the native-messaging host, the extension finds daemons by a port scan, and any
//! program (another user's included) can answer on a scanned port. So the extension talks only
//! to a daemon that proves it holds a key the browser holds too; pairing makes that key. The
//! daemon prints a one-time code here (asked over the control socket, whose other end is
//! checked to be ours), the person enters it in the extension's popup, and both sides derive
//! the key from it without sending it.

use super::client::Client;
use super::output::{self, print, print_json, Column, Format, Stop};
use crate::error::{Error, ErrorCode};
use crate::protocol::control::{
    PairingCode, PairingCodeState, PairingInfo, PairingList, PairingRevoked,
};
use hyper::Method;

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").args(["list", "revoke"])))]
pub struct PairArgs {
    /// List this user's pairings (shared by all of the user's daemons).
    #[arg(long)]
    pub list: bool,
    /// Revoke a pairing: the browser that holds it is disconnected and must pair again.
    #[arg(long, value_name = "ID")]
    pub revoke: Option<String>,
    /// Print the code and exit instead of waiting for the browser.
    #[arg(long, conflicts_with_all = ["list", "revoke"])]
    pub no_wait: bool,
    #[command(flatten)]
    pub socket: super::args::SocketArg,
    /// Print JSON instead of text (errors too, on stderr). Waiting, two lines: the code, then
    /// what became of it.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(c: &Client, args: PairArgs, json: bool) -> Result<(), Stop> {
    // A code from another user's daemon would pair the browser with them.
    crate::client::peer::ensure_ours(c.socket())?;
    if args.list {
        return list(c, json).await;
    }
    if let Some(id) = args.revoke {
        return revoke(c, &id, json).await;
    }
    let code: PairingCode = c
        .json(Method::POST, "/v1/pairing/codes", None::<&()>)
        .await?;
    let minutes = code.expires_in_ms.div_ceil(60_000);
    if json {
        print_json(&code)?;
    } else {
        print(&format!(
            "Pairing code: {}   (single use, valid for {minutes} minutes)\n\n\
             In the browser, open the browser-mcp popup (or its settings page), enter the code\n\
             and press Pair.\n",
            code.code
        ))?;
    }
    if !json {
        if let Some(hint) = outside_scan(c).await {
            output::note(&hint);
        }
    }
    if args.no_wait {
        return Ok(());
    }
    if !json {
        output::note("waiting for the browser… (Ctrl-C stops waiting; the code stays valid)");
    }
    let path = format!(
        "/v1/pairing/codes/{}?waitMs={}",
        crate::client::encode(&code.code_id),
        code.expires_in_ms + 1000
    );
    let state: PairingCodeState = tokio::select! {
        s = c.get(&path) => s?,
        _ = tokio::signal::ctrl_c() => return Err(Stop::Interrupted),
    };
    if json {
        print_json(&state)?;
    }
    match (state.state.as_str(), state.pairing) {
        ("paired", Some(p)) => {
            if !json {
                print(&format!("Paired with {} (pairing {}).\n", who(&p), p.id))?;
            }
            Ok(())
        }
        ("expired", _) | ("pending", _) => Err(Error::new(
            ErrorCode::MessageTimeout,
            "the code expired before a browser used it; run `browserctl pair` again",
        )
        .into()),
        ("burned", _) => Err(Error::new(
            ErrorCode::Unauthorized,
            "a browser tried this code and could not prove it (a typo, or not the browser you \
             meant); the code is void: run `browserctl pair` again",
        )
        .into()),
        (other, _) => Err(Error::internal(format!("the code is {other}")).into()),
    }
}

/// A word when the daemon's port is one the extension does not scan by default: without the
/// native host, a browser then never finds the daemon to pair with (issue 59).
async fn outside_scan(c: &Client) -> Option<String> {
    use crate::paths::{DEFAULT_PORT, SCAN_LAST};
    let port = c.status().await.ok()?.port;
    (!(DEFAULT_PORT..=SCAN_LAST).contains(&port)).then(|| {
        format!(
            "note: browser-mcpd listens on port {port}, outside the ports the extension scans \
             ({DEFAULT_PORT}–{SCAN_LAST}): a browser without the native host will not find it. \
             Add {port} to \"Ports to scan\" in the extension's settings, or run `browserctl \
             install-native-host` and restart the browser"
        )
    })
}

fn who(p: &PairingInfo) -> String {
    let name = format!("{} {}", p.browser.name, p.browser.version);
    match name.trim() {
        "" => "a browser".to_owned(),
        n => n.to_owned(),
    }
}

async fn list(c: &Client, json: bool) -> Result<(), Stop> {
    let list: PairingList = c.get("/v1/pairings").await?;
    if json {
        return print_json(&list);
    }
    if list.pairings.is_empty() {
        output::note(&format!(
            "no pairings (in {}); make one with `browserctl pair`",
            list.file
        ));
        return Ok(());
    }
    const COLUMNS: [Column; 4] = [
        Column::new("ID"),
        Column::new("BROWSER").clip(30),
        Column::new("PAIRED"),
        Column::new("PROFILE").clip(36),
    ];
    let rows: Vec<Vec<String>> = list
        .pairings
        .iter()
        .map(|p| {
            vec![
                p.id.clone(),
                who(p),
                p.created_at.clone(),
                p.browser.session_id.clone(),
            ]
        })
        .collect();
    let format = if output::is_tty() {
        Format::Table
    } else {
        Format::Tsv
    };
    print(&output::render(&COLUMNS, &rows, format, true))
}

async fn revoke(c: &Client, id: &str, json: bool) -> Result<(), Stop> {
    let path = format!("/v1/pairings/{}", crate::client::encode(id));
    let r: PairingRevoked = c.json(Method::DELETE, &path, None::<&()>).await?;
    if json {
        return print_json(&r);
    }
    let n = r.closed;
    print(&format!(
        "Revoked pairing {}; {n} connection{} closed. That browser must pair again.\n",
        r.revoked,
        if n == 1 { "" } else { "s" }
    ))
}
