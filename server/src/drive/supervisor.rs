//! The processes a batch starts: each in its own process group, its stdout and
//! stderr through one pipe into a log file of its own (bounded: rotated to
//! `<name>.log.1` at [`log_max_bytes`]), watched until it exits, and torn down
//! with SIGTERM to the group, a grace period, then SIGKILL to what remains —
//! grandchildren included. A descendant that left its group (`setsid`) is
//! found by the batch's environment mark and ended with the rest; one that
//! outlives a killed driver is the sentinel's (see [`super::reaper`]).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use runboard::drive::records::ProcessStatus;
use tokio::process::{Child, Command};

use super::reaper::{self, Sentinel, MARK_VAR};
use super::DriveError;

/// One started process.
pub struct Tracked {
    pub name: String,
    pub pid: u32,
    pub log: PathBuf,
    pub status: ProcessStatus,
    pub exit_code: Option<i32>,
    pub started: Instant,
    pub ended: Option<Instant>,
    child: Child,
    /// Copies the process's output into its log until every writer closed.
    copier: Option<std::thread::JoinHandle<()>>,
}

impl Tracked {
    pub fn uptime(&self) -> Duration {
        self.ended.unwrap_or_else(Instant::now) - self.started
    }
}

/// Every process a batch started, in start order.
#[derive(Default)]
pub struct Supervisor {
    pub procs: Vec<Tracked>,
    /// Set for every child: pinned folders and the batch's identity, including
    /// its mark (`RUNBOARD_BATCH`).
    pub env: BTreeMap<String, String>,
    pub log_dir: PathBuf,
    /// Told of every process group started, so it can end them if we are killed.
    sentinel: Option<Sentinel>,
    /// A log is rotated when it would grow past this.
    log_max: u64,
}

/// How long an exited process's log may take to catch up.
const COPIER_WAIT: Duration = Duration::from_millis(500);

/// The variable that sets the size a process's log is rotated at.
pub const LOG_MAX_VAR: &str = "RUNBOARD_LOG_MAX_BYTES";
/// 16 MiB: a day of a chatty harness, and still a quick read.
pub const LOG_MAX_DEFAULT: u64 = 16 << 20;
/// Below this a rotation would cut most lines in two.
const LOG_MAX_FLOOR: u64 = 4096;

/// The size a process's log is rotated at: `RUNBOARD_LOG_MAX_BYTES` (a whole
/// number of bytes, at least 4,096), else 16 MiB.
pub fn log_max_bytes(env: &BTreeMap<String, String>) -> u64 {
    env.get(LOG_MAX_VAR)
        .cloned()
        .or_else(|| std::env::var(LOG_MAX_VAR).ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(LOG_MAX_DEFAULT, |n| n.max(LOG_MAX_FLOOR))
}

/// Copies what a process writes into `log`, appending; what would take the
/// file past `max` goes after its last whole line, then the file becomes
/// `<log>.1` (replacing an older one) and a new one starts. A log that cannot be written loses that
/// output but never blocks the process: the pipe is always drained.
fn copy_log(mut from: std::io::PipeReader, log: PathBuf, opened: File, max: u64) -> std::thread::JoinHandle<()> {
    use std::io::{Read, Write};
    std::thread::spawn(move || {
        let open = |p: &Path| OpenOptions::new().create(true).append(true).open(p);
        let mut size = opened.metadata().map_or(0, |m| m.len());
        let mut file = Some(opened);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let mut rest = &buf[..n];
            while !rest.is_empty() {
                // What fits, cut after a line end when one is in it.
                let room = max.saturating_sub(size).min(rest.len() as u64) as usize;
                let fits = match rest[..room].iter().rposition(|&b| b == b'\n') {
                    _ if room == rest.len() => room,
                    Some(end) => end + 1,
                    None if size == 0 => room,
                    None => 0,
                };
                if fits == 0 {
                    let _ = std::fs::rename(&log, runboard::live::logs::rotated_path(&log));
                    file = open(&log).ok();
                    size = 0;
                    continue;
                }
                if let Some(f) = file.as_mut() {
                    let _ = f.write_all(&rest[..fits]);
                }
                size += fits as u64;
                rest = &rest[fits..];
            }
        }
    })
}

impl Drop for Supervisor {
    /// A last resort for a path that skipped the teardown (a panic): nothing
    /// started is left running.
    fn drop(&mut self) {
        for p in &self.procs {
            if p.status.is_running() {
                let _ = killpg(Pid::from_raw(p.pid as i32), Signal::SIGKILL);
            }
        }
    }
}

/// Gives the child a parent-death signal: the kernel sends it SIGTERM the moment
/// the driver dies, however it dies (a SIGKILL included).
#[allow(unsafe_code)]
fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs between fork and exec and only makes two system
    // calls (prctl, getppid) and builds errors without allocating, all
    // async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).map_err(std::io::Error::from)?;
            // The driver may have died between the fork and the prctl: then no
            // signal would ever come, so do not start at all.
            if nix::unistd::getppid().as_raw() as u32 != parent {
                return Err(std::io::Error::from(nix::errno::Errno::ESRCH));
            }
            Ok(())
        });
    }
}

