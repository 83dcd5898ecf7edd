//! The shape of the tree: one-way imports, file sizes, the extension's worlds.

pub mod architecture;
pub mod layout;
