//! The tab groups that show the user which tabs an agent drives: named after the MCP client,
//! holding the tabs it opened and the tabs its scope names.

use super::expose::{Scope, Snapshot};
use crate::protocol::control::TabGroup;
use rmcp::model::Implementation;
use std::collections::HashSet;

/// Tab group titles are short; longer client names are cut.
const MAX_TITLE: usize = 40;

/// The group a client's tabs join: its `clientInfo.name`, or `MCP agent` without one.
pub fn group_for(client: Option<Implementation>) -> TabGroup {
    let name = client
        .map(|c| c.name.trim().to_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "MCP agent".to_owned());
    TabGroup {
        title: name.chars().take(MAX_TITLE).collect(),
    }
}

/// The tabs a `--tab`/`--url` scope names that are not in `grouped` yet; adds them to it. A
/// scope of whole browsers (or none) claims no tabs: the user's whole browser is no agent's.
pub fn claim(snapshot: &Snapshot, scope: &Scope, grouped: &mut HashSet<String>) -> Vec<String> {
    if scope.tabs.is_empty() && scope.urls.is_empty() {
        return Vec::new();
    }
    snapshot
        .tabs
        .iter()
        .filter(|t| {
            let b = snapshot.browsers.iter().find(|b| b.id == t.browser);
            scope.tab_in_scope(t, b) && grouped.insert(t.tab_ref.clone())
        })
        .map(|t| t.tab_ref.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_clients_group_is_named_after_it() {
        let named = |n: &str| group_for(Some(Implementation::new(n, "1"))).title;
        assert_eq!(named("claude-code"), "claude-code");
        assert_eq!(named("  "), "MCP agent");
        assert_eq!(group_for(None).title, "MCP agent");
        assert_eq!(named(&"é".repeat(50)).chars().count(), MAX_TITLE);
    }

    #[test]
    fn a_scope_claims_its_named_tabs_once() {
        let snapshot = Snapshot {
            browsers: vec![serde_json::from_value(json!({"id": "b1", "sessionId": "s1",
                "name": "Chrome", "version": "1", "dialect": "bridge",
                "connectedAt": "", "tabs": 2, "tools": 0}))
            .unwrap()],
            tabs: [7, 9]
                .iter()
                .map(|id| {
                    serde_json::from_value(json!({"ref": format!("b1:{id}"), "browser": "b1",
                        "id": id, "title": "T", "url": format!("https://example.com/{id}"),
                        "focused": false, "tools": []}))
                    .unwrap()
                })
                .collect(),
            tools: vec![],
        };
        let mut grouped = HashSet::new();
        let everything = Scope::default();
        assert!(claim(&snapshot, &everything, &mut grouped).is_empty());
        let by_url = Scope {
            urls: vec!["example.com/9".into()],
            ..Scope::default()
        };
        assert_eq!(claim(&snapshot, &by_url, &mut grouped), vec!["b1:9"]);
        assert!(claim(&snapshot, &by_url, &mut grouped).is_empty());
    }
}
