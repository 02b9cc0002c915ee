//! **The Slurm launcher**: each unit is a batch job.
//!
//! - *Start*: a batch script (`.runboard/units/<unit>.sbatch`) that runs
//!   `runboard drive …` in the campaign root, with the partition, time limit,
//!   CPUs, memory and account from `[launcher.slurm]`, its output in the
//!   unit's log; submitted with `sbatch --parsable` (bounded at 60 s). The
//!   job id goes into the unit record.
//! - *State*: `squeue` while the job is queued or running (a pending job is
//!   `starting`, with Slurm's pending reason); once it left the queue,
//!   `sacct` (State, ExitCode, Reason), or `scontrol show job` where
//!   accounting has no record (yet). Each command is bounded by the query
//!   timeout; one that fails or does not answer makes the state `unknown`
//!   with its reason — never `failed`.
//! - *Stop*: `scancel --full --signal=TERM` (the batch script and its steps),
//!   then `scancel` (SIGKILL) after the grace.
//! - *Why it died*: `sacct`'s state and exit code and the last lines of the
//!   job's output file.
//!
//! The Slurm commands are found on `PATH` and use the server's environment
//! (`SLURM_CONF` for a cluster other than the default).

use std::time::{Duration, Instant};

use runboard::campaign::LauncherKind;
use runboard::live::Observation;
use runboard::runsets::{UnitHandle, UnitRecord};

use super::{Launcher, LauncherError, Stopped, UnitRequest};
use crate::system::command::{run_bounded, why};

/// How long `sbatch` may take.
pub const SUBMIT_LIMIT: Duration = Duration::from_secs(60);

pub struct SlurmLauncher {
    pub query_timeout: Duration,
    pub settings: runboard::campaign::SlurmConfig,
}

/// A word safe in a shell script without quotes, or quoted.
fn quoted(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@".contains(c)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

impl SlurmLauncher {
    /// The batch script of a unit.
    pub fn script(&self, req: &UnitRequest) -> String {
        let s = &self.settings;
        let mut out = String::from("#!/bin/sh\n# Written by runboard: one batch (see docs/backends.md).\n");
        let mut opt = |k: &str, v: &str| out.push_str(&format!("#SBATCH --{k}={}\n", quoted(v)));
        opt("job-name", &req.unit);
        // `%` starts a Slurm filename pattern (`%j`); `%%` is a `%`.
        opt("output", &req.root.join(&req.log).to_string_lossy().replace('%', "%%"));
        opt("chdir", &req.root.to_string_lossy());
        if let Some(p) = &s.partition {
            opt("partition", p);
        }
        if let Some(t) = &s.time_limit {
            opt("time", t);
        }
        if let Some(c) = s.cpus {
            opt("cpus-per-task", &c.to_string());
        }
        if let Some(m) = &s.memory {
            opt("mem", m);
        }
        if let Some(a) = &s.account {
            opt("account", a);
        }
        // Before its time limit kills it, the driver gets SIGTERM and the
        // grace to stop its cells cleanly (a paused batch is resumable).
        opt("signal", &format!("B:TERM@{}", req.grace.as_secs().max(1)));
        let cmd: Vec<String> = req.command.iter().map(|a| quoted(a)).collect();
        out.push_str(&format!("exec {}\n", cmd.join(" ")));
        out
    }

    fn run(&self, program: &str, args: &[&str], limit: Duration) -> Result<std::process::Output, String> {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        run_bounded(program, &args, None, limit).map_err(|e| format!("{program}: {e}"))
    }

    /// `squeue`'s word on the job: `Some` while it is in the queue.
    fn queued(&self, job: &str) -> Result<Option<Observation>, String> {
        let out = self.run("squeue", &["-h", "-j", job, "-o", "%T|%r"], self.query_timeout)?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            // A job that left the queue long ago is not a failure of squeue.
            if String::from_utf8_lossy(&out.stderr).contains("Invalid job id") {
                return Ok(None);
            }
            return Err(why("squeue", &out));
        }
        let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty()) else { return Ok(None) };
        let (state, reason) = line.split_once('|').unwrap_or((line, ""));
        Ok(match state {
            "PENDING" | "CONFIGURING" | "REQUEUED" | "RESV_DEL_HOLD" | "REQUEUE_HOLD" | "REQUEUE_FED" => {
                Some(Observation::Pending { reason: Some(format!("Slurm: {state} ({reason})")) })
            }
            "RUNNING" | "COMPLETING" | "SUSPENDED" | "STOPPED" | "SIGNALING" | "STAGE_OUT" | "RESIZING" => {
                Some(Observation::Active { since: None })
            }
            // Ended but still listed: accounting says how.
            _ => None,
        })
    }

    /// How the job ended, from `sacct`, else `scontrol show job`.
    fn accounted(&self, job: &str) -> Result<Observation, String> {
        let sacct =
            self.run("sacct", &["-X", "-n", "-P", "-j", job, "-o", "State,ExitCode,Reason"], self.query_timeout);
        let mut why_not = Vec::new();
        match sacct {
            Ok(out) if out.status.success() => {
                let text = String::from_utf8_lossy(&out.stdout);
                if let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty()) {
                    let f: Vec<&str> = line.split('|').collect();
                    return Ok(job_observation(
                        f.first().copied().unwrap_or(""),
                        f.get(1).copied().unwrap_or(""),
                        f.get(2).copied().unwrap_or(""),
                    ));
                }
                why_not.push("sacct has no record of it".to_owned());
            }
            Ok(out) => why_not.push(why("sacct", &out)),
            Err(e) => why_not.push(e),
        }
        let out = self.run("scontrol", &["show", "job", "-o", job], self.query_timeout);
        match out {
            Ok(out) if out.status.success() => {
                let text = String::from_utf8_lossy(&out.stdout);
                let field = |k: &str| {
                    text.split_whitespace()
                        .find_map(|w| w.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
                        .unwrap_or("")
                };
                Ok(job_observation(field("JobState"), field("ExitCode"), field("Reason")))
            }
            Ok(out) => {
                why_not.push(why("scontrol", &out));
                Err(format!("job {job} left the queue and its end cannot be read: {}", why_not.join("; ")))
            }
            Err(e) => {
                why_not.push(e);
                Err(format!("job {job} left the queue and its end cannot be read: {}", why_not.join("; ")))
            }
        }
    }
}

