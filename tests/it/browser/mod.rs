//! The real extension in headless Chromium and Firefox: end to end, hands, eyes, the extension's face, faults.

pub mod drives;
pub mod e2e;
pub mod eyes;
pub mod face;
pub mod faults;
pub mod firefox_install;
pub mod hands;
pub mod lanes;
pub mod managed;
pub mod soak;
pub mod watched;
