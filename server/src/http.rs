//! The HTTP surface: the Leptos app (pages and server functions), the JSON API,
//! static files, and the guards every request passes.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use app::api::ssr::ConsoleHandle;
use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{FromRef, Path, Query, Request, State};
use axum::http::HeaderMap;
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use leptos::config::LeptosOptions;
use leptos_axum::{generate_route_list, LeptosRoutes};
use runboard::runview::trials::{OutcomeFilter, TrialFilter, DEFAULT_PAGE};
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
    /// Cancelled when the server shuts down: long-lived responses (the version
    /// streams) end then, so a graceful shutdown never waits on an open page.
    pub shutdown: CancellationToken,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(s: &AppState) -> Self {
        s.leptos.clone()
    }
}

impl AppState {
    pub fn new(leptos: LeptosOptions, console: LocalConsole, access: Access) -> Self {
        let assets = Arc::new(StaticFiles::new(&*leptos.site_root));
        Self {
            leptos,
            console: Arc::new(console),
            assets,
            access,
            last_request: Arc::new(AtomicI64::new(crate::clock::now().millis())),
            shutdown: CancellationToken::new(),
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
        .route("/api/runs/{name}/trials", get(run_trials))
        .route("/api/runs/{name}/lineage/{trial}", get(run_lineage))
        .route("/api/runs/{name}/trial-graphs", get(run_trial_graphs))
        .route("/api/runs/{name}/reports", get(run_reports))
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
        .layer(middleware::from_fn_with_state(state.access.clone(), auth::guard))
        .layer(middleware::from_fn_with_state(state.last_request.clone(), note_request))
        .with_state(state)
}

async fn note_request(State(last): State<Arc<AtomicI64>>, req: Request, next: Next) -> Response {
    last.store(crate::clock::now().millis(), Ordering::Relaxed);
    next.run(req).await
}

async fn blocking<T: Send + 'static>(
    doing: &'static str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, AppError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| AppError::Internal { doing, detail: e.to_string() })
}

/// Answers with what `read` finds of the run `name`, as JSON; 404 when no run has
/// that name. `read` runs on the blocking pool (it reads files).
async fn per_run<T: serde::Serialize + Send + 'static>(
    s: &AppState,
    name: String,
    doing: &'static str,
    read: impl FnOnce(&LocalConsole, &str) -> Option<T> + Send + 'static,
) -> Result<Json<T>, AppError> {
    let console = s.console.clone();
    let n = name.clone();
    let found = blocking(doing, move || read(&console, &n)).await?;
    found.map(Json).ok_or_else(|| AppError::NotFound(format!("no run named {name}")))
}

async fn campaign(State(s): State<AppState>) -> impl IntoResponse {
    use app::api::ssr::Console;
    Json(s.console.campaign())
}

async fn runs(State(s): State<AppState>) -> Result<impl IntoResponse, AppError> {
    let console = s.console.clone();
    Ok(Json(blocking("listing runs", move || console.runs().list()).await?))
}

async fn runs_version(State(s): State<AppState>) -> Result<impl IntoResponse, AppError> {
    let console = s.console.clone();
    let version = blocking("reading the run list version", move || console.runs().list_version()).await?;
    Ok(Json(json!({ "version": version })))
}

async fn run_view(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    use app::api::ssr::Console;
    per_run(&s, name, "reading a run", |c, n| c.run_view(n)).await
}

async fn run_analysis(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    use app::api::ssr::Console;
    per_run(&s, name, "analysing a run", |c, n| c.run_analysis(n)).await
}

async fn run_version(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    use app::api::ssr::Console;
    per_run(&s, name, "reading a run version", |c, n| c.run_version(n).map(|v| json!({ "version": v }))).await
}

/// How often a followed run's version is looked at (`stat` only).
const RUN_FOLLOW_EVERY: Duration = Duration::from_millis(250);
/// How often the list's version is looked at: it walks the whole root.
const LIST_FOLLOW_EVERY: Duration = Duration::from_secs(2);

