//! A control connection the runtime wakes for input, not for room to write.
//!
//! Tokio registers a Unix stream for readable and writable edges alike. On Linux, each read
//! the client makes of our data signals "room to write" on our socket, so a client that
//! reads every answer (`browserctl mcp` with calls in flight, a script's keep-alive
//! connection) woke the daemon once more per answer for nothing, and paid for waking it.
//! [`ControlConn`] is registered for readable edges alone, and for writable edges only while
//! a write would block.

use std::io::{self, IoSlice, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};

pub struct ControlConn {
    io: AsyncFd<UnixStream>,
    /// A second handle on the socket, registered for writable edges while a write would
    /// block (a client that does not read); dropped once a write goes through.
    blocked: Option<AsyncFd<OwnedFd>>,
}

impl ControlConn {
    pub fn new(stream: tokio::net::UnixStream) -> io::Result<ControlConn> {
        // `into_std` leaves the runtime's registration and keeps the socket non-blocking.
        let stream = stream.into_std()?;
        Ok(ControlConn {
            io: register(stream, Interest::READABLE)?,
            blocked: None,
        })
    }

    /// Runs `op`, a non-blocking write; when it would block, waits for room and runs it again.
    fn poll_write_with(
        &mut self,
        cx: &mut Context<'_>,
        mut op: impl FnMut(&UnixStream) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        loop {
            if let Some(blocked) = &self.blocked {
                let tried = {
                    let mut guard = ready!(blocked.poll_write_ready(cx))?;
                    guard.try_io(|_| op(self.io.get_ref()))
                };
                if let Ok(written) = tried {
                    self.blocked = None;
                    return Poll::Ready(written);
                }
                continue;
            }
            match op(self.io.get_ref()) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Registered after the write failed: epoll reports a socket that drained
                    // meanwhile as ready at once, so no edge is lost.
                    let fd = self.io.get_ref().as_fd().try_clone_to_owned()?;
                    self.blocked = Some(register(fd, Interest::WRITABLE)?);
                }
                done => return Poll::Ready(done),
            }
        }
    }
}

fn register<T: AsRawFd>(io: T, interest: Interest) -> io::Result<AsyncFd<T>> {
    // Safety: `T` owns its descriptor (a `UnixStream` or an `OwnedFd`), which stays open
    // and the same until the `AsyncFd` is dropped: nothing here replaces or closes it.
    Ok(unsafe { AsyncFd::register_with_interest(io, interest) }?)
}

impl AsyncRead for ControlConn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            let mut guard = ready!(this.io.poll_read_ready(cx))?;
            // Read into the buffer's uninitialized part, as tokio's own streams do: hyper
            // hands over kilobytes of spare capacity, and zeroing them per read costs more
            // than the read of a small request.
            // Safety: nothing uninitialized is read from `unfilled`; read(2) writes at most
            // `wanted` bytes to it, and only the `n` it reports are marked initialized.
            let unfilled = unsafe { buf.unfilled_mut() };
            let wanted = unfilled.len();
            let read = |io: &AsyncFd<UnixStream>| {
                let n = unsafe {
                    nix::libc::read(io.as_raw_fd(), unfilled.as_mut_ptr().cast(), wanted)
                };
                usize::try_from(n).map_err(|_| io::Error::last_os_error())
            };
            match guard.try_io(read) {
                Ok(Ok(n)) => {
                    // A short read emptied the socket, and another would only say so (the
                    // next edge sets readiness again).
                    if n > 0 && n < wanted {
                        guard.clear_ready();
                    }
                    unsafe { buf.assume_init(n) };
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for ControlConn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_with(cx, |mut s| s.write(buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .poll_write_with(cx, |mut s| s.write_vectored(bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.io.get_ref().shutdown(std::net::Shutdown::Write))
    }
}

impl AsRawFd for ControlConn {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.io.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A client that does not read makes writes block; once it reads, every byte arrives in
    /// order, and the connection still reads what the client sends.
    #[tokio::test]
    async fn writes_wait_for_a_client_that_reads_late_and_reads_still_work() {
        let (ours, mut theirs) = tokio::net::UnixStream::pair().unwrap();
        let mut conn = ControlConn::new(ours).unwrap();
        let data: Vec<u8> = (0..8 << 20).map(|i: u32| (i % 251) as u8).collect();
        let expected = data.clone();
        let writer = tokio::spawn(async move {
            conn.write_all(&data).await.unwrap();
            assert!(
                conn.blocked.is_none(),
                "the writable registration is dropped"
            );
            conn
        });
        // Far more than a socket buffer: the writer is blocked now.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(!writer.is_finished());
        let mut got = vec![0; expected.len()];
        theirs.read_exact(&mut got).await.unwrap();
        assert!(got == expected, "bytes arrive whole and in order");
        let mut conn = writer.await.unwrap();

        theirs.write_all(b"ping").await.unwrap();
        let mut buf = [0; 4];
        conn.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        conn.shutdown().await.unwrap();
        drop(theirs);
        assert_eq!(conn.read(&mut buf).await.unwrap(), 0, "the end is seen");
    }
}
