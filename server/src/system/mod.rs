//! The operating system, kept in one place each: the wall clock, the
//! signals that end a process gracefully, an outside command run within a
//! bound, and background loops.

pub mod clock;
pub mod command;
pub mod periodic;
pub mod signals;
