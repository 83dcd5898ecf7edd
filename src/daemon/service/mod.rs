//! The daemon's life: start-up in order, readiness, reload on SIGHUP, and a shutdown in two
//! stages on SIGTERM/SIGINT (drain within the grace period, then close everything). Beside it:
//! - [`logging`]: the journal or stderr, its level reloadable;
//! - [`sd`]: the service manager (sd_notify, the watchdog, socket activation);
//! - [`discovery`]: the discovery file that tells extensions where we are, and its watcher.
//!
//! At the top of `daemon/mod.rs`'s order: it may import every other part of the daemon, and
//! none imports it.

mod discovery;
mod logging;
mod sd;

use crate::daemon::context::{self, Daemon, Runtime};
use crate::daemon::settings::{self, Loaded};
use crate::daemon::trust::peer;
use crate::daemon::trust::via::Via;
use crate::daemon::{control, limits, listener, managed};
pub use sd::Activation;
use sd_notify::NotifyState;
use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, UnixListener};
use tokio::signal::unix::{signal, Signal, SignalKind};

/// Exit status for a configuration error (sysexits' EX_CONFIG); the unit file tells systemd
/// not to restart on it.
pub const EXIT_CONFIG: u8 = 78;

/// Why the daemon could not start; printed as `browser-mcpd: <message>`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartError(pub String);

fn start_error(context: &str, e: impl std::fmt::Display) -> StartError {
    StartError(format!("{context}: {e}"))
}

/// Everything `run` needs, gathered by the binary before the runtime started.
pub struct Start {
    /// The command line, kept to re-read the settings on SIGHUP.
    pub argv: Vec<OsString>,
    pub loaded: Loaded,
    pub activation: Activation,
}

/// How the daemon ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Drained and closed everything.
    Clean,
    /// A second signal cut the shutdown short; the value is the signal number.
    Forced(i32),
}

/// Writes down where the user's daemon listens ([`crate::paths::socket_pointer_file`]) for
/// clients started without its environment. Kept at exit: a socket systemd holds outlives the
/// daemon, and a client checks that a socket is there (and whose) before it uses it.
fn point_to(socket: &std::path::Path) {
    let pointer = crate::paths::socket_pointer_file();
    let text = format!("{}\n", socket.display());
    if std::fs::read(&pointer).is_ok_and(|t| t == text.as_bytes()) {
        return;
    }
    if let Err(e) = crate::trust::write_private(&pointer, text.as_bytes(), true) {
        tracing::warn!(file = %pointer.display(), error = %e, "cannot write down where the socket is; MCP clients that start browserctl mcp without XDG_RUNTIME_DIR may not find this daemon");
    }
}

/// The user's token from its file (made there at the first start); a token of this run alone
/// when the file cannot be kept (no home, a read-only state directory).
fn user_token(path: &std::path::Path) -> String {
    match crate::token::load_or_create(path) {
        Ok((token, None)) => token,
        Ok((token, Some(why))) => {
            tracing::warn!(file = %path.display(), "{why}: made a new token; MCP clients' saved HTTP configurations need the new one (browserctl mcp --print-config)");
            token
        }
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "cannot keep the token in its file; this run's token changes at the next start");
            crate::token::random()
        }
    }
}

