//! The shape of the source tree, checked: imports between the files of `src/` flow one way
//! (no circle), the daemon's folders import one another only down the order that
//! `src/daemon/mod.rs` writes down, and no file grows past 700 lines. `MODULE_MAP=1 cargo test
//! --test it architecture -- --nocapture` prints the module map (each file and what it
//! imports).
//!
//! The reader is deliberately simple: it follows `use` items and `crate::…`/`super::…` paths
//! (test modules excluded), resolves each to the longest prefix that is a file of its own, and
//! ignores everything else. A path it cannot see (a macro building one) it cannot count.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 700;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `daemon/registry/mod.rs` → `daemon::registry`; `lib.rs` → `` (the crate root).
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_owned());
    }
    parts.join("::")
}

/// The file's code without comments, string contents and test modules.
/// `#[cfg(test)]`, `#[cfg(all(test, …))]`: an attribute that keeps what follows out of the build.
fn is_test_cfg(line: &str) -> bool {
    line.starts_with("#[cfg(test)]") || line.starts_with("#[cfg(all(test,")
}

fn code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if is_test_cfg(t) {
            match lines.peek().map(|n| n.trim()) {
                // An inline test module: the rest of the file.
                Some(n) if n.starts_with("mod ") && n.ends_with('{') => break,
                // A test module in a file of its own: left out with the file.
                Some(n) if n.starts_with("mod ") => {
                    lines.next();
                    continue;
                }
                _ => {}
            }
        }
        let line = match t.find("//") {
            Some(_) if t.starts_with("//") => "",
            _ => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    // Drop string literals (a message may quote a path).
    let mut clean = String::with_capacity(out.len());
    let mut in_str = false;
    let mut prev = ' ';
    for c in out.chars() {
        if c == '"' && prev != '\\' && prev != '\'' {
            in_str = !in_str;
            prev = c;
            continue;
        }
        if !in_str {
            clean.push(c);
        }
        prev = if prev == '\\' && c == '\\' { ' ' } else { c };
    }
    clean
}

/// Expands `a::{b, c::{d, e}}` into `a::b`, `a::c::d`, `a::c::e` (`a::b as c` is `a::b`).
fn expand(tree: &str) -> Vec<String> {
    let words: Vec<&str> = tree.split_whitespace().collect();
    let mut unaliased = String::new();
    let mut i = 0;
    while i < words.len() {
        if words[i] == "as" && i + 1 < words.len() {
            // `as name` (`as _`), and the `,` or `}` that may be stuck to the name.
            let rest = words[i + 1].trim_start_matches(|c: char| is_ident(c));
            unaliased.push_str(rest);
            i += 2;
            continue;
        }
        unaliased.push_str(words[i]);
        i += 1;
    }
    let tree = unaliased;
    fn go(prefix: &str, s: &str, out: &mut Vec<String>) {
        match s.find('{') {
            None => out.push(format!("{prefix}{s}")),
            Some(open) => {
                let head = &s[..open];
                let inner = &s[open + 1..s.rfind('}').unwrap_or(s.len())];
                let mut depth = 0;
                let mut start = 0;
                for (i, c) in inner.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            go(&format!("{prefix}{head}"), &inner[start..i], out);
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                if start < inner.len() {
                    go(&format!("{prefix}{head}"), &inner[start..], out);
                }
            }
        }
    }
    let mut out = Vec::new();
    go("", &tree, &mut out);
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path the code names: `use` trees expanded, and `crate::…` / `super::…` in code.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    // `use` items (`pub use`, `pub(crate) use` too).
    while let Some(i) = rest.find("use ") {
        let before = rest[..i].chars().last();
        let after = &rest[i + 4..];
        rest = after;
        if before.is_some_and(is_ident) {
            continue;
        }
        if let Some(end) = after.find(';') {
            let tree = &after[..end];
            if tree.contains('(') || tree.contains('=') {
                continue;
            }
            out.extend(expand(tree));
        }
    }
    // Inline paths.
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(i) = code[from..].find(start) {
            let at = from + i;
            from = at + start.len();
            if code[..at].chars().last().is_some_and(is_ident) {
                continue;
            }
            let path: String = code[at..]
                .chars()
                .take_while(|&c| is_ident(c) || c == ':')
                .collect();
            // `super::{a, b}` is a `use` tree, read above.
            if code[at + path.len()..].starts_with('{') {
                continue;
            }
            out.push(path.trim_end_matches(':').to_owned());
        }
    }
    out
}

