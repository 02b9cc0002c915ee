//! The push streams (server-sent events) beside the operation table: one
//! spelling of each path, for the router that serves it and the page that
//! follows it. A version stream sends `version` events (a cheap token that
//! changes whenever what it versions may have) and `gone` when what it
//! follows was removed; the log stream sends a batch log's chunks.

/// The run list's version.
pub const RUNS_VERSION: &str = "/api/runs/version/stream";
/// One run's version, `{name}` its path relative to the root (see [`run_version`]).
pub const RUN_VERSION: &str = "/api/runs/{name}/version/stream";
/// The live state's version.
pub const LIVE_VERSION: &str = "/api/live/version/stream";
/// The autopilot's version (its state, its log, the live batch).
pub const AUTO_VERSION: &str = "/api/auto/version/stream";
/// A batch log's chunks as written (see [`log`]).
pub const LOG: &str = "/api/logs/{run_set}/{name}/stream";

/// [`RUN_VERSION`] for a run, its name already encoded for a path.
pub fn run_version(encoded_name: &str) -> String {
    RUN_VERSION.replace("{name}", encoded_name)
}

/// [`LOG`] for a log, its parts already encoded for a path.
pub fn log(encoded_run_set: &str, encoded_name: &str) -> String {
    LOG.replace("{run_set}", encoded_run_set).replace("{name}", encoded_name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn paths_are_filled_in() {
        assert_eq!(super::run_version("a%2Fb"), "/api/runs/a%2Fb/version/stream");
        assert_eq!(super::log("rs-1", "driver.log"), "/api/logs/rs-1/driver.log/stream");
    }
}
