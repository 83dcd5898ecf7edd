//! Integration tests: a real browser-mcpd process, real sockets, a scripted extension and
//! browserctl as a subprocess. One test binary (faster to build and link than many).

mod architecture;
mod attacks;
mod bridge;
mod browser;
mod calls;
mod cancel;
mod cli;
mod client;
mod closing;
mod common;
mod control;
mod dialects;
mod discovery;
mod e2e;
mod extension_face;
mod eyes;
mod faults;
mod fuzz_smoke;
mod hands;
mod harness;
mod hostile;
mod limits;
mod man;
mod mcp;
mod multi_user;
mod native_host;
mod packaging;
mod page_events;
mod peers;
mod security;
mod service;
mod setup;
mod soak;
mod start_failures;
mod targeting;
