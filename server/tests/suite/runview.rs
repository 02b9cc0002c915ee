//! The run list read from real folders: odd trees, the cache, read-only reading.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::Path;
use std::time::{Duration, Instant};

use runboard::runview::{RunList, RunStatus};
use server::runview::RunIndex;

fn paths(index: &RunIndex) -> Vec<String> {
    let mut p: Vec<String> = index.list().runs.into_iter().map(|r| r.path).collect();
    p.sort();
    p
}

#[tokio::test]
async fn a_warm_relist_of_an_unchanged_tree_parses_no_file() {
    let (_tmp, root) = common::campaign().await;
    let index = RunIndex::new(&root);
    let first = index.list();
    let cold = index.files_parsed();
    assert!(cold >= 5, "cold list parsed {cold} files");
    let second = index.list();
    assert_eq!(index.files_parsed(), cold, "warm list re-parsed files");
    assert_eq!(first.version, second.version);
    // One run writes: only its files are parsed again.
    common::write_run(&root.join("runs/a/first"), 3, 1).await;
    let third = index.list();
    let reparsed = index.files_parsed() - cold;
    assert!((1..=3).contains(&reparsed), "re-parsed {reparsed} files for one changed run");
    assert_ne!(third.version, second.version);
}

#[tokio::test]
async fn a_restarted_index_opens_only_what_changed_since_its_list_cache_was_written() {
    let (tmp, root) = common::campaign().await;
    let file = tmp.path().join("data/list-cache/c.json");
    let first = RunIndex::new(&root).with_list_cache(&file);
    let before = first.list();
    assert!(first.files_parsed() >= 5);
    // Written in the background.
    first.flush_list_cache();
    assert!(file.exists());
    // "A restart": a new index over the same root and file.
    let again = RunIndex::new(&root).with_list_cache(&file);
    let listed = again.list();
    assert_eq!(listed, RunList { generated_at: listed.generated_at, ..before.clone() });
    assert_eq!(again.files_parsed(), 0, "nothing changed: no run file opened");
    common::write_run(&root.join("runs/a/first"), 3, 1).await;
    let third = RunIndex::new(&root).with_list_cache(&file);
    let after = third.list();
    assert!((1..=3).contains(&third.files_parsed()), "only the changed run's files: {}", third.files_parsed());
    assert_ne!(after.version, before.version);
    third.flush_list_cache();
    // A damaged or foreign file is not used, and the list is the same.
    for junk in [&b"{not json"[..], b"[]", b"{\"schema_version\": 99}"] {
        std::fs::write(&file, junk).unwrap();
        let fresh = RunIndex::new(&root).with_list_cache(&file);
        assert_eq!(fresh.list().version, after.version);
        assert!(fresh.files_parsed() >= 5);
        fresh.flush_list_cache(); // it saves a good file again: not over the next junk
    }
}

