//! **The local launcher** starts `runboard __unit`, a small supervising
//! process of its own, in its own process group and with no tie to the
//! server (a server killed with SIGKILL leaves it running): it starts the
//! driver with its output going to the unit's log, records the driver's PID,
//! waits for it, and records its exit status in the unit record
//! (`.runboard/units/<unit>.json`). SIGTERM to the supervisor is passed on to
//! the driver (whose own teardown ends the batch's processes), and after the
//! grace the driver is killed. A unit is alive while its supervisor's PID
//! **and** start time match the record: a reused PID is not mistaken for it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use runboard::campaign::LauncherKind;
use runboard::live::Observation;
use runboard::runsets::{UnitEnd, UnitHandle, UnitRecord};

use super::{Launcher, LauncherError, Stopped, UnitRequest};
use crate::files::fsread::process_start;

/// The local supervising launcher (the default).
pub struct LocalLauncher {
    /// The `runboard` binary units run (this one).
    pub exe: PathBuf,
}

impl LocalLauncher {
    pub fn new() -> Self {
        Self { exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("runboard")) }
    }

    fn supervisor_alive(rec: &UnitRecord) -> bool {
        match rec.handle {
            UnitHandle::Local { pid: Some(pid), pid_start: Some(start), .. } => {
                process_start(pid) == Some(start) && !is_zombie(pid)
            }
            _ => false,
        }
    }
}

impl Default for LocalLauncher {
    fn default() -> Self {
        Self::new()
    }
}

/// A zombie has ended; only its parent has not yet collected it.
fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rfind(')').map(|i| s[i + 1..].trim_start().starts_with('Z')))
        .unwrap_or(false)
}

