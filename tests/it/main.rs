//! Integration tests: a real browser-mcpd process, real sockets, a scripted extension and
//! browserctl as a subprocess. One test binary (faster to build and link than many).

mod architecture;
mod attacks;
mod bridge;
mod browser;
mod calls;
mod cancel;
mod client;
mod closing;
mod common;
mod control;
mod dialects;
mod discovery;
mod e2e;
mod extension_face;
mod faults;
mod fuzz_smoke;
mod harness;
mod hostile;
mod limits;
mod man;
mod mcp;
mod native_host;
mod peers;
mod python;
mod security;
mod service;
mod setup;
mod soak;
