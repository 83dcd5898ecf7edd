//! `browser_file_upload` with `paths`: the daemon reads the files and hands them to the
//! extension inline (`files: [{name, mimeType, data}]`, base64), so a page never reads the disk
//! and the extension never needs file access. A path the daemon's user cannot read is the
//! caller's mistake: INVALID_ARGUMENTS, before anything reaches the browser.
//!
//! Only from where the user said (issue 31): a path is read only inside an upload root (the
//! daemon's `--upload-root`s, and an MCP client's own roots for its calls), reached with no
//! symbolic link below the root (issue 58, item 7: see [`beneath`]), and never a hidden file or
//! one in a hidden directory below the root (`.ssh`, `.aws`, `.config/browser-mcp`, a browser
//! profile's dot-directory). A page that asks an agent
//! for `~/.ssh/id_ed25519` gets a refusal that names the setting.

use super::beneath::{self, Refused};
use crate::error::{Error, ErrorCode};
use crate::protocol::upload::inline;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

pub const TOOL: &str = crate::protocol::tool::FILE_UPLOAD;

pub use crate::protocol::upload::MAX_TOTAL_BYTES;

fn invalid(message: String) -> Error {
    Error::new(ErrorCode::InvalidArguments, message)
}

/// For `browser_file_upload`, replaces `paths` by the files' contents (appended to any inline
/// `files`); other tools' arguments pass untouched.
pub async fn inline_paths(
    tool: &str,
    args: Box<RawValue>,
    roots: &[PathBuf],
) -> Result<Box<RawValue>, Error> {
    if tool != TOOL {
        return Ok(args);
    }
    let mut object: Map<String, Value> = match serde_json::from_str(args.get()) {
        Ok(Value::Object(map)) => map,
        _ => return Ok(args), // prepare() has already refused anything but an object
    };
    let Some(paths) = object.remove("paths") else {
        return Ok(args);
    };
    let paths: Vec<String> = serde_json::from_value(paths)
        .map_err(|_| invalid("`paths` must be an array of file paths".into()))?;
    let mut files = match object.remove("files") {
        None => Vec::new(),
        Some(Value::Array(files)) => files,
        Some(_) => return Err(invalid("`files` must be an array".into())),
    };
    let mut total = 0u64;
    for path in paths {
        let roots = roots.to_vec();
        let (file, size) =
            tokio::task::spawn_blocking(move || read_allowed(Path::new(&path), &roots))
                .await
                .map_err(|e| Error::new(ErrorCode::Internal, format!("reading a file: {e}")))??;
        total += size;
        if total > MAX_TOTAL_BYTES {
            return Err(invalid(format!(
                "the files add up to more than {} MiB, the most one browser_file_upload takes",
                MAX_TOTAL_BYTES >> 20
            )));
        }
        files.push(file);
    }
    object.insert("files".into(), Value::Array(files));
    let text = serde_json::to_string(&Value::Object(object)).expect("a JSON value serializes");
    Ok(RawValue::from_string(text).expect("serde_json wrote valid JSON"))
}

/// For a call from another machine (`Via::Relay`): its `paths` name files there, which the
/// daemon does not read here (REMOTE_PATH, saying what to send instead), and a `path` its
/// inline files claim is dropped, as it names no file of this machine and the person's
/// prompt must not show one. Other tools' arguments pass untouched.
pub fn from_afar(tool: &str, args: Box<RawValue>) -> Result<Box<RawValue>, Error> {
    if tool != TOOL {
        return Ok(args);
    }
    let mut object: Map<String, Value> = match serde_json::from_str(args.get()) {
        Ok(Value::Object(map)) => map,
        _ => return Ok(args),
    };
    if object.contains_key("paths") {
        return Err(remote_path());
    }
    let Some(Value::Array(files)) = object.get_mut("files") else {
        return Ok(args);
    };
    let mut claimed = false;
    for file in files.iter_mut().filter_map(Value::as_object_mut) {
        claimed |= file.remove("path").is_some();
    }
    if !claimed {
        return Ok(args);
    }
    let text = serde_json::to_string(&Value::Object(object)).expect("a JSON value serializes");
    Ok(RawValue::from_string(text).expect("serde_json wrote valid JSON"))
}

fn remote_path() -> Error {
    Error::new(
        ErrorCode::RemotePath,
        "this call came from another machine (through ssh: browserctl --host, browserctl \
         forward or dial-stdio), so its `paths` (and an MCP client's roots) name files of that \
         machine, which the daemon does not read here: send the file's bytes instead, as \
         `files: [{name, mimeType, data}]` with `data` in base64 (browserctl call does this \
         itself), or run the client on the browser's machine",
    )
}

