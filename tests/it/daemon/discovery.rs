//! The discovery file: contents, permissions, repair, and sweeping of stale files.

use crate::support::common::*;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

#[test]
fn discovery_file_has_the_seed_fields_and_is_private() {
    let d = TestDaemon::start();
    let v = read_json(&d.discovery_file).unwrap();
    assert_eq!(v["port"], d.port);
    assert_eq!(v["pid"], d.child.id());
    let started = v["startedAt"].as_str().unwrap();
    assert!(started.ends_with('Z') && started.len() == 24, "{started}");
    assert!(v["version"].is_string());
    let mode = std::fs::metadata(&d.discovery_file)
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let dir_mode = std::fs::metadata(&d.discovery_dir)
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700);
}

#[test]
fn deleted_or_altered_file_comes_back() {
    let d = TestDaemon::start();
    let original = std::fs::read(&d.discovery_file).unwrap();
    std::fs::remove_file(&d.discovery_file).unwrap();
    wait_until(Duration::from_secs(2), "the file to be restored", || {
        (std::fs::read(&d.discovery_file).ok()? == original).then_some(())
    });
    std::fs::write(&d.discovery_file, b"garbage").unwrap();
    wait_until(Duration::from_secs(2), "the file to be repaired", || {
        (std::fs::read(&d.discovery_file).ok()? == original).then_some(())
    });
    // Moved away in one step (a recursive delete would race with the daemon's repair).
    let moved = d.dir.path().join("moved-away");
    std::fs::rename(&d.discovery_dir, &moved).unwrap();
    std::fs::remove_dir_all(&moved).unwrap();
    wait_until(
        Duration::from_secs(5),
        "the directory to be restored",
        || (std::fs::read(&d.discovery_file).ok()? == original).then_some(()),
    );
}

#[test]
fn files_of_dead_daemons_are_swept_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let disco = dir.path().join("discovery");
    std::fs::create_dir(&disco).unwrap();
    std::fs::set_permissions(&disco, std::fs::Permissions::from_mode(0o700)).unwrap();
    // A pid that cannot be alive, and one that is (ours).
    let dead = disco.join("server-2147483646.json");
    std::fs::write(&dead, br#"{"port":1,"pid":2147483646,"startedAt":"x"}"#).unwrap();
    let alive = disco.join(format!("server-{}.json", std::process::id()));
    std::fs::write(&alive, b"{}").unwrap();
    let other = disco.join("notes.txt");
    std::fs::write(&other, b"keep").unwrap();
    let d = TestDaemon::builder().dir(dir).start();
    assert!(!dead.exists(), "stale file swept");
    assert!(alive.exists() && other.exists(), "others left alone");
    drop(d);
}

#[test]
fn socket_is_0600() {
    let d = TestDaemon::start();
    let mode = std::fs::metadata(&d.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}
