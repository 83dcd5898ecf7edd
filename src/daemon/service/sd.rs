//! The service manager's side of the daemon (systemd; harmless elsewhere): readiness and live
//! status over `NOTIFY_SOCKET`, the watchdog, and listeners handed over by socket activation.

use crate::daemon::context::Daemon;
use sd_notify::NotifyState;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Sends states to the service manager, if there is one (`NOTIFY_SOCKET` set).
pub fn notify(states: &[NotifyState]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!(error = %e, "could not notify the service manager");
    }
}

pub fn enabled() -> bool {
    std::env::var_os("NOTIFY_SOCKET").is_some()
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `STATUS=` text: what `systemctl --user status browser-mcpd` shows.
pub fn status_line(d: &Daemon) -> String {
    let s = d.registry.summary();
    let calls = d.stats.calls_in_flight.load(Ordering::Relaxed);
    format!(
        "{}, {}, {}, {} in flight",
        plural(s.browsers as u64, "browser", "browsers"),
        plural(s.tabs as u64, "tab", "tabs"),
        plural(s.tools as u64, "tool", "tools"),
        plural(calls, "call", "calls"),
    )
}

/// Keeps `STATUS=` current: at once on every registry event, and each second for the calls in
/// flight (which change without events). Sends only when the text changed.
pub fn spawn_status(d: Arc<Daemon>) {
    if !enabled() {
        return;
    }
    d.tasks.clone().spawn(async move {
        let mut events = d.registry.subscribe(None).live;
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let mut last = String::new();
        loop {
            tokio::select! {
                _ = d.draining.cancelled() => return,
                r = events.recv() => {
                    if matches!(r, Err(tokio::sync::broadcast::error::RecvError::Closed)) {
                        return;
                    }
                }
                _ = tick.tick() => {}
            }
            let line = status_line(&d);
            if line != last {
                notify(&[NotifyState::Status(&line)]);
                last = line;
            }
        }
    });
}

/// Pings the watchdog at half its period while the runtime is alive. The ping runs on the
/// runtime and takes the registry lock, so a stalled runtime or a stuck lock stops the pings
/// and lets the service manager restart us.
pub fn spawn_watchdog(d: Arc<Daemon>) {
    let Some(period) = sd_notify::watchdog_enabled() else {
        return;
    };
    let every = (period / 2).max(Duration::from_millis(10));
    tracing::info!(
        period_ms = period.as_millis() as u64,
        "watchdog enabled; pinging every {} ms",
        every.as_millis()
    );
    d.tasks.clone().spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = d.shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let _ = d.registry.summary();
            notify(&[NotifyState::Watchdog]);
        }
    });
}

/// Listeners handed over by the service manager (`LISTEN_FDS`/`LISTEN_PID`).
#[derive(Debug, Default)]
pub struct Activation {
    pub control: Option<std::os::unix::net::UnixListener>,
    pub extension: Option<std::net::TcpListener>,
}

impl Activation {
    /// Takes the inherited sockets and unsets the variables so no child inherits them: a Unix
    /// stream socket is the control socket, a TCP one the extension port (loopback only).
    ///
    /// # Safety
    /// Changes the environment: call it before any other thread exists.
    pub unsafe fn take() -> io::Result<Activation> {
        let fds: Vec<(RawFd, String)> =
            unsafe { sd_notify::listen_fds_with_names_and_unset_env() }?.collect();
        let mut a = Activation::default();
        for (fd, name) in fds {
            // Safety: the service manager handed this fd to us alone; nothing else owns it.
            let owned = unsafe { OwnedFd::from_raw_fd(fd) };
            a.adopt(owned, &name)?;
        }
        Ok(a)
    }

    fn adopt(&mut self, fd: OwnedFd, name: &str) -> io::Result<()> {
        use nix::sys::socket::{getsockname, getsockopt, sockopt, AddressFamily, SockType};
        use nix::sys::socket::{SockaddrLike, SockaddrStorage};
        use std::os::fd::AsRawFd;
        let bad = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
        let stream =
            getsockopt(&fd, sockopt::SockType).map_err(io::Error::from)? == SockType::Stream;
        let listening = getsockopt(&fd, sockopt::AcceptConn).map_err(io::Error::from)?;
        if !stream || !listening {
            return Err(bad(format!(
                "inherited fd {} ({name}) is not a listening stream socket",
                fd.as_raw_fd()
            )));
        }
        let addr: SockaddrStorage = getsockname(fd.as_raw_fd()).map_err(io::Error::from)?;
        match addr.family() {
            Some(AddressFamily::Unix) if self.control.is_none() => {
                self.control = Some(std::os::unix::net::UnixListener::from(fd));
            }
            Some(AddressFamily::Inet | AddressFamily::Inet6) if self.extension.is_none() => {
                let l = std::net::TcpListener::from(fd);
                let local = l.local_addr()?;
                if !local.ip().is_loopback() {
                    return Err(bad(format!(
                        "inherited socket {local} is not on a loopback address; browser-mcpd only listens on loopback"
                    )));
                }
                self.extension = Some(l);
            }
            other => {
                return Err(bad(format!(
                    "inherited fd {} ({name}) is unexpected (family {other:?}): pass one Unix socket for control and at most one loopback TCP socket",
                    fd.as_raw_fd()
                )))
            }
        }
        Ok(())
    }
}
