//! browserctl uses the library's typed client; this path stays for code written against it.
pub use crate::client::*;