/// Modules and what each imports (other files of the crate).
fn graph() -> (BTreeMap<String, BTreeSet<String>>, BTreeMap<String, usize>) {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut modules: BTreeMap<String, PathBuf> = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap();
        if rel.starts_with("bin") {
            continue;
        }
        modules.insert(module_of(rel), f.clone());
    }
    // Modules declared `#[cfg(test)] mod name;` are tests, not part of the build.
    let mut tests = BTreeSet::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        let mut prev = "";
        for line in text.lines() {
            let t = line.trim();
            if is_test_cfg(prev) && t.starts_with("mod ") && t.ends_with(';') {
                let name = t.trim_start_matches("mod ").trim_end_matches(';');
                tests.insert(if module.is_empty() {
                    name.to_owned()
                } else {
                    format!("{module}::{name}")
                });
            }
            prev = t;
        }
    }
    modules.retain(|m, _| !tests.contains(m));
    let mut lines = BTreeMap::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file).unwrap();
        lines.insert(module.clone(), text.lines().count());
        let own: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
        let mut deps = BTreeSet::new();
        for p in paths(&code(&text)) {
            let segs: Vec<&str> = p.split("::").filter(|s| !s.is_empty()).collect();
            let mut abs: Vec<&str> = match segs.first() {
                Some(&"crate") => Vec::new(),
                // `super` is the parent module, whether this one is a file or a directory.
                Some(&"super") => {
                    let mut base = own.clone();
                    let mut s = &segs[..];
                    while s.first() == Some(&"super") {
                        base.pop();
                        s = &s[1..];
                    }
                    base.extend_from_slice(s);
                    push(&modules, module, &base, &mut deps);
                    continue;
                }
                Some(&"self") => own.clone(),
                Some(first) => {
                    // A path relative to this module: a child module of it.
                    let mut child = own.clone();
                    child.push(first);
                    if !modules.contains_key(&child.join("::")) {
                        continue;
                    }
                    own.clone()
                }
                None => continue,
            };
            let skip = usize::from(matches!(segs.first(), Some(&"crate" | &"self")));
            abs.extend_from_slice(&segs[skip..]);
            push(&modules, module, &abs, &mut deps);
        }
        // Paths relative to this module outside `use`: `child::Item` in code.
        let body = code(&text);
        let prefix = if module.is_empty() {
            String::new()
        } else {
            format!("{module}::")
        };
        for child in modules.keys().filter_map(|m| m.strip_prefix(&prefix)) {
            if child.is_empty() || child.contains("::") {
                continue;
            }
            let needle = format!("{child}::");
            let named = body.match_indices(&needle).any(|(i, _)| {
                !body[..i]
                    .chars()
                    .last()
                    .is_some_and(|c| is_ident(c) || c == ':')
            });
            if named {
                deps.insert(format!("{prefix}{child}"));
            }
        }
        edges.insert(module.clone(), deps);
    }
    (edges, lines)
}

/// Records the file `path` lands in (its longest prefix that is a module), unless it is
/// `from` itself.
fn push(
    modules: &BTreeMap<String, PathBuf>,
    from: &str,
    path: &[&str],
    deps: &mut BTreeSet<String>,
) {
    for n in (0..=path.len()).rev() {
        let m = path[..n].join("::");
        if modules.contains_key(&m) {
            if m != from {
                deps.insert(m);
            }
            return;
        }
    }
}

/// Strongly connected components with more than one module (Tarjan).
pub fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        t.index.insert(v, t.next);
        t.low.insert(v, t.next);
        t.next += 1;
        t.stack.push(v);
        t.on.insert(v);
        for w in t.edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let l = t.low[v].min(t.low[w]);
                t.low.insert(v, l);
            } else if t.on.contains(w) {
                let l = t.low[v].min(t.index[w]);
                t.low.insert(v, l);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

/// The daemon's order, as `src/daemon/mod.rs` writes it in its first `text` block, top first:
/// each line that does not start with a space names an entry (`service/`, `context.rs`,
/// `managed/table.rs`), as a module path (`daemon::service`, `daemon::managed::table`).
fn daemon_order() -> Vec<String> {
    let text = std::fs::read_to_string(src().join("daemon/mod.rs")).unwrap();
    let mut order = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let Some(doc) = line.strip_prefix("//!") else {
            continue;
        };
        let doc = doc.strip_prefix(' ').unwrap_or(doc);
        if doc.starts_with("```") {
            if inside {
                break;
            }
            inside = doc == "```text";
            continue;
        }
        if !inside || doc.is_empty() || doc.starts_with(' ') {
            continue;
        }
        let entry = doc.split_whitespace().next().unwrap();
        let path = entry.trim_end_matches('/').trim_end_matches(".rs");
        order.push(format!("daemon::{}", path.replace('/', "::")));
    }
    order
}

