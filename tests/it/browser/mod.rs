//! The real extension in headless Chromium and Firefox: end to end, hands, eyes, the extension's face, faults.

pub mod drives;
pub mod e2e;
pub mod extension_face;
pub mod eyes;
pub mod faults;
pub mod firefox_face;
pub mod firefox_install;
pub mod hands;
pub mod soak;