/// SIGTERM, SIGINT and SIGHUP, installed before anything else so none of them can kill us
/// with its default action once we are up.
struct Signals {
    term: Signal,
    int: Signal,
    hup: Signal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sig {
    Term,
    Int,
    Hup,
}

impl Signals {
    fn install() -> std::io::Result<Signals> {
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    async fn next(&mut self) -> Sig {
        tokio::select! {
            _ = self.term.recv() => Sig::Term,
            _ = self.int.recv() => Sig::Int,
            _ = self.hup.recv() => Sig::Hup,
        }
    }

    /// The next SIGTERM or SIGINT (a SIGHUP while stopping is ignored).
    async fn next_stop(&mut self) -> i32 {
        loop {
            match self.next().await {
                Sig::Term => return nix::libc::SIGTERM,
                Sig::Int => return nix::libc::SIGINT,
                Sig::Hup => tracing::info!("ignoring SIGHUP while shutting down"),
            }
        }
    }
}

/// The control socket: inherited from the service manager, or bound here. Only a socket we
/// bound is ours to remove at exit; an inherited one stays for the next activation.
fn control_listener(
    inherited: Option<std::os::unix::net::UnixListener>,
    configured: PathBuf,
) -> Result<(UnixListener, PathBuf, Option<control::SocketFile>), StartError> {
    let Some(l) = inherited else {
        let (l, file) = control::bind(&configured).map_err(|e| start_error("control socket", e))?;
        return Ok((l, configured, Some(file)));
    };
    let path = l
        .local_addr()
        .ok()
        .and_then(|a| a.as_pathname().map(|p| p.to_path_buf()))
        .ok_or_else(|| StartError("the inherited control socket has no path".into()))?;
    l.set_nonblocking(true)
        .map_err(|e| start_error("inherited control socket", e))?;
    let l = UnixListener::from_std(l).map_err(|e| start_error("inherited control socket", e))?;
    tracing::info!(path = %path.display(), "using the control socket handed over by the service manager");
    Ok((l, path, None))
}

async fn extension_listener(
    inherited: Option<std::net::TcpListener>,
    addr: SocketAddr,
) -> Result<TcpListener, StartError> {
    match inherited {
        Some(l) => {
            l.set_nonblocking(true)
                .map_err(|e| start_error("inherited extension port", e))?;
            let l =
                TcpListener::from_std(l).map_err(|e| start_error("inherited extension port", e))?;
            if let Ok(a) = l.local_addr() {
                tracing::info!(addr = %a, "using the extension port handed over by the service manager");
            }
            Ok(l)
        }
        None => match TcpListener::bind(addr).await {
            Ok(l) => Ok(l),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                match squatter(addr).await {
                    // Another user holds the default port: nobody may keep us from starting
                    // by taking it first. Another port the extension scans will do.
                    Some(uid) if addr.port() == crate::paths::DEFAULT_PORT => {
                        scanned_port_instead(addr, uid).await
                    }
                    _ => Err(port_in_use(addr)),
                }
            }
            Err(e) => Err(start_error(&format!("extension port {addr}"), e)),
        },
    }
}

fn port_in_use(addr: SocketAddr) -> StartError {
    StartError(format!(
        "extension port {addr} is already in use: another browser-mcpd may be running \
         (`browserctl status`, or `ss -ltnp 'sport = :{port}'` shows who has it); stop it, or \
         start this one on another port with --port PORT (--port 0 picks a free one; \
         extensions find it through the native host)",
        port = addr.port()
    ))
}

/// The uid of another user whose program listens at `addr`, if that is who has it (the
/// kernel says whose socket answers a connection; `None` for ours, or when it cannot say).
async fn squatter(addr: SocketAddr) -> Option<u32> {
    let probe = tokio::net::TcpStream::connect(addr).await.ok()?;
    let uid = peer::peer_uid(probe.local_addr().ok()?, addr).ok()?;
    (uid != nix::unistd::geteuid().as_raw()).then_some(uid)
}

/// The first free port after the default one within the extension's scan range.
async fn scanned_port_instead(taken: SocketAddr, uid: u32) -> Result<TcpListener, StartError> {
    for port in taken.port() + 1..=crate::paths::SCAN_LAST {
        if let Ok(l) = TcpListener::bind(SocketAddr::new(taken.ip(), port)).await {
            tracing::warn!(
                "port {} is held by another user (uid {uid}); listening on {port} instead, which \
                 extensions scan too (the native host names it as well)",
                taken.port()
            );
            return Ok(l);
        }
    }
    Err(StartError(format!(
        "extension port {taken} is held by another user (uid {uid}), and so is every port up \
         to {}: start with --port PORT (--port 0 picks a free one; extensions find it through \
         the native host)",
        crate::paths::SCAN_LAST
    )))
}

/// What a start has put on disk so far; a start that fails takes it away again, so no dead
/// socket or empty directory is left for doctor (or the next start) to stumble on.
struct Leftovers {
    socket: Option<control::SocketFile>,
    relay: Option<control::SocketFile>,
    dirs: Vec<PathBuf>,
    armed: bool,
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        for s in self.socket.iter().chain(&self.relay) {
            s.remove();
        }
        // Only directories this start made, and only if still empty.
        for d in self.dirs.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// The directories `path` would need created, outermost first.
fn missing_dirs(path: &std::path::Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = path
        .ancestors()
        .take_while(|p| !p.as_os_str().is_empty() && std::fs::symlink_metadata(p).is_err())
        .map(std::path::Path::to_path_buf)
        .collect();
    out.reverse();
    out
}

/// Runs the daemon until SIGTERM or SIGINT.
pub async fn run(start: Start) -> Result<Exit, StartError> {
    let mut leftovers = Leftovers {
        socket: None,
        relay: None,
        dirs: Vec::new(),
        armed: true,
    };
    let result = run_started(start, &mut leftovers).await;
    // A daemon that ran has cleaned up after itself already; only a failed start is undone.
    leftovers.armed = result.is_err();
    result
}

async fn run_started(start: Start, leftovers: &mut Leftovers) -> Result<Exit, StartError> {
    let Start {
        argv,
        loaded,
        activation,
    } = start;
    let config = loaded.config.clone();
    let logging = logging::init(&config);
    let mut signals = Signals::install().map_err(|e| start_error("signal handlers", e))?;
    if let (Some(path), true) = (&loaded.file.path, loaded.file.present) {
        tracing::info!(path = %path.display(), "read the config file");
    }
    limits::raise_open_files(&config);
    if !config.bind.is_loopback() {
        return Err(StartError(format!(
            "refusing to bind {}: browser-mcpd only listens on loopback addresses (127.0.0.1, ::1)",
            config.bind
        )));
    }
    let fallback = crate::paths::private_discovery_dir();
    leftovers.dirs.extend(missing_dirs(&config.discovery_dir));
    leftovers.dirs.extend(missing_dirs(&fallback));
    let default_dir =
        config.discovery_dir == std::path::Path::new(crate::paths::DEFAULT_DISCOVERY_DIR);
    let chosen =
        discovery::choose_dir(&config.discovery_dir, &fallback, default_dir).map_err(|u| {
            StartError(format!(
                "discovery directory: {u}; fix: {} (or pass --discovery-dir)",
                u.fix()
            ))
        })?;
    if let Some(why) = &chosen.instead_of {
        tracing::warn!(
            dir = %chosen.dir.display(),
            "not using the discovery directory {}: {why}; using this one (native hosts look \
             here too)",
            config.discovery_dir.display()
        );
    }
    let socket_configured = config.socket_path();
    if activation.control.is_none() {
        if let Some(dir) = socket_configured.parent() {
            leftovers.dirs.extend(missing_dirs(dir));
        }
    }
    let (control_listener, socket_path, socket_file) =
        control_listener(activation.control, socket_configured)?;
    // Removed by a start that fails, or by the daemon as it stops.
    leftovers.socket = socket_file;
    // Beside it, the socket of connections from other machines (issue 58, item 1): made by
    // the daemon even when the service manager hands it the control socket.
    let relay_path = crate::paths::relay_socket_path(&socket_path);
    let (relay_listener, relay_file) =
        control::bind(&relay_path).map_err(|e| start_error("relay socket", e))?;
    leftovers.relay = Some(relay_file);
    if config.socket.is_none() {
        point_to(&socket_path);
    }
    let tcp = extension_listener(
        activation.extension,
        SocketAddr::new(config.bind, config.port),
    )
    .await?;
    let port = tcp.local_addr().map_err(|e| start_error("port", e))?.port();
    let pid = std::process::id();
    let discovery_dir = discovery::own_name_or_fallback(&chosen.dir, &fallback, pid)
        .map_err(|u| StartError(format!("discovery directory: {u}; fix: {}", u.fix())))?;
    let runtime = Runtime {
        port,
        socket: socket_path.clone(),
        discovery_file: discovery_dir.join(format!("server-{pid}.json")),
        started_at: crate::time::now_rfc3339(),
        started: Instant::now(),
    };
    let token = user_token(&config.token_path());
    let daemon = Arc::new(Daemon::new(config, runtime, token));

    daemon
        .tasks
        .spawn(control::serve(control_listener, daemon.clone(), Via::Local));
    daemon
        .tasks
        .spawn(control::serve(relay_listener, daemon.clone(), Via::Relay));
    daemon.tasks.spawn(listener::serve(tcp, daemon.clone()));
    daemon
        .tasks
        .spawn(stand_down_when_idle(Arc::downgrade(&daemon)));

    // What a killed daemon left running (issue 32): its browsers and temporary profiles.
    let swept = managed::sweep(&managed::managed_dir(&daemon)).await;
    if swept > 0 {
        tracing::info!(
            launches = swept,
            "cleaned up after browsers an earlier run launched"
        );
    }

    let disco = discovery::Discovery::new(&daemon);
    discovery::sweep_stale(&discovery_dir, pid);
    disco
        .write()
        .map_err(|e| start_error("discovery file", e))?;
    let watcher = disco.clone().watch(
        &daemon.tasks,
        daemon.shutdown.clone(),
        daemon.token.subscribe(),
        daemon.token_on_disk.clone(),
    );

    tracing::info!(
        port,
        socket = %socket_path.display(),
        discovery = %daemon.runtime.discovery_file.display(),
        logs = %logging.destination,
        "browser-mcpd {} ready",
        env!("CARGO_PKG_VERSION")
    );
    sd::notify(&[
        NotifyState::Ready,
        NotifyState::Status(&sd::status_line(&daemon)),
    ]);
    sd::spawn_status(daemon.clone());
    sd::spawn_watchdog(daemon.clone());

    let mut current = loaded;
    let first = loop {
        match signals.next().await {
            Sig::Hup => reload(&daemon, &logging, &argv, &mut current),
            Sig::Term => break "SIGTERM",
            Sig::Int => break "SIGINT",
        }
    };

    let exit = shut_down(&daemon, &mut signals, first).await;
    let _ = tokio::time::timeout(Duration::from_secs(1), watcher).await;
    disco.remove();
    for file in [leftovers.socket.take(), leftovers.relay.take()]
        .into_iter()
        .flatten()
    {
        file.remove();
    }
    tracing::info!("stopped");
    Ok(exit)
}

/// Stage one: stop accepting and let calls in flight finish within the grace period. Stage
/// two: close every connection, failing what is left with SHUTTING_DOWN. A second signal at
/// any point skips the rest.
async fn shut_down(d: &Arc<Daemon>, signals: &mut Signals, first: &str) -> Exit {
    let grace = d.config().shutdown_grace;
    let in_flight = d.stats.calls_in_flight.load(Ordering::Relaxed);
    tracing::info!(
        signal = first,
        calls_in_flight = in_flight,
        grace_ms = grace.as_millis() as u64,
        "shutting down; a second signal stops at once"
    );
    let status = format!("stopping: waiting up to {grace:?} for {in_flight} calls in flight");
    sd::notify(&[NotifyState::Stopping, NotifyState::Status(&status)]);
    d.draining.cancel();

    let drained = tokio::select! {
        drained = calls_finished(d, grace) => drained,
        sig = signals.next_stop() => return forced(d, sig),
    };
    if !drained {
        let left = d.stats.calls_in_flight.load(Ordering::Relaxed);
        tracing::warn!(
            calls = left,
            "grace period over; failing the calls still in flight with SHUTTING_DOWN"
        );
    }
    // The browsers it launched go before the connections close (they would reconnect).
    tokio::select! {
        _ = managed::close_all(d) => {}
        sig = signals.next_stop() => return forced(d, sig),
    }
    d.shutdown.cancel();
    d.tasks.close();
    tokio::select! {
        done = tokio::time::timeout(Duration::from_secs(3), d.tasks.wait()) => {
            if done.is_err() {
                tracing::warn!("some connections did not close within 3 s");
            }
        }
        sig = signals.next_stop() => return forced(d, sig),
    }
    Exit::Clean
}

fn forced(d: &Daemon, sig: i32) -> Exit {
    tracing::warn!(signal = sig, "second signal: stopping at once");
    d.managed.kill_all_now();
    d.shutdown.cancel();
    Exit::Forced(sig)
}

/// Waits until no call is in flight; false when the grace period ran out first.
async fn calls_finished(d: &Daemon, grace: Duration) -> bool {
    let wait = async {
        loop {
            let idle = d.stats.idle.notified();
            tokio::pin!(idle);
            // Register before checking, so a call ending in between still wakes us.
            idle.as_mut().enable();
            if d.stats.calls_in_flight.load(Ordering::Relaxed) == 0 {
                return;
            }
            idle.await;
        }
    };
    tokio::time::timeout(grace, wait).await.is_ok()
}

/// SIGHUP: re-reads flags, environment and the config file and applies what can change while
/// running (log level, limits, origins, timeouts). Connections stay up.
fn reload(d: &Daemon, logging: &logging::Logging, argv: &[OsString], current: &mut Loaded) {
    let now = NotifyState::monotonic_usec_now();
    let mut states = vec![NotifyState::Reloading];
    if let Ok(now) = now {
        states.push(now);
    }
    sd::notify(&states);
    match settings::load(argv) {
        Ok(mut next) => {
            for key in next.restart_only_changes(current) {
                tracing::warn!(key, "changed, but only takes effect at the next start");
            }
            let old = d.config();
            next.config.keep_restart_only(&old);
            for key in settings::RESTART_ONLY {
                if let Some(v) = current.values.get(*key) {
                    next.values.insert((*key).to_owned(), v.clone());
                }
            }
            if let Err(e) = logging.set_level(&next.config.log_level) {
                tracing::warn!("keeping the old log level: {e}");
                next.config.log_level = old.log_level.clone();
            }
            let changed: Vec<&str> = next
                .values
                .iter()
                .filter(|(k, v)| current.values.get(*k).map(|c| &c.0) != Some(&v.0))
                .map(|(k, _)| k.as_str())
                .collect();
            d.set_config(Arc::new(next.config.clone()));
            tracing::info!(changed = ?changed, "configuration reloaded");
            *current = next;
        }
        Err(e) => tracing::error!("reload failed; keeping the configuration in force: {e}"),
    }
    sd::notify(&[NotifyState::Ready, NotifyState::Status(&sd::status_line(d))]);
}

/// Stands the browsers down after `--agent-idle` without an agent (`presence`), checking a few
/// times per period, until the daemon shuts down.
async fn stand_down_when_idle(d: std::sync::Weak<Daemon>) {
    while let Some((d, idle)) = context::quarter_of(&d, |c| c.agent_idle).await {
        if d.presence.watching() {
            d.presence.stand_down(&d.registry, idle).await;
        }
    }
}
