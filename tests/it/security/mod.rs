//! Who may connect and what they get: web pages, other uids, impostors, hostile peers, trust both ways.

pub mod attacks;
pub mod dialog_answer;
pub mod far_files;
pub mod framed_consent;
pub mod hostile;
pub mod hostile_load;
pub mod hostile_pages;
pub mod listed_upload;
pub mod lookalike_names;
pub mod multi_user;
pub mod origins;
pub mod oversized;
pub mod own_browsers;
pub mod person;
pub mod planted_extension;
pub mod slots;
pub mod squatting;
pub mod startup_denial;
pub mod trust;
pub mod trust_browser;
pub mod upload_prompt;
pub mod upload_race;
