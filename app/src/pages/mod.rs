//! One module per view of the console.

pub mod auto;
pub mod catalogue;
pub mod cohorts;
pub mod coverage;
pub mod evidence;
pub mod live;
pub mod next;
pub mod overview;
pub mod publish;
pub mod reports;
pub mod research;
pub mod run;
pub mod runs;
pub mod samples;
pub mod timing;
pub mod upkeep;
