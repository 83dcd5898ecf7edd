//! Opening a file below an upload root without following any symbolic link on the way (issue
//! 58, item 7). Checking a path with its links resolved and then opening it again by name
//! leaves a gap: whoever may write inside the root (a shared folder) swaps in a link between
//! the two. Here the name is resolved once, by the kernel, beneath a descriptor of the root,
//! with no link followed; what is judged afterwards (a regular file, its size) is judged on the
//! descriptor the bytes are read from.

use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

/// How reading a file beneath a root failed.
#[derive(Debug)]
pub enum Refused {
    /// A symbolic link on the way, or a name leading out of the root.
    Link,
    /// Anything else, as the system said it.
    Io(std::io::Error),
}

/// Flags for the file itself: no link at the end, no blocking on a FIFO (it is refused by its
/// type afterwards), no descriptor left to a child.
fn file_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC | OFlag::O_NOCTTY
}

fn refused(e: Errno) -> Refused {
    match e {
        // ELOOP: a link (RESOLVE_NO_SYMLINKS, or O_NOFOLLOW at the end); EXDEV: out of the root
        // (RESOLVE_BENEATH); ENOTDIR: O_NOFOLLOW|O_DIRECTORY met a link to a directory.
        Errno::ELOOP | Errno::EXDEV | Errno::ENOTDIR => Refused::Link,
        e => Refused::Io(std::io::Error::from(e)),
    }
}

/// Opens `rel` (relative, no `..`; empty for the root itself) for reading beneath the
/// directory `root`, whose own path is the person's setting and may hold links; nothing below
/// it may.
pub fn open(root: &Path, rel: &Path) -> Result<std::fs::File, Refused> {
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(Refused::Link);
    }
    if rel.as_os_str().is_empty() {
        // The root itself (a file a person named is a root of its own), whose path is theirs.
        let fd = nix::fcntl::open(root, file_flags() - OFlag::O_NOFOLLOW, Mode::empty());
        return Ok(std::fs::File::from(fd.map_err(|e| Refused::Io(e.into()))?));
    }
    let dir = nix::fcntl::open(
        root,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Refused::Io(e.into()))?;
    let fd = match with_openat2(&dir, rel) {
        Some(r) => r,
        None => by_components(dir, rel),
    }?;
    Ok(std::fs::File::from(fd))
}

/// `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`; `None` where the kernel (before 5.6) or a
/// sandbox's filter does not have it.
#[cfg(target_os = "linux")]
fn with_openat2(dir: &OwnedFd, rel: &Path) -> Option<Result<OwnedFd, Refused>> {
    use nix::fcntl::{openat2, OpenHow, ResolveFlag};
    let how = OpenHow::new().flags(file_flags()).resolve(
        ResolveFlag::RESOLVE_BENEATH
            | ResolveFlag::RESOLVE_NO_SYMLINKS
            | ResolveFlag::RESOLVE_NO_MAGICLINKS,
    );
    match openat2(dir, rel, how) {
        Ok(fd) => Some(Ok(fd)),
        Err(Errno::ENOSYS | Errno::EPERM) => None,
        Err(e) => Some(Err(refused(e))),
    }
}

#[cfg(not(target_os = "linux"))]
fn with_openat2(_: &OwnedFd, _: &Path) -> Option<Result<OwnedFd, Refused>> {
    None
}

/// One component at a time, each opened with `O_NOFOLLOW` relative to the one before: a link
/// anywhere fails the open instead of being followed.
fn by_components(mut dir: OwnedFd, rel: &Path) -> Result<OwnedFd, Refused> {
    let parts: Vec<_> = rel.components().collect();
    let (last, dirs) = parts.split_last().expect("rel is not empty");
    for part in dirs {
        dir = openat(
            &dir,
            part.as_os_str(),
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(refused)?;
    }
    openat(&dir, last.as_os_str(), file_flags(), Mode::empty()).map_err(refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn read(root: &Path, rel: &str, fallback: bool) -> Result<String, Refused> {
        let f = if fallback {
            let dir =
                nix::fcntl::open(root, OFlag::O_PATH | OFlag::O_DIRECTORY, Mode::empty()).unwrap();
            std::fs::File::from(by_components(dir, Path::new(rel))?)
        } else {
            open(root, Path::new(rel))?
        };
        let mut s = String::new();
        (&f).read_to_string(&mut s).unwrap();
        Ok(s)
    }

    #[test]
    fn no_link_is_followed_below_the_root_either_way() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/doc.txt"), "doc").unwrap();
        std::fs::write(base.path().join("secret"), "secret").unwrap();
        std::os::unix::fs::symlink(base.path().join("secret"), root.join("abs")).unwrap();
        std::os::unix::fs::symlink("sub/doc.txt", root.join("rel")).unwrap();
        std::os::unix::fs::symlink(base.path(), root.join("up")).unwrap();
        for fallback in [false, true] {
            assert_eq!(read(&root, "sub/doc.txt", fallback).unwrap(), "doc");
            for rel in ["abs", "rel", "up/secret"] {
                let r = read(&root, rel, fallback);
                assert!(matches!(r, Err(Refused::Link)), "{rel}: {r:?}");
            }
            let r = read(&root, "missing", fallback);
            assert!(matches!(r, Err(Refused::Io(_))), "{r:?}");
        }
        assert!(matches!(
            open(&root, Path::new("../secret")),
            Err(Refused::Link)
        ));
    }
}
