//! The signals that end a runboard process gracefully: SIGINT (ctrl-c) and SIGTERM.

use tokio::signal::unix::{signal, Signal, SignalKind};

/// SIGINT and SIGTERM, caught from the moment this is made: make it before
/// telling anyone the process is ready, or a signal sent right after that
/// would still end the process the default way (no graceful shutdown).
pub struct Terminated {
    int: Option<Signal>,
    term: Option<Signal>,
}

impl Terminated {
    pub fn register() -> Self {
        Self { int: signal(SignalKind::interrupt()).ok(), term: signal(SignalKind::terminate()).ok() }
    }

    /// Resolves when SIGINT or SIGTERM arrives.
    pub async fn wait(mut self) {
        async fn recv(s: Option<&mut Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            _ = recv(self.int.as_mut()) => {}
            _ = recv(self.term.as_mut()) => {}
        }
    }
}

/// Resolves when the process receives SIGINT or SIGTERM (caught from the
/// first poll on; see [`Terminated::register`] to catch them from now).
pub async fn terminated() {
    Terminated::register().wait().await
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

/// The value of `var` in the environment of process `pid` (none: no such
/// process, not readable, or not set).
pub fn env_of(pid: u32, var: &str) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{var}=");
    env.split(|&b| b == 0)
        .find_map(|kv| kv.strip_prefix(prefix.as_bytes()))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}
