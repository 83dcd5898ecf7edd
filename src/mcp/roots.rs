//! An MCP client's roots (MCP `roots/list`): the directories `browser_file_upload` may read
//! `paths` from for that client's calls, besides the daemon's `--upload-root`s (issue 31). They
//! are asked for when such a call comes, not kept: a client's roots change with its workspace.
//! The call path below the server reads them from the task (`current`), so that no function
//! between the request and the daemon call has to carry them.

use crate::protocol::tool::FILE_UPLOAD;
use rmcp::model::JsonObject;
use rmcp::service::{Peer, RoleServer};
use std::future::Future;
use std::time::Duration;

tokio::task_local! {
    static ROOTS: Vec<String>;
}

/// How long a client may take to say its roots before the call goes on without them.
const ASK: Duration = Duration::from_secs(5);

/// Whether this call may read files by path: `browser_file_upload` itself, or through
/// `browserctl_call_tool` (`meta_call` names the meta tool).
pub fn wants_roots(tool: &str, args: &JsonObject, meta_call: &str) -> bool {
    tool == FILE_UPLOAD
        || (tool == meta_call && args.get("name").and_then(|n| n.as_str()) == Some(FILE_UPLOAD))
}

/// The client's roots as absolute paths; none when it declares no roots capability, does not
/// answer in time, or names no `file://` root. (Roots are deprecated by SEP-2577 in the newest
/// protocol drafts, but the clients of today declare them; without them, the daemon's
/// `--upload-root`s still apply.)
#[allow(deprecated)]
pub async fn of_client(peer: &Peer<RoleServer>) -> Vec<String> {
    let declares = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.roots.is_some());
    if !declares {
        return Vec::new();
    }
    match tokio::time::timeout(ASK, peer.list_roots()).await {
        Ok(Ok(list)) => list.roots.iter().filter_map(|r| path_of(&r.uri)).collect(),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "roots/list failed");
            Vec::new()
        }
        Err(_) => {
            tracing::debug!("roots/list: no answer in time");
            Vec::new()
        }
    }
}

/// Runs `f` with `roots` as this call's.
pub async fn with<F: Future>(roots: Vec<String>, f: F) -> F::Output {
    ROOTS.scope(roots, f).await
}

/// The roots of the call this task runs (none outside `with`).
pub fn current() -> Vec<String> {
    ROOTS.try_with(Clone::clone).unwrap_or_default()
}

/// `file:///home/ada/work` → `/home/ada/work` (percent escapes decoded); other schemes and
/// remote hosts are no roots of this machine.
fn path_of(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let path = percent_encoding::percent_decode_str(rest)
        .decode_utf8()
        .ok()?
        .into_owned();
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_file_uris_are_roots() {
        assert_eq!(
            path_of("file:///home/ada/my%20work").as_deref(),
            Some("/home/ada/my work")
        );
        assert_eq!(path_of("file://localhost/srv").as_deref(), Some("/srv"));
        assert_eq!(path_of("file://server/share"), None);
        assert_eq!(path_of("https://example.com/"), None);
    }

    #[test]
    fn the_upload_tool_wants_roots_directly_or_by_name() {
        let none = JsonObject::new();
        let mut by_name = JsonObject::new();
        by_name.insert("name".into(), FILE_UPLOAD.into());
        assert!(wants_roots(FILE_UPLOAD, &none, "browserctl_call_tool"));
        assert!(wants_roots(
            "browserctl_call_tool",
            &by_name,
            "browserctl_call_tool"
        ));
        assert!(!wants_roots(
            "browser_click",
            &by_name,
            "browserctl_call_tool"
        ));
    }
}
