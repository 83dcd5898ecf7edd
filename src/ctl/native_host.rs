//! `browserctl native-host`: the Chrome native-messaging host that tells our extension where
//! the daemons are. An extension cannot read files, so this is how "the extension monitors the
//! discovery directory" (seed 001) works.
//!
//! Chrome starts it with the caller's origin as argument and talks over stdio. It pushes
//! `{"type":"servers","servers":[…]}` (see [`crate::protocol::native`]) right away and whenever
//! the set of live daemons changes, and exits when Chrome closes its stdin.
//!
//! Plain threads, no async: a `notify` watcher and a stdin reader feed one channel; the main
//! loop rescans the directory on every wake-up and every [`RESCAN`] (a daemon killed with
//! SIGKILL leaves its file behind, and only a pid check notices).

use crate::paths::DEFAULT_DISCOVERY_DIR;
use crate::protocol::managed::InputChoice;
use crate::protocol::native::{DiscoveryFile, HostMessage, Server, MAX_TO_EXTENSION};
use notify::{RecursiveMode, Watcher};
use std::fs::{self, File, OpenOptions};
use std::io::{self, IsTerminal, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

/// How often the directory is rescanned without a file-system event.
pub const RESCAN: Duration = Duration::from_secs(2);

/// A discovery file larger than this is not ours.
const MAX_FILE: u64 = 64 * 1024;

#[derive(Debug, clap::Args)]
pub struct NativeHostArgs {
    /// The directory of the daemons' discovery files; this user's private one (where a
    /// daemon goes when the shared one is another user's) is watched too.
    #[arg(long, env = "BROWSER_MCP_DISCOVERY_DIR", default_value = DEFAULT_DISCOVERY_DIR)]
    pub discovery_dir: PathBuf,
    /// In a browser the daemon launched (issue 32): the session id its extension connects
    /// with. The daemon writes it into the host it installs in the profile it creates.
    #[arg(long, value_name = "SESSION", requires = "daemon_pid", hide = true)]
    pub managed: Option<String>,
    /// With --managed: the daemon that launched the browser, the only one listed.
    #[arg(long, value_name = "PID", hide = true)]
    pub daemon_pid: Option<u32>,
    /// With --managed: the input the launch asked for, which the extension is told.
    #[arg(long, requires = "managed", hide = true)]
    pub input: Option<InputChoice>,
    /// What Chrome passes: the caller's origin (chrome-extension://ID/), on Windows also
    /// --parent-window. Only logged; Chrome itself enforces the manifest's allowed_origins.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub caller: Vec<String>,
}

/// Writes one native-messaging frame.
pub fn write_frame(out: &mut impl Write, msg: &HostMessage) -> io::Result<()> {
    let body = serde_json::to_vec(msg).map_err(io::Error::other)?;
    if body.len() > MAX_TO_EXTENSION {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "message of {} bytes exceeds Chrome's 1 MiB limit",
                body.len()
            ),
        ));
    }
    out.write_all(&(body.len() as u32).to_ne_bytes())?;
    out.write_all(&body)?;
    out.flush()
}

/// Reads one frame and throws its body away (the extension has nothing to tell us); `false`
/// at end of input.
fn skip_frame(input: &mut impl Read) -> io::Result<bool> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    let len = u64::from(u32::from_ne_bytes(len));
    let skipped = io::copy(&mut input.take(len), &mut io::sink())?;
    Ok(skipped == len)
}

/// The directories to watch: the configured one and this user's private one.
pub fn watched_dirs(configured: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![configured.to_path_buf()];
    let private = crate::paths::private_discovery_dir();
    if private != configured {
        dirs.push(private);
    }
    dirs
}

fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    pid > 0
        && !matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Err(nix::errno::Errno::ESRCH)
        )
}

/// One `server-<pid>.json`, if it is a regular file of ours that nobody else can write, names
/// the pid it was written by, and that process is alive.
fn read_server(path: &Path, name_pid: u32) -> Option<Server> {
    // O_NONBLOCK: a FIFO planted under that name must not hang us.
    let mut f: File = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file()
        || meta.uid() != nix::unistd::geteuid().as_raw()
        || meta.mode() & 0o022 != 0
        || meta.len() > MAX_FILE
    {
        return None;
    }
    let mut text = Vec::with_capacity(meta.len() as usize);
    f.read_to_end(&mut text).ok()?;
    let file: DiscoveryFile = serde_json::from_slice(&text).ok()?;
    (file.pid == name_pid && file.port != 0 && pid_alive(file.pid)).then_some(Server {
        port: file.port,
        pid: file.pid,
        token: file.token,
        version: file.version,
    })
}

