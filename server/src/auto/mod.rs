//! The autopilot's adapter: its loop (a tick: lock, plan, apply) and its
//! state file and event log.

pub mod auto_state;
pub mod autopilot;
