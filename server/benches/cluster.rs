//! Starting and tearing down a 50-process cluster.
//!
//! `cargo bench -p server --bench cluster [-- N]` starts N (default 50) real
//! processes through the driver's supervisor (each in its own process group, with
//! its own log file), then tears them down: SIGTERM to every group, the grace
//! period, SIGKILL. Two rounds: every process stops on SIGTERM; then one in five
//! ignores SIGTERM and keeps a grandchild, so the teardown must wait the grace
//! and kill. Reports per-process start overhead and teardown time, and checks
//! that teardown stays within grace + 1 s and that no process survives.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use server::drive::Supervisor;

const GRACE: Duration = Duration::from_secs(2);

fn survivors(marker: &str) -> usize {
    server::system::signals::pids_with_env("RUNBOARD_BENCH_MARK", marker).len()
}

async fn round(n: usize, stubborn_every: usize, label: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let marker = format!("{}-{label}", std::process::id());
    let env: BTreeMap<String, String> = [("RUNBOARD_BENCH_MARK".to_owned(), marker.clone())].into_iter().collect();
    let mut sup = Supervisor::new(tmp.path(), env);
    let plain = vec!["sleep".to_owned(), "600".to_owned()];
    let stubborn = vec!["sh".into(), "-c".into(), "trap '' TERM; sh -c \"trap '' TERM; sleep 600\" & sleep 600".into()];
    let t = Instant::now();
    for i in 0..n {
        let argv = if stubborn_every > 0 && i % stubborn_every == 0 { &stubborn } else { &plain };
        sup.spawn(&format!("p{i}"), argv, &BTreeMap::new()).unwrap();
    }
    let start = t.elapsed();
    // Let shells install their traps before the teardown.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let alive = survivors(&marker);
    let teardown = sup.terminate_all(GRACE).await;
    let left = survivors(&marker);
    let killed = sup.procs.iter().filter(|p| p.status.label() == "KILLED").count();
    println!(
        "{label:<22} {n} processes ({alive} incl. grandchildren): start {:.2} ms/process, teardown {:.2} s \
         (grace {} s; {killed} killed), {left} left",
        start.as_secs_f64() * 1000.0 / n as f64,
        teardown.as_secs_f64(),
        GRACE.as_secs()
    );
    assert!(teardown <= GRACE + Duration::from_secs(1), "teardown took {teardown:?}");
    assert_eq!(left, 0, "orphans survived");
}

fn main() {
    let n: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(50);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        round(n, 0, "all stop on SIGTERM").await;
        round(n, 5, "1 in 5 ignore SIGTERM").await;
    });
}
