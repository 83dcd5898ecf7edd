//! Two machines on one, for the remote-use tests (issue 33), joined only by a real OpenSSH
//! server on 127.0.0.1:
//!
//! - the **laptop** is the test's own user (root in CI): its daemon, its scripted browser, its
//!   runtime directory in the temp dir (sshd hands it to root's sessions with `SetEnv`);
//! - the **dev box** is a second local user made for the test (`useradd`, `userdel -r` at the
//!   end), with its home in the temp dir.
//!
//! The server is the test's own (`sshd -D -f CONFIG` on a free port: a throwaway host key, the
//! authorized keys in temp files, no PAM), and each side's ssh client has a throwaway key and a
//! config that knows the host key (ssh checks it: nothing here turns that off). The laptop
//! reaches the dev box as `ssh://devbox`, the dev box the laptop as `ssh://laptop`.

use super::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

pub struct Machines {
    pub base: tempfile::TempDir,
    pub user: String,
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
    pub port: u16,
    sshd: Option<KillOnDrop>,
    /// The PATH sessions get (with browserctl, or without it).
    session_path: String,
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", stderr(&out));
    out
}

fn keygen(path: &Path) -> String {
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "bmcp-test", "-f"])
        .arg(path));
    std::fs::read_to_string(path.with_extension("pub")).unwrap()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The pids of `pid`'s descendants (children first found, then theirs).
fn descendants(pid: u32) -> Vec<u32> {
    let mut parents = std::collections::HashMap::<u32, Vec<u32>>::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid …: comm may hold spaces, so read after the last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parents.entry(ppid).or_default().push(child);
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for &c in parents.get(&p).into_iter().flatten() {
            out.push(c);
            todo.push(c);
        }
    }
    out
}

fn kill(pid: u32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
}

/// The processes running as `uid` (the test user's: every one was started by this test).
fn processes_of(uid: u32) -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            (e.metadata().ok()?.uid() == uid).then_some(pid)
        })
        .collect()
}

/// Users and temp dirs a killed test run left behind (its drop never ran): each base dir
/// names the test process that made it, and a dead one's are removed.
fn sweep_leftovers() {
    let Ok(passwd) = std::fs::read_to_string("/etc/passwd") else {
        return;
    };
    for line in passwd.lines() {
        let fields: Vec<&str> = line.split(':').collect();
        let (Some(name), Some(home)) = (fields.first(), fields.get(5)) else {
            continue;
        };
        let Some(base) = home.strip_suffix("/home") else {
            continue;
        };
        if !name.starts_with("bmcp") || !base.starts_with("/tmp/bmcp-ssh") {
            continue;
        }
        let owner = std::fs::read_to_string(format!("{base}/pid"))
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok());
        let alive = owner.is_some_and(|pid| {
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
        });
        if !alive {
            let _ = Command::new("/usr/sbin/userdel")
                .args(["-r", name])
                .stderr(Stdio::null())
                .status();
            let _ = std::fs::remove_dir_all(base);
        }
    }
}

impl Machines {
    /// `None` (with the reason, and a failure under CI) when this machine cannot play both.
    pub fn new(test: &str) -> Option<Machines> {
        let why = if !nix::unistd::geteuid().is_root() {
            Some("not running as root, so no second user to make")
        } else if !Path::new("/usr/sbin/sshd").exists() {
            Some("no /usr/sbin/sshd")
        } else if !Path::new("/usr/bin/ssh").exists() {
            Some("no ssh client")
        } else if !Path::new("/usr/sbin/useradd").exists()
            || !Path::new("/usr/bin/setpriv").exists()
        {
            Some("no useradd or setpriv")
        } else {
            None
        };
        if let Some(why) = why {
            skip(
                test,
                why,
                "CI runs as root with openssh-server, openssh-client, passwd and util-linux",
            );
            return None;
        }
        sweep_leftovers();
        let base = tempfile::Builder::new()
            .prefix("bmcp-ssh")
            .tempdir_in("/tmp")
            .unwrap();
        set_mode(base.path(), 0o755);
        std::fs::write(base.path().join("pid"), std::process::id().to_string()).unwrap();
        let b = |rel: &str| base.path().join(rel);
        let mut nonce = [0u8; 4];
        getrandom::fill(&mut nonce).unwrap();
        let user = format!(
            "bmcp{}",
            nonce.iter().map(|x| format!("{x:02x}")).collect::<String>()
        );
        let home = b("home");
        // `-p '*'`: no password, but not a locked account, which sshd refuses without PAM.
        run(Command::new("/usr/sbin/useradd")
            .args(["-m", "-s", "/bin/sh", "-p", "*", "-d"])
            .arg(&home)
            .arg(&user));
        let uid = nix::unistd::User::from_name(&user).unwrap().unwrap();
        let (uid, gid) = (uid.uid.as_raw(), uid.gid.as_raw());
        let mut m = Machines {
            base,
            user,
            uid,
            gid,
            home,
            port: free_port(),
            sshd: None,
            session_path: String::new(),
        };
        m.session_path = format!("{}:/usr/bin:/bin", m.path("bin").display());
        m.lay_out();
        m.start_sshd();
        Some(m)
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.base.path().join(rel)
    }

