//! One module per command.

pub mod check;
pub mod devices;
pub mod docs;
pub mod extract;
pub mod gpu_arg;
pub mod gpus;
pub mod list;
pub mod plan;
mod plan_verify_text;
pub mod scan;
pub mod show;
pub mod slim;
pub mod verify;
