//! The autopilot's state file (`auto/state.json`) and event log
//! (`auto/log.jsonl`), as far as the console's controls touch them: a stop
//! turns auto mode off. The file is replaced atomically; one that is missing,
//! empty, damaged or not an object is replaced by a fresh one rather than
//! refused (the autopilot loads it the same way).

use std::fs;
use std::io::Write;
use std::path::Path;

use runboard::auto::{AutoEvent, Decision, LogEvent};
use serde_json::json;

pub const STATE_FILE: &str = "auto/state.json";
pub const LOG_FILE: &str = "auto/log.jsonl";

/// Appends one event, happening now, to the event log.
pub fn log_now(root: &Path, event: AutoEvent) -> std::io::Result<()> {
    log_event_at(root, &LogEvent { at: crate::system::clock::now(), event })
}

/// Appends one event (as the tick made it, its own time) to the log.
pub fn log_event_at(root: &Path, event: &LogEvent) -> std::io::Result<()> {
    fs::create_dir_all(root.join("auto"))?;
    let line = serde_json::to_string(event).map_err(std::io::Error::other)? + "\n";
    let mut f = fs::OpenOptions::new().create(true).append(true).open(root.join(LOG_FILE))?;
    f.write_all(line.as_bytes())
}

/// Loads the state file (repaired when it must be; never fails).
pub fn load(root: &Path) -> runboard::auto::Loaded {
    let bytes = crate::files::fsread::read_regular(&root.join(STATE_FILE)).ok();
    let loaded = runboard::auto::load(bytes.as_deref());
    for r in &loaded.repaired {
        tracing::warn!("{STATE_FILE}: {r}");
    }
    loaded
}

/// Loads the state to change and save it: any repair is logged as one
/// `state_repaired` event (`detail: {repairs: [...]}`) before the repaired
/// state is saved over the damaged file, so what was lost is on record.
pub fn load_to_save(root: &Path) -> runboard::auto::AutoState {
    let loaded = load(root);
    if !loaded.repaired.is_empty() {
        if let Err(e) = log_now(root, AutoEvent::StateRepaired { repairs: loaded.repaired.clone() }) {
            tracing::warn!("{LOG_FILE}: the state's repairs could not be logged: {e}");
        }
    }
    loaded.state
}

/// Replaces the state file whole, atomically (a temporary file a killed
/// writer left beside it is removed).
pub fn save(root: &Path, state: &runboard::auto::AutoState) -> std::io::Result<()> {
    fs::create_dir_all(root.join("auto"))?;
    let bytes = serde_json::to_vec_pretty(state).map_err(std::io::Error::other)?;
    let path = root.join(STATE_FILE);
    crate::files::atomic::write_atomic(&path, &bytes)?;
    crate::files::atomic::sweep_stale_temps(&path);
    Ok(())
}

/// The crash test's writer (`runboard __auto-save-loop`): saves the state
/// over and over, its count in `last_decision`, continuing from the count
/// the file holds, until it reaches `until`.
pub fn save_loop(root: &Path, until: u64) -> anyhow::Result<()> {
    let mut state = load(root).state;
    let saves = |d: &Decision| d.verdict.strip_prefix("save ").and_then(|n| n.parse::<u64>().ok());
    let mut n = state.last_decision.as_ref().and_then(saves).unwrap_or(0);
    while n < until {
        n += 1;
        state.last_decision = Some(Decision { at: crate::system::clock::now(), verdict: format!("save {n}") });
        // Something of size in it, so a torn write would show.
        state.settings = json!({ "label_prefix": format!("save-{n}"), "models": vec!["m"; (n % 50) as usize] });
        save(root, &state)?;
    }
    Ok(())
}

/// Auto mode off and the current work cleared, keeping everything else the
/// file holds: the event is logged first, then kept in the history, then the
/// state saved. Returns whether auto mode was on (or finishing) before.
pub fn turn_off(root: &Path, reason: &str) -> std::io::Result<bool> {
    let mut state = load_to_save(root);
    let (was_on, event) = state.turn_off(reason, crate::system::clock::now());
    log_event_at(root, &event)?;
    state.remember(event);
    save(root, &state)?;
    Ok(was_on)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn a_stop_turns_auto_off_whatever_the_file_held() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(!turn_off(root, "test").unwrap(), "a missing file is made, off");
        fs::write(
            root.join(STATE_FILE),
            br#"{"mode": "on", "settings": {"wait_minutes": 5}, "current": {"unit": "u"}}"#,
        )
        .unwrap();
        assert!(turn_off(root, "test").unwrap());
        let v: Value = serde_json::from_slice(&fs::read(root.join(STATE_FILE)).unwrap()).unwrap();
        assert_eq!((v["mode"].as_str(), v["current"].is_null()), (Some("off"), true));
        assert_eq!(v["history"][0]["event"], "auto_off");
        assert_eq!(v["settings"]["wait_minutes"], 5, "the rest is kept");
        // The repair (a `current` without its fields) is on record in the log.
        let log = fs::read_to_string(root.join(LOG_FILE)).unwrap();
        let repaired: Vec<Value> = log
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| e["event"] == "state_repaired")
            .collect();
        assert_eq!(repaired.len(), 1, "{log}");
        assert!(repaired[0]["detail"]["repairs"][0].as_str().unwrap().starts_with("current"), "{log}");
        for junk in [&b""[..], b"[1]", b"{torn"] {
            fs::write(root.join(STATE_FILE), junk).unwrap();
            assert!(!turn_off(root, "test").unwrap());
        }
        let log = fs::read_to_string(root.join(LOG_FILE)).unwrap();
        let events: Vec<String> = log
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(events.iter().filter(|e| *e == "auto_off").count(), 5, "{events:?}");
        // Each damaged file's repair is on record before its stop.
        assert_eq!(events.iter().filter(|e| *e == "state_repaired").count(), 4, "{events:?}");
    }
}
