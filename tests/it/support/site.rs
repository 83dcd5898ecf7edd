//! The page server of the hands tests: tests/e2e/pages and the third-party corpus on loopback,
//! two origins, and a multipart upload sink.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Serves tests/e2e/pages and tests/e2e/third_party (subdirectories too) on 127.0.0.1, reachable as
/// http://localhost:PORT as well (another origin, another site), and answers POST /upload with
/// what a multipart form sent. Stops on drop.
pub struct SiteServer {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl SiteServer {
    pub fn start() -> SiteServer {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e");
        let (port, stop) = listen(move |stream| serve(stream, &root));
        SiteServer { port, stop }
    }

    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for SiteServer {
    fn drop(&mut self) {
        stop(self.port, &self.stop);
    }
}

/// Accepts on a fresh port of 127.0.0.1, a thread per connection (Chromium opens speculative
/// connections it may never use), until the flag is set; see [`stop`].
pub(crate) fn listen(serve: impl Fn(TcpStream) + Clone + Send + 'static) -> (u16, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the page server");
    let port = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            if stopped.load(Ordering::SeqCst) {
                return;
            }
            let Ok(stream) = stream else { continue };
            let serve = serve.clone();
            std::thread::spawn(move || serve(stream));
        }
    });
    (port, stop)
}

/// Stops a [`listen`] loop: sets the flag and wakes the accept so it sees it.
pub(crate) fn stop(port: u16, flag: &AtomicBool) {
    flag.store(true, Ordering::SeqCst);
    let _ = TcpStream::connect(("127.0.0.1", port));
}

/// A request's head: its method and path, its body's length and multipart boundary.
pub(crate) struct Head {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) length: usize,
    pub(crate) boundary: Option<String>,
}

/// Reads a request's head (None: the client went away first).
pub(crate) fn read_head(reader: &mut impl BufRead) -> Option<Head> {
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut parts = request_line.split(' ');
    let mut head = Head {
        method: parts.next().unwrap_or("").to_owned(),
        path: parts.next().unwrap_or("/").to_owned(),
        length: 0,
        boundary: None,
    };
    loop {
        let mut header = String::new();
        match reader.read_line(&mut header) {
            Ok(0) | Err(_) => return None,
            Ok(_) if header == "\r\n" || header == "\n" => return Some(head),
            Ok(_) => {
                let lower = header.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    head.length = v.trim().parse().unwrap_or(0);
                }
                if lower.starts_with("content-type:") {
                    head.boundary = header
                        .split("boundary=")
                        .nth(1)
                        .map(|b| b.trim().trim_matches('"').to_owned());
                }
            }
        }
    }
}

/// Writes a whole answer and closes (no-store: every test sees the file as it is).
pub(crate) fn respond(mut out: &TcpStream, status: &str, kind: &str, body: &[u8]) {
    let _ = write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = out.write_all(body);
}

/// Where a request path is served from: third_party/… for the corpus, pages/… for ours.
fn file_for(root: &Path, path: &str) -> Option<PathBuf> {
    let path = path.split(['?', '#']).next()?.trim_start_matches('/');
    let safe = !path.is_empty()
        && path.split('/').all(|seg| {
            !seg.is_empty()
                && !seg.starts_with('.')
                && seg
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        });
    if !safe {
        return None;
    }
    let first = path.split('/').next()?;
    let file = if matches!(first, "playwright" | "selenium") {
        root.join("third_party").join(path)
    } else {
        root.join("pages").join(path)
    };
    file.is_file().then_some(file)
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("js") => "text/javascript",
        Some("css") => "text/css",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "text/html; charset=utf-8",
    }
}

fn serve(stream: TcpStream, root: &Path) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(&stream);
    let Some(head) = read_head(&mut reader) else {
        return;
    };
    let (status, kind, body) = if head.method == "POST" && head.path == "/upload" {
        let mut body = vec![0; head.length.min(64 << 20)];
        let _ = reader.read_exact(&mut body);
        let summary = multipart_summary(&body, head.boundary.as_deref().unwrap_or(""));
        (
            "200 OK",
            "text/html; charset=utf-8",
            format!("<!doctype html><title>Uploaded</title><pre>{summary}</pre>").into_bytes(),
        )
    } else {
        match file_for(root, &head.path).and_then(|f| Some((std::fs::read(&f).ok()?, f))) {
            Some((body, f)) => ("200 OK", content_type(&f), body),
            None => (
                "404 Not Found",
                "text/html; charset=utf-8",
                b"<!doctype html><title>Not found</title><p>not found</p>".to_vec(),
            ),
        }
    };
    respond(&stream, status, kind, &body);
}

/// "field=filename N bytes: first line" for each file part of a multipart body.
fn multipart_summary(body: &[u8], boundary: &str) -> String {
    let text = String::from_utf8_lossy(body);
    let sep = format!("--{boundary}");
    text.split(sep.as_str())
        .filter_map(|part| {
            let (head, content) = part.split_once("\r\n\r\n")?;
            let field = head.split("name=\"").nth(1)?.split('"').next()?;
            let file = head.split("filename=\"").nth(1)?.split('"').next()?;
            let content = content.strip_suffix("\r\n").unwrap_or(content);
            Some(format!(
                "{field}={file} {} bytes: {}",
                content.len(),
                content.lines().next().unwrap_or("")
            ))
        })
        .collect::<Vec<_>>()
        .join("\n")
}
