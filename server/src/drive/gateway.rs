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
//! The caps of `[budget]` hold here (`runboard::gateway::purse`): once the
//! batch's spend reaches one, each new call is refused with a status the
//! SDKs do not retry, and the batch's stop is asked for, so it pauses.
//!
//! The secret (128 random bits) is in every path: another account of the
//! machine that finds the port cannot spend through it. A path without it, or
//! naming an endpoint the catalogue has not, is a 404 that says no more.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use runboard::basics::timefmt::Timestamp;
use runboard::gateway::calls::{CallsNow, CellCalls, EndpointCalls, CALLS_FILE};
use runboard::gateway::limiter::{Answer, Limiter, Ticket, Turn};
use runboard::gateway::purse::{self, Others, Purse, Spent};
use runboard::gateway::{self, Api, StreamTap};
use runboard::live::spend::{Prices, Tokens};
use tokio_util::sync::CancellationToken;

/// The most of a request body the gateway reads (a prompt larger than this
/// is refused, 413).
const REQUEST_MAX: usize = 64 << 20;
/// The most of a whole (not streamed) answer kept to read its usage; the
/// client gets all of it in any case.
const ANSWER_KEPT: usize = 16 << 20;
/// The most cells' progress files the gateway keeps open at once.
const FILES_OPEN: usize = 128;
/// How long an endpoint has to accept the connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The file of the run set where the gateway keeps its address.
pub const KEPT_FILE: &str = ".gateway.json";
/// The file of the run set where the console's spend guard puts what the
/// other run sets spent ([`Others`]), for the day's and the campaign's caps.
pub const OTHERS_FILE: &str = ".gateway-budget.json";
/// How often the gateway reads [`OTHERS_FILE`] again.
const OTHERS_EVERY: Duration = Duration::from_millis(500);

/// How often the calls file is written (when it changed; at least every
/// [`CALLS_EVERY_ANYWAY`], so a reader knows the gateway is alive).
const CALLS_EVERY: Duration = Duration::from_secs(1);
const CALLS_EVERY_ANYWAY: Duration = Duration::from_secs(4);
/// How long a cell with no call under way stays in the calls file after its last answer.
const CELL_KEPT_MS: i64 = 3_600_000;

/// An endpoint the gateway forwards to.
pub struct Route {
    /// Its catalogue URL.
    pub url: String,
    /// Its `max_concurrency` (none: no limit until it answers an overload).
    pub max_concurrency: Option<u32>,
}

/// What a gateway is started with.
pub struct Setup {
    /// The endpoints it forwards to, by name.
    pub endpoints: BTreeMap<String, Route>,
    /// The run set's folder: a cell's calls go to `out/<cell>/progress.jsonl`.
    pub run_set: PathBuf,
    /// The batch's caps and what it had spent when the gateway started.
    pub purse: Purse,
    /// Each cell's prices (a cell missing: its model is not priced).
    pub prices: BTreeMap<String, Prices>,
    /// The batch's stop: asked for once a cap is reached, so it pauses.
    pub stop: CancellationToken,
}

