//! A file as `browser_file_upload` carries it to the extension: `{name, mimeType, data}` (the
//! bytes in base64), and `path`, where it was read, only when that was on the daemon's own
//! machine (the prompt that names each file leaving shows it, issue 58, item 9). Made by the
//! daemon for the paths it reads, and by browserctl for the files a person names, read where
//! browserctl runs (issue 58, item 1).

use base64::Engine;
use serde_json::{json, Value};

/// The most one call may upload, all files together: it travels as base64 in one WebSocket
/// message and one extension message to the page.
pub const MAX_TOTAL_BYTES: u64 = 32 << 20;

/// The file `name` with its `bytes`, as the extension takes it; `path` where it was read.
pub fn inline(name: &str, bytes: &[u8], path: Option<&str>) -> Value {
    let mut file = json!({
        "name": name,
        "mimeType": mime_type(name),
        "data": base64::engine::general_purpose::STANDARD.encode(bytes),
    });
    if let Some(path) = path {
        file["path"] = json!(path);
    }
    file
}

/// The type a browser's file chooser would give the file, by its extension ("" when unknown,
/// as browsers do).
pub fn mime_type(name: &str) -> &'static str {
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