/// Where `path` lies below one of `roots`: the root (as configured, or with its own links
/// resolved, whichever `path` is written under) and the rest; `hidden` when that rest has a
/// hidden component (such a file is never read).
fn below<'a>(path: &'a Path, roots: &[PathBuf]) -> Vec<(PathBuf, &'a Path, bool)> {
    let mut found = Vec::new();
    for root in roots {
        let mut forms = vec![root.clone()];
        if let Ok(real) = std::fs::canonicalize(root) {
            if real != *root {
                forms.push(real);
            }
        }
        for form in forms {
            if let Ok(rest) = path.strip_prefix(&form) {
                let hidden = rest
                    .components()
                    .any(|c| c.as_os_str().to_string_lossy().starts_with('.'));
                found.push((form, rest, hidden));
            }
        }
    }
    found
}

/// Reads the file `path` names if it lies inside one of `roots`, reached with no symbolic link
/// below the root (see [`beneath`]) and nothing hidden below the root; else why not, naming
/// the setting. The file is judged on the descriptor its bytes come from.
fn read_allowed(path: &Path, roots: &[PathBuf]) -> Result<(Value, u64), Error> {
    let shown = path.display();
    if !path.is_absolute() {
        return Err(invalid(format!(
            "`{shown}` is not an absolute path (the daemon's working directory is not yours)"
        )));
    }
    let mut why = "it is not inside an upload root: the daemon's --upload-root (upload-root in \
        its config file), or, for an MCP client, the roots it declares; browserctl call reads \
        the files you name itself";
    let mut no_parent = true;
    if path.components().any(|c| c == Component::ParentDir) {
        no_parent = false; // `..` is not followed below a root: it may cross a link
    }
    for (root, rest, hidden) in below(path, roots).into_iter().filter(|_| no_parent) {
        if hidden {
            why = "it is hidden, or in a hidden directory, below its upload root (such files \
                are never uploaded)";
            continue;
        }
        match beneath::open(&root, rest) {
            Ok(file) => return read_open(path, file),
            Err(Refused::Link) => {
                why = "it is not inside an upload root: below a root, no symbolic link is \
                    followed";
            }
            Err(Refused::Io(e)) => return Err(invalid(format!("cannot read `{shown}`: {e}"))),
        }
    }
    Err(Error::new(
        ErrorCode::InvalidArguments,
        format!("`{shown}` may not be uploaded: {why}"),
    ))
}

