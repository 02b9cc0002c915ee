//! The HTTP surface: the Leptos app (pages and server functions), the JSON API,
//! static files, and the guards every request passes.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use app::api::ssr::ConsoleHandle;
use std::convert::Infallible;
use std::time::Duration;

use app::api::ssr::Console;
use app::api::{parse_call_number, ApiError, CoverageParams, ListParams, TrialParams};
use axum::extract::{FromRef, Path, Request, State};
use axum::http::HeaderMap;
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use leptos::config::LeptosOptions;
use leptos_axum::{generate_route_list, LeptosRoutes};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::assets::StaticFiles;
use crate::auth::{self, Access};
use crate::console::LocalConsole;
use crate::error::AppError;

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
    pub watchers: crate::follow::Watchers,
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
            last_request: Arc::new(AtomicI64::new(crate::clock::now().millis())),
            open_streams: Arc::default(),
            shutdown: CancellationToken::new(),
            watchers: crate::follow::Watchers::default(),
        }
    }
}

/// The whole application as a router, apart from `main`, so tests can call
/// `app(state).oneshot(request)`.
pub fn app(state: AppState) -> Router {
    let routes = generate_route_list(app::App);
    let console: ConsoleHandle = state.console.clone();
    let leptos = state.leptos.clone();
    let api = Router::new()
        .route("/api/campaign", get(campaign))
        .route("/api/runs", get(runs))
        .route("/api/runs/version", get(runs_version))
        .route("/api/runs/{name}", get(run_view))
        .route("/api/runs/{name}/version", get(run_version))
        .route("/api/runs/version/stream", get(runs_version_stream))
        .route("/api/runs/{name}/version/stream", get(run_version_stream))
        .route("/api/runs/{name}/analysis", get(run_analysis))
        .route("/api/runs/{name}/calls", get(run_calls))
        .route("/api/runs/{name}/calls/{call}", get(run_call))
        .route("/api/runs/{name}/memory", get(run_memory))
        .route("/api/runs/{name}/rounds", get(run_rounds))
        .route("/api/runs/{name}/accepted", get(run_accepted))
        .route("/api/runs/{name}/trials", get(run_trials))
        .route("/api/runs/{name}/lineage/{trial}", get(run_lineage))
        .route("/api/runs/{name}/trial-graphs", get(run_trial_graphs))
        .route("/api/runs/{name}/reports", get(run_reports))
        .route("/api/debug/readers", get(debug_readers))
        .route("/api/live", get(live))
        .route("/api/live/version", get(live_version))
        .route("/api/live/version/stream", get(live_version_stream))
        .route("/api/coverage", get(coverage))
        .route("/api/cells", get(cells))
        .route("/api/runsets", get(run_sets))
        .route("/api/draft-form", get(draft_form))
        .route("/api/drafts/preview", post(draft_preview))
        .route("/api/drafts", post(draft_save))
        .route("/api/preflight", post(preflight))
        .route("/api/control/start", post(control_start))
        .route("/api/control/pause", post(control_pause))
        .route("/api/control/stop", post(control_stop))
        .route("/api/control/resume", post(control_resume))
        .route("/api/evidence", get(evidence))
        .route("/api/evidence/export", get(evidence_export))
        .route("/api/timing", get(timing))
        .route("/api/catalogue", get(catalogue))
        .route("/api/overview", get(overview))
        .route("/api/cohorts", get(cohorts).post(cohort_save))
        .route("/api/cohorts/rename", post(cohort_rename))
        .route("/api/cohorts/delete", post(cohort_delete))
        .route("/api/cohorts/compare", get(cohort_compare))
        .route("/api/research", get(research).post(research_save))
        .route("/api/research/settings", post(research_settings))
        .route("/api/research/decisions", post(research_decide))
        .route("/api/publish/status", get(publish_status))
        .route("/api/publish", post(publish_push))
        .route("/api/reports", get(reports))
        .route("/api/reports/{run_set}", get(report))
        .route("/api/auto", get(auto_view))
        .route("/api/auto/explain", get(auto_explain))
        .route("/api/auto/version/stream", get(auto_version_stream))
        .route("/api/auto/log", get(auto_log))
        .route("/api/auto/settings", post(auto_settings))
        .route("/api/auto/{mode}", post(auto_mode))
        .route("/api/{*rest}", get(api_not_found).post(api_not_found));
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
        .layer(middleware::from_fn_with_state(state.last_request.clone(), note_request))
        .with_state(state)
}

