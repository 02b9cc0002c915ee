//! The HTTP surface: the Leptos app (pages and server functions), the JSON API,
//! static files, and the guards every request passes.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use app::api::ssr::ConsoleHandle;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{FromRef, Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use leptos::config::LeptosOptions;
use leptos_axum::{generate_route_list, LeptosRoutes};
use runboard::api::operations::op;
use runboard::api::streams;
use runboard::api::{ApiError, Console, ErrorKind, Method, Nothing, Operation, RunName};
use runboard::live::logs::{LogChunk, LogQuery};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::access::auth::{self, Access};
use crate::console::LocalConsole;
use crate::web::assets::StaticFiles;
use crate::web::error::{too_large, AppError, MAX_BODY};

/// Everything a request handler may need.
#[derive(Clone)]
pub struct AppState {
    pub leptos: LeptosOptions,
    pub console: Arc<LocalConsole>,
    pub assets: Arc<StaticFiles>,
    pub access: Access,
    /// Milliseconds since the epoch of the latest request (the idle watchdog's input).
    pub last_request: Arc<AtomicI64>,
    /// Version streams open now: a page following a run (or the list, the
    /// live state) counts as a request for as long as it stays open, even
    /// when nothing changes and nothing is pushed (the idle watchdog's input).
    pub open_streams: Arc<std::sync::atomic::AtomicUsize>,
    /// Cancelled when the server shuts down: long-lived responses (the version
    /// streams) end then, so a graceful shutdown never waits on an open page.
    pub shutdown: CancellationToken,
    /// One version watcher per followed run (and one for the list), shared by
    /// every open stream.
    pub watchers: crate::web::follow::Watchers,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(s: &AppState) -> Self {
        s.leptos.clone()
    }
}

impl AppState {
    pub fn new(leptos: LeptosOptions, console: impl Into<Arc<LocalConsole>>, access: Access) -> Self {
        let assets = Arc::new(StaticFiles::new(&*leptos.site_root));
        Self {
            leptos,
            console: console.into(),
            assets,
            access,
            last_request: Arc::new(AtomicI64::new(crate::system::clock::now().millis())),
            open_streams: Arc::default(),
            shutdown: CancellationToken::new(),
            watchers: crate::web::follow::Watchers::default(),
        }
    }
}

/// The whole application as a router, apart from `main`, so tests can call
/// `app(state).oneshot(request)`.
pub fn app(state: AppState) -> Router {
    let routes = generate_route_list(app::App);
    let console: ConsoleHandle = state.console.clone();
    let leptos = state.leptos.clone();
    // Every operation of the table, then what is not an operation: the
    // version streams (server-sent events) and the server's debug figures.
    let api = operation_routes(Router::new())
        .route(streams::RUNS_VERSION, get(runs_version_stream))
        .route(streams::RUN_VERSION, get(run_version_stream))
        .route(streams::LIVE_VERSION, get(live_version_stream))
        .route(streams::AUTO_VERSION, get(auto_version_stream))
        .route(streams::LOG, get(log_stream))
        .route("/api/debug/readers", get(debug_readers))
        .route("/api/{*rest}", get(api_not_found).post(api_not_found))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY));
    Router::new()
        .merge(api)
        .leptos_routes_with_context(
            &state,
            routes,
            move || leptos::prelude::provide_context(console.clone()),
            move || app::shell(leptos.clone()),
        )
        .fallback(static_or_404)
        .layer(middleware::from_fn(sfn_status))
        // Compressed when the client accepts br or gzip: the JSON API, pages,
        // and static files without a precompressed copy. Never the version
        // streams (text/event-stream is left alone, unbuffered), images, or
        // what is already encoded (precompressed assets).
        // The fastest level: a 3 MB list compresses ~3× faster than at the
        // default for ~25 % more bytes, and it is done on the serving threads.
        .layer(tower_http::compression::CompressionLayer::new().quality(tower_http::CompressionLevel::Fastest))
        .layer(middleware::from_fn_with_state(state.access.clone(), auth::guard))
        // Outside the guard: a control it refuses is recorded too.
        .layer(middleware::from_fn_with_state(
            crate::access::audit::Recorder { root: state.console.root().to_path_buf(), access: state.access.clone() },
            crate::access::audit::record,
        ))
        .layer(middleware::from_fn_with_state(state.last_request.clone(), note_request))
        .with_state(state)
}

