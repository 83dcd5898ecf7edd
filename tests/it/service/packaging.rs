//! What `cargo install` and the packages ship (issue 18): stripped release binaries, and the
//! man pages in the section the packages install them to.

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn manifest() -> toml::Table {
    let text = std::fs::read_to_string(format!("{ROOT}/Cargo.toml")).unwrap();
    toml::from_str(&text).unwrap()
}

/// `cargo install` copies target/release: it must not carry debug info (it used to weigh
/// 110 MB + 100 MB). The profiling profile keeps line tables for perf.
#[test]
fn release_binaries_are_stripped() {
    let m = manifest();
    let profiles = m["profile"].as_table().unwrap();
    let release = profiles["release"].as_table().unwrap();
    assert_eq!(release.get("strip"), Some(&toml::Value::Boolean(true)));
    assert!(
        release
            .get("debug")
            .is_none_or(|d| *d == toml::Value::Integer(0) || *d == toml::Value::Boolean(false)),
        "{release:?}"
    );
    let profiling = profiles["profiling"].as_table().unwrap();
    assert_eq!(profiling["inherits"].as_str(), Some("release"));
}

/// browser-mcpd is started by the user, like ssh-agent: section 1, where every package puts it.
#[test]
fn both_man_pages_are_in_section_one() {
    for page in ["browser-mcpd.1", "browserctl.1"] {
        let text = std::fs::read_to_string(format!("{ROOT}/man/{page}")).unwrap();
        let th = text.lines().find(|l| l.starts_with(".TH")).unwrap();
        assert!(th.split_whitespace().nth(2) == Some("1"), "{page}: {th}");
    }
    let deb = std::fs::read_to_string(format!("{ROOT}/packaging/deb/files.txt")).unwrap();
    assert!(deb.contains("/usr/share/man/man1/browser-mcpd.1.gz"));
    assert!(!deb.contains("man8"));
    for f in [
        "packaging/arch/PKGBUILD",
        "packaging/homebrew/browser-mcp.rb",
    ] {
        let text = std::fs::read_to_string(format!("{ROOT}/{f}")).unwrap();
        assert!(
            !text.contains("man8") && text.contains("browser-mcpd.1"),
            "{f}"
        );
    }
}

/// The README works in a clone: no links out of the repository, and the install command near
/// the top.
#[test]
fn the_readme_stands_on_its_own() {
    let readme = std::fs::read_to_string(format!("{ROOT}/README.md")).unwrap();
    assert!(!readme.contains("](../"), "a link leaves the repository");
    for link in readme.split("](").skip(1) {
        let target = link.split(')').next().unwrap();
        if target.starts_with("http") || target.starts_with('#') {
            continue;
        }
        let path = target.split('#').next().unwrap();
        assert!(
            std::path::Path::new(ROOT).join(path).exists(),
            "README links {target}, which is not in the repository"
        );
    }
    let top: String = readme.lines().take(30).collect::<Vec<_>>().join("\n");
    assert!(top.contains("cargo install --locked --path ."), "{top}");
    assert!(top.contains("browserctl setup"), "{top}");
}

/// The .deb ships the extension a launched browser loads (issue 32), where the packaged daemon
/// looks for it: /usr/share/browser-mcp/extension, beside /usr/bin — not the source tree this
/// test runs in. (packaging/deb/check.sh, in CI, checks the whole list and lintian.)
#[tokio::test]
async fn the_deb_ships_the_extension_where_its_daemon_finds_it() {
    use crate::support::common::*;
    use std::path::Path;
    use std::process::Command;
    let test = "service::packaging::the_deb_ships_the_extension_where_its_daemon_finds_it";
    if Command::new("dpkg-deb").arg("--version").output().is_err() {
        return skip(test, "no dpkg-deb", "apt-get install dpkg");
    }
    let tmp = tempfile::tempdir().unwrap();
    let bin = Path::new(DAEMON).parent().unwrap();
    let out = Command::new(format!("{ROOT}/packaging/deb/build.sh"))
        .arg(bin)
        .arg(tmp.path().join("deb"))
        // Seconds, not the minutes xz of debug binaries takes.
        .env("DEB_COMPRESSION", "none")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let deb = stdout(&out).lines().last().unwrap().to_owned();
    let root = tmp.path().join("root");
    let out = Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let ext = root.join("usr/share/browser-mcp/extension");
    for f in [
        "manifest.json",
        "worker/background.js",
        "content/content.js",
    ] {
        assert!(ext.join(f).is_file(), "{f} is not in the package");
    }

    let d = TestDaemon::builder()
        .daemon(&root.join("usr/bin/browser-mcpd"))
        .start();
    let (code, l) = crate::support::harness::api(&d, "GET", "/v1/browsers/launchable", None).await;
    assert_eq!(code, 200, "{l}");
    assert_eq!(
        l["extension"].as_str(),
        Some(std::fs::canonicalize(&ext).unwrap().to_str().unwrap()),
        "{l}"
    );
}
