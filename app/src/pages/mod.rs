//! One module per view of the console.

pub mod run;
pub mod runs;
