//! The signals that end a runboard process gracefully: SIGINT (ctrl-c) and SIGTERM.

/// Resolves when the process receives SIGINT or SIGTERM.
pub async fn terminated() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let sigterm = async {
        match term.as_mut() {
            Some(t) => {
                t.recv().await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = sigterm => {}
    }
}

/// PIDs of live (non-zombie) processes whose environment holds `var=value`: how
/// tests and benchmarks find every process a batch started, grandchildren
/// included, to prove none survived.
pub fn pids_with_env(var: &str, value: &str) -> Vec<u32> {
    let needle = format!("{var}={value}");
    let Ok(proc_dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    proc_dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat.rsplit(')').next().is_some_and(|s| s.trim_start().starts_with('Z'));
            !zombie && env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes())
        })
        .collect()
}
