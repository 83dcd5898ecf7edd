//! `browser_file_upload` with `paths`: the daemon reads the files and hands them to the
//! extension inline (`files: [{name, mimeType, data}]`, base64), so a page never reads the disk
//! and the extension never needs file access. A path the daemon's user cannot read is the
//! caller's mistake: INVALID_ARGUMENTS, before anything reaches the browser.

use crate::error::{Error, ErrorCode};
use base64::Engine;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::path::Path;

pub const TOOL: &str = "browser_file_upload";

/// The most one call may upload, all files together: it travels as base64 in one WebSocket
/// message and one extension message to the page.
pub const MAX_TOTAL_BYTES: u64 = 32 << 20;

fn invalid(message: String) -> Error {
    Error::new(ErrorCode::InvalidArguments, message)
}

/// For `browser_file_upload`, replaces `paths` by the files' contents (appended to any inline
/// `files`); other tools' arguments pass untouched.
pub async fn inline_paths(tool: &str, args: Box<RawValue>) -> Result<Box<RawValue>, Error> {
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
    for path in &paths {
        let (file, size) = read_file(Path::new(path)).await?;
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

async fn read_file(path: &Path) -> Result<(Value, u64), Error> {
    let shown = path.display();
    if !path.is_absolute() {
        return Err(invalid(format!(
            "`{shown}` is not an absolute path (the daemon's working directory is not yours)"
        )));
    }
    let meta = tokio::fs::metadata(path)
        .await
        .map_err(|e| invalid(format!("cannot read `{shown}`: {e}")))?;
    if !meta.is_file() {
        return Err(invalid(format!("`{shown}` is not a regular file")));
    }
    if meta.len() > MAX_TOTAL_BYTES {
        return Err(invalid(format!(
            "`{shown}` is {} bytes, more than the {} MiB one browser_file_upload takes",
            meta.len(),
            MAX_TOTAL_BYTES >> 20
        )));
    }
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|e| invalid(format!("cannot read `{shown}`: {e}")))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = json!({
        "name": name,
        "mimeType": mime_type(&name),
        "data": base64::engine::general_purpose::STANDARD.encode(&bytes),
    });
    Ok((file, bytes.len() as u64))
}

/// The type a browser's file chooser would give the file, by its extension ("" when unknown,
/// as browsers do).
fn mime_type(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "txt" | "log" => "text/plain",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "md" => "text/markdown",
        "js" | "mjs" => "text/javascript",
        "json" => "application/json",
        "xml" => "application/xml",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "ico" => "image/x-icon",
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "doc" => "application/msword",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(v: Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).unwrap()
    }

    fn run(tool: &str, args: Value) -> Result<Value, Error> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(inline_paths(tool, raw(args)))
            .map(|r| serde_json::from_str(r.get()).unwrap())
    }

    #[test]
    fn paths_become_inline_files_after_the_inline_ones() {
        let dir = tempfile::tempdir().unwrap();
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
                {"name": "notes.TXT", "mimeType": "text/plain", "data": "aGVsbG8="},
            ]})
        );
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
}
