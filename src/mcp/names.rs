//! How a model reads a tool's name, and which names a page's tool may not have (issue 58,
//! item 5). To a model, case and the separators between words make no new name:
//! `Browser Type`, `browser-type` and `browser.type` all read as `browser_type`, and
//! `browser-type-b1-7` as the built-in `browser_type` of tab `b1:7`. So names are compared on
//! their folded form, here and nowhere else in the daemon; the extension's filter
//! (extension/shared/names.js) folds the same way before its own, broader check.

/// What the MCP front's own tools begin with (`browserctl_call_tool`): no page tool may.
pub const META_PREFIX: &str = "browserctl_";

/// `name` as a model reads it: lower case, with every run of anything but ASCII letters and
/// digits (`-`, `.`, `_`, spaces, …) one `_`, and none at either end.
pub fn fold(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut gap = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            if gap && !out.is_empty() {
                out.push('_');
            }
            gap = false;
            out.push(c.to_ascii_lowercase());
        } else {
            gap = true;
        }
    }
    out
}

/// Whether a folded name's tail reads as a call target: a browser (`b1`) or a tab (`b1_7`),
/// as [`super::expose`] suffixes them, with its counter (`_2`) if any.
fn is_target(tail: &str) -> bool {
    let mut parts = tail.split('_');
    let browser = parts.next().and_then(|b| b.strip_prefix('b'));
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit());
    browser.is_some_and(digits) && parts.all(digits)
}

/// Whether a page's tool named `name` would read as one of ours: a meta tool (anything
/// folding to [`META_PREFIX`]…), one of the `reserved` names (the meta tools and the built-ins
/// listed beside it), or one of those with a target's suffix (`browser_type_b1_7`).
pub fn poses(name: &str, reserved: &[&str]) -> bool {
    let seen = fold(name);
    if seen.starts_with(META_PREFIX) {
        return true;
    }
    reserved.iter().any(|r| {
        let r = fold(r);
        seen == r
            || seen
                .strip_prefix(r.as_str())
                .and_then(|rest| rest.strip_prefix('_'))
                .is_some_and(is_target)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_and_separators_fold_away() {
        for name in [
            "browser_type",
            "Browser Type",
            "browser-type",
            "BROWSER..type",
            " browser_type-",
        ] {
            assert_eq!(fold(name), "browser_type", "{name}");
        }
        assert_eq!(fold("ünï tool"), "n_tool");
        assert_eq!(fold("--"), "");
    }

    #[test]
    fn a_page_tool_may_not_read_as_a_builtin_a_meta_tool_or_another_tab_s() {
        let reserved = ["browserctl_call_tool", "browser_type", "browser_click"];
        for name in [
            "browser-type",
            "browser-type-b1-7",
            "browser_type_b12",
            "browser.type_b1_7_2",
            "Browser Click",
            "browserctl-call-tool",
            "browserctl.anything",
        ] {
            assert!(poses(name, &reserved), "{name}");
        }
        for name in [
            "search",
            "browser-types",
            "my-browser-type",
            "browser_type_x1",
            "browser_type_b",
            "browser_type_b1_x",
            "browserctl",
            "browser_snapshot",
        ] {
            assert!(!poses(name, &reserved), "{name}");
        }
    }
}