/// A job's state, exit code (`code:signal`) and reason as an observation.
pub fn job_observation(state: &str, exit_code: &str, reason: &str) -> Observation {
    // `CANCELLED by 0` → `CANCELLED`.
    let state = state.split_whitespace().next().unwrap_or("");
    let (code, signal) = exit_code.split_once(':').unwrap_or((exit_code, "0"));
    let code: Option<i32> = code.trim().parse().ok();
    let signal: i32 = signal.trim().parse().unwrap_or(0);
    let status = if signal > 0 { Some(128 + signal) } else { code };
    let fin = |result: &str| Observation::Finished { exit_status: status, result: result.into(), at: None };
    match state {
        "PENDING" | "REQUEUED" | "CONFIGURING" => {
            Observation::Pending { reason: Some(format!("Slurm: {state} ({reason})")) }
        }
        "RUNNING" | "COMPLETING" | "SUSPENDED" | "STOPPED" | "SIGNALING" | "STAGE_OUT" => {
            Observation::Active { since: None }
        }
        "COMPLETED" if status == Some(0) => fin("success"),
        "COMPLETED" | "FAILED" => fin(if signal > 0 { "signal" } else { "exit-code" }),
        "CANCELLED" => fin("cancelled"),
        "TIMEOUT" | "DEADLINE" => fin("timeout"),
        "OUT_OF_MEMORY" => fin("oom-kill"),
        "NODE_FAIL" | "BOOT_FAIL" => fin("node-fail"),
        "PREEMPTED" => fin("preempted"),
        "REVOKED" | "SPECIAL_EXIT" => fin(&state.to_lowercase()),
        other => Observation::Unknown { reason: format!("Slurm reports the job {other:?}") },
    }
}

impl Launcher for SlurmLauncher {
    fn backend(&self) -> LauncherKind {
        LauncherKind::Slurm
    }

