//! The scheduling model (the seed's `scheduler_lp`): an immutable value
//! model of jobs (batches to run), workers (lanes: an endpoint, or a paid
//! route), assignments, and what was aggregated and published. Every
//! operation returns a new scheduler; nothing is changed in place and
//! nothing is done — the autopilot's lane decisions use it to plan, to
//! quarantine a failing lane (cooldown, then a circuit breaker), and to say
//! why each lane is idle.

use serde::{Deserialize, Serialize};

use crate::Timestamp;

/// A batch to run on a worker that serves its model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub id: String,
    pub model: String,
    /// The worker it must run on, if any (a slot is tied to its lane).
    pub worker: Option<String>,
    pub cells: usize,
}

/// Where a worker's circuit stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Circuit {
    #[default]
    Closed,
    /// Too many failures in a row: no job until `until`, then one probe.
    Open { until: Timestamp },
    /// Past `until`: the next job is a probe; its outcome closes or reopens it.
    HalfOpen,
}

/// A lane: an endpoint (or `api:<model>`), the models it serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Worker {
    pub name: String,
    pub models: Vec<String>,
    /// Failures in a row (reset by a success).
    pub failures: u32,
    /// After a failure: no job before this.
    pub cooldown_until: Option<Timestamp>,
    pub circuit: Circuit,
}

impl Worker {
    pub fn new(name: &str, models: Vec<String>) -> Self {
        Self { name: name.into(), models, failures: 0, cooldown_until: None, circuit: Circuit::Closed }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assignment {
    pub job: String,
    pub worker: String,
    pub at: Timestamp,
}

/// A finished job's results, counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggregateRecord {
    pub job: String,
    pub worker: String,
    pub attempted: usize,
    pub passes: usize,
    pub at: Timestamp,
}

/// A finished job's publication.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishRecord {
    pub job: String,
    pub ok: bool,
    pub message: String,
    pub at: Timestamp,
}

/// How failures are met.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// After each failure, the worker rests this long.
    pub cooldown_ms: i64,
    /// This many failures in a row open the circuit…
    pub breaker_after: u32,
    /// …for this long.
    pub open_ms: i64,
}

