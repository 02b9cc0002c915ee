//! One module per view of the console.

pub mod auto;
pub mod coverage;
pub mod evidence;
pub mod live;
pub mod overview;
pub mod reports;
pub mod run;
pub mod runs;
pub mod timing;