/// The pages' server functions (`/sfn/*`) answer with the status their
/// refusal's kind says. Errors the server-fn layer makes itself before the
/// function runs — arguments that do not decode, a body it cannot read — come
/// out as 500; they are the client's mistakes: 422 `bad_query` in the
/// documented shape. A real internal error (`kind: internal`) stays 500.
async fn sfn_status(req: Request, next: Next) -> Response {
    if !req.uri().path().starts_with("/sfn/") {
        return next.run(req).await;
    }
    let res = next.run(req).await;
    if res.status() != axum::http::StatusCode::INTERNAL_SERVER_ERROR {
        return res;
    }
    let Ok(bytes) = axum::body::to_bytes(res.into_body(), 1 << 20).await else {
        return AppError::from(ApiError::internal("answering a server function")).into_response();
    };
    match serde_json::from_slice::<ApiError>(&bytes) {
        Ok(e) if e.kind == ErrorKind::Internal && !e.error.starts_with("internal error while") => {
            // The server-fn layer's own failure text, worded as internal by
            // the conversion: it is about the request.
            AppError::from(ApiError::with_reasons(
                ErrorKind::BadQuery,
                vec![format!("the request could not be read: {}", e.error)],
            ))
            .into_response()
        }
        Ok(e) => AppError::from(e).into_response(),
        Err(_) => AppError::from(ApiError::with_reasons(
            ErrorKind::BadQuery,
            vec![format!("the request could not be read: {}", String::from_utf8_lossy(&bytes).trim())],
        ))
        .into_response(),
    }
}

async fn note_request(State(last): State<Arc<AtomicI64>>, req: Request, next: Next) -> Response {
    last.store(crate::system::clock::now().millis(), Ordering::Relaxed);
    next.run(req).await
}

async fn blocking<T: Send + 'static>(
    doing: &'static str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, AppError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| AppError::internal(doing, e))
}

// ---- the operations ---------------------------------------------------------

