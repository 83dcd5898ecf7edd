//! Server-side WebSocket pings for dead-peer detection.
//!
//! A browser that vanishes without a FIN (sleep, a killed process behind a proxy, a cable
//! pulled) leaves a socket that looks open; its pending calls would wait out their timeouts.
//! Every interval the connection sends a ping frame; a peer that leaves two pings unanswered
//! is declared dead, so it is dropped after two to three intervals of silence.

use std::time::Duration;
use tokio::time::{Instant, Interval, MissedTickBehavior};

/// Unanswered pings after which the peer counts as gone.
pub const MISSED_PONGS: u32 = 2;

#[derive(Debug, PartialEq, Eq)]
pub enum Beat {
    /// Send a ping now.
    Ping,
    /// Two pings went unanswered: drop the connection.
    Dead,
}

pub struct Keepalive {
    ticker: Option<Interval>,
    unanswered: u32,
}

impl Keepalive {
    /// A zero interval turns pings off.
    pub fn new(interval: Duration) -> Keepalive {
        let ticker = (!interval.is_zero()).then(|| {
            let mut t = tokio::time::interval_at(Instant::now() + interval, interval);
            t.set_missed_tick_behavior(MissedTickBehavior::Delay);
            t
        });
        Keepalive {
            ticker,
            unanswered: 0,
        }
    }

    /// Resolves at the next beat (never, when pings are off). Cancel-safe: use it in `select!`.
    pub async fn tick(&mut self) -> Beat {
        match &mut self.ticker {
            Some(t) => {
                t.tick().await;
            }
            None => std::future::pending::<()>().await,
        }
        if self.unanswered >= MISSED_PONGS {
            return Beat::Dead;
        }
        self.unanswered += 1;
        Beat::Ping
    }

    /// A pong came back.
    pub fn pong(&mut self) {
        self.unanswered = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn two_unanswered_pings_mean_dead_and_a_pong_resets() {
        let mut k = Keepalive::new(Duration::from_millis(2));
        assert_eq!(k.tick().await, Beat::Ping);
        assert_eq!(k.tick().await, Beat::Ping);
        k.pong();
        assert_eq!(k.tick().await, Beat::Ping);
        assert_eq!(k.tick().await, Beat::Ping);
        assert_eq!(k.tick().await, Beat::Dead);
    }

    #[tokio::test]
    async fn zero_interval_never_beats() {
        let mut k = Keepalive::new(Duration::ZERO);
        let r = tokio::time::timeout(Duration::from_millis(20), k.tick()).await;
        assert!(r.is_err());
    }
}