/// What an exit status means as a code: the code, or 128 + the signal.
fn code_of(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

impl Supervisor {
    pub fn new(log_dir: &Path, env: BTreeMap<String, String>) -> Self {
        let log_max = log_max_bytes(&env);
        Self { procs: Vec::new(), env, log_dir: log_dir.to_path_buf(), sentinel: None, log_max }
    }

    /// Tells `sentinel` of every process group from now on.
    pub fn with_sentinel(mut self, sentinel: Sentinel) -> Self {
        self.sentinel = Some(sentinel);
        self
    }

    /// The batch ended normally: lets the sentinel go without a sweep.
    pub fn release_sentinel(&mut self) {
        if let Some(s) = self.sentinel.take() {
            s.done();
        }
    }

    fn mark(&self) -> Option<String> {
        self.env.get(MARK_VAR).cloned()
    }

    /// Starts `argv` as `name`, in a new process group, output to `<logs>/<name>.log`.
    pub fn spawn(
        &mut self,
        name: &str,
        argv: &[String],
        extra_env: &BTreeMap<String, String>,
    ) -> Result<usize, DriveError> {
        let (program, args) =
            argv.split_first().ok_or_else(|| DriveError::Template(format!("{name}: empty command")))?;
        let log = self.log_dir.join(format!("{name}.log"));
        // Opened first, so a log that cannot be opened refuses the start.
        let opened =
            OpenOptions::new().create(true).append(true).open(&log).map_err(DriveError::io("opening", &log))?;
        // One pipe for both streams keeps their lines in the order written.
        let (reader, out) = std::io::pipe().map_err(DriveError::io("making a pipe for", &log))?;
        let err = out.try_clone().map_err(DriveError::io("making a pipe for", &log))?;
        let mut cmd = Command::new(program);
        cmd.args(args).envs(&self.env).envs(extra_env).stdin(Stdio::null()).stdout(out).stderr(err).process_group(0);
        die_with_parent(&mut cmd);
        let spawn_error = |source| DriveError::Spawn { name: name.to_owned(), program: program.clone(), source };
        let child = cmd.spawn().map_err(spawn_error)?;
        // Our copies of the write end go now: the copier sees the end of the
        // output when the process (and whatever it started) closes its own.
        drop(cmd);
        let copier = Some(copy_log(reader, log.clone(), opened, self.log_max));
        // A child that exited and was reaped already has no PID to track.
        let pid = child.id().ok_or_else(|| spawn_error(std::io::Error::from(std::io::ErrorKind::NotFound)))?;
        if let Some(s) = self.sentinel.as_mut() {
            s.group(pid);
        }
        self.procs.push(Tracked {
            name: name.to_owned(),
            pid,
            log,
            status: ProcessStatus::Running,
            exit_code: None,
            started: Instant::now(),
            ended: None,
            child,
            copier,
        });
        Ok(self.procs.len() - 1)
    }

    /// Collects exits without blocking. Returns the indexes that exited just now.
    pub fn poll(&mut self) -> Vec<usize> {
        let mut exited = Vec::new();
        for (i, p) in self.procs.iter_mut().enumerate() {
            if !p.status.is_running() {
                continue;
            }
            if let Ok(Some(status)) = p.child.try_wait() {
                let code = code_of(status);
                p.exit_code = Some(code);
                p.ended = Some(Instant::now());
                p.status = if code == 0 { ProcessStatus::Done } else { ProcessStatus::Failed { code } };
                // Its last lines are in its log before anyone reads it for
                // why it ended — unless a descendant still holds the pipe.
                if let Some(copier) = p.copier.take() {
                    let until = Instant::now() + COPIER_WAIT;
                    while !copier.is_finished() && Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    if !copier.is_finished() {
                        p.copier = Some(copier);
                    }
                }
                exited.push(i);
            }
        }
        exited
    }

    /// Whether the process group of `pid` still has a live member (zombies
    /// do not count; see [`reaper::group_alive`]).
    fn group_alive(pid: u32) -> bool {
        reaper::group_alive(pid as i32)
    }

    /// The batch's processes outside every group we created: descendants that
    /// left with `setsid` (found by the batch's mark).
    async fn escaped(&self) -> Vec<i32> {
        let Some(mark) = self.mark() else { return Vec::new() };
        let groups: Vec<i32> = self.procs.iter().map(|p| p.pid as i32).collect();
        tokio::task::spawn_blocking(move || {
            reaper::marked(&mark)
                .into_iter()
                .filter(|&pid| {
                    nix::unistd::getpgid(Some(Pid::from_raw(pid))).is_ok_and(|g| !groups.contains(&g.as_raw()))
                })
                .collect()
        })
        .await
        .unwrap_or_default()
    }

    /// SIGTERM to every group still alive (and to every escaped descendant),
    /// wait up to `grace`, SIGKILL the rest. A process that ends after our
    /// SIGTERM is STOPPED; one we had to SIGKILL is KILLED. Returns how long the
    /// teardown took.
    pub async fn terminate_all(&mut self, grace: Duration) -> Duration {
        let started = Instant::now();
        self.poll();
        let targets: Vec<usize> = (0..self.procs.len()).filter(|&i| Self::group_alive(self.procs[i].pid)).collect();
        for &i in &targets {
            let _ = killpg(Pid::from_raw(self.procs[i].pid as i32), Signal::SIGTERM);
        }
        let escaped = self.escaped().await;
        for &pid in &escaped {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        let deadline = started + grace;
        loop {
            self.mark_stopped(&targets);
            let groups_done = targets.iter().all(|&i| !Self::group_alive(self.procs[i].pid));
            let escaped_done = escaped.iter().all(|&p| !reaper::alive(p));
            if (groups_done && escaped_done) || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // A leader that outlived the grace is SIGKILLed below, by its group or
        // by the sweep of marked processes (which may also reap it): either
        // way it ends KILLED, whoever reaps it. A leader that ended on our
        // SIGTERM in time stays STOPPED even if stragglers of its group need
        // the SIGKILL (a slow machine must not turn a clean stop into a kill).
        self.mark_stopped(&targets);
        let overdue: Vec<usize> = targets.iter().copied().filter(|&i| self.procs[i].status.is_running()).collect();
        // The rest, and anything of the batch that appeared meanwhile.
        let escaped: Vec<i32> = escaped.into_iter().chain(self.escaped().await).collect();
        if !escaped.is_empty() {
            let mark = self.mark().unwrap_or_default();
            tokio::task::spawn_blocking(move || {
                for &pid in &escaped {
                    if reaper::alive(pid) {
                        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
                    }
                }
                // Anything still carrying the mark now had its chance.
                reaper::sweep(&[], &mark, Duration::ZERO);
            })
            .await
            .ok();
        }
        for &i in &targets {
            let p = &mut self.procs[i];
            if Self::group_alive(p.pid) {
                let _ = killpg(Pid::from_raw(p.pid as i32), Signal::SIGKILL);
            }
        }
        // Reap every leader so none is left a zombie.
        for (i, p) in self.procs.iter_mut().enumerate() {
            if p.status.is_running() || p.ended.is_none() {
                match p.child.wait().await {
                    Ok(status) => {
                        p.exit_code.get_or_insert(code_of(status));
                        p.ended.get_or_insert_with(Instant::now);
                        // Its exit says which signal ended it: a leader that
                        // died of our SIGTERM just after the grace (a slow
                        // machine) was stopped, not killed.
                        if p.status.is_running() {
                            p.status = if std::os::unix::process::ExitStatusExt::signal(&status)
                                == Some(Signal::SIGKILL as i32)
                            {
                                ProcessStatus::Killed
                            } else {
                                ProcessStatus::Stopped
                            };
                        }
                    }
                    // Already reaped (by the sweep of marked processes): it is
                    // gone, and it was SIGKILLed if it outlived the grace.
                    Err(_) => {
                        p.ended.get_or_insert_with(Instant::now);
                        if overdue.contains(&i) {
                            p.status = ProcessStatus::Killed;
                            p.exit_code.get_or_insert(128 + Signal::SIGKILL as i32);
                        } else if p.status.is_running() {
                            p.status = ProcessStatus::Stopped;
                        }
                    }
                }
            }
        }
        started.elapsed()
    }

    /// Leaders among `targets` that exited after our SIGTERM become STOPPED.
    /// (A leader is reaped here by its own handle, never by a wildcard wait.)
    fn mark_stopped(&mut self, targets: &[usize]) {
        for &i in targets {
            let p = &mut self.procs[i];
            if p.status.is_running() {
                if let Ok(Some(status)) = p.child.try_wait() {
                    p.exit_code = Some(code_of(status));
                    p.ended = Some(Instant::now());
                    p.status = ProcessStatus::Stopped;
                }
            }
        }
    }

    pub fn is_running(&self, i: usize) -> bool {
        self.procs[i].status.is_running()
    }

    /// A live process table: name, pid, status, uptime, exit code, log path.
    pub fn table(&self) -> String {
        let mut out = format!("{:<20} {:>8} {:<8} {:>9} {:>5}  {}\n", "NAME", "PID", "STATUS", "UPTIME", "EXIT", "LOG");
        for p in &self.procs {
            let exit = p.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "-".into());
            out.push_str(&format!(
                "{:<20} {:>8} {:<8} {:>8.1}s {:>5}  {}\n",
                p.name,
                p.pid,
                p.status.label(),
                p.uptime().as_secs_f64(),
                exit,
                p.log.display()
            ));
        }
        out
    }
}
