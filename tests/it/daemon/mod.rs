//! The daemon with scripted peers: every dialect's messages, call semantics, limits, faults and soaks.

pub mod bridge;
pub mod calls;
pub mod cancel;
pub mod closing;
pub mod control;
pub mod dialects;
pub mod discovery;
pub mod faults;
pub mod fuzz_smoke;
pub mod limits;
pub mod page_events;
pub mod soak;
pub mod targeting;
pub mod turns;
pub mod watch;
