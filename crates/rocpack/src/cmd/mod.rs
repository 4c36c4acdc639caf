//! One module per command.

pub mod extract;
pub mod list;
pub mod show;
