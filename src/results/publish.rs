//! Publishing the evidence: a push runs the command `campaign.toml` sets
//! (`[publish] command`), with a time limit, one at a time, and is recorded;
//! the status says what was last published, when, its provenance hash, and
//! what changed since. Pure: records and the current export's provenance in.

use serde::{Deserialize, Serialize};

use crate::basics::timefmt::Timestamp;

/// Where a push's files live, under the campaign root.
pub const PUBLISH_DIR: &str = ".runboard/publish";
/// The latest push, whatever its end.
pub const LAST_FILE: &str = ".runboard/publish/last.json";
/// The latest push that succeeded: what is published.
pub const PUBLISHED_FILE: &str = ".runboard/publish/published.json";
/// Held (locked) while a push runs, by whichever process runs it.
pub const LOCK_FILE: &str = ".runboard/publish/lock";
/// The push running now: when it started.
pub const RUNNING_FILE: &str = ".runboard/publish/running.json";
/// The most of a push's output kept (its end).
pub const OUTPUT_KEPT: usize = 64 * 1024;

/// One push, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PushRecord {
    pub schema_version: u32,
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    pub started_at: Timestamp,
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    pub ended_at: Timestamp,
    pub command: Vec<String>,
    /// Its exit code; none when it did not exit by itself.
    pub exit_code: Option<i32>,
    /// It ran past the time limit and was killed.
    pub timed_out: bool,
    /// Why it could not run, when it could not.
    pub error: Option<String>,
    /// Its standard output and error, interleaved as written, the last
    /// [`OUTPUT_KEPT`] bytes.
    pub output: String,
    /// The export it published: its content hash and run sets.
    pub content_hash: String,
    pub run_sets: Vec<String>,
}

impl PushRecord {
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && self.error.is_none()
    }

    /// The push's end in words.
    pub fn words(&self) -> String {
        match (&self.error, self.timed_out, self.exit_code) {
            (Some(e), _, _) => format!("could not run: {e}"),
            (None, true, _) => "ran past its time limit and was killed".into(),
            (None, false, Some(0)) => "published".into(),
            (None, false, Some(c)) => format!("failed with exit {c}"),
            (None, false, None) => "ended by a signal".into(),
        }
    }
}

/// Keeps the end of a push's output: at most [`OUTPUT_KEPT`] bytes, cut at
/// a character boundary, said when cut.
pub fn kept_output(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= OUTPUT_KEPT {
        return text.into_owned();
    }
    let mut from = text.len() - OUTPUT_KEPT;
    while !text.is_char_boundary(from) {
        from += 1;
    }
    format!("[… the first {from} bytes left out …]\n{}", &text[from..])
}

/// A push running now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Running {
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    pub started_at: Timestamp,
}

/// `GET /api/publish/status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PublishStatus {
    /// The command a push runs (none: `[publish] command` is not set).
    pub command: Option<Vec<String>>,
    pub timeout_s: f64,
    pub running: Option<Running>,
    /// The latest push, whatever its end.
    pub last: Option<PushRecord>,
    /// The latest push that succeeded.
    pub published: Option<PushRecord>,
    /// The evidence export as it would be published now.
    pub current_hash: String,
    pub current_run_sets: Vec<String>,
    /// The export differs from what was published (or nothing was).
    pub changed: bool,
    /// Run sets counted now that the published export did not count…
    pub new_run_sets: Vec<String>,
    /// …and the other way round.
    pub dropped_run_sets: Vec<String>,
    /// The status in words.
    pub words: String,
}

/// The status from the records and the export as it is now.
pub fn status(
    command: Option<Vec<String>>,
    timeout_s: f64,
    running: Option<Running>,
    last: Option<PushRecord>,
    published: Option<PushRecord>,
    current_hash: String,
    current_run_sets: Vec<String>,
) -> PublishStatus {
    let (changed, new_run_sets, dropped_run_sets) = match &published {
        Some(p) => (
            p.content_hash != current_hash,
            current_run_sets.iter().filter(|r| !p.run_sets.contains(r)).cloned().collect(),
            p.run_sets.iter().filter(|r| !current_run_sets.contains(r)).cloned().collect(),
        ),
        None => (true, current_run_sets.clone(), Vec::new()),
    };
    let words = match (&command, &running, &published) {
        (None, _, _) => "Publishing is not set up: set [publish] command in campaign.toml.".to_owned(),
        (_, Some(r), _) => format!("A push is running since {}.", r.started_at.to_display()),
        (_, None, None) => "Nothing has been published yet.".to_owned(),
        (_, None, Some(p)) if !changed => {
            format!("Published {} (hash {}); nothing changed since.", p.ended_at.to_display(), p.content_hash)
        }
        (_, None, Some(p)) => format!(
            "Published {} (hash {}); the evidence changed since ({} new run set(s), {} no longer counted).",
            p.ended_at.to_display(),
            p.content_hash,
            new_run_sets.len(),
            dropped_run_sets.len()
        ),
    };
    PublishStatus {
        command,
        timeout_s,
        running,
        last,
        published,
        current_hash,
        current_run_sets,
        changed,
        new_run_sets,
        dropped_run_sets,
        words,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(hash: &str, run_sets: &[&str], exit: Option<i32>) -> PushRecord {
        PushRecord {
            schema_version: 1,
            started_at: Timestamp::from_millis(1_000),
            ended_at: Timestamp::from_millis(2_000),
            command: vec!["true".into()],
            exit_code: exit,
            timed_out: false,
            error: None,
            output: String::new(),
            content_hash: hash.into(),
            run_sets: run_sets.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn the_status_says_what_changed_since_the_last_publication() {
        let cmd = Some(vec!["push".to_string()]);
        let s = status(cmd.clone(), 600.0, None, None, None, "h1".into(), vec!["a".into()]);
        assert!(s.changed && s.words == "Nothing has been published yet.");
        let p = push("h1", &["a"], Some(0));
        let s = status(cmd.clone(), 600.0, None, Some(p.clone()), Some(p.clone()), "h1".into(), vec!["a".into()]);
        assert!(!s.changed && s.words.ends_with("nothing changed since."), "{}", s.words);
        let s = status(cmd.clone(), 600.0, None, None, Some(p), "h2".into(), vec!["b".into()]);
        assert!(s.changed);
        assert_eq!((s.new_run_sets, s.dropped_run_sets), (vec!["b".to_string()], vec!["a".to_string()]));
        let s = status(None, 600.0, None, None, None, "h".into(), vec![]);
        assert!(s.words.starts_with("Publishing is not set up"));
        let r = Some(Running { started_at: Timestamp::from_millis(0) });
        assert!(status(cmd, 600.0, r, None, None, "h".into(), vec![]).words.starts_with("A push is running"));
    }

    #[test]
    fn a_push_says_how_it_ended_and_keeps_the_end_of_its_output() {
        assert_eq!(push("h", &[], Some(0)).words(), "published");
        assert_eq!(push("h", &[], Some(2)).words(), "failed with exit 2");
        let mut t = push("h", &[], None);
        t.timed_out = true;
        assert!(!t.succeeded() && t.words().contains("time limit"));
        let big = "é".repeat(OUTPUT_KEPT);
        let kept = kept_output(big.as_bytes());
        assert!(kept.starts_with("[… the first ") && kept.len() < OUTPUT_KEPT + 64, "{}", kept.len());
        assert_eq!(kept_output(b"ok\n"), "ok\n");
    }
}
