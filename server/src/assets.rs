//! Static files (`/pkg/*` and `public/`) served from the site root.
//!
//! Every response carries `Cache-Control: no-cache` and a strong ETag over the
//! bytes, and `If-None-Match` is answered with 304. 2026-09-01: a changed app.js
//! was served while a browser kept running its old copy; revalidating every use
//! costs one small request and means an upgraded server never runs a stale app.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// Serves files below one folder, caching each file's ETag by size and mtime.
pub struct StaticFiles {
    root: PathBuf,
    etags: Mutex<HashMap<PathBuf, (u64, i128, String)>>,
}

impl StaticFiles {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into(), etags: Mutex::new(HashMap::new()) }
    }

    /// The file for a request path, `None` when the path leaves the folder or
    /// names no file.
    pub fn resolve(&self, uri_path: &str) -> Option<PathBuf> {
        let rel = Path::new(uri_path.trim_start_matches('/'));
        if rel.as_os_str().is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return None;
        }
        let path = self.root.join(rel);
        path.is_file().then_some(path)
    }

    pub async fn respond(&self, path: &Path, headers: &HeaderMap) -> Response {
        let bytes = match tokio::fs::read(path).await {
            Ok(b) => b,
            Err(_) => return StatusCode::NOT_FOUND.into_response(),
        };
        let etag = self.etag(path, &bytes);
        let mut res = if if_none_match(headers, &etag) {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            let mime = mime_guess::from_path(path).first_or_octet_stream();
            let mut r = Body::from(bytes).into_response();
            if let Ok(v) = HeaderValue::from_str(mime.as_ref()) {
                r.headers_mut().insert(header::CONTENT_TYPE, v);
            }
            r
        };
        let h = res.headers_mut();
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        if let Ok(v) = HeaderValue::from_str(&etag) {
            h.insert(header::ETAG, v);
        }
        res
    }

    fn etag(&self, path: &Path, bytes: &[u8]) -> String {
        use std::os::unix::fs::MetadataExt;
        let stamp = std::fs::metadata(path)
            .map(|m| (m.len(), i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec())))
            .ok();
        let mut cache = self.etags.lock().unwrap_or_else(|p| p.into_inner());
        if let (Some((len, mtime)), Some((l, m, tag))) = (stamp, cache.get(path)) {
            if *l == len && *m == mtime {
                return tag.clone();
            }
        }
        let tag = format!("\"{:x}-{:016x}\"", bytes.len(), runboard::hash::fnv1a(bytes));
        if let Some((len, mtime)) = stamp {
            cache.insert(path.to_path_buf(), (len, mtime, tag.clone()));
        }
        tag
    }
}

fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == etag || t == "*")
}
