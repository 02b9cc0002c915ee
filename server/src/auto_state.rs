//! The autopilot's state file (`auto/state.json`) and event log
//! (`auto/log.jsonl`), as far as the console's controls touch them: a stop
//! turns auto mode off. The file is replaced atomically; one that is missing,
//! empty, damaged or not an object is replaced by a fresh one rather than
//! refused (the autopilot loads it the same way).

use std::fs;
use std::io::Write;
use std::path::Path;

use serde_json::{json, Map, Value};

pub const STATE_FILE: &str = "auto/state.json";
pub const LOG_FILE: &str = "auto/log.jsonl";

/// Appends one `{at, event, detail}` line to the event log.
pub fn log_event(root: &Path, event: &str, detail: Value) -> std::io::Result<()> {
    fs::create_dir_all(root.join("auto"))?;
    let line = json!({ "at": crate::clock::now().to_rfc3339(), "event": event, "detail": detail }).to_string() + "\n";
    let mut f = fs::OpenOptions::new().create(true).append(true).open(root.join(LOG_FILE))?;
    f.write_all(line.as_bytes())
}

/// Sets `mode` to `off` and clears the current work, keeping everything else
/// the file holds; the log is written first, then the history copy. Returns
/// whether auto mode was on (or finishing) before.
pub fn turn_off(root: &Path, reason: &str) -> std::io::Result<bool> {
    let path = root.join(STATE_FILE);
    let mut state: Map<String, Value> = crate::fsread::read_regular(&path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default();
    let was_on = matches!(state.get("mode").and_then(Value::as_str), Some("on" | "finishing"));
    let detail = json!({ "reason": reason, "was": state.get("mode").cloned().unwrap_or(Value::Null) });
    log_event(root, "auto_off", detail.clone())?;
    state.entry("schema_version").or_insert(json!(1));
    state.insert("mode".into(), json!("off"));
    state.insert("current".into(), Value::Null);
    let history = state.entry("history").or_insert_with(|| json!([]));
    if let Value::Array(h) = history {
        h.push(json!({ "at": crate::clock::now().to_rfc3339(), "event": "auto_off", "detail": detail }));
        let excess = h.len().saturating_sub(50);
        h.drain(..excess);
    } else {
        *history = json!([]);
    }
    let bytes = serde_json::to_vec_pretty(&Value::Object(state)).map_err(std::io::Error::other)?;
    crate::atomic::write_atomic(&path, &bytes)?;
    Ok(was_on)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(v["settings"]["wait_minutes"], 5, "the rest is kept");
        for junk in [&b""[..], b"[1]", b"{torn"] {
            fs::write(root.join(STATE_FILE), junk).unwrap();
            assert!(!turn_off(root, "test").unwrap());
        }
        let log = fs::read_to_string(root.join(LOG_FILE)).unwrap();
        assert_eq!(log.lines().count(), 5);
        assert!(log.lines().all(|l| serde_json::from_str::<Value>(l).unwrap()["event"] == "auto_off"));
    }
}