/// Reads a file [`read_allowed`] opened, judged on its descriptor: a regular file, within the
/// size one call takes (read no further than that, should it grow meanwhile).
fn read_open(path: &Path, file: std::fs::File) -> Result<(Value, u64), Error> {
    let shown = path.display();
    let meta = file
        .metadata()
        .map_err(|e| invalid(format!("cannot read `{shown}`: {e}")))?;
    if !meta.is_file() {
        return Err(invalid(format!("`{shown}` is not a regular file")));
    }
    let too_big = |n: u64| {
        invalid(format!(
            "`{shown}` is {n} bytes, more than the {} MiB one browser_file_upload takes",
            MAX_TOTAL_BYTES >> 20
        ))
    };
    if meta.len() > MAX_TOTAL_BYTES {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_TOTAL_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| invalid(format!("cannot read `{shown}`: {e}")))?;
    if bytes.len() as u64 > MAX_TOTAL_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Read on the daemon's own machine: the path as its client named it, for the prompt.
    let file = inline(&name, &bytes, Some(&path.display().to_string()));
    Ok((file, bytes.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(v: Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).unwrap()
    }

    /// A temp dir whose own name is not hidden (tempfile's default, `.tmpXXXX`, is).
    fn shown_dir() -> tempfile::TempDir {
        tempfile::Builder::new().prefix("upload").tempdir().unwrap()
    }

    fn run_in(tool: &str, args: Value, roots: &[PathBuf]) -> Result<Value, Error> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(inline_paths(tool, raw(args), roots))
            .map(|r| serde_json::from_str(r.get()).unwrap())
    }

    fn run(tool: &str, args: Value) -> Result<Value, Error> {
        run_in(tool, args, &[PathBuf::from("/")])
    }

    #[test]
    fn paths_become_inline_files_after_the_inline_ones() {
        let dir = shown_dir();
        let path = dir.path().join("notes.TXT");
        std::fs::write(&path, b"hello").unwrap();
        let out = run(
            TOOL,
            json!({"ref": "e3", "files": [{"name": "a.bin", "data": ""}], "paths": [path]}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"ref": "e3", "files": [
                {"name": "a.bin", "data": ""},
                {"name": "notes.TXT", "mimeType": "text/plain", "data": "aGVsbG8=",
                    "path": path},
            ]})
        );
    }

    #[test]
    fn from_afar_paths_are_refused_and_claimed_paths_dropped() {
        let far = |v: Value| {
            from_afar(TOOL, raw(v)).map(|r| serde_json::from_str::<Value>(r.get()).unwrap())
        };
        let e = far(json!({"paths": ["/etc/hostname"]})).unwrap_err();
        assert_eq!(e.code, ErrorCode::RemotePath);
        assert!(e.message.contains("send the file's bytes"), "{}", e.message);
        let claimed = json!({"ref": "e1", "files": [
            {"name": "cv.txt", "data": "eA==", "path": "/home/me/cv.txt"}, {"name": "b", "data": ""}]});
        assert_eq!(
            far(claimed).unwrap(),
            json!({"ref": "e1", "files": [{"name": "cv.txt", "data": "eA=="}, {"name": "b", "data": ""}]})
        );
        let other = json!({"paths": ["/etc/hostname"]});
        let out = from_afar("browser_click", raw(other.clone())).unwrap();
        assert_eq!(serde_json::from_str::<Value>(out.get()).unwrap(), other);
    }

    #[test]
    fn a_missing_relative_or_special_path_is_invalid_arguments() {
        for (path, says) in [
            ("/nonexistent/browser-mcp-upload", "cannot read"),
            ("relative.txt", "not an absolute path"),
            ("/dev/null", "not a regular file"),
            ("/", "not a regular file"),
        ] {
            let e = run(TOOL, json!({"ref": "e1", "paths": [path]})).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArguments, "{path}");
            assert!(e.message.contains(says), "{path}: {}", e.message);
        }
        let e = run(TOOL, json!({"paths": "/etc/hostname"})).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArguments);
    }

    #[test]
    fn other_tools_and_calls_without_paths_pass_untouched() {
        let args = json!({"paths": ["/nonexistent"]});
        assert_eq!(run("browser_click", args.clone()).unwrap(), args);
        let inline = json!({"ref": "e1", "files": [{"name": "x", "data": "eA=="}]});
        assert_eq!(run(TOOL, inline.clone()).unwrap(), inline);
    }

    #[test]
    fn only_files_inside_a_root_and_not_hidden_below_it_are_read() {
        let home = shown_dir();
        let docs = home.path().join("docs");
        let ssh = home.path().join(".ssh");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::create_dir_all(&ssh).unwrap();
        std::fs::write(docs.join("cv.pdf"), b"cv").unwrap();
        std::fs::write(docs.join(".env"), b"secret").unwrap();
        std::fs::write(ssh.join("id_ed25519"), b"PRIVATE-KEY-BYTES").unwrap();
        std::os::unix::fs::symlink(ssh.join("id_ed25519"), docs.join("key.txt")).unwrap();
        let roots = [docs.clone()];
        let up = |p: &Path, roots: &[PathBuf]| run_in(TOOL, json!({"paths": [p]}), roots);
        assert!(up(&docs.join("cv.pdf"), &roots).is_ok());
        for (path, says) in [
            (ssh.join("id_ed25519"), "not inside an upload root"),
            (docs.join("key.txt"), "not inside an upload root"),
            (docs.join(".env"), "hidden"),
            (docs.join("../.ssh/id_ed25519"), "not inside an upload root"),
        ] {
            let e = up(&path, &roots).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArguments);
            assert!(
                e.message.contains(says),
                "{}: {}",
                path.display(),
                e.message
            );
            assert!(
                !e.message.contains("PRIVATE-KEY-BYTES"),
                "never the contents"
            );
        }
        // The home as a root: its hidden directories stay closed; .ssh as a root is a choice.
        let e = up(&ssh.join("id_ed25519"), &[home.path().to_owned()]).unwrap_err();
        assert!(e.message.contains("hidden"), "{}", e.message);
        assert!(up(&ssh.join("id_ed25519"), std::slice::from_ref(&ssh)).is_ok());
        // No roots at all: nothing.
        let e = up(&docs.join("cv.pdf"), &[]).unwrap_err();
        assert!(e.message.contains("--upload-root"), "{}", e.message);
    }
}
