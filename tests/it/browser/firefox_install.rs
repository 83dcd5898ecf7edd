//! The Firefox add-on as a package: one manifest for both families, and an unsigned .xpi that
//! installs for good only where signatures are not required.

use crate::support::chromium::machine_wide_lock;
use crate::support::common::*;
use crate::support::firefox::*;
use serde_json::{json, Value};

/// The one manifest serves both families: what each browser needs is there, and nothing that
/// would break the other (the browsers' own verdicts are the e2e tests above and tests/it/e2e.rs).
#[test]
fn one_manifest_serves_chromium_and_firefox() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("extension/manifest.json");
    let m: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let bg = &m["background"];
    assert_eq!(
        bg["service_worker"], "worker/background.js",
        "Chromium's worker: {bg}"
    );
    assert_eq!(
        bg["scripts"],
        json!(["worker/background.js"]),
        "Firefox's event page, the same file: {bg}"
    );
    assert_eq!(bg["type"], "module", "{bg}");
    // Firefox's default MV3 CSP upgrades ws://127.0.0.1 to wss://, which no daemon speaks.
    let csp = m["content_security_policy"]["extension_pages"]
        .as_str()
        .unwrap_or_else(|| panic!("an explicit extension_pages CSP: {m}"));
    assert!(!csp.contains("upgrade-insecure-requests"), "{csp}");
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert!(
        !csp.contains("connect-src") || csp.contains("ws://127.0.0.1:*"),
        "the daemon's WebSocket stays allowed: {csp}"
    );
    let gecko = &m["browser_specific_settings"]["gecko"];
    assert_eq!(gecko["id"], GECKO_ID, "{gecko}");
    let min: u32 = gecko["strict_min_version"]
        .as_str()
        .and_then(|v| v.split('.').next()?.parse().ok())
        .unwrap_or_else(|| panic!("strict_min_version: {gecko}"));
    assert!(
        min >= 128,
        "world: \"MAIN\" content scripts need Firefox 128: {gecko}"
    );
}

/// The permanent install a user makes on Firefox ESR or Developer Edition: the unsigned .xpi
/// that scripts/build-xpi.sh packs, which Firefox installs for good once
/// xpinstall.signatures.required is false (and refuses while it is true). Dropped into the
/// profile's extensions/ directory, where about:addons' "Install Add-on From File…" puts it
/// too. Firefox runs without its remote agent here: under automation it relaxes its signature
/// checks, which would prove nothing.
#[test]
fn unsigned_xpi_installs_for_good_only_without_required_signatures() {
    let Some(exe) = firefox_or_skip(
        "browser::firefox_install::unsigned_xpi_installs_for_good_only_without_required_signatures",
    ) else {
        return;
    };
    let _lock = machine_wide_lock();
    let scratch = tempfile::tempdir().unwrap();
    let xpi = scratch.path().join("browser-mcp.xpi");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/build-xpi.sh");
    let out = std::process::Command::new(&script)
        .arg(&xpi)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        script.display(),
        stderr(&out)
    );
    assert_eq!(stdout(&out).trim(), xpi.to_str().unwrap());

    // Found through the native host, so only this daemon can be the one it reaches.
    let d = TestDaemon::builder().args(&["--require-token"]).start();
    let home = tempfile::tempdir().unwrap();
    d.install_host_in_home(home.path(), "firefox");
    let log = home.path().join("firefox.log");
    let browsers = || {
        d.ctl_json(&["browsers"])["browsers"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    // What Firefox's add-on database says of ours, once it has written the database.
    let ours = |profile: &std::path::Path| {
        wait_until(FIREFOX_WAIT, "Firefox to write its add-on database", || {
            let text = std::fs::read_to_string(profile.join("extensions.json")).ok()?;
            let db: Value = serde_json::from_str(&text).ok()?;
            let addons = db["addons"].as_array()?;
            addons
                .iter()
                .any(|a| a["location"] == "app-builtin")
                .then(|| addons.iter().find(|a| a["id"] == GECKO_ID).cloned())
        })
    };

    for required in [true, false] {
        let profile = tempfile::tempdir().unwrap();
        std::fs::create_dir(profile.path().join("extensions")).unwrap();
        std::fs::copy(
            &xpi,
            profile.path().join(format!("extensions/{GECKO_ID}.xpi")),
        )
        .unwrap();
        // autoDisableScopes 0: a file dropped into the profile is enabled without asking, as
        // one the user installs from about:addons is.
        write_prefs(
            profile.path(),
            &Options::default(),
            &format!(
                "user_pref(\"xpinstall.signatures.required\", {required});\n\
                 user_pref(\"extensions.autoDisableScopes\", 0);\n"
            ),
        );
        let (mut ff, _) = Process::spawn(&exe, profile.path(), home.path(), &log, false);
        if required {
            let addon = ours(profile.path());
            assert_eq!(
                addon,
                None,
                "an unsigned add-on is refused\n{}",
                ff.log_tail()
            );
            assert!(browsers().is_empty(), "{:?}", browsers());
            continue;
        }
        let connected = wait_until(FIREFOX_WAIT, "the installed add-on to connect", || {
            browsers().first().cloned()
        });
        assert_eq!(connected["name"], "Firefox", "{connected}");
        let addon = ours(profile.path()).unwrap_or_else(|| panic!("installed\n{}", ff.log_tail()));
        assert_eq!(addon["active"], true, "{addon}");
        assert_eq!(
            addon["location"], "app-profile",
            "installed in the profile: {addon}"
        );
        assert_eq!(
            addon["signedState"], 0,
            "unsigned (SIGNEDSTATE_MISSING): {addon}"
        );
        // For good: a restart on the same profile brings it back by itself.
        ff.kill();
        drop(ff);
        wait_until(FIREFOX_WAIT, "the browser to go", || {
            browsers().is_empty().then_some(())
        });
        let (ff, _) = Process::spawn(&exe, profile.path(), home.path(), &log, false);
        wait_until(
            FIREFOX_WAIT,
            "the add-on to come back after a restart",
            || (!browsers().is_empty()).then_some(()),
        );
        drop(ff);
    }
}
