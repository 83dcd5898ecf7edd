//! URL patterns for `--tab-url` and `--url`: `*` matches any run of characters; a pattern
//! without `*` matches when it occurs anywhere in the URL.

pub fn url_matches(pattern: &str, url: &str) -> bool {
    if !pattern.contains('*') {
        return url.contains(pattern);
    }
    glob(pattern.as_bytes(), url.as_bytes())
}

/// Iterative wildcard match with backtracking to the last `*` (linear in practice).
fn glob(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if pi < p.len() && p[pi] == s[si] {
            pi += 1;
            si += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert!(url_matches("example.com", "https://example.com/a"));
        assert!(!url_matches("example.org", "https://example.com/a"));
        assert!(url_matches(
            "https://*.example.com/*",
            "https://www.example.com/x?y"
        ));
        assert!(!url_matches(
            "https://*.example.com/*",
            "https://example.com/x"
        ));
        assert!(url_matches("*", ""));
        assert!(url_matches(
            "http*://127.0.0.1:*/search*",
            "http://127.0.0.1:8000/search.html"
        ));
        assert!(!url_matches("*b", "abc"));
    }
}
