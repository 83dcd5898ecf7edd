//! The processes of a launched browser: started in a process group of their own by one
//! long-lived thread (so the kernel kills the browser if the daemon dies: the parent-death
//! signal follows the thread that forked), and stopped as a group.

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::oneshot;

type Job = (Command, oneshot::Sender<io::Result<Child>>);

/// Starts browsers from a thread that lives as long as the daemon.
pub struct Spawner {
    // A std Mutex around the sender: held only to send.
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
}

impl Default for Spawner {
    fn default() -> Spawner {
        Spawner {
            jobs: Mutex::new(None),
        }
    }
}

impl Spawner {
    /// Starts `cmd` in a process group of its own (the group's id is the child's pid), with
    /// SIGKILL as its parent-death signal.
    pub async fn spawn(&self, mut cmd: Command) -> io::Result<Child> {
        let parent = std::process::id();
        cmd.process_group(0);
        // SAFETY: only async-signal-safe calls (prctl, getppid) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
                // The daemon died between fork and prctl: nobody would stop this one.
                if nix::unistd::getppid().as_raw() as u32 != parent {
                    return Err(io::Error::other("the daemon is gone"));
                }
                Ok(())
            });
        }
        let (tx, rx) = oneshot::channel();
        self.sender()?
            .send((cmd, tx))
            .map_err(|_| io::Error::other("the launcher thread is gone"))?;
        rx.await
            .map_err(|_| io::Error::other("the launcher thread is gone"))?
    }

    fn sender(&self) -> io::Result<mpsc::Sender<Job>> {
        let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = jobs.as_ref() {
            return Ok(tx.clone());
        }
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("browser-launcher".into())
            .spawn(move || {
                // Never returns while the daemon runs: its browsers' parent-death signal
                // would fire when this thread ends.
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })?;
        *jobs = Some(tx.clone());
        Ok(tx)
    }
}

/// Sends `sig` to the process group `pgid`; false when it has no process left.
pub fn signal_group(pgid: u32, sig: Signal) -> bool {
    let Ok(raw) = i32::try_from(pgid) else {
        return false;
    };
    raw > 1 && killpg(Pid::from_raw(raw), sig).is_ok()
}

/// Whether any process is left in the group (zombies count until reaped).
pub fn group_alive(pgid: u32) -> bool {
    let Ok(raw) = i32::try_from(pgid) else {
        return false;
    };
    raw > 1
        && !matches!(
            nix::sys::signal::kill(Pid::from_raw(-raw), None),
            Err(nix::errno::Errno::ESRCH)
        )
}

/// Waits up to `limit` for the group to be empty; true when it is.
pub async fn group_gone(pgid: u32, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if !group_alive(pgid) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A running process's start time (clock ticks since boot, `/proc/PID/stat` field 22): with
/// the pid, it names one process even after the pid is reused. None for a zombie, which has
/// ended and waits only for its parent to notice.
pub fn start_time(pid: u32) -> Option<u64> {
    stat(pid).map(|(_, start)| start)
}

/// (process group, start time) of a process that has not ended, from `/proc/PID/stat`.
fn stat(pid: u32) -> Option<(u32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold anything: count fields after the last `)`.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): pgrp is field 5, starttime field 22.
    if matches!(fields.first(), Some(&("Z" | "X"))) {
        return None;
    }
    Some((fields.get(2)?.parse().ok()?, fields.get(19)?.parse().ok()?))
}

/// The processes of group `pgid` that started at or after `since` (so a reused group id of
/// someone else's is left alone).
pub fn members(pgid: u32, since: u64) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| stat(*pid).is_some_and(|(g, start)| g == pgid && start >= since))
        .collect()
}

/// How a process ended, in words: `code 0`, `signal 9`.
pub fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("code {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => status.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_reads_this_process() {
        let me = std::process::id();
        let (group, start) = stat(me).unwrap();
        assert_eq!(group, nix::unistd::getpgrp().as_raw() as u32);
        assert!(start > 0);
        assert!(members(group, 0).contains(&me));
        assert!(!members(group, start + 1).contains(&me));
    }
}