impl Default for Policy {
    fn default() -> Self {
        Self { cooldown_ms: 30 * 60_000, breaker_after: 3, open_ms: 4 * 60 * 60_000 }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scheduler {
    pub policy: Policy,
    /// Queued jobs, in the order they should run.
    pub jobs: Vec<Job>,
    pub workers: Vec<Worker>,
    pub assignments: Vec<Assignment>,
    pub aggregates: Vec<AggregateRecord>,
    pub publishes: Vec<PublishRecord>,
}

impl Scheduler {
    fn worker(&self, name: &str) -> Option<&Worker> {
        self.workers.iter().find(|w| w.name == name)
    }

    fn busy(&self, name: &str) -> bool {
        self.assignments.iter().any(|a| a.worker == name)
    }

    /// Whether the worker may take a job now (an open circuit past its time
    /// is half open: one probe job).
    fn available(&self, w: &Worker, now: Timestamp) -> bool {
        let cooled = w.cooldown_until.is_none_or(|t| t <= now);
        let circuit = match w.circuit {
            Circuit::Closed | Circuit::HalfOpen => true,
            Circuit::Open { until } => until <= now,
        };
        cooled && circuit && !self.busy(&w.name)
    }

    /// Assigns queued jobs, in order, to idle workers that serve their model
    /// (and are the job's worker, when it names one): one job per worker.
    pub fn plan(&self, now: Timestamp) -> (Scheduler, Vec<Assignment>) {
        let mut next = self.clone();
        let mut made = Vec::new();
        let mut left = Vec::new();
        for job in &self.jobs {
            let pick = next
                .workers
                .iter()
                .filter(|w| job.worker.as_ref().is_none_or(|n| *n == w.name))
                .filter(|w| w.models.contains(&job.model))
                .find(|w| next.available(w, now))
                .map(|w| w.name.clone());
            match pick {
                Some(worker) => {
                    let a = Assignment { job: job.id.clone(), worker: worker.clone(), at: now };
                    if let Some(w) = next.workers.iter_mut().find(|w| w.name == worker) {
                        // An open circuit past its time: this job is its probe.
                        if matches!(w.circuit, Circuit::Open { .. }) {
                            w.circuit = Circuit::HalfOpen;
                        }
                    }
                    next.assignments.push(a.clone());
                    made.push(a);
                }
                None => left.push(job.clone()),
            }
        }
        next.jobs = left;
        (next, made)
    }

    /// A job ended: its worker is free; a success closes its circuit and
    /// forgets its failures.
    pub fn complete(&self, job: &str, ok: bool, now: Timestamp) -> Scheduler {
        let mut next = self.clone();
        let worker = next.assignments.iter().find(|a| a.job == job).map(|a| a.worker.clone());
        next.assignments.retain(|a| a.job != job);
        if let Some(w) = worker {
            next = if ok { next.probe(&w, true, now) } else { next.report_failure(&w, now) };
        }
        next
    }

    /// A finished job's counts.
    pub fn aggregate(&self, job: &str, worker: &str, attempted: usize, passes: usize, now: Timestamp) -> Scheduler {
        let mut next = self.clone();
        next.aggregates.retain(|a| a.job != job);
        next.aggregates.push(AggregateRecord { job: job.into(), worker: worker.into(), attempted, passes, at: now });
        next
    }

    /// A finished job's publication (the latest per job is kept).
    pub fn publish(&self, job: &str, ok: bool, message: &str, now: Timestamp) -> Scheduler {
        let mut next = self.clone();
        next.publishes.retain(|p| p.job != job);
        next.publishes.push(PublishRecord { job: job.into(), ok, message: message.into(), at: now });
        next
    }

    /// A failure on a worker: it cools down; enough in a row (or a failed
    /// probe) open its circuit.
    pub fn report_failure(&self, worker: &str, now: Timestamp) -> Scheduler {
        let mut next = self.clone();
        let p = self.policy;
        if let Some(w) = next.workers.iter_mut().find(|w| w.name == worker) {
            w.failures += 1;
            w.cooldown_until = Some(Timestamp(now.0 + p.cooldown_ms));
            if w.failures >= p.breaker_after || w.circuit == Circuit::HalfOpen {
                w.circuit = Circuit::Open { until: Timestamp(now.0 + p.open_ms) };
                w.cooldown_until = Some(Timestamp(now.0 + p.open_ms));
            }
        }
        next
    }

    /// The outcome of a probe (or any success): ok closes the circuit and
    /// forgets the failures; a failure opens it again.
    pub fn probe(&self, worker: &str, ok: bool, now: Timestamp) -> Scheduler {
        if !ok {
            let mut half = self.clone();
            if let Some(w) = half.workers.iter_mut().find(|w| w.name == worker) {
                w.circuit = Circuit::HalfOpen;
            }
            return half.report_failure(worker, now);
        }
        let mut next = self.clone();
        if let Some(w) = next.workers.iter_mut().find(|w| w.name == worker) {
            w.failures = 0;
            w.cooldown_until = None;
            w.circuit = Circuit::Closed;
        }
        next
    }

    /// Why a worker runs nothing now, in words; `None` when it runs a job.
    pub fn idle_reason(&self, worker: &str, now: Timestamp) -> Option<String> {
        let Some(w) = self.worker(worker) else { return Some(format!("{worker} is not a known lane")) };
        if self.busy(worker) {
            return None;
        }
        if let Circuit::Open { until } = w.circuit {
            if until > now {
                return Some(format!(
                    "its circuit is open after {} failures in a row, until {} (then one probe batch)",
                    w.failures,
                    until.to_display()
                ));
            }
        }
        if let Some(t) = w.cooldown_until.filter(|t| *t > now) {
            return Some(format!(
                "cooling down after {} failure{} until {}",
                w.failures,
                if w.failures == 1 { "" } else { "s" },
                t.to_display()
            ));
        }
        let queued: Vec<&Job> = self
            .jobs
            .iter()
            .filter(|j| j.worker.as_ref().is_none_or(|n| n == worker) && w.models.contains(&j.model))
            .collect();
        if queued.is_empty() {
            return Some(if w.circuit == Circuit::HalfOpen {
                "half open: waiting for a batch to probe it".into()
            } else {
                "no batch to run: none of its models' slots is eligible".into()
            });
        }
        Some(format!("{} batch(es) queued for it; the next tick assigns one", queued.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(min: i64) -> Timestamp {
        Timestamp(1_796_000_000_000 + min * 60_000)
    }

    fn sched() -> Scheduler {
        Scheduler {
            policy: Policy { cooldown_ms: 10 * 60_000, breaker_after: 3, open_ms: 60 * 60_000 },
            workers: vec![Worker::new("gpu-a", vec!["qwen".into()]), Worker::new("gpu-b", vec!["qwen".into()])],
            ..Default::default()
        }
    }

    fn job(id: &str, worker: Option<&str>) -> Job {
        Job { id: id.into(), model: "qwen".into(), worker: worker.map(Into::into), cells: 4 }
    }

    #[test]
    fn plan_gives_one_job_per_idle_worker_that_serves_it() {
        let mut s = sched();
        s.jobs =
            vec![job("j1", None), job("j2", None), job("j3", None), Job { model: "gpt".into(), ..job("j4", None) }];
        let (s2, made) = s.plan(t(0));
        assert_eq!(
            made.iter().map(|a| (a.job.as_str(), a.worker.as_str())).collect::<Vec<_>>(),
            [("j1", "gpu-a"), ("j2", "gpu-b")]
        );
        assert_eq!(s2.jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(), ["j3", "j4"]);
        assert_eq!(s.assignments.len(), 0, "the original is unchanged");
        assert_eq!(s2.idle_reason("gpu-a", t(0)), None);
        let s3 = s2.complete("j1", true, t(5)).aggregate("j1", "gpu-a", 4, 3, t(5)).publish(
            "j1",
            false,
            "push failed",
            t(6),
        );
        assert!(s3.idle_reason("gpu-a", t(6)).unwrap().contains("1 batch(es) queued"));
        assert_eq!((s3.aggregates[0].passes, s3.publishes[0].ok), (3, false));
    }

    #[test]
    fn failures_cool_a_worker_then_open_its_circuit_and_a_probe_closes_it() {
        let s = sched().report_failure("gpu-a", t(0));
        assert!(s.idle_reason("gpu-a", t(1)).unwrap().starts_with("cooling down after 1 failure until"));
        let mut s = s.report_failure("gpu-a", t(11)).report_failure("gpu-a", t(22));
        assert!(matches!(s.workers[0].circuit, Circuit::Open { .. }));
        assert!(s.idle_reason("gpu-a", t(30)).unwrap().contains("circuit is open after 3 failures"));
        // Only gpu-b takes jobs while it is open.
        s.jobs = vec![job("j1", Some("gpu-a")), job("j2", None)];
        let (s1, made) = s.plan(t(30));
        assert_eq!(made.iter().map(|a| a.worker.as_str()).collect::<Vec<_>>(), ["gpu-b"]);
        // Past its time: half open, one probe; a success closes it.
        let (s2, made) = s1.plan(t(90));
        assert_eq!(made[0].worker, "gpu-a");
        assert_eq!(s2.workers[0].circuit, Circuit::HalfOpen);
        let ok = s2.complete("j1", true, t(95));
        assert_eq!((ok.workers[0].circuit, ok.workers[0].failures), (Circuit::Closed, 0));
        // A failed probe opens it again at once.
        let bad = s2.complete("j1", false, t(95));
        assert!(matches!(bad.workers[0].circuit, Circuit::Open { .. }));
    }
}
