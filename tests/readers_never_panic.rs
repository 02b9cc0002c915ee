//! Property tests: every reader of run-directory files, fed truncated, garbage,
//! NaN-laden and wrong-typed bytes, returns a value (with problems named) and
//! never panics; whatever it returns is strict JSON with finite numbers.

use proptest::prelude::*;
use runboard::runview::ledger::{EventsLog, Incremental, LedgerState};
use runboard::runview::memory::MemoryLog;
use runboard::runview::summary::EventsTail;
use runboard::runview::view::{read_view, ViewInputs};
use runboard::runview::ProcessCheck;

/// Bytes that look like the files a run writes, cut and corrupted at random.
fn file_like() -> impl Strategy<Value = Vec<u8>> {
    let fragments = prop::sample::select(vec![
        "{\"round\":1,\"slot\":2,\"t\":NaN,\"max_abs_corr\":Infinity,\"outcome\":{\"stage\":\"gate\",\"refused\":\"x\"}}\n",
        "{\"round\":\"two\",\"slot\":[1],\"t\":\"high\"}\n",
        "{\"event\":\"open\",\"host\":\"h\",\"pid\":-4}\n",
        "{\"event\":\"plan\",\"round\":99999999999,\"slots\":[1,\"a\",null]}\n",
        "{\"event\":\"call_end\",\"call\":1e40,\"tokens\":-1}\n",
        "{\"event\":\"stop\",\"reason\":{\"nested\":true}}\n",
        "{\"rounds_written\":3,\"last_stop\":\"yes\"}",
        "{\"schema_version\":1,\"settings\":[1,2]}",
        "{\"round\":2,\"trial\":\"a\",\"parents\":[\"a\",7],\"graph\":{\"op\":[1],\"args\":[{\"op\":\"session_vwap\"}]},\"train_ic\":-Infinity}\n",
        "{\"round\":3,\"trial\":\"b\",\"parents\":\"a\",\"coverage\":\"x\",\"factor\":5,\"outcome\":{\"accepted\":true},\"t_threshold\":NaN}\n",
        "{\"event\":\"plan\",\"round\":2,\"slots\":[{\"slot\":1,\"parents\":[\"b\",1]},{\"slot\":\"x\"}]}\n",
        "{\"event\":\"resume\"}\n{\"event\":\"admission\",\"round\":3,\"t_threshold\":\"high\"}\n",
        "{\"datasets\":[{\"intraday\":true}],\"operator_file\":{\"operators\":[{\"name\":\"session_vwap\",\"class\":\"SessionAggregation\"},{\"bases\":7}]}}",
        "{\"nodes\":[{\"trial\":\"a\",\"parents\":[1]},{\"trial\":7}],\"pick_order\":[\"a\",\"a\",null]}",
        "{\"factors\":[{\"factor\":\"f1\",\"selected\":\"yes\"}],\"contribution\":{},\"holdout_opens\":[1,{\"at\":2}]}",
        "-Infinity", "NaN", "null", "[]", "{", "}", "\"", "\\", "\n", "\u{0}", "\u{fffd}", "🙂",
    ]);
    (prop::collection::vec(fragments, 0..40), any::<u16>(), prop::collection::vec(any::<u8>(), 0..64)).prop_map(
        |(parts, cut, noise)| {
            let mut bytes: Vec<u8> = parts.concat().into_bytes();
            let cut = usize::from(cut) % (bytes.len() + 1);
            bytes.truncate(cut);
            bytes.extend(noise);
            bytes
        },
    )
}