/// A running gateway; ended with [`Gateway::stop`] (or dropped).
pub struct Gateway {
    addr: SocketAddr,
    secret: String,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

struct Shared {
    secret: String,
    endpoints: BTreeMap<String, String>,
    /// Each endpoint's rate limit, shared by every cell.
    gates: BTreeMap<String, Arc<Gate>>,
    /// Each cell's calls under way, for the calls file.
    calls: Mutex<BTreeMap<String, CellTrack>>,
    next_call: std::sync::atomic::AtomicU64,
    /// The gateway's own clock for the limiter (milliseconds since it started).
    epoch: Instant,
    /// The run set's `out/`: a cell's calls go to `out/<cell>/progress.jsonl`.
    out: PathBuf,
    client: reqwest::Client,
    /// One line appended at a time, so lines from calls ending together
    /// stay whole; the purse counted under the same lock.
    /// Each cell's progress file, kept open (appended to).
    append: Mutex<std::collections::HashMap<String, std::fs::File>>,
    purse: Mutex<Purse>,
    prices: BTreeMap<String, Prices>,
    stop: CancellationToken,
    /// The cap that stopped the batch, in words (set once).
    capped: Mutex<Option<String>>,
}

/// One cell's calls under way.
#[derive(Default)]
struct CellTrack {
    endpoint: String,
    /// Calls in flight, by id: when each was sent.
    in_flight: BTreeMap<u64, Timestamp>,
    /// Its overloads' times (the newest minute's).
    overloads: std::collections::VecDeque<Timestamp>,
    last_answered: Option<Timestamp>,
}

/// One endpoint's limit (`runboard::gateway::limiter`) and the calls it holds.
struct Gate {
    max: Option<u32>,
    inner: Mutex<GateInner>,
}

struct GateInner {
    limiter: Limiter,
    /// The waiting calls' wake-ups, by ticket.
    wake: std::collections::HashMap<Ticket, tokio::sync::oneshot::Sender<()>>,
}

impl GateInner {
    /// Lets go every call the limiter lets go now; one whose client has gone
    /// gives its room back.
    fn wake(&mut self, now: u64) {
        loop {
            let turns = self.limiter.turns(now);
            if turns.is_empty() {
                return;
            }
            for t in turns {
                let sent = self.wake.remove(&t).is_some_and(|tx| tx.send(()).is_ok());
                if !sent {
                    self.limiter.returned();
                }
            }
        }
    }
}

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, GateInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for the call's turn; the slot it gets is its room until it ends.
    async fn enter(self: &Arc<Self>, cell: &str, epoch: Instant) -> Slot {
        let now = epoch.elapsed().as_millis() as u64;
        let rx = {
            let mut g = self.lock();
            match g.limiter.ask(cell, now) {
                Turn::Go => None,
                Turn::Wait(ticket) => {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    g.wake.insert(ticket, tx);
                    Some((ticket, rx))
                }
            }
        };
        if let Some((ticket, rx)) = rx {
            // A client that goes away while it waits is no longer held.
            let mut waiting = Waiting { gate: self.clone(), ticket, epoch, admitted: false };
            let _ = rx.await;
            waiting.admitted = true;
        }
        Slot { gate: self.clone(), epoch, ended: false }
    }
}

/// A call held at a gate; dropped before its turn, it is forgotten.
struct Waiting {
    gate: Arc<Gate>,
    ticket: Ticket,
    epoch: Instant,
    admitted: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.admitted {
            return;
        }
        let mut g = self.gate.lock();
        if g.wake.remove(&self.ticket).is_some() {
            g.limiter.forget(self.ticket);
        } else {
            // Let go as it went away: its room is free again.
            g.limiter.returned();
            g.wake(self.epoch.elapsed().as_millis() as u64);
        }
    }
}

/// A call's room at its gate, given back when it ends (or is dropped).
struct Slot {
    gate: Arc<Gate>,
    epoch: Instant,
    ended: bool,
}

impl Slot {
    fn end(mut self, answer: Answer) {
        self.ended = true;
        let now = self.epoch.elapsed().as_millis() as u64;
        let held = {
            let mut g = self.gate.lock();
            g.limiter.ended(answer, now);
            g.wake(now);
            g.limiter.held_until(now)
        };
        // Calls held by a Retry-After go when it has passed.
        if let Some(until) = held {
            let (gate, epoch) = (self.gate.clone(), self.epoch);
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(until.saturating_sub(now))).await;
                gate.lock().wake(epoch.elapsed().as_millis() as u64);
            });
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if !self.ended {
            let now = self.epoch.elapsed().as_millis() as u64;
            let mut g = self.gate.lock();
            g.limiter.ended(Answer::Served, now);
            g.wake(now);
        }
    }
}

impl Shared {
    /// A call of `cell` to `endpoint` sent now: its id.
    fn call_sent(&self, cell: &str, endpoint: &str) -> u64 {
        let id = self.next_call.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let t = calls.entry(cell.to_owned()).or_default();
        t.endpoint = endpoint.to_owned();
        t.in_flight.insert(id, crate::system::clock::now());
        id
    }