/// A query string read into `T`, or 422 `bad_query` in the documented JSON
/// shape naming what would not parse (a repeated key, a value of the wrong
/// type) — never axum's plain-text 400.
pub struct Query<T>(pub T);

impl<T: serde::de::DeserializeOwned, S: Send + Sync> axum::extract::FromRequestParts<S> for Query<T> {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, AppError> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(t)) => Ok(Query(t)),
            Err(e) => {
                let detail = e.body_text();
                let detail = detail.strip_prefix("Failed to deserialize query string: ").unwrap_or(&detail);
                Err(ApiError::with_reasons(
                    app::api::ErrorKind::BadQuery,
                    vec![format!("the query string does not parse: {detail}")],
                )
                .into())
            }
        }
    }
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
        Ok(e) if e.kind == app::api::ErrorKind::Internal && !e.error.starts_with("internal error while") => {
            // The server-fn layer's own failure text, worded as internal by
            // the conversion: it is about the request.
            AppError::from(ApiError::with_reasons(
                app::api::ErrorKind::BadQuery,
                vec![format!("the request could not be read: {}", e.error)],
            ))
            .into_response()
        }
        Ok(e) => AppError::from(e).into_response(),
        Err(_) => AppError::from(ApiError::with_reasons(
            app::api::ErrorKind::BadQuery,
            vec![format!("the request could not be read: {}", String::from_utf8_lossy(&bytes).trim())],
        ))
        .into_response(),
    }
}

async fn note_request(State(last): State<Arc<AtomicI64>>, req: Request, next: Next) -> Response {
    last.store(crate::clock::now().millis(), Ordering::Relaxed);
    next.run(req).await
}

async fn blocking<T: Send + 'static>(
    doing: &'static str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, AppError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| AppError::internal(doing, e))
}

/// Answers one typed console read as JSON, run on the blocking pool (it reads
/// files): the same method, and so the same answer or refusal, as the page's
/// server function for the same request.
async fn read<T: serde::Serialize + Send + 'static>(
    s: &AppState,
    doing: &'static str,
    f: impl FnOnce(&dyn Console) -> Result<T, ApiError> + Send + 'static,
) -> Result<Json<T>, AppError> {
    let console = s.console.clone();
    Ok(Json(blocking(doing, move || f(console.as_ref())).await??))
}

async fn campaign(State(s): State<AppState>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading the campaign", |c| Ok(c.campaign())).await
}

async fn runs(State(s): State<AppState>, Query(params): Query<ListParams>) -> Result<impl IntoResponse, AppError> {
    let query = params.parse().map_err(ApiError::from)?;
    read(&s, "listing runs", move |c| c.list_runs(&query)).await
}

async fn runs_version(State(s): State<AppState>) -> Result<impl IntoResponse, AppError> {
    let console = s.console.clone();
    let version = blocking("reading the run list version", move || console.runs().list_version()).await?;
    Ok(Json(json!({ "version": version })))
}

async fn run_view(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading a run", move |c| c.run_view(&name)).await
}

async fn run_analysis(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    read(&s, "analysing a run", move |c| c.run_analysis(&name)).await
}

async fn run_version(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading a run version", move |c| c.run_version(&name).map(|v| json!({ "version": v }))).await
}