    fn chown(&self, p: &Path) {
        nix::unistd::chown(
            p,
            Some(nix::unistd::Uid::from_raw(self.uid)),
            Some(nix::unistd::Gid::from_raw(self.gid)),
        )
        .unwrap();
    }

    /// Binaries both users can run, keys, known hosts, each side's ssh config, runtime dirs.
    fn lay_out(&self) {
        let p = |rel: &str| self.path(rel);
        for dir in ["bin", "keys", "laptop", "devbox"] {
            std::fs::create_dir(p(dir)).unwrap();
            set_mode(&p(dir), 0o755);
        }
        for (from, name) in [(DAEMON, "browser-mcpd"), (CTL, "browserctl")] {
            // A hard link where the file system allows (see security/multi_user.rs).
            if std::fs::hard_link(from, p("bin").join(name)).is_err() {
                std::fs::copy(from, p("bin").join(name)).unwrap();
            }
            set_mode(&p("bin").join(name), 0o755);
        }
        let host_key = keygen(&p("host_key"));
        let laptop_key = keygen(&p("laptop/id"));
        let devbox_key = keygen(&p("devbox/id"));
        self.chown(&p("devbox/id"));
        // Each user's authorized keys: the other side's key.
        std::fs::write(p("keys/root"), &devbox_key).unwrap();
        std::fs::write(p("keys").join(&self.user), &laptop_key).unwrap();
        let host_key = host_key
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        std::fs::write(p("known_hosts"), format!("bmcp-test-host {host_key}\n")).unwrap();
        std::fs::write(p("empty_known_hosts"), "").unwrap();
        for (side, alias, user) in [
            ("laptop", "devbox", self.user.as_str()),
            ("devbox", "laptop", "root"),
        ] {
            for (file, known) in [
                ("ssh_config", "known_hosts"),
                ("ssh_config_unknown", "empty_known_hosts"),
            ] {
                let config = format!(
                    "Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  \
                     IdentityFile {id}\n  IdentitiesOnly yes\n  HostKeyAlias bmcp-test-host\n  \
                     UserKnownHostsFile {known}\n  GlobalKnownHostsFile /dev/null\n  \
                     CheckHostIP no\n  LogLevel ERROR\n",
                    port = self.port,
                    id = p(side).join("id").display(),
                    known = p(known).display(),
                );
                std::fs::write(p(side).join(file), config).unwrap();
            }
        }
        // Runtime directories: the laptop's (root's, handed to its ssh sessions too) and the
        // dev box user's, as a login would make them.
        for (dir, owner) in [("laptop/run", None), ("devbox/run", Some(()))] {
            std::fs::create_dir(p(dir)).unwrap();
            set_mode(&p(dir), 0o700);
            if owner.is_some() {
                self.chown(&p(dir));
            }
        }
    }