/// Server-sent events carrying `version()` each time it changes (looked at every
/// `every`; the first at once), so a page re-reads only after a write instead of
/// polling. When `version()` finds nothing any more, one `gone` event ends the
/// stream. An open stream counts as activity for the idle watchdog, and ends
/// when the server shuts down.
fn version_events(
    s: &AppState,
    every: Duration,
    version: impl Fn() -> Option<String> + Clone + Send + Sync + 'static,
) -> Sse<impl futures_util::Stream<Item = Result<Event, Infallible>>> {
    struct Follow<F> {
        version: F,
        sent: Option<String>,
        first: bool,
        done: bool,
        last_request: Arc<AtomicI64>,
        shutdown: CancellationToken,
    }
    let start = Follow {
        version,
        sent: None,
        first: true,
        done: false,
        last_request: s.last_request.clone(),
        shutdown: s.shutdown.clone(),
    };
    let stream = futures_util::stream::unfold(start, move |mut f| async move {
        if f.done {
            return None;
        }
        loop {
            if !f.first {
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    _ = f.shutdown.cancelled() => return None,
                }
            }
            f.first = false;
            f.last_request.store(crate::clock::now().millis(), Ordering::Relaxed);
            let look = f.version.clone();
            match tokio::task::spawn_blocking(look).await.ok().flatten() {
                None => {
                    f.done = true;
                    // An event without a data line is never dispatched by a browser's
                    // EventSource: say it in the data, too.
                    return Some((Ok(Event::default().event("gone").data("gone")), f));
                }
                Some(v) if f.sent.as_deref() != Some(v.as_str()) => {
                    f.sent = Some(v.clone());
                    return Some((Ok(Event::default().event("version").data(v)), f));
                }
                Some(_) => {}
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn run_version_stream(State(s): State<AppState>, Path(name): Path<String>) -> Result<Response, AppError> {
    use app::api::ssr::Console;
    let console = s.console.clone();
    let n = name.clone();
    if blocking("finding a run", move || console.run_version(&n)).await?.is_none() {
        return Err(AppError::NotFound(format!("no run named {name}")));
    }
    let console = s.console.clone();
    Ok(version_events(&s, RUN_FOLLOW_EVERY, move || console.run_version(&name)).into_response())
}

async fn runs_version_stream(State(s): State<AppState>) -> impl IntoResponse {
    let console = s.console.clone();
    version_events(&s, LIST_FOLLOW_EVERY, move || Some(console.runs().list_version()))
}

async fn run_call(
    State(s): State<AppState>,
    Path((name, call)): Path<(String, String)>,
) -> Result<impl IntoResponse, AppError> {
    use app::api::ssr::Console;
    let n: u32 = call
        .trim_end_matches(".json")
        .parse()
        .map_err(|_| AppError::Unprocessable(format!("call {call:?} is not a call number")))?;
    let console = s.console.clone();
    let nm = name.clone();
    match blocking("reading a call", move || console.run_call(&nm, n)).await? {
        Ok(Some(v)) => Ok(Json(v)),
        Ok(None) => Err(AppError::NotFound(format!("no run named {name}"))),
        Err(why) => Err(AppError::Unprocessable(why)),
    }
}

/// `?round=&stage=&outcome=&q=&intraday=&offset=&limit=`, every one optional; a
/// value that does not parse is a 422 naming it.
fn trial_query(q: &HashMap<String, String>) -> Result<(TrialFilter, usize, usize), AppError> {
    fn num<T: std::str::FromStr>(q: &HashMap<String, String>, key: &str) -> Result<Option<T>, AppError> {
        match q.get(key).map(String::as_str).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| AppError::Unprocessable(format!("{key}={v:?} is not a number"))),
        }
    }
    let outcome = q.get("outcome").map(String::as_str).filter(|v| !v.is_empty()).map(OutcomeFilter::parse);
    let outcome = outcome.transpose().map_err(|e| AppError::Unprocessable(format!("outcome={e}")))?;
    let intraday = match q.get("intraday").map(String::as_str).filter(|v| !v.is_empty()) {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(v) => return Err(AppError::Unprocessable(format!("intraday={v:?} is not true or false"))),
    };
    let filter = TrialFilter {
        round: num(q, "round")?,
        stage: q.get("stage").filter(|s| !s.is_empty()).cloned(),
        outcome,
        text: q.get("q").filter(|s| !s.is_empty()).cloned(),
        intraday,
    };
    Ok((filter, num(q, "offset")?.unwrap_or(0), num(q, "limit")?.unwrap_or(DEFAULT_PAGE)))
}

async fn run_trials(
    State(s): State<AppState>,
    Path(name): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> Result<impl IntoResponse, AppError> {
    use app::api::ssr::Console;
    let (filter, offset, limit) = trial_query(&q)?;
    per_run(&s, name, "reading a run's trials", move |c, n| c.run_trials(n, &filter, offset, limit)).await
}

async fn run_lineage(
    State(s): State<AppState>,
    Path((name, trial)): Path<(String, String)>,
) -> Result<impl IntoResponse, AppError> {
    use app::api::ssr::Console;
    let console = s.console.clone();
    let (n, t) = (name.clone(), trial.clone());
    match blocking("reading a trial's lineage", move || console.run_lineage(&n, &t)).await? {
        None => Err(AppError::NotFound(format!("no run named {name}"))),
        Some(None) => Err(AppError::NotFound(format!("no written round of {name} holds a trial named {trial}"))),
        Some(Some(l)) => Ok(Json(l)),
    }
}

async fn run_calls(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    use app::api::ssr::Console;
    per_run(&s, name, "reading a run's calls", |c, n| c.run_calls(n)).await
}

async fn run_memory(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    use app::api::ssr::Console;
    per_run(&s, name, "reading a run's memory", |c, n| c.run_memory(n)).await
}

async fn run_trial_graphs(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    use app::api::ssr::Console;
    per_run(&s, name, "reading trial graphs", |c, n| c.run_trial_graphs(n)).await
}

async fn run_reports(State(s): State<AppState>, Path(name): Path<String>) -> Result<impl IntoResponse, AppError> {
    use app::api::ssr::Console;
    per_run(&s, name, "reading acceptance reports", |c, n| c.run_reports(n)).await
}

async fn api_not_found(req: Request) -> AppError {
    AppError::NotFound(format!("no API endpoint {} {}", req.method(), req.uri().path()))
}

async fn static_or_404(State(s): State<AppState>, headers: HeaderMap, req: Request) -> Response {
    match s.assets.resolve(req.uri().path()) {
        Some(path) => s.assets.respond(&path, &headers).await,
        None => AppError::NotFound(format!("nothing at {}", req.uri().path())).into_response(),
    }
}