/// A REST route for every row of the operation table, each served by
/// [`serve`] for its operation type.
macro_rules! rest_routes {
    ($( $(#[$doc:meta])* $name:ident $ep:literal : $method:ident $path:literal, $input:ty => $output:ty, $doing:literal $(=> $group:ident $cli:tt)? $(, $opt:ident = $val:expr)* ; )*) => {
        fn operation_routes(router: Router<AppState>) -> Router<AppState> {
            router $( .route($path, rest_method!($method, serve::<op::$name>)) )*
        }
    };
}

macro_rules! rest_method {
    (GET, $handler:expr) => {
        get($handler)
    };
    (POST, $handler:expr) => {
        post($handler)
    };
}

runboard::operations!(rest_routes);

/// A route's `{parameters}`, decoded (none for a route without any); a
/// parameter that is not UTF-8 is the client's mistake, in the JSON shape.
struct PathParams(Vec<(String, String)>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for PathParams {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, AppError> {
        use axum::extract::OptionalFromRequestParts;
        match <Path<Vec<(String, String)>> as OptionalFromRequestParts<S>>::from_request_parts(parts, state).await {
            Ok(params) => Ok(PathParams(params.map(|Path(p)| p).unwrap_or_default())),
            Err(e) => Err(ApiError::with_reasons(ErrorKind::BadQuery, vec![e.body_text()]).into()),
        }
    }
}

/// Serves operation `O` over REST: its input read by [`input_of`], the same
/// console method the page's server function calls (on the blocking pool: it
/// reads files), and the answer as JSON with the operation's status — or as
/// a download when the operation makes one.
async fn serve<O: Operation>(
    State(s): State<AppState>,
    PathParams(params): PathParams,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    bytes: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, AppError> {
    // A body past the limit (or one that cannot be read) is refused in the
    // documented shape, like every other refusal.
    let bytes = bytes.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => too_large(),
        _ => ApiError::with_reasons(ErrorKind::BadQuery, vec![format!("the request body could not be read: {e}")]),
    })?;
    let input = input_of::<O>(params, query.as_deref().unwrap_or(""), &headers, &bytes)?;
    let console = s.console.clone();
    let output = blocking(O::DOING, move || O::call(console.as_ref(), input)).await??;
    let status = StatusCode::from_u16(O::STATUS).unwrap_or(StatusCode::OK);
    Ok(match O::file(&output) {
        Some(file) => (
            status,
            [
                (header::CONTENT_TYPE, file.content_type.to_owned()),
                (header::CONTENT_DISPOSITION, format!("attachment; filename=\"{}\"", file.file_name)),
            ],
            file.body,
        )
            .into_response(),
        None => (status, Json(output)).into_response(),
    })
}

/// An operation's input, as the table says to read it (one reader for every
/// operation, so every refusal is worded alike):
/// - GET: the path's parameters and the query string, as one form (a key
///   given twice, or a value of the wrong type, is 422 `bad_query`);
/// - POST: the JSON body — required to say `Content-Type: application/json`
///   (a browser cannot send that from another site without asking first, so a
///   form on a foreign page cannot launch or stop a batch), one object,
///   unknown fields refused, every reason at once (422 `refused`); an empty
///   body is the input's default. The path's parameters join the body's
///   fields.
fn input_of<O: Operation>(
    params: Vec<(String, String)>,
    query: &str,
    headers: &HeaderMap,
    bytes: &[u8],
) -> Result<O::Input, ApiError> {
    match O::METHOD {
        Method::Get => {
            let path = serde_urlencoded::to_string(&params).map_err(|e| crate::web::error::internal(O::DOING, e))?;
            let form = [path.as_str(), query].iter().filter(|p| !p.is_empty()).copied().collect::<Vec<_>>().join("&");
            serde_urlencoded::from_str(&form).map_err(|e| {
                ApiError::with_reasons(ErrorKind::BadQuery, vec![format!("the query string does not parse: {e}")])
            })
        }
        Method::Post => {
            let json = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("application/json"));
            if !json && !bytes.iter().all(u8::is_ascii_whitespace) {
                return Err(ApiError::refused(
                    vec!["send the body as JSON with Content-Type: application/json".into()],
                ));
            }
            runboard::basics::json::from_body_with(bytes, params).map_err(ApiError::refused)
        }
    }
}

/// How often a followed run's version is looked at (`stat` only).
const RUN_FOLLOW_EVERY: Duration = Duration::from_millis(250);
/// How often the list's version is looked at: it walks the whole root.
const LIST_FOLLOW_EVERY: Duration = Duration::from_secs(2);

/// Counts a stream as open until it is dropped (the client went away, or
/// the server shuts down): the idle watchdog counts it as activity.
struct Open(Arc<std::sync::atomic::AtomicUsize>);

impl Open {
    fn new(s: &AppState) -> Self {
        s.open_streams.fetch_add(1, Ordering::Relaxed);
        Self(s.open_streams.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Server-sent events carrying the version of `key` each time it changes
/// (looked at every `every` by the key's one shared watcher; the first at
/// once). When the thing is gone, one `gone` event ends the stream. An open
/// stream counts as activity for the idle watchdog, and ends when the server
/// shuts down.
fn version_events(
    s: &AppState,
    key: &str,
    every: Duration,
    version: impl Fn() -> Option<String> + Clone + Send + Sync + 'static,
) -> Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>> {
    struct Follow {
        rx: tokio::sync::watch::Receiver<crate::web::follow::Seen>,
        /// The version this stream sent last.
        sent: Option<String>,
        done: bool,
        last_request: Arc<AtomicI64>,
        shutdown: CancellationToken,
        _open: Open,
    }
    let open = Open::new(s);
    let start = Follow {
        rx: s.watchers.follow(key, every, &s.shutdown, version),
        sent: None,
        done: false,
        last_request: s.last_request.clone(),
        shutdown: s.shutdown.clone(),
        _open: open,
    };
    let stream = futures_util::stream::unfold(start, move |mut f| async move {
        if f.done {
            return None;
        }
        loop {
            let seen = f.rx.borrow_and_update().clone();
            match seen {
                None => {}
                Some(None) => {
                    f.done = true;
                    // An event without a data line is never dispatched by a
                    // browser's EventSource: say it in the data, too.
                    return Some((Ok(Event::default().event("gone").data("gone")), f));
                }
                Some(Some(v)) if f.sent.as_ref() != Some(&v) => {
                    f.last_request.store(crate::system::clock::now().millis(), Ordering::Relaxed);
                    f.sent = Some(v.clone());
                    return Some((Ok(Event::default().event("version").data(v)), f));
                }
                Some(Some(_)) => {}
            }
            tokio::select! {
                changed = f.rx.changed() => if changed.is_err() && !matches!(*f.rx.borrow(), Some(None)) { return None },
                _ = f.shutdown.cancelled() => return None,
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn run_version_stream(State(s): State<AppState>, Path(name): Path<String>) -> Result<Response, AppError> {
    let console = s.console.clone();
    let n = name.clone();
    blocking("finding a run", move || console.run_version(RunName { name: n })).await??;
    let console = s.console.clone();
    let key = format!("run:{name}");
    let version = move || console.run_version(RunName { name: name.clone() }).ok().map(|v| v.version);
    Ok(version_events(&s, &key, RUN_FOLLOW_EVERY, version).into_response())
}

/// How often a followed log is read on (a `stat` and the appended bytes).
const LOG_FOLLOW_EVERY: Duration = Duration::from_millis(500);
/// A log stream ends after this; the browser's EventSource connects again
/// with the last event's id (`Last-Event-ID`) and reads on from there.
const LOG_STREAM_FOR: Duration = Duration::from_secs(300);

/// `?after=`: where a log stream starts (a chunk's `next`), when no
/// `Last-Event-ID` says it.
#[derive(serde::Deserialize, Default)]
struct AfterQuery {
    after: Option<String>,
}

/// `GET /api/logs/{run_set}/{name}/stream`: the log as server-sent events,
/// one `chunk` event (the JSON of `GET /api/logs/{run_set}/{name}`, its `id`
/// the chunk's `next`) each time bytes are appended, starting after
/// `Last-Event-ID` or `?after=` (none: the last 16 KiB). A log that cannot
/// be read is the same 404/422 as the read, before the stream opens; one
/// that becomes unreadable ends the stream with an `unreadable` event.
async fn log_stream(
    State(s): State<AppState>,
    Path((run_set, name)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Result<Response, AppError> {
    let q: AfterQuery = serde_urlencoded::from_str(raw.as_deref().unwrap_or("")).unwrap_or_default();
    let after = headers.get("last-event-id").and_then(|v| v.to_str().ok()).map(str::to_owned).or(q.after);
    let query = LogQuery { run_set, name, after };
    let console = s.console.clone();
    let asked = query.clone();
    let first = blocking("reading a log", move || console.log(asked)).await??;
    struct Tail {
        console: Arc<LocalConsole>,
        query: LogQuery,
        ready: Option<LogChunk>,
        /// The last chunk said more was ready: read again without waiting.
        hurry: bool,
        /// Nothing was sent yet: the first chunk goes even when empty (it
        /// says where the reader stands, and whether the log exists).
        first: bool,
        until: tokio::time::Instant,
        shutdown: CancellationToken,
        last_request: Arc<AtomicI64>,
        _open: Open,
    }
    let start = Tail {
        console: s.console.clone(),
        query,
        ready: Some(first),
        hurry: false,
        first: true,
        until: tokio::time::Instant::now() + LOG_STREAM_FOR,
        shutdown: s.shutdown.clone(),
        last_request: s.last_request.clone(),
        _open: Open::new(&s),
    };
    let stream = futures_util::stream::unfold(start, |mut t| async move {
        loop {
            let chunk = match t.ready.take() {
                Some(chunk) => chunk,
                None => {
                    if !t.hurry {
                        tokio::select! {
                            _ = tokio::time::sleep(LOG_FOLLOW_EVERY) => {}
                            _ = tokio::time::sleep_until(t.until) => return None,
                            _ = t.shutdown.cancelled() => return None,
                        }
                    }
                    if tokio::time::Instant::now() >= t.until || t.shutdown.is_cancelled() {
                        return None;
                    }
                    let console = t.console.clone();
                    let asked = t.query.clone();
                    match tokio::task::spawn_blocking(move || console.log(asked)).await {
                        Ok(Ok(chunk)) => chunk,
                        Ok(Err(e)) => {
                            // Said once; the stream ends after it.
                            t.until = tokio::time::Instant::now();
                            t.hurry = true;
                            return Some((
                                Ok::<Event, Infallible>(Event::default().event("unreadable").data(e.to_string())),
                                t,
                            ));
                        }
                        Err(_) => return None,
                    }
                }
            };
            t.hurry = chunk.more;
            if !chunk.next.is_empty() {
                t.query.after = Some(chunk.next.clone());
            }
            if chunk.text.is_empty() && chunk.reset.is_none() && !t.first {
                continue;
            }
            t.first = false;
            t.last_request.store(crate::system::clock::now().millis(), Ordering::Relaxed);
            let data = serde_json::to_string(&chunk).unwrap_or_default();
            let mut event = Event::default().event("chunk").data(data);
            if !chunk.next.is_empty() {
                event = event.id(chunk.next);
            }
            return Some((Ok(event), t));
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()).into_response())
}

async fn runs_version_stream(State(s): State<AppState>) -> impl IntoResponse {
    let console = s.console.clone();
    version_events(&s, "list", LIST_FOLLOW_EVERY, move || Some(console.runs().list_version()))
}

/// What the server holds for following and reading runs: the reader cache (runs
/// held, the limit, evictions, views read and answered from the cache) and the
/// number of shared version watchers.
async fn debug_readers(State(s): State<AppState>) -> Result<impl IntoResponse, AppError> {
    let console = s.console.clone();
    let (readers, campaign) = blocking("reading the reader cache figures", move || {
        (console.runs().reader_stats(), console.campaign().records().stats())
    })
    .await?;
    Ok(Json(json!({ "readers": readers, "watchers": s.watchers.count(), "campaign": campaign })))
}

async fn api_not_found(req: Request) -> AppError {
    AppError::not_found(format!("no API endpoint {} {}", req.method(), req.uri().path()))
}

async fn static_or_404(State(s): State<AppState>, headers: HeaderMap, req: Request) -> Response {
    if let Some(res) = s.assets.respond(req.uri().path(), &headers).await {
        return res;
    }
    // A page address no route knows, asked for by a browser: the app's own
    // not-found page (its router's fallback, with the navigation), as 404 —
    // never a raw JSON body in place of a page.
    let path = req.uri().path();
    let browser =
        headers.get(axum::http::header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|a| a.contains("text/html"));
    let machine = ["/api/", "/sfn/", "/pkg/"].iter().any(|p| path.starts_with(p));
    if browser && !machine && req.method() == axum::http::Method::GET {
        let console: ConsoleHandle = s.console.clone();
        let leptos = s.leptos.clone();
        let render = leptos_axum::render_app_to_stream_with_context(
            move || leptos::prelude::provide_context(console.clone()),
            move || app::shell(leptos.clone()),
        );
        let mut res = render(req).await;
        *res.status_mut() = axum::http::StatusCode::NOT_FOUND;
        return res;
    }
    AppError::not_found(format!("nothing at {path}")).into_response()
}

// ---- the console ------------------------------------------------------------

/// How often the live version is looked at (`stat` and the unit's record).
const LIVE_FOLLOW_EVERY: Duration = Duration::from_millis(500);

async fn live_version_stream(State(s): State<AppState>) -> impl IntoResponse {
    let console = s.console.clone();
    version_events(&s, "live", LIVE_FOLLOW_EVERY, move || console.live_version(Nothing {}).ok().map(|v| v.version))
}

async fn auto_version_stream(State(s): State<AppState>) -> impl IntoResponse {
    let console = s.console.clone();
    version_events(&s, "auto", LIVE_FOLLOW_EVERY, move || console.auto_version(Nothing {}).ok().map(|v| v.version))
}