    /// The call `id` of `cell` ended, overloaded or not.
    fn call_ended(&self, cell: &str, id: u64, overloaded: bool) {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = calls.get_mut(cell) {
            let now = crate::system::clock::now();
            t.in_flight.remove(&id);
            t.last_answered = Some(now);
            if overloaded {
                t.overloads.push_back(now);
            }
        }
    }

    /// The calls under way now, as the calls file says them.
    fn calls_now(&self) -> CallsNow {
        let now = crate::system::clock::now();
        let ms = self.epoch.elapsed().as_millis() as u64;
        let mut out = CallsNow { at: now, ..Default::default() };
        // cell → (its endpoint, its calls held)
        let mut waiting_of: BTreeMap<String, (String, u32)> = BTreeMap::new();
        for (name, gate) in &self.gates {
            let mut g = gate.lock();
            let held_until = g.limiter.held_until(ms).map(|t| Timestamp(now.0 + (t - ms) as i64));
            out.endpoints.insert(
                name.clone(),
                EndpointCalls {
                    limit: g.limiter.limit(),
                    max: gate.max,
                    in_flight: g.limiter.in_flight(),
                    waiting: g.limiter.waiting() as u32,
                    overloads_last_min: g.limiter.overloads_last_min(ms) as u32,
                    held_until,
                },
            );
            for (cell, n) in g.limiter.waiting_by_cell() {
                let w = waiting_of.entry(cell).or_insert_with(|| (name.clone(), 0));
                w.1 += n as u32;
            }
        }
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        // A cell quiet at the gateway for an hour (ended, most likely) is let go.
        calls.retain(|_, t| !t.in_flight.is_empty() || t.last_answered.is_some_and(|a| now.0 - a.0 < CELL_KEPT_MS));
        for (cell, t) in calls.iter_mut() {
            while t.overloads.front().is_some_and(|x| now.0 - x.0 >= 60_000) {
                t.overloads.pop_front();
            }
            let waiting = waiting_of.remove(cell).map_or(0, |(_, n)| n);
            out.cells.insert(
                cell.clone(),
                CellCalls {
                    endpoint: t.endpoint.clone(),
                    in_flight: t.in_flight.len() as u32,
                    oldest_since: t.in_flight.values().min().copied(),
                    waiting,
                    overloads_last_min: t.overloads.len() as u32,
                    last_answered: t.last_answered,
                },
            );
        }
        // A cell whose first call is still held has sent nothing yet: it is
        // waiting all the same, never silent.
        for (cell, (endpoint, waiting)) in waiting_of {
            out.cells.insert(cell, CellCalls { endpoint, waiting, ..Default::default() });
        }
        out
    }

    /// The refusal of a new call once a cap is reached (402, not to be
    /// retried, naming the cap and the spend).
    fn cap_refusal(&self) -> Option<Response> {
        let cap = self.cap_reached()?;
        let status = StatusCode::from_u16(purse::REFUSAL_STATUS).unwrap_or(StatusCode::FORBIDDEN);
        let mut r = (status, axum::Json(purse::refusal(&cap))).into_response();
        r.headers_mut().insert("x-should-retry", header::HeaderValue::from_static("false"));
        Some(r)
    }

    /// The cap reached now, if any; the first time, the batch's stop is asked for.
    fn cap_reached(&self) -> Option<runboard::live::spend::CapUse> {
        let today = crate::system::clock::now().day_key();
        let cap = self.purse.lock().unwrap_or_else(|p| p.into_inner()).reached(&today)?;
        let mut capped = self.capped.lock().unwrap_or_else(|p| p.into_inner());
        if capped.is_none() {
            *capped = Some(cap.words.clone());
            self.stop.cancel();
        }
        Some(cap)
    }
}