#[tokio::test]
async fn a_starting_server_answers_from_its_list_cache_at_once_then_from_the_files() {
    let (tmp, root) = common::campaign().await;
    let file = tmp.path().join("data/list-cache/c.json");
    let first = RunIndex::new(&root).with_list_cache(&file);
    let saved = first.list();
    first.flush_list_cache();
    // Written while no server ran: the cache no longer says what the files do.
    common::write_run(&root.join("runs/a/first"), 5, 9).await;
    let rounds = |l: &RunList| l.runs.iter().find(|r| r.path == "runs/a/first").and_then(|r| r.rounds_written);
    let index = std::sync::Arc::new(RunIndex::new(&root).with_list_cache(&file).watched());
    // keep_current's first step, alone: the list as the cache has it, said so.
    assert!(index.answer_from_cache());
    let cached = index.list();
    assert!(cached.from_cache.is_some(), "the rows are said to come from the cache");
    assert_eq!(rounds(&cached), rounds(&saved), "the cache's rows, not yet checked");
    assert_eq!(cached.runs.len(), saved.runs.len());
    assert_eq!(index.list_version(), cached.version, "the version of the list answered");
    assert_ne!(cached.version, saved.version, "its own version, so the checked list is news");
    assert_eq!(index.files_parsed(), 0, "nothing opened yet");
    // The rest of the start, as a server runs it: the walk checks the cache.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let keeper = {
        let (index, stop) = (index.clone(), stop.clone());
        std::thread::spawn(move || index.keep_current(&stop))
    };
    common::wait_for("the checked list", Duration::from_secs(20), || index.list().from_cache.is_none());
    let checked = index.list();
    assert_eq!(rounds(&checked), Some(5), "the run written since the cache, read from its files");
    assert_ne!(checked.version, cached.version);
    assert_eq!(index.list_version(), checked.version);
    // Kept current from the watch afterwards: a new run is listed.
    common::wait_for("the watch", Duration::from_secs(20), || index.is_watching());
    common::write_run(&root.join("runs/c/new"), 1, 2).await;
    common::wait_for("the new run listed", Duration::from_secs(20), || {
        index.list().runs.iter().any(|r| r.path == "runs/c/new")
    });
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    keeper.join().unwrap();
}

#[tokio::test]
async fn a_run_directorys_own_subfolders_are_not_searched_and_hidden_folders_are_skipped() {
    let (_tmp, root) = common::campaign().await;
    common::write_run(&root.join("runs/a/first/nested-copy"), 1, 3).await;
    common::write_run(&root.join(".git/runs/hidden"), 1, 4).await;
    assert_eq!(paths(&RunIndex::new(&root)), ["runs/a/first", "runs/b/deeper/second", "runs/broken"]);
}

#[tokio::test]
async fn symlink_loops_end_and_escapes_are_reported() {
    let (tmp, root) = common::campaign().await;
    symlink(&root, root.join("runs/loop")).unwrap();
    symlink(root.join("runs/b"), root.join("runs/b/deeper/again")).unwrap();
    let outside = tmp.path().join("outside");
    common::write_run(&outside.join("escaped"), 1, 5).await;
    symlink(&outside, root.join("runs/outside-link")).unwrap();
    symlink(tmp.path().join("no-such-folder"), root.join("runs/dangling")).unwrap();
    let started = Instant::now();
    let list = RunIndex::new(&root).list();
    assert!(started.elapsed() < Duration::from_secs(5));
    let mut p: Vec<&str> = list.runs.iter().map(|r| r.path.as_str()).collect();
    p.sort();
    assert_eq!(p, ["runs/a/first", "runs/b/deeper/second", "runs/broken"], "each real run once, none from outside");
    let skipped: BTreeMap<&str, &str> = list.skipped.iter().map(|s| (s.path.as_str(), s.reason.as_str())).collect();
    assert_eq!(skipped.get("runs/outside-link"), Some(&"symlink leads outside the campaign root"));
    assert!(skipped.get("runs/dangling").is_some_and(|r| r.starts_with("broken symlink")), "{skipped:?}");
}

