//! Service life: sd_notify, socket activation, shutdown, start failures, packages.

pub mod lifecycle;
pub mod packaging;
pub mod start_failures;
