//! The user's token for the daemon's loopback port (`/mcp`'s bearer, agents' `?token=`, the
//! trust handshake): kept in a file of the user's state directory (mode 0600), so that an MCP
//! client's saved HTTP configuration keeps working across daemon restarts (issue 59). Made
//! by the first daemon that finds none; changed only by `browserctl token rotate`. Shared by
//! the daemon (which reads and rotates it) and browserctl (which rotates it without a daemon).
//! A leaf module: std, nix, getrandom and [`crate::trust`].

use std::fs::OpenOptions;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// A new random token: 48 hex digits.
pub fn random() -> String {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn well_formed(token: &str) -> bool {
    token.len() >= 32 && token.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// The token in `path`, if the file is a regular file of ours that nobody else can read and
/// holds a well-formed token; `Ok(None)` when there is no file. A file others can read (or
/// write) is refused: its token is no secret any more.
pub fn read(path: &Path) -> io::Result<Option<String>> {
    let mut f = match OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = f.metadata()?;
    let me = nix::unistd::geteuid().as_raw();
    if !meta.is_file() || meta.uid() != me || meta.mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a private file of yours (mode {:o}, uid {}); its token may be known \
                 to others",
                path.display(),
                meta.mode() & 0o777,
                meta.uid()
            ),
        ));
    }
    let mut text = String::new();
    (&mut f).take(4096).read_to_string(&mut text)?;
    let token = text.trim();
    if !well_formed(token) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} holds no token", path.display()),
        ));
    }
    Ok(Some(token.to_owned()))
}

/// Writes `token` to `path` ([`crate::trust::write_private`]). With `replace` false, an
/// existing file is kept (two daemons that start at once agree on the first one's token):
/// the token in force is returned.
pub fn write(path: &Path, token: &str, replace: bool) -> io::Result<String> {
    if crate::trust::write_private(path, format!("{token}\n").as_bytes(), replace)? {
        return Ok(token.to_owned());
    }
    read(path)?.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the token file went away"))
}

/// The token in `path`, made (and kept there) if there is none. A file that cannot be
/// trusted is replaced by a new token, and the reason returned beside it.
pub fn load_or_create(path: &Path) -> io::Result<(String, Option<String>)> {
    match read(path) {
        Ok(Some(token)) => Ok((token, None)),
        Ok(None) => Ok((write(path, &random(), false)?, None)),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::PermissionDenied | io::ErrorKind::InvalidData
            ) =>
        {
            Ok((write(path, &random(), true)?, Some(e.to_string())))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn made_once_kept_private_and_replaced_when_others_can_read_it() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("state/browser-mcp/token");
        let (first, why) = load_or_create(&path).unwrap();
        assert!(why.is_none() && well_formed(&first));
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            fs::metadata(path.parent().unwrap())
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
        assert_eq!(load_or_create(&path).unwrap().0, first, "kept");
        assert_eq!(
            write(&path, &random(), false).unwrap(),
            first,
            "not replaced"
        );
        let rotated = write(&path, &random(), true).unwrap();
        assert_ne!(rotated, first);
        assert_eq!(read(&path).unwrap().unwrap(), rotated);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        assert!(read(&path).is_err());
        let (fresh, why) = load_or_create(&path).unwrap();
        assert_ne!(fresh, rotated);
        assert!(why.unwrap().contains("not a private file"));
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert!(fs::read_dir(path.parent().unwrap()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp")));
    }
}