/// The live daemons in `dirs`, sorted by port; a directory that is missing or not trusted
/// ([`crate::trust`]) counts as empty.
pub fn scan_all(dirs: &[PathBuf]) -> Vec<Server> {
    let mut servers: Vec<Server> = dirs.iter().flat_map(|d| scan_one(d)).collect();
    servers.sort();
    servers.dedup_by(|later, earlier| later.port == earlier.port);
    servers
}

/// The live daemons in one directory (see [`scan_all`]).
pub fn scan(dir: &Path) -> Vec<Server> {
    scan_all(&[dir.to_path_buf()])
}

fn scan_one(dir: &Path) -> Vec<Server> {
    if crate::trust::check(dir).is_err() {
        return Vec::new();
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let servers: Vec<Server> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            let pid = name
                .to_str()?
                .strip_prefix("server-")?
                .strip_suffix(".json")?
                .parse::<u32>()
                .ok()?;
            read_server(&entry.path(), pid)
        })
        .collect();
    // (scan_all sorts, and keeps one entry per port: two files claiming one port are a
    // restart caught half-way, and the later pid is the live one.)
    servers
}

enum Wake {
    /// Something changed in the directory; `itself` when the directory was created or removed.
    Fs { itself: bool },
    /// Chrome closed our stdin: time to go.
    Closed,
}

/// Watches the directory and its parent (to see the directory come and go).
struct DirWatch {
    watcher: Option<notify::RecommendedWatcher>,
    dir: PathBuf,
}

impl DirWatch {
    fn new(dir: &Path, tx: mpsc::Sender<Wake>) -> DirWatch {
        let target = dir.to_path_buf();
        let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let Ok(event) = res else { return };
            // Opening and reading (ours included, every scan) are not changes; waking on them
            // would make each scan trigger the next.
            if event.kind.is_access() {
                return;
            }
            // The parent may be /tmp, which is busy: only our directory matters.
            let itself = event.paths.iter().any(|p| p == &target);
            if itself || event.paths.iter().any(|p| p.parent() == Some(&target)) {
                let _ = tx.send(Wake::Fs { itself });
            }
        });
        let mut w = DirWatch {
            watcher: match watcher {
                Ok(w) => Some(w),
                Err(e) => {
                    eprintln!(
                        "browserctl native-host: no file watcher ({e}); rescanning every {RESCAN:?}"
                    );
                    None
                }
            },
            dir: dir.to_path_buf(),
        };
        if let (Some(watcher), Some(parent)) = (w.watcher.as_mut(), dir.parent()) {
            let _ = watcher.watch(parent, RecursiveMode::NonRecursive);
        }
        w.rewatch();
        w
    }

    /// (Re)attaches to the directory: after it is recreated, the old watch is gone.
    fn rewatch(&mut self) {
        if let Some(watcher) = self.watcher.as_mut() {
            let _ = watcher.unwatch(&self.dir);
            let _ = watcher.watch(&self.dir, RecursiveMode::NonRecursive);
        }
    }
}

/// What `browserctl native-host` says when a person runs it on a terminal: the framing it
/// speaks is binary and meant for the browser.
pub const ON_A_TERMINAL: &str = "\
browserctl native-host is the native-messaging host of the browser-mcp extension: the browser
starts it and talks to it in binary frames over stdin and stdout, to learn where the local
browser-mcpd daemons are. It is not meant to be run by hand.

  Register it with your browsers:  browserctl install-native-host
  Check the whole setup:           browserctl doctor
  See what it would tell the extension (one frame, then exit):
                                   browserctl native-host </dev/null | tail -c +5
";