pub(super) fn read_record(path: &Path) -> Option<UnitRecord> {
    let bytes = crate::files::fsread::read_regular(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

impl Launcher for LocalLauncher {
    fn backend(&self) -> LauncherKind {
        LauncherKind::Local
    }

    fn start(&self, req: &UnitRequest) -> Result<UnitRecord, LauncherError> {
        use std::os::unix::process::CommandExt;
        let first = super::first_record(req, LauncherKind::Local);
        super::write_record(&req.record, &first)?;
        let mut child = std::process::Command::new(&self.exe)
            .arg("__unit")
            .arg("--record")
            .arg(&req.record)
            .arg("--log")
            .arg(req.root.join(&req.log))
            .arg("--grace")
            .arg(req.grace.as_secs_f64().to_string())
            .arg("--")
            .args(&req.command)
            .current_dir(&req.root)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            // Its own process group: a signal to the server's group (a ^C
            // in its terminal) does not reach the batch.
            .process_group(0)
            .spawn()
            .map_err(|source| LauncherError::Spawn {
                what: format!("the unit's supervisor ({})", self.exe.display()),
                source,
            })?;
        let pid = child.id();
        // Collect it when it ends (while this server lives; after that the
        // system does), so no zombie is left under the server.
        std::thread::spawn(move || {
            let _ = child.wait();
        });
        // The supervisor records itself and the driver it started; wait for
        // that (bounded), so the answer names a running unit or says why not.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(rec) = read_record(&req.record) {
                let driver = matches!(rec.handle, UnitHandle::Local { driver_pid: Some(_), .. });
                if driver || rec.end.is_some() {
                    return Ok(rec);
                }
            }
            if Instant::now() >= deadline {
                return Err(LauncherError::NotSeen(format!(
                    "the unit's supervisor (PID {pid}) did not start the driver within 10 s"
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn observe(&self, rec: &UnitRecord) -> Observation {
        if let Some(end) = rec.recorded_end() {
            return end;
        }
        if Self::supervisor_alive(rec) {
            return Observation::Active { since: Some(rec.started_at) };
        }
        match rec.handle {
            // Its supervisor is gone without recording an end: killed.
            UnitHandle::Local { pid: Some(_), .. } => {
                Observation::Finished { exit_status: None, result: "supervisor-killed".into(), at: None }
            }
            // Never recorded itself: it died at once (or the record is from
            // an older runboard).
            _ => Observation::Finished { exit_status: None, result: "never-started".into(), at: None },
        }
    }

    fn stop(&self, rec: &UnitRecord, grace: Duration) -> Stopped {
        let unit = rec.unit.clone();
        if !Self::supervisor_alive(rec) {
            return Stopped { unit, was_running: false, ended: true, detail: "it had already ended".into() };
        }
        let UnitHandle::Local { pid: Some(pid), driver_pid, .. } = rec.handle else {
            return Stopped { unit, was_running: false, ended: true, detail: "it had already ended".into() };
        };
        let pid = nix::unistd::Pid::from_raw(pid as i32);
        if let Err(e) = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM) {
            return Stopped { unit, was_running: true, ended: false, detail: format!("SIGTERM failed: {e}") };
        }
        // The supervisor passes SIGTERM on and kills the driver after the
        // grace; give it the grace and a little more to record the end.
        let deadline = Instant::now() + grace + Duration::from_secs(5);
        while Instant::now() < deadline {
            if !Self::supervisor_alive(rec) {
                return Stopped { unit, was_running: true, ended: true, detail: "ended after SIGTERM".into() };
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        if let Some(d) = driver_pid {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(d as i32), nix::sys::signal::Signal::SIGKILL);
        }
        Stopped { unit, was_running: true, ended: true, detail: format!("killed after {} s", grace.as_secs()) }
    }
}

/// `runboard __unit`: the local launcher's supervising process. Starts the
/// driver, records it, passes SIGTERM on, kills it after the grace, records
/// how it ended. Returns the exit code to end with.
pub async fn supervise(record: PathBuf, log: PathBuf, grace: Duration, command: Vec<String>) -> i32 {
    use tokio::signal::unix::{signal, SignalKind};
    let Some(mut rec) = read_record(&record) else {
        eprintln!("runboard __unit: {}: no unit record", record.display());
        return 2;
    };
    let me = std::process::id();
    rec.handle = UnitHandle::Local { pid: Some(me), pid_start: process_start(me), driver_pid: None };
    let save = |rec: &UnitRecord| {
        if let Ok(bytes) = serde_json::to_vec_pretty(rec) {
            let _ = crate::files::atomic::write_atomic(&record, &bytes);
        }
    };
    let end = |mut rec: UnitRecord, code: Option<i32>, result: &str| {
        rec.end = Some(UnitEnd { at: crate::system::clock::now(), exit_status: code, result: result.to_owned() });
        save(&rec);
    };
    let opened = log
        .parent()
        .map(std::fs::create_dir_all)
        .transpose()
        .and_then(|_| std::fs::OpenOptions::new().create(true).append(true).open(&log));
    let out = match opened {
        Ok(f) => f,
        Err(e) => {
            end(rec, Some(127), "spawn-failed");
            eprintln!("runboard __unit: {}: {e}", log.display());
            return 127;
        }
    };
    let Some((program, args)) = command.split_first() else {
        end(rec, Some(127), "spawn-failed");
        return 127;
    };
    let (Ok(err), mut term) = (out.try_clone(), signal(SignalKind::terminate())) else {
        end(rec, Some(127), "spawn-failed");
        return 127;
    };
    let spawned = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .kill_on_drop(false)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            use std::io::Write;
            if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&log) {
                let _ = writeln!(f, "runboard __unit: could not start {program}: {e}");
            }
            end(rec, Some(127), "spawn-failed");
            return 127;
        }
    };
    if let UnitHandle::Local { driver_pid, .. } = &mut rec.handle {
        *driver_pid = child.id();
    }
    save(&rec);
    let status = match term.as_mut() {
        Ok(term) => tokio::select! {
            s = child.wait() => s,
            _ = term.recv() => {
                if let Some(pid) = child.id() {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGTERM);
                }
                match tokio::time::timeout(grace, child.wait()).await {
                    Ok(s) => s,
                    Err(_) => {
                        let _ = child.start_kill();
                        let _ = child.wait().await;
                        // Said as what it was: the driver did not end within
                        // the grace and was killed (its records may say running).
                        end(rec, Some(137), "killed-after-grace");
                        return 137;
                    }
                }
            }
        },
        Err(_) => child.wait().await,
    };
    use std::os::unix::process::ExitStatusExt;
    let (code, result) = match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(0), _) => (Some(0), "success".to_owned()),
            (Some(c), _) => (Some(c), "exit-code".to_owned()),
            (None, Some(sig)) => (Some(128 + sig), "signal".to_owned()),
            (None, None) => (None, "unknown".to_owned()),
        },
        Err(_) => (None, "unknown".to_owned()),
    };
    end(rec, code, &result);
    code.unwrap_or(1)
}