/// How often a followed run's version is looked at (`stat` only).
const RUN_FOLLOW_EVERY: Duration = Duration::from_millis(250);
/// How often the list's version is looked at: it walks the whole root.
const LIST_FOLLOW_EVERY: Duration = Duration::from_secs(2);

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
        rx: tokio::sync::watch::Receiver<crate::follow::Seen>,
        /// The version this stream sent last.
        sent: Option<String>,
        done: bool,
        last_request: Arc<AtomicI64>,
        shutdown: CancellationToken,
        _open: Open,
    }
    /// Counts the stream as open until it is dropped (the client went away,
    /// or the server shuts down).
    struct Open(Arc<std::sync::atomic::AtomicUsize>);
    impl Drop for Open {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::Relaxed);
        }
    }
    s.open_streams.fetch_add(1, Ordering::Relaxed);
    let open = Open(s.open_streams.clone());
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
                    f.last_request.store(crate::clock::now().millis(), Ordering::Relaxed);
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
    blocking("finding a run", move || console.run_version(&n)).await??;
    let console = s.console.clone();
    let key = format!("run:{name}");
    Ok(version_events(&s, &key, RUN_FOLLOW_EVERY, move || console.run_version(&name).ok()).into_response())
}

async fn runs_version_stream(State(s): State<AppState>) -> impl IntoResponse {
    let console = s.console.clone();
    version_events(&s, "list", LIST_FOLLOW_EVERY, move || Some(console.runs().list_version()))
}

async fn run_call(
    State(s): State<AppState>,
    Path((name, call)): Path<(String, String)>,
) -> Result<impl IntoResponse, AppError> {
    let n = parse_call_number(&call)?;
    read(&s, "reading a call", move |c| c.run_call(&name, n)).await
}

async fn run_trials(
    State(s): State<AppState>,
    Path(name): Path<String>,
    Query(params): Query<TrialParams>,
) -> Result<impl IntoResponse, AppError> {
    let query = params.parse().map_err(ApiError::from)?;
    read(&s, "reading a run's trials", move |c| c.run_trials(&name, &query)).await
}

async fn run_lineage(
    State(s): State<AppState>,
    Path((name, trial)): Path<(String, String)>,
) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading a trial's lineage", move |c| c.run_lineage(&name, &trial)).await
}

async fn run_calls(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading a run's calls", move |c| c.run_calls(&name)).await
}

async fn run_accepted(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading a run's accepted factors", move |c| c.run_accepted(&name)).await
}

async fn run_rounds(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading a run's rounds", move |c| c.run_rounds(&name)).await
}

async fn run_memory(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading a run's memory", move |c| c.run_memory(&name)).await
}

async fn run_trial_graphs(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading trial graphs", move |c| c.run_trial_graphs(&name)).await
}

async fn run_reports(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading acceptance reports", move |c| c.run_reports(&name)).await
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

/// A POST body as JSON (`Content-Type: application/json`), or a 422 naming
/// what is wrong with it. The content type is required: a browser cannot send
/// it from another site without asking first, so a form on a foreign page
/// cannot launch or stop a batch.
fn body<T: serde::de::DeserializeOwned + Default>(headers: &HeaderMap, bytes: &[u8]) -> Result<T, ApiError> {
    let json = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("application/json"));
    if !json && !bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::refused(vec!["send the body as JSON with Content-Type: application/json".into()]));
    }
    runboard::json::from_body(bytes).map_err(ApiError::refused)
}

async fn live(
    State(s): State<AppState>,
    Query(p): Query<runboard::live::LiveParams>,
) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading the live state", move |c| c.live(&p)).await
}

async fn live_version(State(s): State<AppState>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading the live version", |c| Ok(json!({ "version": c.live_version() }))).await
}

async fn live_version_stream(State(s): State<AppState>) -> impl IntoResponse {
    let console = s.console.clone();
    version_events(&s, "live", LIVE_FOLLOW_EVERY, move || Some(console.live_version()))
}

async fn coverage(State(s): State<AppState>, Query(p): Query<CoverageParams>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading coverage", move |c| c.coverage(&p)).await
}

async fn cells(
    State(s): State<AppState>,
    Query(p): Query<runboard::coverage::CellParams>,
) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading cells", move |c| c.cells(&p)).await
}

async fn run_sets(State(s): State<AppState>) -> Result<impl IntoResponse, AppError> {
    read(&s, "listing run sets", |c| c.run_sets()).await
}

async fn draft_form(State(s): State<AppState>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading the drafting form", |c| c.draft_form()).await
}

