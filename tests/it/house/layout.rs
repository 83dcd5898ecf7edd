//! The shape of the rest of the tree, as tests/it/house/architecture.rs checks src/: no import circle
//! among the extension's JS modules, each world importing only itself and `shared/`, the service
//! worker's folders importing one way down their declared order, and no source file over 700
//! lines in src/, extension/ (vendored code aside), benches/ or tests/ (the third-party pages of
//! tests/e2e/third_party aside).

use crate::house::architecture::circles;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

const MAX_LINES: usize = 700;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Files under `dir` whose name ends with one of `exts`, skipping folders named in `skip`
/// (relative to the repository).
fn files(dir: &Path, exts: &[&str], skip: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let p = entry.path();
        let rel = p
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if skip.iter().any(|s| rel == *s) {
            continue;
        }
        if p.is_dir() {
            files(&p, exts, skip, out);
        } else if exts.iter().any(|e| rel.ends_with(e)) {
            out.push(p);
        }
    }
}

const SOURCE: &[&str] = &[".rs", ".js", ".mjs", ".py", ".sh", ".html", ".css"];
const NOT_OURS: &[&str] = &[
    "extension/vendor",
    "tests/e2e/third_party",
    "tests/e2e/pages/widgets/vendor",
];

#[test]
fn no_source_file_in_the_tree_is_over_700_lines() {
    let mut all = Vec::new();
    for dir in ["src", "extension", "benches", "tests"] {
        files(&root().join(dir), SOURCE, NOT_OURS, &mut all);
    }
    assert!(all.len() > 100, "the walk found too little: {}", all.len());
    let mut long: Vec<String> = all
        .iter()
        .filter_map(|p| {
            let n = std::fs::read_to_string(p).ok()?.lines().count();
            let rel = p.strip_prefix(root()).unwrap().display().to_string();
            (n > MAX_LINES).then(|| format!("{rel} ({n})"))
        })
        .collect();
    long.sort();
    assert!(long.is_empty(), "over {MAX_LINES} lines: {long:?}");
}

/// The module specifiers a JS file imports statically (`import … from`, `export … from`,
/// `import '…'`) or by a literal dynamic `import('…')`.
fn specifiers(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (key, close) in [("from", None), ("import", None), ("import(", Some(')'))] {
        let mut rest = code;
        while let Some(at) = rest.find(key) {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + key.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
                continue;
            }
            let t = rest.trim_start();
            let Some(q) = t.chars().next().filter(|c| matches!(c, '\'' | '"')) else {
                continue;
            };
            let Some(end) = t[1..].find(q) else { continue };
            if close.is_none() || t[1 + end + 1..].trim_start().starts_with(')') {
                out.push(t[1..1 + end].to_owned());
            }
        }
    }
    out
}

/// `base/../x/./y.js` → `x/y.js`, relative to the extension's root.
fn normalize(p: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                parts.pop();
            }
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}

/// The extension's JS modules (vendored code aside) and what each imports, by path from
/// `extension/`.
fn extension_graph() -> BTreeMap<String, BTreeSet<String>> {
    let ext = root().join("extension");
    let mut js = Vec::new();
    files(&ext, &[".js", ".mjs"], NOT_OURS, &mut js);
    let mut edges = BTreeMap::new();
    for p in js {
        let rel = p.strip_prefix(&ext).unwrap();
        let code = std::fs::read_to_string(&p).unwrap();
        let deps = specifiers(&code)
            .into_iter()
            .filter(|s| s.starts_with('.') || s.starts_with('/'))
            .map(|s| match s.strip_prefix('/') {
                Some(abs) => normalize(Path::new(abs)),
                None => normalize(&rel.parent().unwrap().join(s)),
            })
            .collect();
        edges.insert(normalize(rel), deps);
    }
    edges
}

#[test]
fn the_extension_has_no_import_circle() {
    let edges = extension_graph();
    let page = &edges["worker/frames/page.js"];
    assert!(
        page.contains("worker/frames/frames.js") && edges["worker/background.js"].len() > 5,
        "the reader no longer sees the imports: {page:?}"
    );
    for (from, deps) in &edges {
        for to in deps {
            assert!(
                edges.contains_key(to),
                "{from} imports {to}, which is not a file"
            );
        }
    }
    let found = circles(&edges);
    assert!(found.is_empty(), "import circles in extension/: {found:?}");
}

#[test]
fn a_world_imports_only_itself_and_shared() {
    let world = |p: &str| p.split('/').next().unwrap_or("").to_owned();
    for (from, deps) in extension_graph() {
        for to in deps {
            let (a, b) = (world(&from), world(&to));
            assert!(
                a == b || b == "shared",
                "{from} ({a}) imports {to}, another world's file: only shared/ is common"
            );
        }
    }
}