#[tokio::test]
async fn files_that_are_not_regular_degrade_only_their_run() {
    let (_tmp, root) = common::campaign().await;
    // A FIFO named snapshot.json would block a naive reader forever.
    let fifo_run = root.join("runs/fifo");
    std::fs::create_dir_all(&fifo_run).unwrap();
    nix::unistd::mkfifo(&fifo_run.join("snapshot.json"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    // A folder where the state file should be.
    common::write_run(&root.join("runs/dir-state"), 1, 6).await;
    std::fs::remove_file(root.join("runs/dir-state/state.json")).unwrap();
    std::fs::create_dir(root.join("runs/dir-state/state.json")).unwrap();
    let list = RunIndex::new(&root).list();
    let status = |name: &str| list.runs.iter().find(|r| r.name == name).unwrap().status.clone();
    assert_eq!(status("fifo"), RunStatus::Unreadable { reason: "snapshot.json: not a regular file (a FIFO)".into() });
    assert_eq!(
        status("dir-state"),
        RunStatus::Unreadable { reason: "state.json: not a regular file (a folder)".into() }
    );
    // Stopped after every planned round: finished.
    assert_eq!(status("first"), RunStatus::Finished { reason: Some("finished all rounds".into()) });
}

#[tokio::test]
async fn the_latest_open_is_found_behind_a_long_events_tail() {
    let (_tmp, root) = common::campaign().await;
    let run = root.join("runs/a/first");
    // Resume, then a long stretch of phase events (far more than one tail chunk).
    let mut text = String::from("{\"event\":\"resume\",\"host\":\"elsewhere\",\"pid\":42}\n");
    for i in 0..5_000 {
        text.push_str(&format!("{{\"event\":\"phase\",\"phase\":\"p{i}\"}}\n"));
    }
    let mut f = std::fs::OpenOptions::new().append(true).open(run.join("events.jsonl")).unwrap();
    std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    let row = RunIndex::new(&root).list().runs.into_iter().find(|r| r.name == "first").unwrap();
    assert_eq!(row.status, RunStatus::Running, "the resume after the stop counts");
    assert_eq!(row.phase.as_deref(), Some("p4999"));
    assert_eq!(
        row.process,
        runboard::runview::ProcessCheck::OtherHost { host: "elsewhere".into(), pid: 42 },
        "another host's process is unknown, never gone"
    );
}

/// Every file's bytes and modification time under `dir`. A writer's temporary
/// files (dot-files, renamed away at any moment) are not part of the run.
fn fingerprint(dir: &Path) -> BTreeMap<String, (Vec<u8>, i64, i64)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let p = e.path();
            let Ok(md) = std::fs::symlink_metadata(&p) else { continue };
            if md.is_dir() {
                stack.push(p.clone());
                out.insert(p.display().to_string(), (Vec::new(), md.mtime(), md.mtime_nsec()));
            } else if let Ok(bytes) = std::fs::read(&p) {
                out.insert(p.display().to_string(), (bytes, md.mtime(), md.mtime_nsec()));
            }
        }
    }
    out
}

#[tokio::test]
async fn listing_changes_no_byte_and_no_mtime() {
    let (_tmp, root) = common::campaign().await;
    let before = fingerprint(&root);
    let index = RunIndex::new(&root);
    for _ in 0..3 {
        index.list();
        index.list_version();
        index.find("first");
    }
    assert_eq!(fingerprint(&root), before);
}

