//! Placing the round trips of rows 8-9 on one CPU (see [`OneCpu`]).

use crate::prelude::*;

/// Rows 8–9's targets are read with every process of a round trip on one CPU, the floors'
/// as ours. Left to the scheduler, three processes answering each other on two CPUs land
/// differently from run to run: the TCP floor's sometimes all on one CPU (~41 µs here),
/// otherwise across both (~85 µs: a wake-up on the other CPU costs ~20 µs on this VM),
/// while the daemon, on the same kind of path, was placed across in every run. On one CPU a
/// round trip is the work on its path, ours, the peers' and the kernel's, without that
/// lottery: repeatable, and stricter for us, as our extra work is no longer diluted by
/// wake-up latency. The same rows as the kernel places them are reported beside.
///
/// Pins this thread, the browsers thread and the daemon's threads to this thread's first
/// CPU; processes started from this thread meanwhile inherit it. Dropping it gives every
/// thread it pinned its CPUs back.
pub(crate) struct OneCpu {
    pub(crate) restore: Vec<(nix::libc::pid_t, nix::libc::cpu_set_t)>,
}

impl OneCpu {
    pub(crate) async fn pin(daemon: u32) -> OneCpu {
        let me = nix::unistd::gettid().as_raw();
        let browsers = browsers()
            .spawn(async { nix::unistd::gettid().as_raw() })
            .await
            .unwrap();
        let mine = affinity(me).expect("this thread's CPUs");
        let cpu = (0..nix::libc::CPU_SETSIZE as usize)
            // Safety: `c` is below CPU_SETSIZE, the bits a cpu_set_t holds.
            .find(|&c| unsafe { nix::libc::CPU_ISSET(c, &mine) })
            .expect("a CPU to run on");
        let mut one: nix::libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // Safety: `cpu` was found in a cpu_set_t, so it is below CPU_SETSIZE.
        unsafe { nix::libc::CPU_SET(cpu, &mut one) };
        let mut tids = vec![me, browsers];
        tids.extend(
            std::fs::read_dir(format!("/proc/{daemon}/task"))
                .expect("the daemon's threads")
                .filter_map(|t| {
                    t.ok()?
                        .file_name()
                        .to_str()?
                        .parse::<nix::libc::pid_t>()
                        .ok()
                }),
        );
        let restore = tids
            .into_iter()
            .filter_map(|t| {
                let old = affinity(t).ok()?;
                set_affinity(t, &one)
                    .unwrap_or_else(|e| panic!("cannot pin thread {t} to CPU {cpu}: {e}"));
                Some((t, old))
            })
            .collect();
        OneCpu { restore }
    }
}

impl Drop for OneCpu {
    fn drop(&mut self) {
        for (tid, cpus) in &self.restore {
            // A thread that has ended since needs nothing back.
            let _ = set_affinity(*tid, cpus);
        }
    }
}

pub(crate) fn affinity(tid: nix::libc::pid_t) -> std::io::Result<nix::libc::cpu_set_t> {
    let mut set: nix::libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<nix::libc::cpu_set_t>();
    // Safety: `set` is a valid, writable cpu_set_t of `size` bytes.
    match unsafe { nix::libc::sched_getaffinity(tid, size, &mut set) } {
        0 => Ok(set),
        _ => Err(std::io::Error::last_os_error()),
    }
}

pub(crate) fn set_affinity(
    tid: nix::libc::pid_t,
    set: &nix::libc::cpu_set_t,
) -> std::io::Result<()> {
    let size = std::mem::size_of::<nix::libc::cpu_set_t>();
    // Safety: `set` is a valid cpu_set_t of `size` bytes, only read.
    match unsafe { nix::libc::sched_setaffinity(tid, size, set) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}
