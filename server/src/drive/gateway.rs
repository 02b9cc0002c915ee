//! The batch's gateway: a loopback HTTP proxy the driver runs for as long as
//! its cells run, between each cell and the model endpoints of the
//! catalogue. A cell's `{endpoint_url}` (and `RUNBOARD_ENDPOINT_URL`) is its
//! own path on it, `http://127.0.0.1:<port>/<secret>/<cell>/<endpoint>`; a
//! call there is sent on to the endpoint's catalogue URL with the rest of its
//! path, its headers (its API key) passed through and never kept, and its
//! answer passed back as it arrives — a stream event by event, never held
//! whole. Each answered call of a counted API becomes one line of the cell's
//! `progress.jsonl`, from the usage the answer reports
//! (`runboard::gateway`), so Live, caps, stalls and telemetry see every call
//! whatever the harness.
//!
//! The secret (128 random bits) is in every path: another account of the
//! machine that finds the port cannot spend through it. A path without it, or
//! naming an endpoint the catalogue has not, is a 404 that says no more.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use runboard::gateway::{self, Api, StreamTap};
use tokio_util::sync::CancellationToken;

/// The most of a request body the gateway reads (a prompt larger than this
/// is refused, 413).
const REQUEST_MAX: usize = 64 << 20;
/// The most of a whole (not streamed) answer kept to read its usage; the
/// client gets all of it in any case.
const ANSWER_KEPT: usize = 16 << 20;
/// How long an endpoint has to accept the connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A running gateway; ended with [`Gateway::stop`] (or dropped).
pub struct Gateway {
    addr: SocketAddr,
    secret: String,
    /// The endpoints it forwards to, by name.
    endpoints: BTreeMap<String, String>,
    shutdown: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

struct Shared {
    secret: String,
    endpoints: BTreeMap<String, String>,
    /// The run set's `out/`: a cell's calls go to `out/<cell>/progress.jsonl`.
    out: PathBuf,
    client: reqwest::Client,
    /// One line appended at a time, so lines from calls ending together stay whole.
    append: Mutex<()>,
}

impl Gateway {
    /// Starts the gateway for `endpoints` (name → catalogue URL), writing
    /// each cell's calls under `out`. Binds `127.0.0.1` — on the port and
    /// with the secret an earlier attempt of the run set kept in `keep`
    /// when it can, so a resumed cell's URL is the one it had (Inspect's
    /// `eval-retry` calls the base URL its log names); else on a port of its
    /// own. `keep` is written readable by its user alone.
    pub async fn start(endpoints: BTreeMap<String, String>, out: &Path, keep: &Path) -> Result<Self, String> {
        let kept: Option<Kept> = crate::fsread::read_regular(keep)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .filter(|k: &Kept| k.secret.len() == 32 && k.secret.bytes().all(|b| b.is_ascii_hexdigit()));
        let secret = match &kept {
            Some(k) => k.secret.clone(),
            None => secret()?,
        };
        let again = match kept.as_ref().map(|k| k.port) {
            Some(port) => tokio::net::TcpListener::bind(("127.0.0.1", port)).await.ok(),
            None => None,
        };
        let listener = match again {
            Some(l) => l,
            None => tokio::net::TcpListener::bind(("127.0.0.1", 0))
                .await
                .map_err(|e| format!("starting the gateway on 127.0.0.1: {e}"))?,
        };
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        crate::atomic::write_private(
            keep,
            &serde_json::to_vec(&Kept { port: addr.port(), secret: secret.clone() }).unwrap_or_default(),
        )
        .map_err(|e| format!("keeping the gateway's address in {}: {e}", keep.display()))?;
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT)
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| format!("building the gateway's HTTP client: {e}"))?;
        let shared = Arc::new(Shared {
            secret: secret.clone(),
            endpoints: endpoints.clone(),
            out: out.to_path_buf(),
            client,
            append: Mutex::new(()),
        });
        let app = axum::Router::new().fallback(forward).with_state(shared);
        let shutdown = CancellationToken::new();
        let until = shutdown.clone();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).with_graceful_shutdown(async move { until.cancelled().await }).await;
        });
        Ok(Self { addr, secret, endpoints, shutdown, task: Some(task) })
    }

    /// Whether calls to `endpoint` go through it.
    pub fn serves(&self, endpoint: &str) -> bool {
        self.endpoints.contains_key(endpoint)
    }

    /// `cell`'s URL for `endpoint`: what its `{endpoint_url}` is.
    pub fn cell_url(&self, cell: &str, endpoint: &str) -> String {
        format!("http://{}/{}/{cell}/{endpoint}", self.addr, self.secret)
    }

    /// Ends it: no new call is taken; calls under way end first (bounded).
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        if let Some(t) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// The gateway's address kept for the run set's next attempt.
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept {
    port: u16,
    secret: String,
}

/// 128 random bits as hex, from the kernel.
fn secret() -> Result<String, String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("reading /dev/urandom for the gateway's secret: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// An error answer in the shape OpenAI-style clients read
/// (`{"error": {"message", "type"}}`).
fn refusal(status: StatusCode, kind: &str, message: String) -> Response {
    let body = serde_json::json!({"error": {"message": message, "type": kind}});
    (status, axum::Json(body)).into_response()
}

/// Headers that belong to one connection, not to the call: never passed on.
/// (`accept-encoding` too: the answer comes back as it is, so its usage can
/// be read; the client receives the same content.)
fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "host"
            | "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "content-length"
            | "accept-encoding"
    )
}

