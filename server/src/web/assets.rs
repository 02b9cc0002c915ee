//! Static files (`/pkg/*` and `public/`) served from the site root.
//!
//! Every response carries `Cache-Control: no-cache` and a strong ETag over the
//! bytes, and `If-None-Match` is answered with 304. A file built with a
//! precompressed copy beside it (`x.wasm.br`, `x.wasm.gz`: `scripts/build-site.sh`
//! writes them) is answered with that copy when the client accepts its encoding
//! (`Content-Encoding`, `Vary: Accept-Encoding`, an ETag of its own). 2026-09-01: a changed app.js
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

    /// Answers with the file at `path`, or 304 when the client's copy is
    /// current. The ETag is decided from the file's stamp (size, mtime) before
    /// its bytes are read, so a 304 reads nothing. Blocking: [`StaticFiles::respond`]
    /// runs it on the blocking pool, never on the async runtime.
    /// The file for `uri_path` (or `None` when there is none), answered as
    /// [`StaticFiles::respond_blocking`] does, off the async runtime.
    pub async fn respond(self: &std::sync::Arc<Self>, uri_path: &str, headers: &HeaderMap) -> Option<Response> {
        let this = self.clone();
        let (uri_path, headers) = (uri_path.to_owned(), headers.clone());
        tokio::task::spawn_blocking(move || {
            let path = this.resolve(&uri_path)?;
            Some(this.respond_blocking(&path, &headers))
        })
        .await
        .unwrap_or_else(|_| Some(StatusCode::INTERNAL_SERVER_ERROR.into_response()))
    }

    pub fn respond_blocking(&self, path: &Path, headers: &HeaderMap) -> Response {
        // The precompressed copy the client accepts, if the build made one.
        let encoded = [("br", "br"), ("gzip", "gz")].into_iter().find_map(|(coding, ext)| {
            if !accepts(headers, coding) {
                return None;
            }
            let mut name = path.as_os_str().to_owned();
            name.push(format!(".{ext}"));
            let copy = PathBuf::from(name);
            copy.is_file().then_some((coding, copy))
        });
        let (file, coding) = match &encoded {
            Some((coding, copy)) => (copy.as_path(), Some(*coding)),
            None => (path, None),
        };
        let Some(etag) = self.etag(file) else { return StatusCode::NOT_FOUND.into_response() };
        let mut res = if if_none_match(headers, &etag) {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            let Ok(bytes) = crate::files::fsread::read_regular(file) else {
                return StatusCode::NOT_FOUND.into_response();
            };
            // The type is the original's (`x.wasm`, not `x.wasm.br`).
            let mime = mime_guess::from_path(path).first_or_octet_stream();
            let mut r = Body::from(bytes).into_response();
            if let Ok(v) = HeaderValue::from_str(mime.as_ref()) {
                r.headers_mut().insert(header::CONTENT_TYPE, v);
            }
            r
        };
        let h = res.headers_mut();
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
        if let Some(coding) = coding {
            h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
        }
        if let Ok(v) = HeaderValue::from_str(&etag) {
            h.insert(header::ETAG, v);
        }
        res
    }

    /// The file's ETag: a hash of its bytes, computed once per (size, mtime)
    /// and then answered from the cache without reading the file.
    fn etag(&self, path: &Path) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let md = std::fs::metadata(path).ok()?;
        let (len, mtime) = (md.len(), i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec()));
        if let Some((l, m, tag)) = self.etags.lock().unwrap_or_else(|p| p.into_inner()).get(path) {
            if *l == len && *m == mtime {
                return Some(tag.clone());
            }
        }
        let bytes = crate::files::fsread::read_regular(path).ok()?;
        let tag = format!("\"{:x}-{:016x}\"", bytes.len(), runboard::basics::hash::fnv1a(&bytes));
        self.etags.lock().unwrap_or_else(|p| p.into_inner()).insert(path.to_path_buf(), (len, mtime, tag.clone()));
        Some(tag)
    }
}

/// Whether `Accept-Encoding` accepts `coding` (a `q=0` refuses it).
fn accepts(headers: &HeaderMap, coding: &str) -> bool {
    headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(
        |item| {
            let mut parts = item.split(';').map(str::trim);
            let name = parts.next().unwrap_or("");
            let refused = parts.any(|p| p.replace(' ', "") == "q=0" || p.replace(' ', "") == "q=0.0");
            name.eq_ignore_ascii_case(coding) && !refused
        },
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_precompressed_copy_is_served_to_a_client_that_accepts_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("app.wasm"), b"raw wasm bytes").unwrap();
        std::fs::write(dir.path().join("app.wasm.br"), b"brotli bytes").unwrap();
        let files = StaticFiles::new(dir.path());
        let path = dir.path().join("app.wasm");
        let ask = |enc: Option<&str>| {
            let mut h = HeaderMap::new();
            if let Some(e) = enc {
                h.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(e).unwrap());
            }
            files.respond_blocking(&path, &h)
        };
        let br = ask(Some("gzip, deflate, br"));
        assert_eq!(br.headers()[header::CONTENT_ENCODING], "br");
        assert_eq!(br.headers()[header::CONTENT_TYPE], "application/wasm");
        let raw = ask(Some("gzip"));
        assert!(raw.headers().get(header::CONTENT_ENCODING).is_none(), "no .gz copy: the raw file");
        assert!(ask(Some("br;q=0")).headers().get(header::CONTENT_ENCODING).is_none());
        assert_ne!(br.headers()[header::ETAG], raw.headers()[header::ETAG], "each encoding has its own ETag");
        // 304 for the copy the client holds.
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("br"));
        h.insert(header::IF_NONE_MATCH, br.headers()[header::ETAG].clone());
        assert_eq!(files.respond_blocking(&path, &h).status(), StatusCode::NOT_MODIFIED);
    }
}