fn here(host: &str, pid: u32) -> ProcessCheck {
    ProcessCheck::OtherHost { host: host.to_owned(), pid }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_run_view_is_always_read(snapshot in file_like(), state in file_like(), ledger in file_like(), events in file_like(),
                                 memory in prop::collection::vec(".{0,200}", 0..4)) {
        let ledger = LedgerState::from_bytes(&ledger);
        let events = EventsLog::from_bytes(&events);
        let inputs = ViewInputs {
            name: "r".into(),
            path: "r".into(),
            snapshot: Ok(&snapshot),
            state: Some(Ok(&state)),
            ledger: Some(Ok(&ledger)),
            events: Some(Ok(&events)),
            call_files: vec![1, 2],
            call_files_after_state: Some(1),
            memory: &MemoryLog::from_texts(memory.into_iter().enumerate().map(|(i, m)| (i as u32, Ok(m))).collect()),
            folder_problems: Vec::new(),
            state_written: None,
            last_call_written: None,
            last_written: None,
            version: "v".into(),
        };
        let view = read_view(inputs, &here);
        // Every number the view holds is finite (NaN/Infinity read as None), so
        // what is served is strict JSON. (Checked on the values: serde_json would
        // write a NaN as null, hiding it.)
        let trials = view.rounds.iter().flat_map(|r| &r.trials);
        let numbers: Vec<Option<f64>> = trials
            .flat_map(|t| [t.t, t.train_ic, t.max_abs_corr, t.coverage, t.monotonicity, t.t_threshold])
            .chain(view.accepted.iter().flat_map(|a| [a.t, a.directed_t, a.max_abs_corr, a.t_threshold]))
            .chain(view.thresholds.iter().map(|th| th.t))
            .chain([view.correlation_limit])
            .collect();
        prop_assert!(numbers.iter().flatten().all(|f| f.is_finite()), "non-finite numbers read as None");
        // A round beyond the state's count is never shown.
        let written = view.row.rounds_written.unwrap_or(0);
        prop_assert!(view.rounds.iter().all(|r| r.round <= written));
        // What is read from the trials together is always read, too.
        let analysis = runboard::runview::analysis::analyse(&view);
        prop_assert!(serde_json::to_string(&analysis).is_ok());
        for t in view.rounds.iter().flat_map(|r| &r.trials).filter_map(|t| t.trial.as_deref()) {
            let lineage = runboard::runview::lineage::lineage(&view.rounds, t, view.admission_limits);
            prop_assert!(lineage.is_some_and(|l| l.ancestors.len() <= view.rounds.iter().map(|r| r.trials.len()).sum::<usize>()));
        }
        let page = runboard::runview::trials::trial_page(&view, &Default::default(), 0, 10);
        prop_assert!(page.trials.len() <= 10 && page.matching == page.total);
    }

    #[test]
    fn reports_and_trial_graphs_are_read_or_refused_with_a_reason(bytes in file_like(), round in 0u32..200) {
        use runboard::runview::acceptance::{parse, ReportEntry};
        match parse("holdout_abcdef.json", &bytes) {
            ReportEntry::Report(r) => {
                prop_assert_eq!(r.holdout, !r.opens.is_empty());
                prop_assert!(serde_json::to_string(&r).is_ok());
            }
            ReportEntry::Unreadable { reason, .. } => prop_assert!(!reason.is_empty()),
        }
        match runboard::runview::trialgraph::parse(round, &bytes) {
            Ok(g) => {
                let ranks: Vec<u32> = g.nodes.iter().filter_map(|n| n.rank).collect();
                prop_assert_eq!(ranks, (1..).take(g.nodes.iter().filter(|n| n.rank.is_some()).count()).collect::<Vec<u32>>());
            }
            Err(reason) => prop_assert!(!reason.is_empty()),
        }
    }

    #[test]
    fn an_events_tail_is_always_read(events in file_like()) {
        let (lines, covered) = runboard::runview::jsonl::complete_lines(&events);
        prop_assert!(covered <= events.len());
        let _ = EventsTail::from_lines(lines);
    }

    #[test]
    fn specs_are_parsed_or_refused_with_a_reason(bytes in file_like()) {
        if let Err(e) = runboard::console::spec::parse("s.json", &bytes) {
            prop_assert!(e.to_string().starts_with("s.json: "));
        }
    }
}

/// Huge inputs: a 16 MiB line, nesting far past serde_json's depth limit, a
/// 100,000-line ledger of one round. Each is read or reported, never a panic.
#[test]
fn huge_lines_deep_nesting_and_long_files_are_read_or_reported() {
    let mut bytes = b"{\"round\":1,\"code\":\"".to_vec();
    bytes.extend(std::iter::repeat_n(b'x', 16 << 20));
    bytes.extend_from_slice(b"\"}\n");
    bytes.extend(std::iter::repeat_n(b'[', 100_000));
    bytes.extend_from_slice(b"\n{\"round\":1,\"graph\":");
    bytes.extend(std::iter::repeat_n(b"{\"op\":\"a\",\"args\":[".as_slice(), 5_000).flatten());
    bytes.extend_from_slice(b"\n");
    for slot in 0..100_000 {
        bytes.extend_from_slice(format!("{{\"round\":1,\"slot\":{slot},\"t\":NaN}}\n").as_bytes());
    }
    let ledger = LedgerState::from_bytes(&bytes);
    assert_eq!(ledger.trial_count(), 100_001, "the huge line and every short one are read");
    assert_eq!(ledger.problems.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [2, 3], "{:?}", ledger.problems);
    assert!(ledger.problems[0].1.contains("recursion limit"), "{}", ledger.problems[0].1);
    let _ = runboard::runview::acceptance::parse("a.json", &bytes);
    assert!(runboard::runview::trialgraph::parse(1, &bytes).is_err());
    let events = EventsLog::from_bytes(&bytes);
    assert_eq!(events.count, 100_001);
}
