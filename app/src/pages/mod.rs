//! One module per view of the console.

pub mod runs;