fn passed_on(headers: &HeaderMap) -> HeaderMap {
    headers.iter().filter(|(n, _)| !hop_by_hop(n)).map(|(n, v)| (n.clone(), v.clone())).collect()
}

async fn forward(State(g): State<Arc<Shared>>, req: Request) -> Response {
    let path = req.uri().path().trim_start_matches('/').to_owned();
    let query = req.uri().query().map(|q| format!("?{q}")).unwrap_or_default();
    let mut parts = path.splitn(4, '/');
    let (secret, cell, endpoint, rest) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    // Without the secret nothing is said, not even which endpoints there are.
    if !crate::auth::same(secret, &g.secret) || !runboard::logs::plain_name(cell) {
        return refusal(StatusCode::NOT_FOUND, "not_found", "no such path on this runboard gateway".into());
    }
    let Some(base) = g.endpoints.get(endpoint) else {
        return refusal(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("the runboard gateway has no endpoint {endpoint:?} (the catalogue's endpoints with a URL)"),
        );
    };
    let url = format!("{}/{rest}{query}", base.trim_end_matches('/'));
    let api = Api::of_path(rest);
    let (head, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, REQUEST_MAX).await {
        Ok(b) => b,
        Err(e) => {
            return refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                "runboard_gateway_error",
                format!("the request body could not be read (at most {} MiB): {e}", REQUEST_MAX >> 20),
            )
        }
    };
    let prepared = (api.counted() && head.method == axum::http::Method::POST).then(|| gateway::prepare(api, &body));
    let send = match prepared.as_ref().and_then(|p| p.body.clone()) {
        Some(changed) => reqwest::Body::from(changed),
        None => reqwest::Body::from(body),
    };
    let Ok(method) = reqwest::Method::from_bytes(head.method.as_str().as_bytes()) else {
        return refusal(StatusCode::METHOD_NOT_ALLOWED, "runboard_gateway_error", "an unknown method".into());
    };
    let started = Instant::now();
    let answer = g.client.request(method, &url).headers(passed_on(&head.headers)).body(send).send().await;
    let mut answer = match answer {
        Ok(a) => a,
        Err(e) => {
            return refusal(
                StatusCode::BAD_GATEWAY,
                "runboard_gateway_error",
                format!("runboard's gateway could not reach endpoint {endpoint} ({}): {e}", base),
            )
        }
    };
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut headers = passed_on(answer.headers());
    let streamed = answer
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let strip = prepared.as_ref().is_some_and(|p| p.strip_usage_chunk);
    if !strip {
        if let Some(len) = answer.headers().get(header::CONTENT_LENGTH) {
            headers.insert(header::CONTENT_LENGTH, len.clone());
        }
    }
    // The call is counted when it was answered (2xx) on a counted API.
    let counted = api.counted() && status.is_success();
    let record =
        Record { shared: g.clone(), cell: cell.to_owned(), asked_model: prepared.and_then(|p| p.model), started };
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(16);
    tokio::spawn(async move {
        let mut tap = streamed.then(|| StreamTap::new(api, strip));
        let mut kept = Vec::new();
        // A client that went away stops being sent to; the answer is still
        // read to its end, so the call is counted.
        let mut client_there = true;
        loop {
            match answer.chunk().await {
                Ok(Some(bytes)) => {
                    let out = match tap.as_mut() {
                        Some(t) => Bytes::from(t.feed(&bytes)),
                        None => {
                            if counted && kept.len() + bytes.len() <= ANSWER_KEPT {
                                kept.extend_from_slice(&bytes);
                            }
                            bytes
                        }
                    };
                    if client_there && !out.is_empty() {
                        client_there = tx.send(Ok(out)).await.is_ok();
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
                    break;
                }
            }
        }
        if let Some(t) = tap.as_mut() {
            let rest = t.finish();
            if client_there && !rest.is_empty() {
                let _ = tx.send(Ok(Bytes::from(rest))).await;
            }
        }
        drop(tx);
        if counted {
            let (usage, model) = match tap {
                Some(t) => (t.usage, t.model),
                None => gateway::answer_usage(api, &kept),
            };
            record.write(usage, model);
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) });
    let mut response = Response::new(Body::from_stream(stream));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// What is written of one call once its answer has ended.
struct Record {
    shared: Arc<Shared>,
    cell: String,
    asked_model: Option<String>,
    started: Instant,
}

impl Record {
    fn write(self, usage: Option<gateway::Usage>, model: Option<String>) {
        let model = model.or(self.asked_model);
        let line =
            gateway::progress_line(crate::clock::now(), model.as_deref(), usage, self.started.elapsed().as_secs_f64());
        let dir = self.shared.out.join(&self.cell);
        let _held = self.shared.append.lock().unwrap_or_else(|p| p.into_inner());
        let written = std::fs::create_dir_all(&dir).and_then(|_| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join(runboard::spend::PROGRESS_FILE))
                .and_then(|mut f| f.write_all(line.as_bytes()))
        });
        if let Err(e) = written {
            eprintln!("runboard gateway: a call of cell {} could not be recorded: {e}", self.cell);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_128_bits_and_compared_whole() {
        let (a, b) = (secret().unwrap(), secret().unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert!(crate::auth::same(&a, &a.clone()) && !crate::auth::same(&a, &b) && !crate::auth::same(&a, &a[..31]));
        let plain = runboard::logs::plain_name;
        assert!(plain("c-3f9a0c1b2d4e") && !plain("..") && !plain("a/b") && !plain(""));
    }
}
