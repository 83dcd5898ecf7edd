//! `browser_file_upload` from browserctl: the files a person names (`--paths`, or `paths` in
//! `--args`) are read here, where browserctl runs, and go to the daemon as their bytes
//! (`files: [{name, mimeType, data, path}]`), never as paths for the daemon to read (issue 58,
//! item 1). So a file is the person's own, from the machine they typed on: through `--host` or
//! a forward, the daemon is on another machine and reads nothing of its own for them; there it
//! drops `path`, which names no file of its machine. A named file is theirs to upload wherever
//! it is (the daemon's upload roots bound only what agents name), so no upload root is needed.

use crate::error::{Error, ErrorCode};
use crate::protocol::control::{CallRequest, Flags};
use crate::protocol::upload::{inline, MAX_TOTAL_BYTES};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::io::Read;

fn invalid(message: String) -> Error {
    Error::new(ErrorCode::InvalidArguments, message)
}

/// Replaces the paths a `browser_file_upload` names by the files' contents, appended to any
/// inline `files` of `--args`; other tools' calls pass untouched.
pub fn read(mut req: CallRequest) -> Result<CallRequest, Error> {
    if req.tool != crate::protocol::tool::FILE_UPLOAD {
        return Ok(req);
    }
    let mut named = Vec::new();
    let mut flags = Flags::new();
    for (flag, value) in std::mem::take(&mut req.flags) {
        match (flag == "paths", value) {
            (true, Some(text)) => named.extend(flag_paths(&text)?),
            (_, value) => flags.push((flag, value)),
        }
    }
    req.flags = flags;
    let mut object = match &req.args {
        None => Map::new(),
        Some(args) => match serde_json::from_str(args.get()) {
            Ok(Value::Object(object)) => object,
            // Not an object: the daemon says what is wrong with it.
            _ => return Ok(req),
        },
    };
    match object.remove("paths") {
        None => {}
        Some(Value::Array(paths)) => {
            for p in paths {
                let Value::String(p) = p else {
                    return Err(invalid(format!("`paths` takes file paths, not {p}")));
                };
                named.push(p);
            }
        }
        Some(other) => return Err(invalid(format!("`paths` must be a list, not {other}"))),
    }
    if named.is_empty() {
        return Ok(req);
    }
    let mut files = match object.remove("files") {
        None => Vec::new(),
        Some(Value::Array(files)) => files,
        Some(_) => return Err(invalid("`files` must be an array".into())),
    };
    let mut total = 0u64;
    for path in &named {
        let (file, size) = read_one(path, MAX_TOTAL_BYTES - total)?;
        total += size;
        files.push(file);
    }
    object.insert("files".into(), Value::Array(files));
    let text = Value::Object(object).to_string();
    req.args = Some(RawValue::from_string(text).expect("serde_json wrote valid JSON"));
    Ok(req)
}

/// `--paths a.txt`, or `--paths '["a.txt", "b.txt"]'`.
fn flag_paths(text: &str) -> Result<Vec<String>, Error> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => items
            .into_iter()
            .map(|i| match i {
                Value::String(p) => Ok(p),
                other => Err(invalid(format!("`--paths` takes file paths, not {other}"))),
            })
            .collect(),
        _ => Ok(vec![text.to_owned()]),
    }
}

/// One named file (relative to where browserctl runs): a regular file, within `room` bytes.
fn read_one(named: &str, room: u64) -> Result<(Value, u64), Error> {
    let path = std::path::absolute(named).map_err(|e| invalid(format!("`{named}`: {e}")))?;
    let shown = path.display().to_string();
    let cannot = |e: std::io::Error| invalid(format!("cannot read `{shown}`: {e}"));
    let file = std::fs::File::open(&path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(invalid(format!("`{shown}` is not a regular file")));
    }
    let too_big = || {
        invalid(format!(
            "`{shown}` takes the files past {} MiB, the most one browser_file_upload takes",
            MAX_TOTAL_BYTES >> 20
        ))
    };
    if meta.len() > room {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(room + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > room {
        return Err(too_big());
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok((inline(&name, &bytes, Some(&shown)), bytes.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn upload(args: Option<Value>, flags: Flags) -> Result<Value, Error> {
        let req = CallRequest {
            tool: crate::protocol::tool::FILE_UPLOAD.into(),
            args: args.map(|a| RawValue::from_string(a.to_string()).unwrap()),
            flags,
            ..CallRequest::default()
        };
        let out = read(req)?;
        assert!(
            out.flags.iter().all(|(f, _)| f != "paths"),
            "{:?}",
            out.flags
        );
        assert!(
            out.upload_roots.is_empty(),
            "no path for the daemon to read"
        );
        Ok(serde_json::from_str(out.args.unwrap().get()).unwrap())
    }

    #[test]
    fn named_files_go_as_their_bytes_after_the_inline_ones() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.png"));
        std::fs::write(&a, "hello").unwrap();
        std::fs::write(&b, [0u8, 1]).unwrap();
        let flags = vec![
            ("paths".to_owned(), Some(json!([a]).to_string())),
            ("ref".to_owned(), Some("e1".to_owned())),
        ];
        let args = json!({"files": [{"name": "x", "data": ""}], "paths": [b]});
        let out = upload(Some(args), flags).unwrap();
        assert_eq!(
            out,
            json!({"files": [
                {"name": "x", "data": ""},
                {"name": "a.txt", "mimeType": "text/plain", "data": "aGVsbG8=", "path": a},
                {"name": "b.png", "mimeType": "image/png", "data": "AAE=", "path": b},
            ]})
        );
        let one = vec![("paths".to_owned(), Some(a.display().to_string()))];
        assert_eq!(upload(None, one).unwrap()["files"][0]["data"], "aGVsbG8=");
    }

    #[test]
    fn what_cannot_be_read_here_is_said_here() {
        for (path, says) in [
            ("/nonexistent/browser-mcp", "cannot read"),
            ("/dev/null", "not a regular file"),
        ] {
            let flags = vec![("paths".to_owned(), Some(path.to_owned()))];
            let e = upload(None, flags).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArguments);
            assert!(e.message.contains(says), "{path}: {}", e.message);
        }
    }
}
