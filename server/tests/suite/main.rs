//! The fast loop's integration tests, one binary: one link and one start for
//! all of them (they were eleven binaries, each linking the whole server).
//! Each module is one part of the product tried as a user would — real
//! processes, real sockets on loopback — and says what it covers at its top.
//! The suites behind features (`backends`, `gateway`, `inspect`) stay
//! binaries of their own: they need daemons or a harness, and run alone.

#[path = "../common/mod.rs"]
mod common;

mod access;
mod autopilot;
mod cli;
mod console;
mod drive;
mod http;
mod logs;
mod notify;
mod runview;
mod spend;
mod telemetry;
mod upkeep;
