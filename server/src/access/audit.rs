//! The audit log's adapter (`runboard::access::audit`): appending a line for each
//! control — from the HTTP layer for REST and the pages, from `server::cli`
//! for the command line — and reading a page of it.
//!
//! The file is created readable by its user alone (0600, whatever the umask)
//! and only ever appended to: one `write` of one whole line, so lines from
//! several processes (a server, a CLI beside it) never interleave. Reading
//! skips a line cut by a crash and counts it.

use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use runboard::access::audit::{self, AuditEntry, AuditPage, AuditQuery, Surface};
use runboard::api::{ApiError, Method as OpMethod, OPERATIONS};

use crate::files::fsread::Within;

/// The most of an audit log read for a page: its newest 64 MiB (some
/// 200,000 lines; the first line of the part read may be cut, and is then
/// counted unreadable).
const READ_MOST: u64 = 64 << 20;

/// Appends `entry` to the audit log under `root`. A failure is logged, never
/// answered: the control itself was done (or refused) either way.
pub fn append(root: &Path, entry: &AuditEntry) {
    let path = root.join(audit::AUDIT_FILE);
    let written = serde_json::to_vec(entry).map_err(std::io::Error::other).and_then(|mut line| {
        line.push(b'\n');
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        // Never through a link: a link planted in its place is refused, not
        // appended to.
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&path)?;
        f.write_all(&line)
    });
    if let Err(e) = written {
        tracing::error!("{}: the audit line of {} was not written: {e}", path.display(), entry.op);
    }
}

/// A page of the audit log under the campaign root `within` guards: read
/// through it, so a log replaced by a link out of the root is refused.
pub fn page(within: &Within, q: &AuditQuery) -> Result<AuditPage, ApiError> {
    let ask = q.parse()?;
    let path = within.root().join(audit::AUDIT_FILE);
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(audit::page(&[], &ask));
    }
    let unreadable = |e: String| ApiError::unreadable(format!("{}: {e}", audit::AUDIT_FILE));
    let (mut f, end) = within.open(&path).map_err(|e| unreadable(e.to_string()))?;
    let (bytes, _) = crate::files::fsread::read_tail(&mut f, end, READ_MOST).map_err(|e| unreadable(e.to_string()))?;
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    Ok(audit::page(&lines, &ask))
}

/// The command line's user, as `cli:<name>` (the login name, else the uid).
pub fn cli_user() -> String {
    let uid = nix::unistd::getuid();
    let name = nix::unistd::User::from_uid(uid).ok().flatten().map(|u| u.name);
    format!("cli:{}", name.unwrap_or_else(|| uid.to_string()))
}

/// The operation a state-changing request asks for, its surface, and the
/// path's parameters: `/sfn/<name>` is a page's call of that operation;
/// `/api/…` the row whose method and path template match.
fn operation_of(path: &str) -> (String, Surface, serde_json::Map<String, serde_json::Value>) {
    if let Some(name) = path.strip_prefix("/sfn/") {
        if let Some(o) = OPERATIONS.iter().find(|o| o.name == name) {
            return (o.name.to_owned(), Surface::Page, Default::default());
        }
    }
    for o in OPERATIONS.iter().filter(|o| o.method == OpMethod::Post) {
        if let Some(params) = audit::path_params(o.path, path) {
            return (o.name.to_owned(), Surface::Rest, params);
        }
    }
    (format!("POST {path}"), Surface::Rest, Default::default())
}

/// The HTTP layer's recorder: outside the token guard (so a refused request
/// is a line too), around every state-changing request (anything but GET,
/// HEAD, OPTIONS). The body is read once (bounded like every body) and
/// handed on unchanged; the answer's status and, when it is a refusal, its
/// words are kept.
pub async fn record(State(recorder): State<Recorder>, req: Request, next: Next) -> Response {
    if crate::access::auth::is_read(req.method()) {
        return next.run(req).await;
    }
    let from = req.extensions().get::<ConnectInfo<SocketAddr>>().map_or("unknown".into(), |c| c.0.to_string());
    let by = recorder.access.caller(&req).by();
    let path = req.uri().path().to_owned();
    let (op, surface, params) = operation_of(&path);
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, crate::web::error::MAX_BODY).await else {
        let refused = crate::web::error::too_large();
        let entry = entry(op, serde_json::json!({}), by, from, surface, refused.status(), refused.error.clone());
        append(&recorder.root, &entry);
        return axum::response::IntoResponse::into_response(crate::web::error::AppError(refused));
    };
    let mut args = audit::args_of(&bytes, surface == Surface::Page);
    if let (serde_json::Value::Object(m), false) = (&mut args, params.is_empty()) {
        m.extend(params);
    }
    let res = next.run(Request::from_parts(parts, axum::body::Body::from(bytes))).await;
    let status = res.status().as_u16();
    let (res, answer) = if res.status().is_success() {
        (res, "ok".to_owned())
    } else {
        // A refusal is small JSON `{kind, error, reasons}`: its words kept.
        let (parts, body) = res.into_parts();
        let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
        let words = serde_json::from_slice::<ApiError>(&bytes)
            .map(|e| e.words())
            .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).chars().take(300).collect());
        (Response::from_parts(parts, axum::body::Body::from(bytes)), words)
    };
    let root = recorder.root.clone();
    let entry = entry(op, args, by, from, surface, status, answer);
    // Off the async workers: an append is a file write.
    let _ = tokio::task::spawn_blocking(move || append(&root, &entry)).await;
    res
}

fn entry(
    op: String,
    args: serde_json::Value,
    by: String,
    from: String,
    surface: Surface,
    status: u16,
    answer: String,
) -> AuditEntry {
    AuditEntry { at: crate::system::clock::now(), op, args, by, from, surface, status, answer }
}

/// What the HTTP recorder needs: the campaign root it writes under, and who
/// may talk to the server (to say who did).
#[derive(Clone)]
pub struct Recorder {
    pub root: PathBuf,
    pub access: crate::access::auth::Access,
}

/// The command line's record of one operation it asked: its input as sent
/// (`args`), the answer as REST would give it.
pub fn cli_line(root: &Path, op: &str, args: serde_json::Value, answered: Result<u16, &ApiError>) {
    let (status, answer) = match answered {
        Ok(status) => (status, "ok".to_owned()),
        Err(e) => (e.status(), e.words()),
    };
    append(root, &entry(op.to_owned(), args, cli_user(), "cli".into(), Surface::Cli, status, answer));
}
