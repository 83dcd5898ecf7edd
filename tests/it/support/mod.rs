//! Helpers the tests share: the daemon on temp paths, scripted peers, impostors, and the browser drivers (Chromium over CDP, Firefox over WebDriver BiDi).

pub mod bidi;
pub mod cdp;
pub mod chromium;
pub mod common;
pub mod driver;
pub mod firefox;
pub mod harness;
pub mod impostor;
pub mod lanes;
pub mod peers;
pub mod python;
pub mod site;
pub mod sshd;