/// The imports that go against `order` (module paths, top first): a module belongs to the
/// longest entry that is it or holds it, and may import only modules of its own entry or of
/// one below it. The root (`daemon`, the daemon's face to the crate) imports what it likes
/// and is imported by none of the daemon; every other module of the daemon must have an entry.
pub fn against_order(order: &[String], edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let root = "daemon";
    let entry = |m: &str| {
        order
            .iter()
            .enumerate()
            .filter(|(_, e)| m == e.as_str() || m.starts_with(&format!("{e}::")))
            .max_by_key(|(_, e)| e.len())
            .map(|(i, _)| i)
    };
    let ours = |m: &str| m.starts_with(&format!("{root}::"));
    let mut wrong = Vec::new();
    for e in order {
        if !edges.contains_key(e) {
            wrong.push(format!("{e} is in the order but is no module"));
        }
    }
    for (from, deps) in edges {
        if !ours(from) {
            continue;
        }
        let Some(at) = entry(from) else {
            wrong.push(format!("{from} is in no entry of the order"));
            continue;
        };
        for to in deps {
            if to == root {
                wrong.push(format!("{from} imports the daemon's root, {root}/mod.rs"));
            } else if ours(to) {
                match entry(to) {
                    Some(i) if i < at => wrong.push(format!(
                        "{from} (entry {}) imports {to} (entry {}, above it)",
                        order[at], order[i]
                    )),
                    _ => {}
                }
            }
        }
    }
    wrong
}

fn name(m: &str) -> &str {
    if m.is_empty() {
        "(lib)"
    } else {
        m
    }
}

#[test]
fn imports_between_source_files_flow_one_way() {
    let (edges, lines) = graph();
    if std::env::var_os("MODULE_MAP").is_some() {
        let mut map = String::new();
        for (m, deps) in &edges {
            let deps: Vec<&str> = deps.iter().map(|d| name(d)).collect();
            map.push_str(&format!(
                "{:<28} {:>4}  → {}\n",
                name(m),
                lines[m],
                deps.join(", ")
            ));
        }
        println!("{map}");
    }
    let found = circles(&edges);
    assert!(
        found.is_empty(),
        "import circles among src files: {}",
        found
            .iter()
            .map(|c| c.join(" ⇄ "))
            .collect::<Vec<_>>()
            .join("; ")
    );
}

#[test]
fn the_daemon_imports_down_its_declared_order() {
    let order = daemon_order();
    assert!(
        order.len() > 10,
        "the order in src/daemon/mod.rs: {order:?}"
    );
    let (edges, _) = graph();
    let wrong = against_order(&order, &edges);
    assert!(
        wrong.is_empty(),
        "imports against the order of src/daemon/mod.rs:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_order_check_sees_an_import_upward() {
    let order: Vec<String> = [
        "daemon::top",
        "daemon::mid",
        "daemon::top::held",
        "daemon::low",
    ]
    .map(String::from)
    .to_vec();
    let edges = |list: &[(&str, &[&str])]| -> BTreeMap<String, BTreeSet<String>> {
        let mut e: BTreeMap<String, BTreeSet<String>> = list
            .iter()
            .map(|(m, d)| (m.to_string(), d.iter().map(|s| s.to_string()).collect()))
            .collect();
        for m in &order {
            e.entry(m.clone()).or_default();
        }
        e
    };
    let down = edges(&[
        ("daemon", &["daemon::top"]),
        (
            "daemon::top",
            &["daemon::mid", "daemon::top::held", "error"],
        ),
        ("daemon::top::x", &["daemon::top", "daemon::low"]),
        ("daemon::mid", &["daemon::top::held"]),
        ("daemon::top::held", &["daemon::low"]),
    ]);
    assert_eq!(against_order(&order, &down), Vec::<String>::new());
    // A file held apart from its folder may not import the folder above it.
    let up = edges(&[("daemon::top::held", &["daemon::top::x"])]);
    assert_eq!(
        against_order(&order, &up).len(),
        1,
        "{:?}",
        against_order(&order, &up)
    );
    let up = edges(&[("daemon::low", &["daemon::mid"])]);
    assert_eq!(against_order(&order, &up).len(), 1);
    let root = edges(&[("daemon::low", &["daemon"])]);
    assert_eq!(against_order(&order, &root).len(), 1);
    let stray = edges(&[("daemon::elsewhere", &[])]);
    assert_eq!(against_order(&order, &stray).len(), 1);
}

#[test]
fn no_source_file_is_over_700_lines() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let long: Vec<String> = files
        .iter()
        .map(|f| (f, std::fs::read_to_string(f).unwrap().lines().count()))
        .filter(|(_, n)| *n > MAX_LINES)
        .map(|(f, n)| format!("{} ({n})", f.display()))
        .collect();
    assert!(long.is_empty(), "over {MAX_LINES} lines: {long:?}");
}

#[test]
fn the_reader_sees_use_trees_and_paths() {
    assert_eq!(
        expand("super::{a, b::{c, d}}"),
        vec!["super::a", "super::b::c", "super::b::d"]
    );
    assert_eq!(
        expand("super::{a as b, c::d as _}"),
        vec!["super::a", "super::c::d"]
    );
    let p = paths("use crate::x::{y, z};\nfn f() { super::w::g(); let s = \"crate::no\"; }");
    assert!(p.contains(&"crate::x::y".to_owned()), "{p:?}");
    assert!(p.contains(&"super::w::g".to_owned()), "{p:?}");
    assert!(!code("let s = \"crate::no\";").contains("crate::no"));
}
