//! What is watched while a batch runs: each cell's calls counted from what
//! it writes, the spend guard that pauses a batch at its cap and names a
//! silent cell, and the notifications of every batch event.

pub mod guard;
pub mod notify;
pub mod tally;