    /// `SHLVL=1` for root: bash reads ~/.bashrc for an ssh command only at the first shell
    /// level, and this machine's root's (pyenv's init) would cost every command hundreds of
    /// milliseconds that are its own, not the link's.
    fn sshd_config(&self) -> String {
        let p = |rel: &str| self.path(rel);
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nPidFile none\nUsePAM no\n\
             StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             PubkeyAuthentication yes\nPermitRootLogin prohibit-password\n\
             AuthorizedKeysFile {keys}/%u\nAllowUsers root {user}\nLogLevel VERBOSE\n\
             Match User root\n  SetEnv PATH={path} XDG_RUNTIME_DIR={run} SHLVL=1\n\
             Match User {user}\n  SetEnv PATH={path}\n",
            port = self.port,
            hk = p("host_key").display(),
            keys = p("keys").display(),
            user = self.user,
            path = self.session_path,
            run = p("laptop/run").display(),
        )
    }

    /// Starts the server (again, on the same port), and waits until it accepts.
    pub fn start_sshd(&mut self) {
        let config = self.path("sshd_config");
        std::fs::write(&config, self.sshd_config()).unwrap();
        // The privilege-separation directory sshd insists on.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path("sshd.log"))
            .unwrap();
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start sshd");
        let mut child = KillOnDrop(child);
        wait_until(Duration::from_secs(10), "sshd to listen", || {
            if let Ok(Some(status)) = child.0.try_wait() {
                panic!("sshd exited ({status}):\n{}", self.sshd_log());
            }
            std::net::TcpStream::connect(("127.0.0.1", self.port))
                .ok()
                .map(|_| ())
        });
        self.sshd = Some(child);
    }

    /// Stops the server and every session it serves, as a reboot of the dev box would.
    pub fn stop_sshd(&mut self) {
        if let Some(mut sshd) = self.sshd.take() {
            let pid = sshd.0.id();
            let family = descendants(pid);
            kill(pid);
            for p in family {
                kill(p);
            }
            let _ = sshd.0.wait();
        }
    }

    /// Serves sessions a PATH without browserctl (sshd restarted).
    pub fn without_remote_browserctl(&mut self) {
        self.session_path = "/usr/bin:/bin".into();
        self.stop_sshd();
        self.start_sshd();
    }

    /// Serves sessions a PATH whose browserctl is this shell script (sshd restarted).
    pub fn with_remote_browserctl(&mut self, script: &str) {
        let dir = self.path("other-bin");
        std::fs::create_dir_all(&dir).unwrap();
        set_mode(&dir, 0o755);
        std::fs::write(dir.join("browserctl"), script).unwrap();
        set_mode(&dir.join("browserctl"), 0o755);
        self.session_path = format!("{}:/usr/bin:/bin", dir.display());
        self.stop_sshd();
        self.start_sshd();
    }

    pub fn sshd_log(&self) -> String {
        std::fs::read_to_string(self.path("sshd.log")).unwrap_or_default()
    }

    /// The laptop's daemon (the test's own user), on the socket its ssh sessions find.
    pub fn laptop_daemon(&self) -> TestDaemon {
        TestDaemon::builder()
            .socket(self.path("laptop/run/browser-mcp/browser-mcpd.sock"))
            .start()
    }

    /// The environment of the laptop's browserctl: its runtime dir, and ssh with its config.
    pub fn laptop_env(&self, config: &str) -> Vec<(String, String)> {
        vec![
            (
                "XDG_RUNTIME_DIR".into(),
                self.path("laptop/run").display().to_string(),
            ),
            (
                "BROWSER_MCP_SSH_COMMAND".into(),
                format!("ssh -F {}", self.path("laptop").join(config).display()),
            ),
        ]
    }

    /// browserctl on the laptop (the test's user).
    pub fn laptop_ctl(&self) -> Command {
        let mut c = Command::new(CTL);
        c.envs(self.laptop_env("ssh_config"))
            .env_remove("BROWSER_MCP_SOCKET")
            .env_remove("BROWSER_MCP_HOST")
            .stdin(Stdio::null());
        c
    }

    /// The dev box user's environment, as an ssh session there would have it (no runtime
    /// directory: no PAM), plus ssh with the dev box's config.
    pub fn devbox_env(&self, config: &str) -> Vec<(String, String)> {
        vec![
            ("HOME".into(), self.home.display().to_string()),
            ("USER".into(), self.user.clone()),
            ("PATH".into(), self.session_path.clone()),
            (
                "BROWSER_MCP_SSH_COMMAND".into(),
                format!("ssh -F {}", self.path("devbox").join(config).display()),
            ),
        ]
    }

    /// A program run as the dev box user: `setpriv`, a clean environment ([`Self::devbox_env`]).
    pub fn as_devbox(&self, program: &str) -> Command {
        let mut c = Command::new("/usr/bin/setpriv");
        c.arg(format!("--reuid={}", self.uid))
            .arg(format!("--regid={}", self.gid))
            .arg("--clear-groups")
            .arg(program)
            .env_clear()
            .envs(self.devbox_env("ssh_config"))
            .current_dir(&self.home)
            .stdin(Stdio::null());
        c
    }

    /// The dev box's `browserctl ARGS…` as its user, as an argv for a program that starts it
    /// itself (the Python SDK's stdio client): setpriv, then `env -i` with
    /// [`Self::devbox_env`].
    pub fn devbox_ctl_argv(&self, args: &[&str]) -> Vec<String> {
        let mut argv = vec![
            "/usr/bin/setpriv".to_owned(),
            format!("--reuid={}", self.uid),
            format!("--regid={}", self.gid),
            "--clear-groups".to_owned(),
            "/usr/bin/env".to_owned(),
            "-i".to_owned(),
        ];
        argv.extend(
            self.devbox_env("ssh_config")
                .iter()
                .map(|(k, v)| format!("{k}={v}")),
        );
        argv.push(self.path("bin/browserctl").display().to_string());
        argv.extend(args.iter().map(|a| a.to_string()));
        argv
    }

    /// browserctl on the dev box, as its user.
    pub fn devbox_ctl(&self) -> Command {
        self.as_devbox(&self.path("bin/browserctl").display().to_string())
    }

    /// The well-known socket `browserctl forward` makes on the dev box.
    pub fn forwarded_socket(&self) -> PathBuf {
        self.home.join(".local/state/browser-mcp/forwarded.sock")
    }

    /// Ends the shared ssh connections a side's browserctl left behind (ControlPersist).
    fn end_masters(&self, dir: &Path, as_devbox: bool) {
        let Ok(entries) = std::fs::read_dir(dir.join("browser-mcp")) else {
            return;
        };
        for e in entries.flatten() {
            if !e.file_name().to_string_lossy().starts_with("ssh-") {
                continue;
            }
            let mut c = if as_devbox {
                self.as_devbox("/usr/bin/ssh")
            } else {
                Command::new("/usr/bin/ssh")
            };
            let _ = c
                .arg("-o")
                .arg(format!("ControlPath={}", e.path().display()))
                .args(["-O", "exit", "bmcp-test-host"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

impl Drop for Machines {
    fn drop(&mut self) {
        self.end_masters(&self.path("laptop/run"), false);
        self.end_masters(&self.path("devbox/run"), true);
        self.end_masters(&self.home.join(".local/state"), true);
        self.stop_sshd();
        // Whatever still runs as the test's user was started by this test.
        for _ in 0..50 {
            let left = processes_of(self.uid);
            if left.is_empty() {
                break;
            }
            left.into_iter().for_each(kill);
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = Command::new("/usr/sbin/userdel")
            .args(["-r", &self.user])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A line of output, and the lines before it, from a child's pipe, up to a deadline.
pub fn read_until(
    reader: &mut impl std::io::BufRead,
    what: &str,
    pred: impl Fn(&str) -> bool,
) -> String {
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => panic!("the output ended before {what}:\n{seen}"),
            Ok(_) => {}
        }
        seen.push_str(&line);
        if pred(&line) {
            return seen;
        }
    }
}

/// Kills a child unless dropped first, so a test reading its pipe fails (the output ends)
/// rather than hangs when what it waits for never comes.
pub struct Watchdog(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Watchdog {
    pub fn new(pid: u32, limit: Duration) -> Watchdog {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = done.clone();
        std::thread::spawn(move || {
            let start = std::time::Instant::now();
            while start.elapsed() < limit {
                if seen.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            if !seen.load(std::sync::atomic::Ordering::SeqCst) {
                kill(pid);
            }
        });
        Watchdog(done)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}
