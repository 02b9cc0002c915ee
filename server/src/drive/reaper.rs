//! Nothing a batch started survives it — not even when the driver itself is
//! killed with SIGKILL, and not a child that left its process group with
//! `setsid` and double-forked.
//!
//! Three mechanisms, each covering what the one before cannot:
//!
//! 1. **Child subreaper.** The driver marks itself a subreaper
//!    (`PR_SET_CHILD_SUBREAPER`), so a descendant orphaned by its parent (the
//!    classic double fork) is re-parented to the driver, not to PID 1: it stays
//!    the driver's to end and to reap.
//! 2. **Parent-death signal.** Every direct child gets `PR_SET_PDEATHSIG` =
//!    SIGTERM, so the kernel signals it the moment the driver dies, however it
//!    dies.
//! 3. **The sentinel** — a small process (`runboard __sentinel`, in its own
//!    process group, with an empty environment) holding the read end of a pipe
//!    from the driver. The driver tells it each process group it creates and,
//!    when it ends normally, `done`. If the pipe closes without `done` (the
//!    driver was killed), the sentinel sweeps: SIGTERM to every recorded group
//!    and to every process whose environment carries this batch's
//!    `RUNBOARD_BATCH` mark (escaped descendants keep their environment), the
//!    grace period, then SIGKILL; and it notes the sweep in the run set's
//!    `execution_log.md`.
//!
//! The normal teardown does the same sweep by mark after signalling the groups,
//! and reaps the escaped descendants that the subreaper made its children.

use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

/// The environment variable that marks every process of one batch.
pub const MARK_VAR: &str = "RUNBOARD_BATCH";

/// Makes this process a child subreaper (Linux only; refused elsewhere).
pub fn become_subreaper() -> Result<(), String> {
    nix::sys::prctl::set_child_subreaper(true).map_err(|e| format!("PR_SET_CHILD_SUBREAPER: {e}"))
}

/// A mark unique to this run of the driver.
pub fn new_mark() -> String {
    format!("{}-{}", std::process::id(), crate::system::clock::now_ns())
}

/// Live (non-zombie) processes carrying `mark`, other than this one.
pub fn marked(mark: &str) -> Vec<i32> {
    let me = std::process::id();
    crate::system::signals::pids_with_env(MARK_VAR, mark).into_iter().filter(|&p| p != me).map(|p| p as i32).collect()
}

/// Whether the process group `pgid` has a live member. A zombie is not one:
/// a cell's child that outlived the cell is re-parented to the driver (the
/// subreaper) and, once it dies, stays a zombie in the group until reaped — it
/// must neither hold a teardown for its whole grace nor be left unreaped, so
/// zombies of the group other than the leader (whose exit status the runtime
/// waits for) are reaped here.
pub fn group_alive(pgid: i32) -> bool {
    if killpg(Pid::from_raw(pgid), None).is_err() {
        return false;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else { return true };
    let mut live = false;
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // After the command's closing parenthesis: state, ppid, pgrp, …
        let Some((_, rest)) = stat.rsplit_once(") ") else { continue };
        let mut fields = rest.split_whitespace();
        let (Some(state), Some(_ppid), Some(pgrp)) = (fields.next(), fields.next(), fields.next()) else { continue };
        if pgrp.parse::<i32>().ok() != Some(pgid) {
            continue;
        }
        if state == "Z" {
            if pid != pgid {
                reap(pid);
            }
        } else {
            live = true;
        }
    }
    live
}

/// Whether `pid` is a live process (a zombie is not).
pub fn alive(pid: i32) -> bool {
    kill(Pid::from_raw(pid), None).is_ok() && !is_zombie(pid)
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('Z')))
        .unwrap_or(false)
}

/// Reaps `pid` if it is a zombie child of ours (the subreaper makes escaped
/// descendants our children). Never `waitpid(-1)`: that would steal the exit
/// statuses the runtime waits for on the processes we track.
fn reap(pid: i32) {
    use nix::sys::wait::{waitpid, WaitPidFlag};
    let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
}

/// SIGTERM to each live group in `groups` and each process carrying `mark`,
/// up to `grace` for them to end, then SIGKILL to what remains. Returns how
/// many processes and groups were signalled. Blocking; call off the runtime.
pub fn sweep(groups: &[i32], mark: &str, grace: Duration) -> usize {
    let live_groups: Vec<i32> = groups.iter().copied().filter(|&g| group_alive(g)).collect();
    let procs = marked(mark);
    for &g in &live_groups {
        let _ = killpg(Pid::from_raw(g), Signal::SIGTERM);
    }
    for &p in &procs {
        let _ = kill(Pid::from_raw(p), Signal::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    loop {
        procs.iter().for_each(|&p| reap(p));
        let left = live_groups.iter().any(|&g| group_alive(g)) || !marked(mark).is_empty();
        if !left || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    for &g in &live_groups {
        let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
    }
    // Marked processes that appeared since (a fork during the grace) too.
    let stragglers = marked(mark);
    for &p in procs.iter().chain(&stragglers) {
        if alive(p) {
            let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
        }
    }
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until && procs.iter().chain(&stragglers).any(|&p| alive(p)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    procs.iter().chain(&stragglers).for_each(|&p| reap(p));
    live_groups.len() + procs.len()
}

/// The driver's end of the sentinel's pipe.
pub struct Sentinel {
    child: Child,
    pipe: Option<ChildStdin>,
}

impl Sentinel {
    /// Starts `runboard __sentinel` for the batch marked `mark` writing `runset`.
    pub fn start(runset: &Path, mark: &str, grace: Duration) -> std::io::Result<Self> {
        let exe = std::env::current_exe()?;
        let mut child = Command::new(exe)
            .arg("__sentinel")
            .arg("--mark")
            .arg(mark)
            .arg("--grace")
            .arg(grace.as_secs_f64().to_string())
            .arg("--runset")
            .arg(runset)
            // Nothing of the batch's environment: it must not carry the mark
            // (it would sweep itself) nor a test's own marks.
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        let pipe = child.stdin.take();
        Ok(Self { child, pipe })
    }

    /// Tells the sentinel about a process group the batch created.
    pub fn group(&mut self, pgid: u32) {
        if let Some(p) = self.pipe.as_mut() {
            let _ = writeln!(p, "{pgid}");
        }
    }

    /// The batch ended normally: the sentinel exits without sweeping.
    pub fn done(mut self) {
        if let Some(mut p) = self.pipe.take() {
            let _ = writeln!(p, "done");
        }
        // Reaped if it is quick; otherwise it is re-parented when we exit.
        let until = Instant::now() + Duration::from_millis(500);
        while Instant::now() < until {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// `runboard __sentinel`: waits for the driver's pipe (stdin) to close; sweeps
/// unless the driver said `done`. Returns the process exit code.
pub fn run_sentinel(mark: &str, grace: Duration, runset: &Path) -> u8 {
    let stdin = std::io::stdin();
    let mut groups = Vec::new();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        match line.trim() {
            "done" => return 0,
            n => groups.extend(n.parse::<i32>().ok().filter(|&g| g > 1)),
        }
    }
    // The pipe closed without `done`: the driver died.
    let n = sweep(&groups, mark, grace);
    let log = runset.join("execution_log.md");
    if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&log) {
        let at = crate::system::clock::now().to_rfc3339();
        let _ = writeln!(
            f,
            "- {at} the driver died without tearing down; its sentinel ended {n} process group(s) and marked process(es)"
        );
    }
    0
}
