//! The pages rows 11–14 load, served from loopback: Playwright's own test pages (tests/e2e/
//! third_party) and generated ones (50,000 elements, 20 iframes, a page that changes its DOM
//! 60 times a second, a 5,000 px tall page), and the page of row 15's lanes.

use crate::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub(crate) struct PageServer {
    pub(crate) port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl PageServer {
    pub(crate) async fn start() -> PageServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let task = tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    let mut n = 0;
                    while !buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                        match s.read(&mut buf[n..]).await {
                            Ok(0) | Err(_) => return,
                            Ok(k) => n += k,
                        }
                        if n == buf.len() {
                            return;
                        }
                    }
                    let head = String::from_utf8_lossy(&buf[..n]);
                    let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
                    let (status, body) = match page(&path) {
                        Some(b) => ("200 OK", b),
                        None => ("404 Not Found", b"not found".to_vec()),
                    };
                    let head = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = s.write_all(head.as_bytes()).await;
                    let _ = s.write_all(&body).await;
                    let _ = s.shutdown().await;
                });
            }
        });
        PageServer { port, task }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn page(path: &str) -> Option<Vec<u8>> {
    let path = path.split('?').next().unwrap_or(path);
    if let Some(rest) = path.strip_prefix("/t/") {
        if rest.split('/').any(|p| p.is_empty() || p.starts_with('.')) {
            return None;
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/third_party");
        return std::fs::read(root.join(rest)).ok();
    }
    if path == "/lane" {
        return Some(lane_page());
    }
    let html = match path {
        "/big" => {
            let mut s = String::from("<!doctype html><title>50,000 elements</title><body>");
            for i in 0..5_000 {
                s.push_str(&format!(
                    "<div class=r><span>row {i}</span><a href=#{i}>link</a><b>b</b><i>i</i><em>e</em><p>p</p><ul><li>x</li></ul><button>go</button></div>"
                ));
            }
            s
        }
        "/frames" => {
            let mut s = String::from("<!doctype html><title>20 iframes</title><body>");
            for i in 0..20 {
                s.push_str(&format!("<iframe src=/child?{i}></iframe>"));
            }
            s
        }
        "/child" => "<!doctype html><title>child</title><p>A frame</p><button>Press</button>".into(),
        "/idle" => "<!doctype html><title>busy</title><body><p id=n>0</p><script>\
                    let n = 0; setInterval(() => { document.getElementById('n').textContent = ++n; \
                    const d = document.createElement('div'); d.textContent = n; document.body.append(d); \
                    if (document.body.children.length > 200) document.body.children[1].remove(); }, 1000 / 60);\
                    </script>"
            .into(),
        // Row 16's page: what each action acts on, and handlers that see it, as a page has.
        "/act" => "<!doctype html><title>act</title><body style=margin:0>\
                   <button id=b style=\"margin:20px;width:120px;height:40px\">Go</button>\
                   <input id=t aria-label=Name style=margin:20px><p id=n>0</p><script>\
                   let n = 0; for (const t of ['click', 'mouseover', 'input', 'keydown'])\
                   document.addEventListener(t, () => document.getElementById('n').textContent = ++n);\
                   </script>"
            .into(),
        "/tall" => "<!doctype html><title>tall</title><body style=margin:0>\
                    <div style=\"height:5000px;background:linear-gradient(#fff,#09f)\">tall</div>"
            .into(),
        _ => return None,
    };
    Some(html.into_bytes())
}
