//! Property tests: every reader of run-directory files, fed truncated, garbage,
//! NaN-laden and wrong-typed bytes, returns a value (with problems named) and
//! never panics; whatever it returns is strict JSON with finite numbers.

use proptest::prelude::*;
use runboard::runview::ledger::{EventsLog, Incremental, LedgerState};
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
            memory: memory.into_iter().enumerate().map(|(i, m)| (i as u32, Ok(m))).collect(),
            state_written: None,
            last_call_written: None,
            last_written: None,
            version: "v".into(),
        };
        let view = read_view(inputs, &here);
        let text = serde_json::to_string(&view).expect("a view always serialises");
        prop_assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok(), "strict JSON");
        let numbers = view.rounds.iter().flat_map(|r| &r.trials).flat_map(|t| [t.t, t.max_abs_corr]);
        prop_assert!(numbers.flatten().all(f64::is_finite), "non-finite numbers read as None");
        // A round beyond the state's count is never shown.
        let written = view.row.rounds_written.unwrap_or(0);
        prop_assert!(view.rounds.iter().all(|r| r.round <= written));
    }

    #[test]
    fn an_events_tail_is_always_read(events in file_like()) {
        let (lines, covered) = runboard::runview::jsonl::complete_lines(&events);
        prop_assert!(covered <= events.len());
        let _ = EventsTail::from_lines(lines);
    }

    #[test]
    fn specs_are_parsed_or_refused_with_a_reason(bytes in file_like()) {
        if let Err(e) = runboard::spec::parse("s.json", &bytes) {
            prop_assert!(e.to_string().starts_with("s.json: "));
        }
    }
}