    fn start(&self, req: &UnitRequest) -> Result<UnitRecord, LauncherError> {
        let mut rec = super::first_record(req, LauncherKind::Slurm);
        super::write_record(&req.record, &rec)?;
        let script = req.record.with_extension("sbatch");
        std::fs::write(&script, self.script(req))
            .map_err(|source| LauncherError::Write { path: script.clone(), source })?;
        let script_s = script.to_string_lossy().into_owned();
        let submitted = self.run("sbatch", &["--parsable", &script_s], SUBMIT_LIMIT);
        let never = |rec: &UnitRecord| {
            let obs = Observation::Finished { exit_status: None, result: "never-started".into(), at: None };
            if let Some(done) = super::ended(rec, &obs) {
                let _ = super::write_record(&req.record, &done);
            }
        };
        let out = match submitted {
            Ok(out) if out.status.success() => out,
            Ok(out) => {
                never(&rec);
                return Err(LauncherError::Backend(format!("Slurm refused the job: {}", why("sbatch", &out))));
            }
            Err(e) => {
                never(&rec);
                return Err(LauncherError::Backend(format!("the job could not be submitted: {e}")));
            }
        };
        // `--parsable`: `<job id>` or `<job id>;<cluster>`.
        let text = String::from_utf8_lossy(&out.stdout);
        let id = text.trim().split(';').next().unwrap_or("").trim().to_owned();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit() || c == '_') {
            never(&rec);
            return Err(LauncherError::Backend(format!(
                "sbatch did not print a job id (it printed {:?})",
                runboard::console::spec::shorten(text.trim())
            )));
        }
        rec.handle = UnitHandle::Slurm { job_id: Some(id) };
        super::write_record(&req.record, &rec)?;
        Ok(rec)
    }

    fn observe(&self, rec: &UnitRecord) -> Observation {
        if let Some(end) = rec.recorded_end() {
            return end;
        }
        let UnitHandle::Slurm { job_id: Some(job) } = &rec.handle else {
            return Observation::Finished { exit_status: None, result: "never-started".into(), at: None };
        };
        match self.queued(job) {
            Ok(Some(obs)) => obs,
            Ok(None) => self.accounted(job).unwrap_or_else(|reason| Observation::Unknown { reason }),
            Err(reason) => Observation::Unknown { reason },
        }
    }

    fn stop(&self, rec: &UnitRecord, grace: Duration) -> Stopped {
        let unit = rec.unit.clone();
        let UnitHandle::Slurm { job_id: Some(job) } = rec.handle.clone() else {
            return Stopped { unit, was_running: false, ended: true, detail: "it was never submitted".into() };
        };
        if matches!(self.observe(rec), Observation::Finished { .. }) {
            return Stopped { unit, was_running: false, ended: true, detail: "it had already ended".into() };
        }
        // Whether the job left the queue within `within` (asked every 200 ms).
        let gone_within = |within: Duration| {
            let deadline = Instant::now() + within;
            loop {
                if matches!(self.queued(&job), Ok(None)) {
                    return true;
                }
                if Instant::now() >= deadline {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        };
        let ended = |detail: String| Stopped { unit: unit.clone(), was_running: true, ended: true, detail };
        let limit = self.query_timeout.max(Duration::from_secs(10));
        match self.run("scancel", &["--full", "--signal=TERM", &job], limit) {
            Ok(out) if out.status.success() => {}
            Ok(out) => {
                return Stopped { unit, was_running: true, ended: false, detail: why("scancel --signal=TERM", &out) }
            }
            Err(e) => return Stopped { unit, was_running: true, ended: false, detail: e },
        }
        if gone_within(grace) {
            return ended(format!("job {job} ended after SIGTERM"));
        }
        let killed = self.run("scancel", &[&job], limit);
        if gone_within(Duration::from_secs(10)) {
            return ended(format!("job {job} cancelled after {} s", grace.as_secs()));
        }
        let detail = match killed {
            Ok(out) if !out.status.success() => why("scancel", &out),
            Err(e) => e,
            Ok(_) => format!("job {job} was cancelled but is still listed"),
        };
        Stopped { unit, was_running: true, ended: false, detail }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_states_map_to_observations() {
        let fin = |s: Option<i32>, r: &str| Observation::Finished { exit_status: s, result: r.into(), at: None };
        assert_eq!(job_observation("COMPLETED", "0:0", "None"), fin(Some(0), "success"));
        assert_eq!(job_observation("FAILED", "3:0", "NonZeroExitCode"), fin(Some(3), "exit-code"));
        assert_eq!(job_observation("CANCELLED by 0", "0:15", "None"), fin(Some(143), "cancelled"));
        assert_eq!(job_observation("TIMEOUT", "0:0", "TimeLimit"), fin(Some(0), "timeout"));
        assert_eq!(job_observation("OUT_OF_MEMORY", "0:125", ""), fin(Some(253), "oom-kill"));
        assert_eq!(
            job_observation("PENDING", "0:0", "Resources"),
            Observation::Pending { reason: Some("Slurm: PENDING (Resources)".into()) }
        );
        assert!(matches!(job_observation("WHATEVER", "", ""), Observation::Unknown { .. }));
    }

    #[test]
    fn the_batch_script_carries_the_settings_and_quotes_the_command() {
        let l = SlurmLauncher {
            query_timeout: Duration::from_secs(10),
            settings: runboard::campaign::SlurmConfig {
                partition: Some("gpu".into()),
                time_limit: Some("02:00:00".into()),
                cpus: Some(4),
                memory: Some("8G".into()),
                account: None,
            },
        };
        let req = UnitRequest {
            unit: "rb-b1-20261201T000000".into(),
            run_set: "b1-20261201T000000".into(),
            spec: "specs/committed/0001-b1.json".into(),
            command: vec!["/opt/runboard".into(), "drive".into(), "/c/my spec's.json".into()],
            root: "/c".into(),
            record: "/c/.runboard/units/x.json".into(),
            log: ".runboard/units/x.log".into(),
            grace: Duration::from_secs(30),
        };
        let s = l.script(&req);
        for want in [
            "#SBATCH --job-name=rb-b1-20261201T000000\n",
            "#SBATCH --output=/c/.runboard/units/x.log\n",
            "#SBATCH --chdir=/c\n",
            "#SBATCH --partition=gpu\n",
            "#SBATCH --time=02:00:00\n",
            "#SBATCH --cpus-per-task=4\n",
            "#SBATCH --mem=8G\n",
            "#SBATCH --signal=B:TERM@30\n",
            "exec /opt/runboard drive '/c/my spec'\\''s.json'\n",
        ] {
            assert!(s.contains(want), "{want:?} not in\n{s}");
        }
    }
}
