//! Service life: sd_notify, socket activation, shutdown, start failures, packages, the unit
//! under a real systemd user manager.

pub mod lifecycle;
pub mod packaging;
pub mod start_failures;
pub mod user_manager;
