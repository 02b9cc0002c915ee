//! Publishing: a push writes the evidence export (JSON and CSV) under
//! `.runboard/publish/`, runs `[publish] command` in the campaign root with
//! the files named in its environment, bounded by `[publish] timeout_s`, and
//! records how it ended. One push at a time across every process: a push
//! holds `.runboard/publish/lock` while it runs (a second is 409).

use std::fs;
use std::path::Path;
use std::time::Duration;

use runboard::api::ApiError;
use runboard::results::publish::{
    self, kept_output, PublishStatus, PushRecord, Running, LAST_FILE, LOCK_FILE, PUBLISHED_FILE, PUBLISH_DIR,
    RUNNING_FILE,
};

use crate::campaign::Campaign;

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    let bytes = crate::files::fsread::read_regular(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Whether a push holds the lock now (another process's included).
fn running(root: &Path) -> Option<Running> {
    let file = fs::OpenOptions::new().write(true).open(root.join(LOCK_FILE)).ok()?;
    match file.try_lock() {
        Ok(()) => None,
        Err(fs::TryLockError::WouldBlock) => Some(
            read_json::<Running>(&root.join(RUNNING_FILE))
                .unwrap_or(Running { started_at: crate::system::clock::now() }),
        ),
        Err(fs::TryLockError::Error(_)) => None,
    }
}

/// `GET /api/publish/status`.
pub fn status(campaign: &Campaign) -> Result<PublishStatus, ApiError> {
    let cfg = campaign.config()?;
    let root = campaign.root();
    let export = campaign.evidence_export(None)?;
    Ok(publish::status(
        cfg.publish.command.clone(),
        cfg.publish.timeout_s(),
        running(root),
        read_json(&root.join(LAST_FILE)),
        read_json(&root.join(PUBLISHED_FILE)),
        export.provenance.content_hash,
        export.provenance.run_sets,
    ))
}

/// A push started: the thread running it (join it to wait for its record).
pub struct Started {
    pub running: Running,
    pub done: std::thread::JoinHandle<PushRecord>,
}

/// `POST /api/publish`: starts a push; 409 while one runs, 422 when
/// publishing is not set up.
pub fn push(campaign: &Campaign) -> Result<Started, ApiError> {
    let cfg = campaign.config()?;
    let Some(command) = cfg.publish.command.clone() else {
        return Err(ApiError::refused(vec!["publishing is not set up: set [publish] command in campaign.toml".into()]));
    };
    let root = campaign.root().to_path_buf();
    let dir = root.join(PUBLISH_DIR);
    fs::create_dir_all(&dir).map_err(|e| crate::web::error::internal("making the publish folder", e))?;
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(root.join(LOCK_FILE))
        .map_err(|e| crate::web::error::internal("opening the publish lock", e))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => {
            let since = read_json::<Running>(&root.join(RUNNING_FILE))
                .map(|r| format!(" since {}", r.started_at.to_display()))
                .unwrap_or_default();
            return Err(ApiError::busy(format!("a push is running{since}; one at a time")));
        }
        Err(fs::TryLockError::Error(e)) => return Err(crate::web::error::internal("taking the publish lock", e)),
    }
    let export = campaign.evidence_export(None)?;
    let json_path = dir.join("evidence.json");
    let csv_path = dir.join("evidence.csv");
    crate::files::atomic::write_json(&json_path, &export)
        .map_err(|e| crate::web::error::internal("writing the export", e))?;
    crate::files::atomic::write_atomic(&csv_path, runboard::results::export::to_csv(&export).as_bytes())
        .map_err(|e| crate::web::error::internal("writing the export", e))?;
    let started = Running { started_at: crate::system::clock::now() };
    crate::files::atomic::write_json(&root.join(RUNNING_FILE), &started)
        .map_err(|e| crate::web::error::internal("recording the push", e))?;
    let env: Vec<(String, String)> = vec![
        ("RUNBOARD_ROOT".into(), root.display().to_string()),
        ("RUNBOARD_EXPORT_JSON".into(), json_path.display().to_string()),
        ("RUNBOARD_EXPORT_CSV".into(), csv_path.display().to_string()),
        ("RUNBOARD_CONTENT_HASH".into(), export.provenance.content_hash.clone()),
        ("RUNBOARD_RUN_SETS".into(), export.provenance.run_sets.join(" ")),
    ];
    let limit = Duration::from_secs_f64(cfg.publish.timeout_s());
    let started_at = started.started_at;
    let done = std::thread::spawn(move || {
        // The lock is held by this thread until the record is written.
        let _lock = lock;
        let ran = crate::system::command::run_bounded_merged(&command[0], &command[1..], &root, &env, limit);
        let (exit_code, timed_out, error, output) = match ran {
            Ok((code, out)) => (code, false, None, out),
            Err(crate::system::command::Failed::TimedOut { output, .. }) => (None, true, None, output),
            Err(crate::system::command::Failed::NotStarted(e)) => (None, false, Some(e), Vec::new()),
        };
        let record = PushRecord {
            schema_version: 1,
            started_at,
            ended_at: crate::system::clock::now(),
            command,
            exit_code,
            timed_out,
            error,
            output: kept_output(&output),
            content_hash: export.provenance.content_hash,
            run_sets: export.provenance.run_sets,
        };
        if let Err(e) = crate::files::atomic::write_json(&root.join(LAST_FILE), &record) {
            tracing::error!("recording the push: {e}");
        }
        if record.succeeded() {
            if let Err(e) = crate::files::atomic::write_json(&root.join(PUBLISHED_FILE), &record) {
                tracing::error!("recording the publication: {e}");
            }
        }
        let _ = fs::remove_file(root.join(RUNNING_FILE));
        tracing::info!("push {}", record.words());
        record
    });
    Ok(Started { running: started, done })
}