async fn draft_preview(
    State(s): State<AppState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<impl IntoResponse, AppError> {
    let req: runboard::draft::DraftRequest = body(&headers, &bytes)?;
    read(&s, "drafting", move |c| c.draft_preview(&req)).await
}

async fn draft_save(
    State(s): State<AppState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<impl IntoResponse, AppError> {
    let req: runboard::draft::DraftRequest = body(&headers, &bytes)?;
    read(&s, "saving a draft", move |c| c.save_draft(&req)).await
}

#[derive(Debug, Default, serde::Deserialize)]
struct PathBody {
    #[serde(default)]
    path: String,
}

async fn preflight(
    State(s): State<AppState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<impl IntoResponse, AppError> {
    let req: PathBody = body(&headers, &bytes)?;
    read(&s, "checking a spec", move |c| c.preflight(&req.path)).await
}

async fn control_start(
    State(s): State<AppState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<impl IntoResponse, AppError> {
    let req: runboard::launch::LaunchRequest = body(&headers, &bytes)?;
    read(&s, "launching", move |c| c.start(&req)).await
}

async fn evidence(
    State(s): State<AppState>,
    Query(q): Query<app::api::EvidenceQuery>,
) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading the evidence", move |c| c.evidence(&q)).await
}

async fn reports(
    State(s): State<AppState>,
    Query(q): Query<app::api::ScopeQuery>,
) -> Result<impl IntoResponse, AppError> {
    read(&s, "listing the reports", move |c| c.reports(&q)).await
}

async fn report(
    State(s): State<AppState>,
    Path(run_set): Path<String>,
    Query(q): Query<app::api::ScopeQuery>,
) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading the report", move |c| c.report(&run_set, &q)).await
}

async fn cohorts(State(s): State<AppState>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading the cohort presets", |c| c.cohorts()).await
}

async fn cohort_save(
    State(s): State<AppState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<impl IntoResponse, AppError> {
    let req: runboard::results::cohorts::Preset = body(&headers, &bytes)?;
    read(&s, "saving a cohort preset", move |c| c.cohort_save(&req)).await
}

async fn cohort_rename(
    State(s): State<AppState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<impl IntoResponse, AppError> {
    let req: runboard::results::cohorts::RenameRequest = body(&headers, &bytes)?;
    read(&s, "renaming a cohort preset", move |c| c.cohort_rename(&req)).await
}

async fn cohort_delete(
    State(s): State<AppState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<impl IntoResponse, AppError> {
    let req: runboard::results::cohorts::DeleteRequest = body(&headers, &bytes)?;
    read(&s, "deleting a cohort preset", move |c| c.cohort_delete(&req)).await
}

async fn cohort_compare(
    State(s): State<AppState>,
    Query(q): Query<app::api::CompareQuery>,
) -> Result<impl IntoResponse, AppError> {
    read(&s, "comparing cohorts", move |c| c.cohort_compare(&q)).await
}

async fn research(State(s): State<AppState>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading the research state", |c| c.research()).await
}

async fn research_save(
    State(s): State<AppState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<impl IntoResponse, AppError> {
    let state: runboard::results::research::ResearchState = body(&headers, &bytes)?;
    read(&s, "saving the research state", move |c| c.research_save(&state)).await
}

async fn research_settings(
    State(s): State<AppState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<impl IntoResponse, AppError> {
    let patch: serde_json::Map<String, serde_json::Value> = body(&headers, &bytes)?;
    read(&s, "merging the research settings", move |c| c.research_settings(&patch)).await
}

async fn research_decide(
    State(s): State<AppState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<impl IntoResponse, AppError> {
    let req: runboard::results::research::DecisionRequest = body(&headers, &bytes)?;
    read(&s, "recording a decision", move |c| c.research_decide(&req)).await
}

async fn publish_status(State(s): State<AppState>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading the publication status", |c| c.publish_status()).await
}

/// 202: the push started (its end is in the status); 409 while one runs.
async fn publish_push(State(s): State<AppState>) -> Result<Response, AppError> {
    let started = read(&s, "starting a push", |c| c.publish_push()).await?;
    Ok((axum::http::StatusCode::ACCEPTED, started).into_response())
}

async fn overview(State(s): State<AppState>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading the overview", |c| c.overview()).await
}

async fn timing(
    State(s): State<AppState>,
    Query(q): Query<app::api::TimingQuery>,
) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading the timings", move |c| c.timing(&q)).await
}

async fn catalogue(
    State(s): State<AppState>,
    Query(q): Query<app::api::CatalogueQuery>,
) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading the catalogue", move |c| c.catalogue(&q)).await
}

/// `?format=json` (default) or `csv`, and `?scope=`.
#[derive(Debug, Default, serde::Deserialize)]
struct ExportQuery {
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

async fn evidence_export(State(s): State<AppState>, Query(q): Query<ExportQuery>) -> Result<Response, AppError> {
    let csv = match q.format.as_deref().unwrap_or("json") {
        "json" => false,
        "csv" => true,
        other => {
            return Err(ApiError::bad_query(&runboard::runview::trials::BadQuery {
                field: "format".into(),
                value: other.to_owned(),
                problem: "must be json or csv".into(),
            })
            .into())
        }
    };
    let console = s.console.clone();
    let export =
        blocking("exporting the evidence", move || console.campaign().evidence_export(q.scope.as_deref())).await??;
    Ok(if csv {
        (
            [
                (axum::http::header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (axum::http::header::CONTENT_DISPOSITION, "attachment; filename=\"evidence.csv\""),
            ],
            runboard::results::export::to_csv(&export),
        )
            .into_response()
    } else {
        Json(export).into_response()
    })
}

async fn auto_view(State(s): State<AppState>) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading the autopilot", |c| c.auto()).await
}

async fn auto_version_stream(State(s): State<AppState>) -> impl IntoResponse {
    let console = s.console.clone();
    version_events(&s, "auto", LIVE_FOLLOW_EVERY, move || Some(console.auto_version()))
}

async fn auto_explain(State(s): State<AppState>) -> Result<impl IntoResponse, AppError> {
    read(&s, "explaining the autopilot", |c| c.auto_explain()).await
}

async fn auto_log(
    State(s): State<AppState>,
    Query(q): Query<app::api::AutoLogQuery>,
) -> Result<impl IntoResponse, AppError> {
    read(&s, "reading the autopilot's log", move |c| c.auto_log(&q)).await
}

async fn auto_settings(
    State(s): State<AppState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<impl IntoResponse, AppError> {
    let settings: serde_json::Value = body(&headers, &bytes)?;
    read(&s, "saving the autopilot's settings", move |c| c.auto_settings(settings)).await
}

/// `POST /api/auto/on | off | finishing` (no body).
async fn auto_mode(
    State(s): State<AppState>,
    Path(mode): Path<String>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<impl IntoResponse, AppError> {
    let _: serde_json::Value = body::<Option<serde_json::Value>>(&headers, &bytes)?.unwrap_or_default();
    let mode = match mode.as_str() {
        "on" => runboard::auto::Mode::On,
        "off" => runboard::auto::Mode::Off,
        "finishing" => runboard::auto::Mode::Finishing,
        other => {
            return Err(ApiError::not_found(format!(
                "no API endpoint POST /api/auto/{} (on, off, finishing or settings)",
                runboard::spec::shorten(other)
            ))
            .into())
        }
    };
    read(&s, "switching auto mode", move |c| c.auto_mode(mode)).await
}

async fn control_pause(
    State(s): State<AppState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<impl IntoResponse, AppError> {
    let req: runboard::launch::PauseRequest = body(&headers, &bytes)?;
    read(&s, "pausing", move |c| c.pause(&req)).await
}

async fn control_stop(
    State(s): State<AppState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<impl IntoResponse, AppError> {
    let req: runboard::launch::StopRequest = body(&headers, &bytes)?;
    read(&s, "stopping", move |c| c.stop(&req)).await
}

async fn control_resume(
    State(s): State<AppState>,
    headers: HeaderMap,
    bytes: axum::body::Bytes,
) -> Result<impl IntoResponse, AppError> {
    let req: runboard::launch::ResumeRequest = body(&headers, &bytes)?;
    read(&s, "resuming", move |c| c.resume(&req)).await
}
