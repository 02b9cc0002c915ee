//! The file names of a run directory. Only this module and the server's run
//! reader use them; everything else asks for a view.

/// Marks a run directory; written on the campaign's first start.
pub const SNAPSHOT: &str = "snapshot.json";
/// How many rounds are written, and the last stop. Replaced atomically.
pub const STATE: &str = "state.json";
/// One line per trial attempt; a round is appended before the state is rewritten.
pub const LEDGER: &str = "ledger.jsonl";
/// What the run is doing: phase, calls, process, opens/resumes/stops, plans.
pub const EVENTS: &str = "events.jsonl";
/// One file per LLM call, `calls/NNNN.json`.
pub const CALLS_DIR: &str = "calls";

/// The distiller's memory versions, `memory/round_NN.md`.
pub const MEMORY_DIR: &str = "memory";

/// Acceptance and hold-out reports, `acceptance/<segment>[_<digest>].json`.
pub const ACCEPTANCE_DIR: &str = "acceptance";

/// Each round's trial graph, `trial_graph/round_NN.json`.
pub const TRIAL_GRAPH_DIR: &str = "trial_graph";

/// The files whose size and modification time make up a run's version, in order
/// (a folder's time changes when a file is added to it or replaced in it).
pub const VERSIONED: [&str; 8] =
    [SNAPSHOT, STATE, LEDGER, EVENTS, CALLS_DIR, MEMORY_DIR, ACCEPTANCE_DIR, TRIAL_GRAPH_DIR];