/// The service worker's folders, top to bottom (extension/README.md says what lives in each):
/// a folder imports only itself, the folders below it and `shared/`. Above them all, at
/// `worker/`'s top, only the entries: the manifest's `background.js` and `ui-api.js`, what the
/// extension's own pages may ask; they may import any folder, and no folder imports them.
const WORKER_FOLDERS: &[&str] = &[
    "ahead",
    "connection",
    "calls",
    "tools",
    "observers",
    "frames",
    "state",
];
const WORKER_ENTRIES: &[&str] = &["worker/background.js", "worker/ui-api.js"];

/// Where `worker/…` stands in the order: `Some(0)` for the top, `Some(1 + i)` for
/// `WORKER_FOLDERS[i]`, `None` outside the worker; a folder not in the list is an error.
fn worker_rank(path: &str) -> Option<usize> {
    let rest = path.strip_prefix("worker/")?;
    let Some((folder, _)) = rest.split_once('/') else {
        return Some(0);
    };
    let at = WORKER_FOLDERS.iter().position(|f| *f == folder);
    Some(
        1 + at.unwrap_or_else(|| panic!("{path}: worker/{folder}/ has no place in WORKER_FOLDERS")),
    )
}

/// Each import of the worker that breaks the declared order, worded.
fn worker_order_breaks(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut out = Vec::new();
    for (from, deps) in edges {
        let Some(a) = worker_rank(from) else { continue };
        for to in deps {
            match worker_rank(to) {
                Some(0) if a > 0 => {
                    out.push(format!("{from} imports {to}, an entry of the worker"))
                }
                Some(b) if b < a => out.push(format!(
                    "{from} imports {to}, a folder above its own (the order: {WORKER_FOLDERS:?})"
                )),
                _ => {}
            }
        }
    }
    out
}

#[test]
fn the_workers_folders_import_one_way_down_their_order() {
    let edges = extension_graph();
    let top: Vec<&str> = edges
        .keys()
        .filter(|p| worker_rank(p) == Some(0))
        .map(String::as_str)
        .collect();
    assert_eq!(top, WORKER_ENTRIES, "worker/'s top holds its entries alone");
    for folder in WORKER_FOLDERS {
        let dir = root().join("extension/worker").join(folder);
        assert!(
            dir.join("README.md").is_file(),
            "worker/{folder}/ says what lives there and what it may import in a README.md"
        );
        assert!(
            edges
                .keys()
                .any(|p| p.starts_with(&format!("worker/{folder}/"))),
            "worker/{folder}/ holds no module"
        );
    }
    let breaks = worker_order_breaks(&edges);
    assert!(breaks.is_empty(), "{breaks:#?}");
    // The check sees a break: state/, the lowest folder, may not reach up to tools/.
    let mut bad = edges.clone();
    bad.get_mut("worker/state/badge.js")
        .unwrap()
        .insert("worker/tools/builtins.js".into());
    assert_eq!(worker_order_breaks(&bad).len(), 1);
}

#[test]
fn the_reader_sees_every_kind_of_import() {
    let code = "import { a } from './a.js';\nimport * as b from \"../shared/b.js\";\nexport { c } from './c.js';\nimport './d.js';\nconst e = await import('/worker/e.js');\nconst imported = x.from('no'); // not an import\n";
    assert_eq!(
        specifiers(code),
        [
            "./a.js",
            "../shared/b.js",
            "./c.js",
            "./d.js",
            "/worker/e.js"
        ]
    );
}

/// Each minified file the browser runs (extension/**/*.min.js) names, on its first line, the
/// sha256 of each source scripts/minify-extension.mjs made it from: a source edited since fails
/// here, before a browser test runs the old file. (scripts/check-js.sh checks the making itself.)
#[test]
fn each_minified_file_is_made_from_its_sources_as_they_are() {
    use sha2::{Digest, Sha256};
    let mut made = Vec::new();
    files(&root().join("extension"), &[".min.js"], NOT_OURS, &mut made);
    assert!(!made.is_empty(), "no .min.js under extension/");
    for file in made {
        let rel = file.strip_prefix(root()).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        let header = text.lines().next().unwrap_or_default();
        let sources = header
            .split_once("sources: ")
            .map(|(_, list)| list)
            .unwrap_or_else(|| panic!("{rel}: no list of sources on its first line"));
        for source in sources.split(", ") {
            let (path, sum) = source
                .strip_suffix(')')
                .and_then(|s| s.split_once(" (sha256 "))
                .unwrap_or_else(|| panic!("{rel}: cannot read {source:?}"));
            let bytes = std::fs::read(root().join("extension").join(path))
                .unwrap_or_else(|e| panic!("{rel}: its source extension/{path}: {e}"));
            let now: String = Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(
                now, sum,
                "{rel} was made from another extension/{path}: run `node scripts/minify-extension.mjs` \
                 (scripts/check-js.sh installs terser)"
            );
        }
    }
}