impl Gateway {
    /// Starts the gateway for `endpoints` (name → catalogue URL), writing
    /// each cell's calls under `out`. Binds `127.0.0.1` — on the port and
    /// with the secret an earlier attempt of the run set kept in `keep`
    /// when it can, so a resumed cell's URL is the one it had (Inspect's
    /// `eval-retry` calls the base URL its log names); else on a port of its
    /// own. `keep` is written readable by its user alone.
    pub async fn start(setup: Setup) -> Result<Self, String> {
        let Setup { endpoints, run_set, purse, prices, stop } = setup;
        let keep = &run_set.join(KEPT_FILE);
        let kept: Option<Kept> = crate::files::fsread::read_regular(keep)
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
        crate::files::atomic::write_private(
            keep,
            &serde_json::to_vec(&Kept { port: addr.port(), secret: secret.clone() }).unwrap_or_default(),
        )
        .map_err(|e| format!("keeping the gateway's address in {}: {e}", keep.display()))?;
        // The system's certificates are read (tens of milliseconds) only
        // when an endpoint needs them.
        let tls = endpoints.values().any(|r| r.url.starts_with("https://"));
        let client = reqwest::Client::builder()
            .no_proxy()
            .tls_built_in_root_certs(tls)
            .connect_timeout(CONNECT_TIMEOUT)
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| format!("building the gateway's HTTP client: {e}"))?;
        let watch_others = purse.caps_anything();
        let gates = endpoints
            .iter()
            .map(|(name, r)| {
                let inner = GateInner { limiter: Limiter::new(r.max_concurrency), wake: Default::default() };
                (name.clone(), Arc::new(Gate { max: r.max_concurrency, inner: Mutex::new(inner) }))
            })
            .collect();
        let shared = Arc::new(Shared {
            secret: secret.clone(),
            endpoints: endpoints.into_iter().map(|(n, r)| (n, r.url)).collect(),
            gates,
            calls: Mutex::new(BTreeMap::new()),
            next_call: std::sync::atomic::AtomicU64::new(0),
            epoch: Instant::now(),
            out: run_set.join("out"),
            client,
            append: Mutex::new(Default::default()),
            purse: Mutex::new(purse),
            prices,
            stop,
            capped: Mutex::new(None),
        });
        let app = axum::Router::new().fallback(forward).with_state(shared.clone());
        let shutdown = CancellationToken::new();
        let until = shutdown.clone();
        // Each answer's bytes go out as they come: without TCP_NODELAY a
        // write that follows the head waits for the client's delayed ACK
        // (40 ms a call, measured by `cargo bench --bench gateway`).
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).with_graceful_shutdown(async move { until.cancelled().await }).await;
        });
        if watch_others {
            tokio::spawn(read_others(shared.clone(), run_set.join(OTHERS_FILE), shutdown.clone()));
        }
        tokio::spawn(write_calls(shared.clone(), run_set.join(CALLS_FILE), shutdown.clone()));
        Ok(Self { addr, secret, shared, shutdown, task: Some(task) })
    }

    /// Whether calls to `endpoint` go through it.
    pub fn serves(&self, endpoint: &str) -> bool {
        self.shared.endpoints.contains_key(endpoint)
    }

    /// The cap that stopped the batch, in words, once one was reached.
    pub fn capped(&self) -> Option<String> {
        self.shared.capped.lock().unwrap_or_else(|p| p.into_inner()).clone()
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

/// Reads what the other run sets spent, as the console last wrote it, until
/// the gateway ends; a cap reached by their spend stops the batch too.
async fn read_others(g: Arc<Shared>, file: PathBuf, until: CancellationToken) {
    loop {
        let others: Option<Others> =
            crate::files::fsread::read_regular(&file).ok().and_then(|b| serde_json::from_slice(&b).ok());
        if let Some(o) = others {
            g.purse.lock().unwrap_or_else(|p| p.into_inner()).set_others(o);
            g.cap_reached();
        }
        tokio::select! {
            _ = tokio::time::sleep(OTHERS_EVERY) => {}
            _ = until.cancelled() => return,
        }
    }
}

/// Writes the calls under way (`runboard::gateway::calls`) every second
/// when they changed, and at least every few seconds; removed at the end.
async fn write_calls(g: Arc<Shared>, file: PathBuf, until: CancellationToken) {
    let mut last: Option<(CallsNow, Instant)> = None;
    loop {
        let now = g.calls_now();
        let same = last.as_ref().is_some_and(|(l, at)| {
            l.cells == now.cells && l.endpoints == now.endpoints && at.elapsed() < CALLS_EVERY_ANYWAY
        });
        if !same {
            if let Ok(bytes) = serde_json::to_vec(&now) {
                let _ = crate::files::atomic::write_atomic(&file, &bytes);
            }
            last = Some((now, Instant::now()));
        }
        tokio::select! {
            _ = tokio::time::sleep(CALLS_EVERY) => {}
            _ = until.cancelled() => {
                let _ = std::fs::remove_file(&file);
                return;
            }
        }
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
    crate::access::tokens::random_hex(16).map_err(|e| format!("reading /dev/urandom for the gateway's secret: {e}"))
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

/// Where a call goes: `/<secret>/<cell>/<endpoint>/<rest>` — the cell it is
/// counted to, the endpoint's name and base URL, the endpoint's path.
struct Addressed<'a> {
    cell: &'a str,
    endpoint: &'a str,
    base: &'a str,
    rest: &'a str,
}

/// The call's address read from its path; without the secret nothing is
/// said, not even which endpoints there are.
fn addressed<'a>(g: &'a Shared, path: &'a str) -> Result<Addressed<'a>, Box<Response>> {
    let mut parts = path.splitn(4, '/');
    let mut next = || parts.next().unwrap_or("");
    let (secret, cell, endpoint, rest) = (next(), next(), next(), next());
    if !crate::access::auth::same(secret, &g.secret) || !runboard::live::logs::plain_name(cell) {
        return Err(Box::new(refusal(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such path on this runboard gateway".into(),
        )));
    }
    let Some(base) = g.endpoints.get(endpoint) else {
        return Err(Box::new(refusal(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("the runboard gateway has no endpoint {endpoint:?} (the catalogue's endpoints with a URL)"),
        )));
    };
    Ok(Addressed { cell, endpoint, base, rest })
}

async fn forward(State(g): State<Arc<Shared>>, req: Request) -> Response {
    let path = req.uri().path().trim_start_matches('/').to_owned();
    let Addressed { cell, endpoint, base, rest } = match addressed(&g, &path) {
        Ok(a) => a,
        Err(refused) => return *refused,
    };
    let query = req.uri().query().map(|q| format!("?{q}")).unwrap_or_default();
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
    // Once a cap is reached, no new call is sent on.
    if let Some(r) = api.counted().then(|| g.cap_refusal()).flatten() {
        return r;
    }
    let prepared = (api.counted() && head.method == axum::http::Method::POST).then(|| gateway::prepare(api, &body));
    let send = match prepared.as_ref().and_then(|p| p.body.clone()) {
        Some(changed) => reqwest::Body::from(changed),
        None => reqwest::Body::from(body),
    };
    let Ok(method) = reqwest::Method::from_bytes(head.method.as_str().as_bytes()) else {
        return refusal(StatusCode::METHOD_NOT_ALLOWED, "runboard_gateway_error", "an unknown method".into());
    };
    // A model call waits for its turn at the endpoint's limit; a listing does not.
    let slot = match (api.counted(), g.gates.get(endpoint)) {
        (true, Some(gate)) => Some(gate.enter(cell, g.epoch).await),
        _ => None,
    };
    // A call held by the limit while the cap was reached is not sent on either.
    if let Some(r) = slot.as_ref().and_then(|_| g.cap_refusal()) {
        return r;
    }
    let call = g.call_sent(cell, endpoint);
    let started = Instant::now();
    let answer = g.client.request(method, &url).headers(passed_on(&head.headers)).body(send).send().await;
    let answer = match answer {
        Ok(a) => a,
        Err(e) => {
            g.call_ended(cell, call, false);
            drop(slot);
            return refusal(
                StatusCode::BAD_GATEWAY,
                "runboard_gateway_error",
                format!("runboard's gateway could not reach endpoint {endpoint} ({}): {e}", base),
            );
        }
    };
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let said = Answer::of(status.as_u16(), answer.headers().get(header::RETRY_AFTER).and_then(|v| v.to_str().ok()));
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
    let record = Record {
        shared: g.clone(),
        cell: cell.to_owned(),
        asked_model: prepared.and_then(|p| p.model),
        started,
        slot,
        said,
        call,
        counted,
    };
    // A whole answer of a known, bounded length (not a stream: its client
    // reads it whole anyway) is read first and sent in one piece — the head
    // and the body in one write, no task or channel between.
    let whole_len = answer.content_length().filter(|n| !streamed && *n <= ANSWER_KEPT as u64);
    if whole_len.is_some() {
        return match answer.bytes().await {
            Ok(body) => {
                record.ended(|| gateway::answer_usage(api, &body));
                answered(status, headers, Body::from(body))
            }
            Err(e) => {
                record.ended(|| (None, None));
                refusal(
                    StatusCode::BAD_GATEWAY,
                    "runboard_gateway_error",
                    format!("runboard's gateway lost endpoint {endpoint}'s answer ({base}): {e}"),
                )
            }
        };
    }
    answered(status, headers, relay(answer, record, api, streamed.then(|| StreamTap::new(api, strip))))
}

/// The answer relayed as it comes, by a task of its own: each chunk sent on
/// (a stream through `tap`, which reads its usage and may strip the usage
/// chunk the gateway asked for); a client that went away stops being sent
/// to, but the answer is still read to its end, so the call is counted.
fn relay(mut answer: reqwest::Response, record: Record, api: Api, mut tap: Option<StreamTap>) -> Body {
    let counted = record.counted;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(16);
    tokio::spawn(async move {
        let mut kept = Vec::new();
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
        record.ended(|| match tap {
            Some(t) => (t.usage, t.model),
            None => gateway::answer_usage(api, &kept),
        });
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) });
    Body::from_stream(stream)
}

/// The answer the client gets: the endpoint's status and headers, `body`.
fn answered(status: StatusCode, headers: HeaderMap, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// One call under way, and what is done once its answer has ended.
struct Record {
    shared: Arc<Shared>,
    cell: String,
    asked_model: Option<String>,
    started: Instant,
    /// Its room at its endpoint's limit (none: not a model call).
    slot: Option<Slot>,
    /// How the endpoint answered, for the limit.
    said: Answer,
    /// Its id among the cell's calls under way.
    call: u64,
    /// Whether it is counted (a 2xx answer of a counted API).
    counted: bool,
}

impl Record {
    /// The answer ended: its room is given back, it is no longer under way,
    /// and a counted call is written with the usage `read` finds in it.
    fn ended(mut self, read: impl FnOnce() -> (Option<gateway::Usage>, Option<String>)) {
        if let Some(slot) = self.slot.take() {
            slot.end(self.said);
        }
        let overloaded = matches!(self.said, Answer::Overloaded { .. });
        self.shared.call_ended(&self.cell, self.call, overloaded);
        if self.counted {
            let (usage, model) = read();
            self.write(usage, model);
        }
    }

    fn write(self, usage: Option<gateway::Usage>, model: Option<String>) {
        let model = model.or(self.asked_model);
        let now = crate::system::clock::now();
        let line = gateway::progress_line(now, model.as_deref(), usage, self.started.elapsed().as_secs_f64());
        let dir = self.shared.out.join(&self.cell);
        let mut files = self.shared.append.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(u) = usage {
            let tokens = Tokens { input: u.input, output: u.output, cached: u.cached, unsplit: 0 };
            let spent =
                Spent { cost: self.shared.prices.get(&self.cell).map(|p| p.cost(&tokens)), tokens: tokens.total() };
            let day = now.day_key();
            self.shared.purse.lock().unwrap_or_else(|p| p.into_inner()).add(spent, &day);
        }
        // At most FILES_OPEN held open (a descriptor each): past it, all are let go.
        if files.len() >= FILES_OPEN && !files.contains_key(&self.cell) {
            files.clear();
        }
        let file = match files.entry(self.cell.clone()) {
            std::collections::hash_map::Entry::Occupied(o) => Ok(o.into_mut()),
            std::collections::hash_map::Entry::Vacant(v) => std::fs::create_dir_all(&dir)
                .and_then(|_| {
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(dir.join(runboard::live::spend::PROGRESS_FILE))
                })
                .map(|f| v.insert(f)),
        };
        let written = file.and_then(|f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            eprintln!("runboard gateway: a call of cell {} could not be recorded: {e}", self.cell);
        }
        drop(files);
        // The call that reached a cap pauses the batch at once.
        self.shared.cap_reached();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call held by the limit is listed as waiting (its cell had sent
    /// nothing yet); while another call reaches the cap it is refused when
    /// its turn comes, never sent on: the overshoot is only what was in flight.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_held_by_the_limit_is_said_waiting_and_refused_when_the_cap_is_reached() {
        let (release, rx) = tokio::sync::watch::channel(false);
        let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = seen.clone();
        // The endpoint (a fake: a paid API): each answer 17 tokens, held until released.
        let app = axum::Router::new().fallback(move || {
            let (mut rx, counter) = (rx.clone(), counter.clone());
            async move {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = rx.wait_for(|r| *r).await;
                axum::Json(serde_json::json!({"model": "m", "usage": {"prompt_tokens": 15, "completion_tokens": 2}}))
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let run_set = tempfile::tempdir().unwrap();
        let budget: runboard::campaign::Budget = toml::from_str("max_tokens = 10").unwrap();
        let stop = CancellationToken::new();
        let g = Gateway::start(Setup {
            endpoints: BTreeMap::from([("e".to_owned(), Route { url, max_concurrency: Some(1) })]),
            run_set: run_set.path().to_path_buf(),
            purse: Purse::new(&budget, "USD", Spent::default(), BTreeMap::new()),
            prices: BTreeMap::new(),
            stop: stop.clone(),
        })
        .await
        .unwrap();
        let call = |cell: &str| {
            let url = format!("{}/chat/completions", g.cell_url(cell, "e"));
            async move { reqwest::Client::new().post(url).body(r#"{"model": "m"}"#).send().await.unwrap() }
        };
        let first = tokio::spawn(call("c-000000000001"));
        while seen.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let held = tokio::spawn(call("c-000000000002"));
        tokio::time::sleep(Duration::from_millis(200)).await;
        // The held cell has sent nothing yet: it is listed waiting all the
        // same (else Live would call it silent, and stall it).
        let now = g.shared.calls_now();
        let c2 = &now.cells["c-000000000002"];
        assert_eq!((c2.endpoint.as_str(), c2.waiting, c2.in_flight), ("e", 1, 0));
        assert_eq!(now.cells["c-000000000001"].in_flight, 1);
        release.send_replace(true);
        assert_eq!(first.await.unwrap().status(), 200);
        let refused = held.await.unwrap();
        assert_eq!(refused.status(), 402);
        assert_eq!(refused.headers()["x-should-retry"], "false");
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 1, "the held call never reached the endpoint");
        assert!(stop.is_cancelled(), "the batch's stop was asked for");
        assert!(g.capped().unwrap().starts_with("the cap of 10 tokens per batch: 17 used"), "{:?}", g.capped());
        g.stop().await;
    }

    #[test]
    fn secrets_are_128_bits_and_compared_whole() {
        let (a, b) = (secret().unwrap(), secret().unwrap());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert!(
            crate::access::auth::same(&a, &a.clone())
                && !crate::access::auth::same(&a, &b)
                && !crate::access::auth::same(&a, &a[..31])
        );
        let plain = runboard::live::logs::plain_name;
        assert!(plain("c-3f9a0c1b2d4e") && !plain("..") && !plain("a/b") && !plain(""));
    }
}