#[tokio::test]
async fn find_run_by_name_or_relative_path() {
    let (_tmp, root) = common::campaign().await;
    let index = RunIndex::new(&root);
    assert_eq!(index.find("second"), Some(root.join("runs/b/deeper/second")));
    assert_eq!(index.find("runs/a/first"), Some(root.join("runs/a/first")));
    assert_eq!(index.find("nope"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_while_a_writer_writes_changes_no_byte_and_no_mtime() {
    use server::demo::simulate::{simulate_run, SimOptions};
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let dir = root.join("live");
    let opts = SimOptions { rounds: 6, slots: 2, step: Duration::from_millis(60), ..SimOptions::default() };
    let writer_dir = dir.clone();
    let writer = tokio::spawn(async move { simulate_run(&writer_dir, &opts, std::future::pending()).await });
    while !dir.join("snapshot.json").exists() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let index = RunIndex::new(&root);
    let (mut quiet_reads, mut views) = (0, 0);
    while !writer.is_finished() {
        let v1 = index.run_version(&dir);
        let before = fingerprint(&dir);
        let (_, view) = index.view("live").expect("the live run");
        index.list();
        let after = fingerprint(&dir);
        views += 1;
        // Every view is consistent however the writer is interleaved.
        let written = view.row.rounds_written.unwrap_or(0);
        assert!(view.rounds.iter().all(|r| r.round <= written), "a round beyond the state was shown");
        assert!(view.problems.is_empty(), "{:?}", view.problems);
        // When the writer did not write meanwhile, reading changed nothing.
        if index.run_version(&dir) == v1 {
            assert_eq!(before, after, "reading changed the run directory");
            quiet_reads += 1;
        }
    }
    writer.await.unwrap().unwrap();
    assert!(quiet_reads >= 5, "only {quiet_reads} of {views} reads fell between writes");
}

#[tokio::test]
async fn a_reread_reads_only_what_was_appended_and_starts_over_when_a_file_is_replaced_or_shrinks() {
    use server::runview::{read_run, refresh, ProcessProbe, RunCursors, Within};
    let (_tmp, root) = common::campaign().await;
    let dir = root.join("runs/a/first");
    let within = Within::new(&root);
    let probe = ProcessProbe::this_host();
    let mut cursors = RunCursors::default();
    let first = read_run(&within, &dir, "first", "runs/a/first", &probe, &mut cursors);
    let trials = |v: &runboard::runview::view::RunView| v.rounds.iter().map(|r| r.trials.len()).sum::<usize>();
    assert_eq!(refresh(&within, &dir, &mut cursors), 0, "nothing appended, nothing read");

    let line = "{\"round\":1,\"slot\":9,\"t\":1.0,\"outcome\":{\"stage\":\"gate\",\"refused\":\"x\"}}\n";
    let mut f = std::fs::OpenOptions::new().append(true).open(dir.join("ledger.jsonl")).unwrap();
    std::io::Write::write_all(&mut f, line.as_bytes()).unwrap();
    assert_eq!(refresh(&within, &dir, &mut cursors), line.len() as u64, "only the appended line is read");
    let grown = read_run(&within, &dir, "first", "runs/a/first", &probe, &mut cursors);
    assert_eq!(trials(&grown), trials(&first) + 1);

    // A torn append is not consumed until its newline arrives.
    std::io::Write::write_all(&mut f, b"{\"round\":1,\"slot\":10,").unwrap();
    assert_eq!(refresh(&within, &dir, &mut cursors), 0);
    std::io::Write::write_all(&mut f, b"\"t\":2.0}\n").unwrap();
    assert!(refresh(&within, &dir, &mut cursors) > 0);

    // Replaced by a shorter file: read again from the start.
    std::fs::write(dir.join("ledger.jsonl.new"), line).unwrap();
    std::fs::rename(dir.join("ledger.jsonl.new"), dir.join("ledger.jsonl")).unwrap();
    let replaced = read_run(&within, &dir, "first", "runs/a/first", &probe, &mut cursors);
    assert_eq!(trials(&replaced), 1);
    // Shrunk in place: also read again.
    std::fs::write(dir.join("ledger.jsonl"), "").unwrap();
    let emptied = read_run(&within, &dir, "first", "runs/a/first", &probe, &mut cursors);
    assert_eq!(trials(&emptied), 0);
}

#[tokio::test]
async fn a_simulated_run_reads_back_plans_accepted_factors_intraday_graphs_and_reports() {
    use runboard::runview::admission::ThresholdSource;
    use runboard::runview::intraday::is_intraday;
    use runboard::runview::plans::PlanSource;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    common::write_run(&dir, 8, 11).await;
    let ledger = std::fs::read_to_string(dir.join("ledger.jsonl")).unwrap();
    assert!(ledger.contains("NaN"), "the simulator writes raw NaN as a Python writer does");
    let index = RunIndex::new(tmp.path());
    let (_, v) = index.view("run").unwrap();
    assert!(v.problems.is_empty(), "{:?}", v.problems);

    // Thresholds come from the admission events, and rise round by round.
    assert_eq!(v.thresholds.len(), 8);
    assert!(v.thresholds.iter().all(|t| t.source == Some(ThresholdSource::AdmissionEvent)));
    assert!(v.thresholds.windows(2).all(|w| w[0].t < w[1].t));
    // Each accepted factor carries its round's threshold and cleared it in its direction.
    assert!(!v.accepted.is_empty());
    for a in &v.accepted {
        let th = v.thresholds.iter().find(|t| t.round == a.round).unwrap().t;
        assert_eq!(a.t_threshold, th);
        assert!(a.directed_t.unwrap() > th.unwrap(), "{a:?}");
    }
    // Intraday: the snapshot has an intraday dataset and two session operators.
    assert_eq!(v.session_operators.iter().map(String::as_str).collect::<Vec<_>>(), ["session_range", "session_vwap"]);
    let trials: Vec<_> = v.rounds.iter().flat_map(|r| r.trials.iter()).collect();
    let intraday = trials.iter().filter(|t| is_intraday(t, &v.session_operators)).count();
    assert!(intraday > 0 && intraday < trials.len(), "{intraday} of {}", trials.len());
    let uses_session_op = |t: &&&runboard::runview::view::TrialView| t.code.as_deref().unwrap().contains("session_");
    assert!(trials.iter().filter(|t| is_intraday(t, &v.session_operators)).all(|t| uses_session_op(&t)));
    // Plans from events, with the parents the planner picked from round 2 on.
    assert_eq!(v.plans.len(), 8);
    assert!(v.plans.iter().all(|p| p.source == PlanSource::Event));
    assert!(v.plans[1].slots.iter().any(|s| s.picked.as_ref().is_some_and(|p| !p.is_empty())));
    assert_eq!(v.admission_limits.source, runboard::runview::admission::LimitsSource::LastOpen);

    let graphs = server::runview::read_trial_graphs(index.within(), &dir);
    assert_eq!(graphs.iter().map(|g| g.round()).collect::<Vec<_>>(), (2..=8).collect::<Vec<_>>());
    let reports = server::runview::read_reports(index.within(), &dir);
    assert_eq!(reports.len(), 3);
}

#[tokio::test]
async fn a_crashed_then_resumed_run_drops_the_torn_round_and_its_plan() {
    use server::demo::simulate::{simulate_run, SimEnd, SimOptions};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let crash = SimOptions { rounds: 5, slots: 2, step: Duration::ZERO, crash_after: Some(2), ..SimOptions::default() };
    assert_eq!(simulate_run(&dir, &crash, std::future::pending()).await.unwrap(), SimEnd::Crashed);
    let index = RunIndex::new(tmp.path());
    let (_, crashed) = index.view("run").unwrap();
    assert_eq!(crashed.round_counts.len(), 2, "the torn round 3 is not shown");
    assert_eq!(crashed.plans.iter().map(|p| p.round).collect::<Vec<_>>(), [1, 2, 3], "round 3 was planned");
    // The rounds table (`GET /api/runs/{name}/rounds`) holds written rounds only.
    let table = crashed.rounds_summary();
    assert_eq!(table.plans.iter().map(|p| p.round).collect::<Vec<_>>(), [1, 2], "no plan of an unwritten round");
    assert!(table.thresholds.iter().all(|t| t.round <= 2), "{:?}", table.thresholds);
    assert!(crashed.problems.is_empty(), "a torn last line is not a problem: {:?}", crashed.problems);

    // Resumed: round 3's old plan is dropped the moment the resume is written,
    // and the round is planned again.
    let resume = SimOptions { resume: true, crash_after: None, ..crash };
    assert_eq!(simulate_run(&dir, &resume, std::future::pending()).await.unwrap(), SimEnd::Finished);
    let (_, resumed) = index.view("run").unwrap();
    assert_eq!(resumed.round_counts.len(), 5);
    assert_eq!(resumed.plans.iter().map(|p| p.round).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
}

#[tokio::test]
async fn the_seeds_reader_list_runs_find_run_run_version_and_run_view_read() {
    use runboard::runview::view::RunView;
    use server::runview::{find_run, list_runs, run_version, ReadRunView};
    let (_tmp, root) = common::campaign().await;
    let list = list_runs(&root);
    assert_eq!(list.runs.len(), 3);
    let dir = find_run(&root, "second").expect("found by folder name");
    assert_eq!(find_run(&root, "runs/b/deeper/second"), Some(dir.clone()));
    assert_eq!(find_run(&root, "nope"), None);
    let version = run_version(&dir);
    let view = RunView::read(&dir);
    assert_eq!(view.row.version, version, "the view says which version it read");
    assert_eq!(view.round_counts.len(), 3);
    // Any write changes the version; reading does not.
    assert_eq!(run_version(&dir), version);
    std::fs::write(dir.join("memory/round_09.md"), "later\n").unwrap();
    assert_ne!(run_version(&dir), version);
}

#[tokio::test]
async fn a_run_without_events_counts_the_calls_of_its_round_in_progress_from_call_files() {
    use runboard::runview::view::RunView;
    use server::runview::ReadRunView;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("old-style");
    common::write_run(&dir, 2, 4).await;
    std::fs::remove_file(dir.join("events.jsonl")).unwrap();
    let before = RunView::read(&dir);
    assert!(!before.has_events && before.in_progress.is_none());
    assert_eq!(before.calls_in_progress, Some(0), "every call file predates the state's last write");
    // Two calls of the next round end after the state was last written.
    std::thread::sleep(Duration::from_millis(20));
    for n in [901, 902] {
        std::fs::write(dir.join(format!("calls/{n:04}.json")), "{\"call\": 1}").unwrap();
    }
    let during = RunView::read(&dir);
    assert_eq!(during.calls_in_progress, Some(2));
    assert_eq!(during.calls_total, before.calls_total + 2, "without events, calls are counted from their files");
}

/// Asks `f` until it holds (bounded): file-system events arrive asynchronously.
fn eventually(what: &str, f: impl FnMut() -> bool) {
    common::wait_for(what, std::time::Duration::from_secs(10), f);
}

#[tokio::test]
async fn a_watched_index_rereads_only_what_changed_and_walks_when_runs_come_or_go() {
    let (_tmp, root) = common::campaign().await;
    let index = RunIndex::new(&root).watched();
    eventually("the watch is set up", || index.is_watching());
    let first = index.list();
    let v1 = index.list_version();
    assert_eq!(v1, first.version, "the list and its version agree");
    assert!(index.walks() >= 1);
    // The folders a walk found are watched from a thread of their own; once
    // they are, one more walk (here) catches what was written meanwhile.
    eventually("the folders watched", || index.is_watching());
    index.list();
    index.list_version();
    let walks = index.walks();
    // Nothing changed: neither the list nor its version walks again.
    assert_eq!(index.list().version, v1);
    assert_eq!(index.list_version(), v1);
    assert_eq!(index.walks(), walks, "answered from the watch, no walk");

    // A run writes: its row and the version change, still without a walk.
    let dir = root.join("runs/b/deeper/second");
    let mut f = std::fs::OpenOptions::new().append(true).open(dir.join("events.jsonl")).unwrap();
    std::io::Write::write_all(&mut f, b"{\"event\":\"phase\",\"phase\":\"plan\",\"round\":9}\n").unwrap();
    let now = server::runview::run_version(&dir);
    eventually("the new version", || index.list_version() != v1);
    eventually("the row's new version", || index.list().runs.iter().any(|r| r.name == "second" && r.version == now));
    assert_eq!(index.list_version(), index.list().version);
    assert_eq!(index.walks(), walks, "a write inside a known run is read alone");

    // A run appears, and one goes: the root is walked, and the list says so.
    common::write_run(&root.join("runs/c/third"), 1, 9).await;
    eventually("the new run", || index.list().runs.iter().any(|r| r.name == "third"));
    std::fs::remove_dir_all(root.join("runs/a/first")).unwrap();
    eventually("the removed run", || index.list().runs.iter().all(|r| r.name != "first"));
    eventually("the version over what is there", || index.list_version() == index.list().version);
    assert!(index.walks() > walks);
}
