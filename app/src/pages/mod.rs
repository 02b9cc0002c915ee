//! One module per view of the console.

pub mod coverage;
pub mod live;
pub mod run;
pub mod runs;