pub fn run(args: NativeHostArgs) -> ExitCode {
    // Binary frames on a terminal help nobody: a person typed this.
    if io::stdout().is_terminal() {
        eprint!("{ON_A_TERMINAL}");
        return ExitCode::from(2);
    }
    let (tx, rx) = mpsc::channel();
    let dirs = watched_dirs(&args.discovery_dir);
    let mut watches: Vec<DirWatch> = dirs.iter().map(|d| DirWatch::new(d, tx.clone())).collect();
    // A plain thread, not a runtime task: a blocking stdin read cannot be cancelled, and a
    // detached thread does not hold up the exit.
    std::thread::spawn(move || {
        let mut stdin = io::stdin().lock();
        while let Ok(true) = skip_frame(&mut stdin) {}
        let _ = tx.send(Wake::Closed);
    });
    let mut stdout = io::stdout().lock();
    let mut last: Option<Vec<Server>> = None;
    loop {
        let mut servers = scan_all(&dirs);
        // A launched browser belongs to the daemon that launched it, and to no other.
        if let Some(pid) = args.daemon_pid {
            servers.retain(|s| s.pid == pid);
        }
        if last.as_ref() != Some(&servers) {
            let msg = HostMessage::Servers {
                servers: servers.clone(),
                managed: args.managed.clone(),
                input: args.input,
            };
            if let Err(e) = write_frame(&mut stdout, &msg) {
                if e.kind() == io::ErrorKind::BrokenPipe {
                    return ExitCode::SUCCESS;
                }
                eprintln!("browserctl native-host: cannot write to the browser: {e}");
                return ExitCode::FAILURE;
            }
            last = Some(servers);
        }
        let first = match rx.recv_timeout(RESCAN) {
            Ok(w) => Some(w),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => return ExitCode::SUCCESS,
        };
        // A rename is several events: take them all, then scan once.
        for wake in first.into_iter().chain(rx.try_iter()) {
            match wake {
                Wake::Closed => return ExitCode::SUCCESS,
                Wake::Fs { itself: true } => watches.iter_mut().for_each(DirWatch::rewatch),
                Wake::Fs { itself: false } => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn frames(mut bytes: &[u8]) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let len = u32::from_ne_bytes(bytes[..4].try_into().unwrap()) as usize;
            out.push(serde_json::from_slice(&bytes[4..4 + len]).unwrap());
            bytes = &bytes[4 + len..];
        }
        out
    }

    #[test]
    fn framing() {
        let mut buf = Vec::new();
        write_frame(
            &mut buf,
            &HostMessage::Servers {
                servers: vec![],
                managed: None,
                input: None,
            },
        )
        .unwrap();
        assert_eq!(
            frames(&buf),
            vec![serde_json::json!({"type": "servers", "servers": []})]
        );
        let mut input = 3u32.to_ne_bytes().to_vec();
        input.extend_from_slice(b"{} ");
        input.extend_from_slice(&[1, 0]);
        let mut input = &input[..];
        assert!(skip_frame(&mut input).unwrap());
        assert!(!skip_frame(&mut input).unwrap(), "a cut length is the end");
        assert!(!skip_frame(&mut &b""[..]).unwrap());
    }

    #[test]
    fn scan_keeps_only_live_trusted_files() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("d");
        assert!(scan(&dir).is_empty(), "missing directory");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        let me = std::process::id();
        let write = |name: &str, body: String, mode: u32| {
            let p = dir.join(name);
            fs::write(&p, body).unwrap();
            fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
        };
        write(
            &format!("server-{me}.json"),
            format!(r#"{{"port": 9001, "pid": {me}, "token": "tok", "version": "9"}}"#),
            0o600,
        );
        // Dead pid, wrong pid for the name, others may write, not JSON, not a server file.
        write(
            "server-2147483646.json",
            r#"{"port": 9002, "pid": 2147483646}"#.into(),
            0o600,
        );
        write(
            "server-1.json",
            format!(r#"{{"port": 9003, "pid": {me}}}"#),
            0o600,
        );
        write("server-2.json", r#"{"port": 9004, "pid": 2}"#.into(), 0o666);
        write("server-3.json", "nope".into(), 0o600);
        write(
            "notes.json",
            format!(r#"{{"port": 9005, "pid": {me}}}"#),
            0o600,
        );
        std::os::unix::fs::symlink(
            dir.join(format!("server-{me}.json")),
            dir.join("server-4.json"),
        )
        .unwrap();
        assert_eq!(
            scan(&dir),
            vec![Server {
                port: 9001,
                pid: me,
                token: Some("tok".into()),
                version: Some("9".into())
            }]
        );
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(
            scan(&dir).is_empty(),
            "a world-writable directory is ignored"
        );
    }
}
