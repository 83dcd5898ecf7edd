//! Service life: sd_notify, socket activation, shutdown, start failures, packages.

pub mod packaging;
pub mod service;
pub mod start_failures;
