//! Handler tests: the whole router, called in-process with `oneshot`.

use crate::common;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use server::access::auth::{Access, AllowedHosts};
use server::console::LocalConsole;
use server::web::http::{app, AppState};
use tower::ServiceExt;

fn state(root: &std::path::Path, site: &std::path::Path, token: Option<&str>) -> AppState {
    let leptos = server::web::site::options(Some(site)).unwrap();
    let console = LocalConsole::open(root, false).unwrap();
    let hosts = AllowedHosts::default();
    let access = match token {
        Some(t) => Access::with_token(t.to_owned(), None, hosts),
        None => Access::open(hosts),
    };
    AppState::new(leptos, console, access)
}

/// One Leptos app serves requests at a time in this test process. Several apps
/// rendering concurrently in one process (each test has its own runtime) share
/// Leptos's process-wide state and, about once in forty runs, a render never
/// finished. A server runs one app (300 concurrent renders of /runs against the
/// release binary all answered), so the tests take turns.
static ONE_APP_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn send(state: &AppState, mut req: Request<Body>) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    // What a browser on this machine sends, unless the test names another Host.
    if !req.headers().contains_key(header::HOST) {
        req.headers_mut().insert(header::HOST, header::HeaderValue::from_static("127.0.0.1:8850"));
    }
    let _turn = ONE_APP_AT_A_TIME.lock().await;
    // A bound, so a stuck render fails the test with a message instead of hanging CI.
    let res = tokio::time::timeout(std::time::Duration::from_secs(30), app(state.clone()).oneshot(req))
        .await
        .expect("no answer within 30 s")
        .unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let body = tokio::time::timeout(std::time::Duration::from_secs(30), res.into_body().collect())
        .await
        .expect("body not complete within 30 s")
        .unwrap()
        .to_bytes()
        .to_vec();
    (status, headers, body)
}

fn body_json(b: Vec<u8>) -> Value {
    serde_json::from_slice(&b).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&b)))
}

fn post_json(uri: &str, body: &str) -> Request<Body> {
    Request::post(uri)
        .header(header::HOST, "127.0.0.1:8850")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_owned()))
        .unwrap()
}

fn get(uri: &str) -> Request<Body> {
    Request::get(uri).header(header::HOST, "127.0.0.1:8850").body(Body::empty()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_runs_lists_every_run_latest_first_with_unreadable_reason() {
    let (tmp, root) = common::campaign().await;
    let st = state(&root, &common::site(tmp.path()), None);
    let (status, headers, body) = send(&st, get("/api/runs")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "application/json");
    let list: Value = serde_json::from_slice(&body).unwrap();
    let runs = list["runs"].as_array().unwrap();
    let paths: Vec<&str> = runs.iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(runs.len(), 3, "{paths:?}");
    assert!(paths.contains(&"runs/a/first") && paths.contains(&"runs/b/deeper/second"));
    let broken = runs.iter().find(|r| r["name"] == "broken").unwrap();
    assert_eq!(broken["status"]["kind"], "unreadable");
    let reason = broken["status"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("snapshot.json: line 1 column"), "{reason}");
    let second = runs.iter().find(|r| r["name"] == "second").unwrap();
    // Stopped after its last planned round: finished, not stopped.
    assert_eq!(second["status"]["kind"], "finished");
    assert_eq!(second["rounds_written"], 3);
    // latest written first
    let times: Vec<i64> = runs.iter().map(|r| r["last_written"].as_i64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_version_changes_when_a_run_appears_and_matches_the_list() {
    let (tmp, root) = common::campaign().await;
    let st = state(&root, &common::site(tmp.path()), None);
    let version =
        |body: Vec<u8>| serde_json::from_slice::<Value>(&body).unwrap()["version"].as_str().unwrap().to_owned();
    let v1 = version(send(&st, get("/api/runs/version")).await.2);
    assert_eq!(v1, version(send(&st, get("/api/runs")).await.2), "list and version endpoint agree");
    assert_eq!(v1, version(send(&st, get("/api/runs/version")).await.2), "stable while nothing changes");
    common::write_run(&root.join("runs/new"), 1, 9).await;
    let v2 = version(send(&st, get("/api/runs/version")).await.2);
    assert_ne!(v1, v2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_api_paths_are_json_404s() {
    let (tmp, root) = common::campaign().await;
    let st = state(&root, &common::site(tmp.path()), None);
    let (status, _, body) = send(&st, get("/api/nope")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let err: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(err["error"], "no API endpoint GET /api/nope");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_functions_answer_get_with_the_same_list() {
    let (tmp, root) = common::campaign().await;
    let st = state(&root, &common::site(tmp.path()), None);
    let (status, _, body) = send(&st, get("/sfn/runs")).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let list: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(list["runs"].as_array().unwrap().len(), 3);
    let (_, _, body) = send(&st, get("/sfn/campaign")).await;
    let info: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(info["name"], "test campaign");
    assert_eq!(info["demo"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_page_is_rendered_on_the_server_with_its_rows() {
    let (tmp, root) = common::campaign().await;
    let st = state(&root, &common::site(tmp.path()), None);
    let (status, _, body) = send(&st, get("/runs")).await;
    assert_eq!(status, StatusCode::OK);
    let html = String::from_utf8(body).unwrap();
    assert!(html.contains("/pkg/runboard.js"), "hydration script linked");
    // The name scripts/build-site.sh (as cargo-leptos) gives the bundle (not runboard_bg.wasm, which a build
    // without LEPTOS_OUTPUT_NAME would ask for and never find).
    assert!(html.contains("/pkg/runboard.wasm"), "the wasm the site holds is linked");
    for want in ["runs/a/first", "runs/b/deeper/second", "unreadable: snapshot.json: line 1 column"] {
        assert!(html.contains(want), "page lacks {want:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_files_revalidate_with_etag_and_304() {
    let (tmp, root) = common::campaign().await;
    let site = common::site(tmp.path());
    let st = state(&root, &site, None);
    let (status, headers, body) = send(&st, get("/pkg/runboard.js")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, b"console.log('v1');\n");
    assert_eq!(headers[header::CACHE_CONTROL], "no-cache");
    assert_eq!(headers[header::CONTENT_TYPE], "text/javascript");
    let etag = headers[header::ETAG].to_str().unwrap().to_owned();
    let revalidate =
        |tag: &str| Request::get("/pkg/runboard.js").header(header::IF_NONE_MATCH, tag).body(Body::empty()).unwrap();
    let (status, headers, body) = send(&st, revalidate(&etag)).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
    assert!(body.is_empty());
    assert_eq!(headers[header::CACHE_CONTROL], "no-cache");
    // An upgrade changes the bytes: the old tag no longer matches.
    std::fs::write(site.join("pkg/runboard.js"), "console.log('v2, longer');\n").unwrap();
    let (status, headers, _) = send(&st, revalidate(&etag)).await;
    assert_eq!(status, StatusCode::OK);
    assert_ne!(headers[header::ETAG].to_str().unwrap(), etag);
    // Paths that leave the site root are not files.
    assert_eq!(send(&st, get("/pkg/../../campaign/campaign.toml")).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_changing_requests_from_another_origin_are_refused() {
    let (tmp, root) = common::campaign().await;
    let st = state(&root, &common::site(tmp.path()), None);
    let post = |origin: Option<&str>| {
        let mut b = Request::post("/api/anything").header(header::HOST, "127.0.0.1:8850");
        if let Some(o) = origin {
            b = b.header(header::ORIGIN, o);
        }
        b.body(Body::empty()).unwrap()
    };
    let (status, _, body) = send(&st, post(Some("http://evil.example"))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(String::from_utf8_lossy(&body).contains("Origin http://evil.example is not this server"));
    // Same origin, and tools that send no Origin, pass the guard (then 404 here).
    assert_eq!(send(&st, post(Some("http://127.0.0.1:8850"))).await.0, StatusCode::NOT_FOUND);
    assert_eq!(send(&st, post(None)).await.0, StatusCode::NOT_FOUND);
}

/// Every POST body is one object with known fields, and every refusal — a
/// body, a query string the extractor cannot read, a guard — is the documented
/// `{kind, error, reasons}` with a 4xx status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_are_objects_with_known_fields_and_every_refusal_is_the_documented_json() {
    let (tmp, root) = common::campaign().await;
    let st = state(&root, &common::site(tmp.path()), None);
    let documented = |v: &Value| {
        v["kind"].is_string() && v["error"].is_string() && v["reasons"].as_array().is_some_and(|r| !r.is_empty())
    };
    // An array read by position is refused; so is an unknown field, named
    // beside the other reasons.
    for (uri, body, want) in [
        (
            "/api/control/start",
            r#"["specs/drafts/x.json", true]"#,
            "body: must be one JSON object with named fields, not an array",
        ),
        ("/api/control/resume", r#"["rs"]"#, "body: must be one JSON object with named fields, not an array"),
        ("/api/control/stop", r#"{"run_set": "x"}"#, "body: run_set: unknown field"),
        ("/api/control/pause", r#"{"all": true}"#, "body: all: unknown field"),
    ] {
        let (status, _, body) = send(&st, post_json(uri, body)).await;
        let v = body_json(body);
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{uri}: {v}");
        assert_eq!((v["kind"].as_str(), v["reasons"][0].as_str()), (Some("refused"), Some(want)), "{uri}: {v}");
    }
    let (status, _, body) =
        send(&st, post_json("/api/drafts/preview", r#"{"label": "b1", "max_cells": "many", "colour": 1}"#)).await;
    let v = body_json(body);
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    let reasons: Vec<&str> = v["reasons"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(reasons.contains(&"body: colour: unknown field"), "{reasons:?}");
    assert!(reasons.iter().any(|r| r.starts_with("body: max_cells: invalid type")), "{reasons:?}");
    // Queries the extractor cannot read: JSON 422, never plain-text 400.
    for uri in ["/api/evidence?by=a&by=b", "/api/runs?limit=1&limit=2", "/api/cells?offset=-1&offset=2"] {
        let (status, _, body) = send(&st, get(uri)).await;
        let v = body_json(body);
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{uri}: {v}");
        assert_eq!(v["kind"], "bad_query", "{uri}: {v}");
        assert!(documented(&v), "{uri}: {v}");
    }
    for uri in ["/api/runs?limit=abc", "/api/runs?offset=-1"] {
        let (status, _, body) = send(&st, get(uri)).await;
        let v = body_json(body);
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{uri}: {v}");
        assert!(documented(&v), "{uri}: {v}");
    }
    // The pages' server functions: missing or bad arguments are the client's
    // mistake (422 in the same shape), never 500.
    for req in [
        get("/sfn/run_rounds"),
        get("/sfn/run_trials?input=7"),
        post_json("/sfn/stop", "[1, 2]"),
        post_json("/sfn/resume", "not json"),
    ] {
        let uri = req.uri().to_string();
        let (status, _, body) = send(&st, req).await;
        let v = body_json(body);
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{uri}: {v}");
        assert!(documented(&v), "{uri}: {v}");
    }
    // An unknown page, asked for by a browser: the app's own not-found page.
    let page = Request::get("/no-such-page")
        .header(header::HOST, "127.0.0.1:8850")
        .header(header::ACCEPT, "text/html,application/xhtml+xml")
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = send(&st, page).await;
    let html = String::from_utf8_lossy(&body);
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(html.contains("No such page") && html.contains("class=\"topbar\""), "{html}");
    // A foreign origin: 403 in the same shape.
    let foreign = Request::post("/api/control/pause")
        .header(header::HOST, "127.0.0.1:8850")
        .header(header::ORIGIN, "http://evil.example")
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = send(&st, foreign).await;
    let v = body_json(body);
    assert_eq!((status, v["kind"].as_str()), (StatusCode::FORBIDDEN, Some("forbidden")), "{v}");
    assert!(documented(&v), "{v}");
    // Issue 40 (item 19): a body past 2 MiB, on any POST, is 413 in the same shape.
    for uri in ["/api/drafts", "/api/control/start", "/api/tags"] {
        let big = format!("{{\"label\": \"{}\"}}", "x".repeat(3 << 20));
        let (status, _, body) = send(&st, post_json(uri, &big)).await;
        let v = body_json(body);
        assert_eq!((status, v["kind"].as_str()), (StatusCode::PAYLOAD_TOO_LARGE, Some("too_large")), "{uri}: {v}");
        assert!(documented(&v) && v["error"].as_str().unwrap().contains("larger than 2 MiB"), "{v}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_guards_every_request_and_a_link_sets_a_cookie() {
    let (tmp, root) = common::campaign().await;
    let st = state(&root, &common::site(tmp.path()), Some("s3cret"));
    assert_eq!(send(&st, get("/api/runs")).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(send(&st, get("/pkg/runboard.js")).await.0, StatusCode::UNAUTHORIZED);
    let bearer = |t: &str| {
        Request::get("/api/runs").header(header::AUTHORIZATION, format!("Bearer {t}")).body(Body::empty()).unwrap()
    };
    assert_eq!(send(&st, bearer("wrong")).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(send(&st, bearer("s3cret")).await.0, StatusCode::OK);
    let (status, headers, _) = send(&st, get("/runs?token=s3cret&status=running")).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(headers[header::LOCATION], "/runs?status=running");
    let cookie = headers[header::SET_COOKIE].to_str().unwrap();
    assert!(cookie.starts_with("runboard_token=s3cret;") && cookie.contains("HttpOnly"), "{cookie}");
    let with_cookie =
        Request::get("/api/runs").header(header::COOKIE, "a=b; runboard_token=s3cret").body(Body::empty()).unwrap();
    assert_eq!(send(&st, with_cookie).await.0, StatusCode::OK);
    assert_eq!(send(&st, get("/runs?token=nope")).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_its_version_and_its_calls_over_rest() {
    let (tmp, root) = common::campaign().await;
    let st = state(&root, &common::site(tmp.path()), None);
    let json = |b: Vec<u8>| serde_json::from_slice::<Value>(&b).unwrap();
    let (status, _, body) = send(&st, get("/api/runs/second")).await;
    assert_eq!(status, StatusCode::OK);
    let view = json(body);
    assert_eq!(view["row"]["path"], "runs/b/deeper/second");
    assert_eq!(view["rounds_written"], 3);
    assert!(view.get("round_counts").is_none(), "the per-round table is its own read");
    let rounds = json(send(&st, get("/api/runs/second/rounds")).await.2);
    assert_eq!(rounds["round_counts"].as_array().unwrap().len(), 3);
    assert_eq!(rounds["thresholds"].as_array().unwrap().len(), 3);
    assert!(view.get("rounds").is_none(), "trials come a page at a time, not with the view");
    assert_eq!(view["memory_versions"], 3);
    let memory = json(send(&st, get("/api/runs/second/memory")).await.2);
    assert_eq!(memory.as_array().unwrap().len(), 3);
    assert!(memory[0]["diff"].is_null(), "the first memory version has nothing to compare with");
    assert!(memory[1]["diff"].is_array(), "later memory versions carry a diff");
    let calls = json(send(&st, get("/api/runs/second/calls")).await.2);
    assert_eq!(calls.as_array().unwrap().len() as u64, view["calls_total"].as_u64().unwrap());
    let version = json(send(&st, get("/api/runs/second/version")).await.2)["version"].clone();
    assert_eq!(version, view["row"]["version"]);

    let (status, _, body) = send(&st, get("/api/runs/second/calls/1")).await;
    assert_eq!(status, StatusCode::OK);
    let call = json(body);
    assert!(call["record"]["reasoning"].as_str().unwrap().starts_with("Round 1, slot 1"));
    assert_eq!(call["concerned"]["round"], 1);
    assert_eq!(call["concerned"]["slots"], serde_json::json!([1]));

    let (status, _, body) = send(&st, get("/api/runs/second/calls/abc")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(json(body)["error"], "call=\"abc\": not a call number");
    let (status, _, body) = send(&st, get("/api/runs/second/calls/999")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(json(body)["error"].as_str().unwrap().starts_with("calls/0999.json: "));
    let (status, _, body) = send(&st, get("/api/runs/nope")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json(body)["error"], "no run named nope");

    let (status, _, body) = send(&st, get("/runs/second?tab=calls&call=1")).await;
    assert_eq!(status, StatusCode::OK);
    let html = String::from_utf8(body).unwrap();
    assert!(html.contains("data-call=\"1\""), "the calls tab is rendered on the server");
    assert!(html.contains("class=\"reasoning\""), "the call named in the URL is open");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_analysis_groups_refusals_and_maps_scored_trials() {
    let (tmp, root) = common::campaign().await;
    common::write_run(&root.join("runs/long"), 12, 5).await;
    let st = state(&root, &common::site(tmp.path()), None);
    let (status, _, body) = send(&st, get("/api/runs/long/analysis")).await;
    assert_eq!(status, StatusCode::OK);
    let a: Value = serde_json::from_slice(&body).unwrap();
    let page: Value = serde_json::from_slice(&send(&st, get("/api/runs/long/trials?limit=500")).await.2).unwrap();
    assert_eq!(page["matching"], page["total"]);
    let trials: Vec<&Value> = page["trials"].as_array().unwrap().iter().collect();
    assert_eq!(trials.len() as u64, page["total"].as_u64().unwrap());
    let scored = trials.iter().filter(|t| t["t"].is_number() && t["max_abs_corr"].is_number()).count();
    assert_eq!(a["map"].as_array().unwrap().len(), scored, "one point per scored trial");
    let grouped: u64 = a["refusals"].as_array().unwrap().iter().map(|g| g["trials"].as_u64().unwrap()).sum();
    assert_eq!(grouped as usize, trials.iter().filter(|t| t["t"].is_null() && t["accepted"] != true).count());
    assert_eq!(a["correlation_limit"], 0.7, "from the settings the run was opened with");
    assert_eq!(send(&st, get("/api/runs/nope/analysis")).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trials_come_filtered_a_page_at_a_time_and_bad_filters_are_422s() {
    let (tmp, root) = common::campaign().await;
    common::write_run(&root.join("runs/long"), 12, 5).await;
    let st = state(&root, &common::site(tmp.path()), None);
    let page = |uri: String| {
        let st = st.clone();
        async move {
            let (status, _, body) = send(&st, get(&uri)).await;
            (status, serde_json::from_slice::<Value>(&body).unwrap())
        }
    };
    let (status, first) = page("/api/runs/long/trials?limit=10".into()).await;
    assert_eq!(status, StatusCode::OK);
    let total = first["total"].as_u64().unwrap();
    assert!(total >= 24, "12 rounds of 2 slots: {total}");
    assert_eq!(first["trials"].as_array().unwrap().len(), 10);
    assert_eq!(first["trials"][0]["round"], 12, "the latest round first");
    let (_, second) = page("/api/runs/long/trials?limit=10&offset=10".into()).await;
    assert_ne!(first["trials"][9], second["trials"][0], "pages do not overlap");

    let (_, round3) = page("/api/runs/long/trials?round=3".into()).await;
    assert!(round3["trials"].as_array().unwrap().iter().all(|t| t["round"] == 3));
    let (_, accepted) = page("/api/runs/long/trials?outcome=accepted&limit=500".into()).await;
    let view: Value = serde_json::from_slice(&send(&st, get("/api/runs/long")).await.2).unwrap();
    assert_eq!(accepted["matching"].as_u64().unwrap(), view["accepted_count"].as_u64().unwrap());
    let listed: Value = serde_json::from_slice(&send(&st, get("/api/runs/long/accepted")).await.2).unwrap();
    assert_eq!(listed.as_array().unwrap().len() as u64, view["accepted_count"].as_u64().unwrap());
    assert!(view.get("accepted").is_none(), "the accepted factors are their own read");
    let (_, gate) = page("/api/runs/long/trials?stage=gate&limit=500".into()).await;
    assert!(gate["trials"].as_array().unwrap().iter().all(|t| t["stage"] == "gate"));
    let (_, text) = page("/api/runs/long/trials?q=R05S1".into()).await;
    assert!(text["matching"].as_u64().unwrap() >= 1);
    assert!(text["trials"].as_array().unwrap().iter().all(|t| t["trial"] == "r05s1"));

    for (uri, why) in [
        ("/api/runs/long/trials?outcome=maybe", "outcome=\"maybe\": not one of accepted, refused, unscored"),
        ("/api/runs/long/trials?round=x", "round=\"x\": not a whole number ≥ 0"),
        ("/api/runs/long/trials?limit=-1", "limit=\"-1\": not a whole number ≥ 0"),
        ("/api/runs/long/trials?intraday=yes", "intraday=\"yes\": not true or false"),
    ] {
        let (status, body) = page(uri.into()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{uri}");
        assert_eq!(body["error"], why);
    }
    assert_eq!(page("/api/runs/nope/trials".into()).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lineage_trial_graphs_and_reports_over_rest_and_as_pages() {
    let (tmp, root) = common::campaign().await;
    common::write_run(&root.join("runs/long"), 8, 3).await;
    let st = state(&root, &common::site(tmp.path()), None);
    let json = |b: Vec<u8>| serde_json::from_slice::<Value>(&b).unwrap();

    // A trial with parents: its lineage names them, judged by the last open's limits.
    let page = json(send(&st, get("/api/runs/long/trials?round=8")).await.2);
    let child = page["trials"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["parents"].as_array().is_some_and(|p| !p.is_empty()))
        .expect("a trial with parents");
    let name = child["trial"].as_str().unwrap();
    let (status, _, body) = send(&st, get(&format!("/api/runs/long/lineage/{name}"))).await;
    assert_eq!(status, StatusCode::OK);
    let l = json(body);
    assert_eq!(l["ancestors"][0]["trial"], child["parents"][0]);
    assert_eq!(l["limits"]["source"], "last_open");
    let (status, _, body) = send(&st, get("/api/runs/long/lineage/r99s9")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json(body)["error"], "no written round of long holds a trial named r99s9");

    let graphs = json(send(&st, get("/api/runs/long/trial-graphs")).await.2);
    let graphs = graphs.as_array().unwrap();
    assert_eq!(graphs.len(), 7, "rounds 2..8 have a graph");
    let g = &graphs[6];
    assert_eq!((g["kind"].as_str(), g["round"].as_u64()), (Some("graph"), Some(8)));
    assert_eq!(g["nodes"][0]["rank"], 1, "ranked by pick order");

    let reports = json(send(&st, get("/api/runs/long/reports")).await.2);
    let reports = reports.as_array().unwrap();
    let by_file = |prefix: &str| reports.iter().find(|r| r["file"].as_str().unwrap().starts_with(prefix)).unwrap();
    assert_eq!(by_file("holdout_")["holdout"], true);
    assert_eq!(by_file("validation.json")["contribution"], Value::Null, "an older report lacks the table");
    assert!(by_file("validation_")["contribution"].is_array());

    // Each tab renders on the server with what it shows.
    for (tab, marker) in [
        ("accepted", "class=\"accepted-factor\""),
        ("rounds", "class=\"round-count\""),
        ("graph", "class=\"trial-graph\""),
        ("reports", "hold-out"),
        ("summary", "class=\"correlation-limit\""),
    ] {
        let (status, _, body) = send(&st, get(&format!("/runs/long?tab={tab}"))).await;
        assert_eq!(status, StatusCode::OK);
        let html = String::from_utf8(body).unwrap();
        assert!(html.contains(marker), "{tab} tab lacks {marker}");
    }
    let findings = json(send(&st, get("/api/runs/long/analysis")).await.2)["diagnosis"].as_array().unwrap().len();
    let (_, _, body) = send(&st, get("/runs/long?tab=diagnosis")).await;
    let html = String::from_utf8(body).unwrap();
    assert_eq!(html.matches("class=\"finding\"").count(), findings);
    assert_eq!(html.contains("Nothing stands out"), findings == 0);
    let (_, _, body) = send(&st, get(&format!("/runs/long?tab=lineage&trial={name}"))).await;
    assert!(String::from_utf8(body).unwrap().contains("class=\"ancestor\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_whose_folder_names_repeat_are_told_apart_by_their_paths() {
    let (tmp, root) = common::campaign().await;
    common::write_run(&root.join("runs/a/same"), 1, 7).await;
    common::write_run(&root.join("runs/b/same"), 2, 8).await;
    common::write_run(&root.join("runs/c/my run"), 1, 9).await;
    let st = state(&root, &common::site(tmp.path()), None);
    let json = |b: Vec<u8>| serde_json::from_slice::<Value>(&b).unwrap();
    for path in ["runs/a/same", "runs/b/same"] {
        let (status, _, body) = send(&st, get(&format!("/api/runs/{}", path.replace('/', "%2F")))).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(json(body)["row"]["path"], path);
    }
    // The list links each run by its path; the page takes the path whole.
    let (_, _, body) = send(&st, get("/runs")).await;
    let list = String::from_utf8(body).unwrap();
    assert!(list.contains("href=\"/runs/runs/b/same\"") && list.contains("href=\"/runs/runs/c/my%20run\""), "{list}");
    for (url, path) in [("/runs/runs/b/same", "runs/b/same"), ("/runs/runs/c/my%20run", "runs/c/my run")] {
        let (status, _, body) = send(&st, get(&format!("{url}?tab=summary"))).await;
        assert_eq!(status, StatusCode::OK);
        // `<!>` marks where a text node ends, for hydration; not content.
        let html = String::from_utf8(body).unwrap().replace("<!>", "");
        assert!(html.contains(&format!("<code>{path}</code>")), "{url} shows {path}: {html}");
    }
}

/// The next server-sent event of `body` as `(event, data)`, keep-alive comments skipped.
async fn next_event(body: &mut Body, pending: &mut String) -> (String, String) {
    loop {
        if let Some(end) = pending.find("\n\n") {
            let block: String = pending.drain(..end + 2).collect();
            let field = |name: &str| {
                block.lines().find_map(|l| l.strip_prefix(name).map(|v| v.trim_start().to_owned())).unwrap_or_default()
            };
            if block.lines().all(|l| l.starts_with(':') || l.is_empty()) {
                continue;
            }
            return (field("event:"), field("data:"));
        }
        let frame = tokio::time::timeout(std::time::Duration::from_secs(10), body.frame())
            .await
            .expect("an event within 10 s")
            .expect("the stream is still open")
            .unwrap();
        if let Ok(bytes) = frame.into_data() {
            pending.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_run_pushes_its_version_when_it_writes_and_says_when_it_is_gone() {
    let (tmp, root) = common::campaign().await;
    let st = state(&root, &common::site(tmp.path()), None);
    let _turn = ONE_APP_AT_A_TIME.lock().await;
    let res = app(st.clone()).oneshot(get("/api/runs/second/version/stream")).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()[header::CONTENT_TYPE], "text/event-stream");
    let mut body = res.into_body();
    let mut pending = String::new();
    let (event, first) = next_event(&mut body, &mut pending).await;
    assert_eq!(event, "version");
    let dir = root.join("runs/b/deeper/second");
    assert_eq!(first, server::runview::run_version(&dir), "the first event is the version now");
    // A write is pushed: the next event carries the new version.
    let mut f = std::fs::OpenOptions::new().append(true).open(dir.join("events.jsonl")).unwrap();
    std::io::Write::write_all(&mut f, b"{\"event\":\"phase\",\"phase\":\"plan\"}\n").unwrap();
    // (A look can land mid-write — new time, old size — and push a version in
    // between; the pushes then reach the version the finished write has.)
    let now = server::runview::run_version(&dir);
    let mut pushed = Vec::new();
    while pushed.last() != Some(&now) && pushed.len() < 5 {
        let (event, v) = next_event(&mut body, &mut pending).await;
        assert_eq!(event, "version");
        pushed.push(v);
    }
    assert_eq!(pushed.last(), Some(&now), "{pushed:?}");
    assert!(!pushed.contains(&first), "every push is a change: {pushed:?}");
    // The run removed: one `gone`, then the stream ends.
    std::fs::remove_dir_all(&dir).unwrap();
    // With a data line: an EventSource dispatches no event without one.
    assert_eq!(next_event(&mut body, &mut pending).await, ("gone".to_owned(), "gone".to_owned()));
    let end = tokio::time::timeout(std::time::Duration::from_secs(10), body.frame()).await.expect("ends");
    assert!(end.is_none(), "the stream ends after gone");
    drop(_turn);
    assert_eq!(send(&st, get("/api/runs/nope/version/stream")).await.0, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_servers_own_host_names_are_answered() {
    let (tmp, root) = common::campaign().await;
    let st = state(&root, &common::site(tmp.path()), None);
    let with_host = |uri: &str, host: &str| Request::get(uri).header(header::HOST, host).body(Body::empty()).unwrap();
    for uri in ["/api/runs", "/api/campaign", "/runs", "/pkg/runboard.js"] {
        let (status, _, body) = send(&st, with_host(uri, "evil.example:8850")).await;
        assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{uri}");
        let text = String::from_utf8_lossy(&body).into_owned();
        let refusal = body_json(body);
        assert_eq!(refusal["kind"], "misdirected", "{text}");
        let error = refusal["error"].as_str().unwrap();
        assert!(error.contains("not to Host \"evil.example:8850\"") && error.contains("--allow-host"), "{text}");
        assert_eq!(refusal["reasons"], serde_json::json!([error]));
        assert!(!text.contains(root.to_str().unwrap()), "the root path does not leak");
    }
    for host in ["localhost:8850", "127.0.0.1", "[::1]:8850"] {
        assert_eq!(send(&st, with_host("/api/runs", host)).await.0, StatusCode::OK, "{host}");
    }
    // A name the operator allows.
    let leptos = server::web::site::options(Some(&common::site(tmp.path()))).unwrap();
    let hosts = AllowedHosts::new("127.0.0.1".parse().unwrap(), &["box.lab".to_owned()]);
    let allowed = AppState::new(leptos, LocalConsole::open(&root, false).unwrap(), Access::open(hosts));
    assert_eq!(send(&allowed, with_host("/api/runs", "Box.Lab:8850")).await.0, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_symlinked_from_outside_the_root_are_never_served() {
    let (tmp, root) = common::campaign().await;
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(outside.join("mem")).unwrap();
    const SECRET: &str = "root:x:0:0:TOP-SECRET";
    for f in ["secret", "mem/round_01.md"] {
        std::fs::write(outside.join(f), SECRET).unwrap();
    }
    std::fs::write(outside.join("snapshot.json"), format!("{{\"schema_version\":1,\"name\":\"{SECRET}\"}}")).unwrap();
    let link = |target: &std::path::Path, at: std::path::PathBuf| {
        let _ = std::fs::remove_file(&at);
        let _ = std::fs::remove_dir_all(&at);
        std::os::unix::fs::symlink(target, at).unwrap();
    };
    let run = root.join("runs/a/first");
    link(&outside.join("secret"), run.join("memory/round_10.md"));
    link(&outside.join("secret"), run.join("calls/0001.json"));
    link(&outside.join("secret"), run.join("acceptance/holdout_abcdef12.json"));
    link(&outside.join("secret"), run.join("trial_graph/round_02.json"));
    let second = root.join("runs/b/deeper/second");
    link(&outside.join("mem"), second.join("memory"));
    link(&outside.join("snapshot.json"), root.join("runs/broken/snapshot.json"));

    let st = state(&root, &common::site(tmp.path()), None);
    let mut everything = String::new();
    for uri in [
        "/api/runs",
        "/api/runs/first",
        "/api/runs/first/memory",
        "/api/runs/first/calls/1",
        "/api/runs/first/reports",
        "/api/runs/first/trial-graphs",
        "/api/runs/second",
        "/api/runs/second/memory",
        "/api/runs/broken",
    ] {
        let (status, _, body) = send(&st, get(uri)).await;
        let text = String::from_utf8_lossy(&body).into_owned();
        assert!(!text.contains("TOP-SECRET"), "{uri} served a file from outside the root: {text}");
        assert!(status == StatusCode::OK || status == StatusCode::UNPROCESSABLE_ENTITY, "{uri}: {status}");
        everything.push_str(&text);
    }
    let json = |uri: &'static str| {
        let st = st.clone();
        async move { serde_json::from_slice::<Value>(&send(&st, get(uri)).await.2).unwrap() }
    };
    let outside_reason = "leads outside the campaign root (a symlink); not read";
    let first = json("/api/runs/first").await;
    let problems = first["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| p["part"] == "memory/round_10.md" && p["reason"] == outside_reason),
        "{problems:?}"
    );
    let call = send(&st, get("/api/runs/first/calls/1")).await;
    assert_eq!(call.0, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(String::from_utf8_lossy(&call.2).contains(outside_reason));
    let reports = json("/api/runs/first/reports").await;
    assert!(reports.as_array().unwrap().iter().any(|r| r["kind"] == "unreadable" && r["reason"] == outside_reason));
    let graphs = json("/api/runs/first/trial-graphs").await;
    assert!(graphs.as_array().unwrap().iter().any(|g| g["kind"] == "unreadable" && g["reason"] == outside_reason));
    let second = json("/api/runs/second").await;
    assert!(second["problems"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["part"] == "memory/" && p["reason"] == outside_reason));
    assert_eq!(second["memory_versions"], 0);
    let list = json("/api/runs").await;
    let broken = list["runs"].as_array().unwrap().iter().find(|r| r["name"] == "broken").unwrap();
    assert_eq!(broken["status"]["kind"], "unreadable");
    assert!(broken["status"]["reason"].as_str().unwrap().contains(outside_reason), "{broken}");
}

/// An operation's input as both surfaces carry it: the REST request (path
/// parameters filled from the input's fields, the rest in the query string
/// for a GET or the JSON body for a POST) and the server function's
/// (`?input[field]=…` for a GET, `{"input": …}` for a POST).
fn both_requests(o: &runboard::api::OperationInfo, input: &Value) -> (Request<Body>, Request<Body>) {
    let enc = |v: &Value| {
        let text = v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string());
        form_urlencoded_component(&text)
    };
    let mut rest_fields = input.as_object().cloned().unwrap_or_default();
    let mut path = o.path.to_owned();
    for (k, v) in input.as_object().into_iter().flatten() {
        let param = format!("{{{k}}}");
        if path.contains(&param) {
            path = path.replace(&param, &enc(v));
            rest_fields.remove(k);
        }
    }
    assert!(!path.contains('{'), "{}: the example gives no value for a path parameter: {path}", o.name);
    let sfn_uri = format!("/sfn/{}", o.name);
    match o.method {
        runboard::api::Method::Get => {
            let query: Vec<String> = rest_fields.iter().map(|(k, v)| format!("{k}={}", enc(v))).collect();
            let sfn: Vec<String> =
                input.as_object().into_iter().flatten().map(|(k, v)| format!("input%5B{k}%5D={}", enc(v))).collect();
            (get(&format!("{path}?{}", query.join("&"))), get(&format!("{sfn_uri}?{}", sfn.join("&"))))
        }
        runboard::api::Method::Post => (
            post_json(&path, &Value::Object(rest_fields).to_string()),
            post_json(&sfn_uri, &serde_json::json!({ "input": input }).to_string()),
        ),
    }
}

fn form_urlencoded_component(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Every operation of the table, asked on both surfaces — REST (`/api/…`)
/// and the pages' server functions (`/sfn/…`) — with a good input and, where
/// one exists, a bad one: the same status and the same body on either, and
/// the status each example expects. An operation with no example fails the
/// test, so a new row is covered by construction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_answers_alike_over_rest_and_server_functions() {
    use serde_json::json;
    let (tmp, root) = common::campaign().await;
    let st = state(&root, &common::site(tmp.path()), None);
    let trial = {
        let page: Value = serde_json::from_slice(&send(&st, get("/api/runs/second/trials?limit=1")).await.2).unwrap();
        page["trials"][0]["trial"].as_str().unwrap().to_owned()
    };
    let nope = json!({"kind": "no_such_run", "error": "no run named nope", "reasons": ["no run named nope"]});
    // (operation, input, status, the body when it is worth saying).
    let mut examples: Vec<(&str, Value, u16, Option<Value>)> = vec![
        ("campaign", json!({}), 200, None),
        ("runs", json!({"sort": "path", "limit": "1", "offset": "1"}), 200, None),
        ("runs", json!({"limit": "abc"}), 422, None),
        ("runs_version", json!({}), 200, None),
        ("live", json!({"cells_limit": "5"}), 200, None),
        ("live", json!({"cells_status": "lost"}), 422, None),
        ("live_version", json!({}), 200, None),
        ("coverage", json!({}), 200, None),
        ("coverage", json!({"rows": "colour"}), 422, None),
        ("cells", json!({"state": "gap"}), 200, None),
        ("cells", json!({"limit": "0"}), 422, None),
        ("run_sets", json!({}), 200, None),
        ("draft_form", json!({}), 200, None),
        ("draft_preview", json!({"label": "both", "max_cells": 2}), 422, None),
        ("draft_save", json!({"filters": {"colour": ["mauve"]}}), 422, None),
        ("preflight", json!({"path": "../outside.json"}), 422, None),
        ("start", json!({"path": "../outside.json"}), 422, None),
        ("pause", json!({"run_set": "nope"}), 409, None),
        ("stop", json!({"run_sets": ["nope"]}), 404, None),
        ("stop_cell", json!({"run_set": "nope", "cell": "c-1"}), 404, None),
        ("resume", json!({"run_set": "nope"}), 422, None),
        ("logs", json!({"run_set": "nope"}), 404, None),
        ("log", json!({"run_set": "nope", "name": "manager"}), 404, None),
        ("evidence", json!({}), 200, None),
        ("evidence", json!({"by": "colour"}), 422, None),
        ("evidence_export", json!({}), 200, None),
        ("propose", json!({}), 200, None),
        ("tags", json!({}), 200, None),
        ("tag_edit", json!({"tag": "bad name", "remove": ["nope"]}), 422, None),
        (
            "tag_edit",
            json!({"tag": "paper", "delete": true}),
            422,
            Some(refusal("refused", "delete: there is no tag \"paper\"")),
        ),
        ("propose", json!({"by": "task"}), 422, None),
        ("propose", json!({"top": "0"}), 422, None),
        ("evidence_export", json!({"format": "xml"}), 422, None),
        ("timing", json!({}), 200, None),
        ("catalogue", json!({}), 200, None),
        ("catalogue", json!({"fresh": "maybe"}), 422, None),
        ("telemetry", json!({}), 200, None),
        ("upkeep", json!({}), 200, None),
        ("upkeep_act", json!({"action": "shred", "target": "x", "token": "t"}), 422, None),
        ("upkeep_act", json!({"action": "delete_draft", "target": "campaign.toml", "token": "t"}), 422, None),
        ("overview", json!({}), 200, None),
        ("cohorts", json!({}), 200, None),
        ("cohort_save", json!({"name": "both", "scope": "", "replace": true}), 200, None),
        ("cohort_rename", json!({"from": "nope", "to": "other"}), 404, None),
        ("cohort_delete", json!({"name": "nope"}), 404, None),
        ("cohort_compare", json!({"names": "both,nope"}), 422, None),
        ("research", json!({}), 200, None),
        ("research_save", json!({"schema_version": 1, "questions": [{"id": "bad id", "text": "?"}]}), 422, None),
        ("research_settings", json!({"both": true}), 200, None),
        ("research_decide", json!({"text": ""}), 422, None),
        ("publish_status", json!({}), 200, None),
        ("publish_push", json!({}), 422, None),
        ("reports", json!({}), 200, None),
        ("report", json!({"run_set": "nope"}), 404, None),
        ("samples", json!({"run_set": "nope", "cell": "c-1"}), 404, None),
        ("samples", json!({"run_set": "nope", "cell": "c-1", "limit": "0"}), 422, None),
        ("audit", json!({}), 200, None),
        ("audit", json!({"since": "yesterday"}), 422, None),
        ("auto", json!({}), 200, None),
        ("auto_version", json!({}), 200, None),
        ("auto_explain", json!({}), 200, None),
        ("auto_tick", json!({}), 200, None),
        ("auto_log", json!({"limit": "5"}), 200, None),
        ("auto_settings", json!({"daily_cap": "many"}), 422, None),
        ("auto_mode", json!({"mode": "off"}), 200, None),
        ("auto_mode", json!({"mode": "sideways"}), 404, None),
        // Bad queries: the same parser, the same words.
        (
            "run_trials",
            json!({"name": "second", "round": "x"}),
            422,
            Some(bad_query("round=\"x\": not a whole number ≥ 0")),
        ),
        (
            "run_trials",
            json!({"name": "second", "outcome": "maybe"}),
            422,
            Some(bad_query("outcome=\"maybe\": not one of accepted, refused, unscored")),
        ),
        ("run_call", json!({"name": "second", "call": "abc"}), 422, Some(bad_query("call=\"abc\": not a call number"))),
        (
            "run_call",
            json!({"name": "second", "call": "999"}),
            422,
            Some(refusal("unreadable", "calls/0999.json: No such file or directory (os error 2)")),
        ),
        ("run_call", json!({"name": "second", "call": "2"}), 200, None),
        ("run_trials", json!({"name": "second", "round": "2", "limit": "3"}), 200, None),
        ("run_lineage", json!({"name": "second", "trial": trial}), 200, None),
        (
            "run_lineage",
            json!({"name": "second", "trial": "r99s9"}),
            404,
            Some(refusal("no_such_trial", "no written round of second holds a trial named r99s9")),
        ),
    ];
    // Every read of one run: the run, and a run that is not there.
    // (Each given the fields its path names, of a shared example.)
    for o in runboard::api::OPERATIONS.iter().filter(|o| o.path.starts_with("/api/runs/{name}")) {
        for (run, status, body) in [("second", 200, None), ("nope", 404, Some(nope.clone()))] {
            let fields = [("name", run), ("call", "2"), ("trial", trial.as_str())];
            let input: serde_json::Map<String, Value> = fields
                .iter()
                .filter(|(k, _)| o.path.contains(&format!("{{{k}}}")))
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            examples.push((o.name, Value::Object(input), status, body));
        }
    }
    for o in runboard::api::OPERATIONS {
        assert!(examples.iter().any(|e| e.0 == o.name), "operation {} has no example here", o.name);
    }
    let ask = |req: Request<Body>| {
        let st = st.clone();
        async move {
            let uri = req.uri().to_string();
            let (status, _, body) = send(&st, req).await;
            let mut v: Value = serde_json::from_slice(&body)
                .unwrap_or_else(|e| panic!("{uri}: {e}: {}", String::from_utf8_lossy(&body)));
            // The clock an answer was made at is not part of it.
            drop_times(&mut v);
            (status.as_u16(), v)
        }
    };
    for (name, input, status, body) in examples {
        let o = runboard::api::OPERATIONS.iter().find(|o| o.name == name).unwrap();
        let (rest, sfn) = both_requests(o, &input);
        let (ru, su) = (rest.uri().to_string(), sfn.uri().to_string());
        let (a, b) = (ask(rest).await, ask(sfn).await);
        assert_eq!(a, b, "{name}: {ru} vs {su}");
        assert_eq!(a.0, status, "{name} {input}: {}", a.1);
        if let Some(want) = body {
            assert_eq!(a.1, want, "{name} {input}");
        }
    }
}

/// Every timestamp in `v` (an RFC 3339 string, at any depth) made `null`,
/// and every `generated_at` and `history` left out.
fn drop_times(v: &mut Value) {
    match v {
        Value::String(s) if runboard::basics::timefmt::Timestamp::parse_rfc3339(s).is_some() => *v = Value::Null,
        Value::Array(items) => items.iter_mut().for_each(drop_times),
        Value::Object(fields) => {
            // The run list says when it was made in milliseconds; the
            // autopilot's history records each switch, so a second one adds
            // a line.
            fields.remove("generated_at");
            fields.remove("history");
            fields.values_mut().for_each(drop_times)
        }
        _ => {}
    }
}

fn refusal(kind: &str, why: &str) -> Value {
    serde_json::json!({"kind": kind, "error": why, "reasons": [why]})
}

fn bad_query(why: &str) -> Value {
    refusal("bad_query", why)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_are_compressed_for_clients_that_accept_it_but_streams_are_not() {
    let (tmp, root) = common::campaign().await;
    let st = state(&root, &common::site(tmp.path()), None);
    let with = |uri: &str, enc: &str| {
        Request::get(uri)
            .header(header::HOST, "127.0.0.1:8850")
            .header(header::ACCEPT_ENCODING, enc)
            .body(Body::empty())
            .unwrap()
    };
    let (status, headers, body) = send(&st, with("/api/runs", "br, gzip")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_ENCODING], "br");
    let (_, plain_headers, plain) = send(&st, get("/api/runs")).await;
    assert!(plain_headers.get(header::CONTENT_ENCODING).is_none());
    assert!(body.len() < plain.len(), "{} compressed vs {} raw", body.len(), plain.len());
    // The version stream stays uncompressed, so each event reaches the page at once.
    let req = with("/api/runs/first/version/stream", "br, gzip");
    let res =
        tokio::time::timeout(std::time::Duration::from_secs(30), app(st.clone()).oneshot(req)).await.unwrap().unwrap();
    assert_eq!(res.headers()[header::CONTENT_TYPE], "text/event-stream");
    assert!(res.headers().get(header::CONTENT_ENCODING).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_list_is_filtered_sorted_and_paged_on_the_server() {
    let (tmp, root) = common::campaign().await;
    let st = state(&root, &common::site(tmp.path()), None);
    let json = |b: Vec<u8>| serde_json::from_slice::<Value>(&b).unwrap();
    let all = json(send(&st, get("/api/runs")).await.2);
    assert_eq!((all["total"].as_u64(), all["matching"].as_u64(), all["offset"].as_u64()), (Some(3), Some(3), Some(0)));
    let page = json(send(&st, get("/api/runs?sort=path&limit=1&offset=1")).await.2);
    let paths: Vec<&str> = page["runs"].as_array().unwrap().iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["runs/b/deeper/second"]);
    assert_eq!(page["matching"], 3);
    let unreadable = json(send(&st, get("/api/runs?status=unreadable")).await.2);
    assert_eq!(unreadable["matching"], 1);
    // The page's server function answers the same query alike.
    let sfn = json(send(&st, get("/sfn/runs?input[sort]=path&input[limit]=1&input[offset]=1")).await.2);
    assert_eq!(sfn["runs"], page["runs"]);
    for (uri, why) in [
        (
            "/api/runs?status=dead",
            "status=\"dead\": not one of starting, running, finished, stopped, interrupted, unreadable",
        ),
        ("/api/runs?limit=x", "limit=\"x\": not a whole number ≥ 0"),
    ] {
        let (status, _, body) = send(&st, get(uri)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(json(body)["error"], why);
    }
}

/// Every control is a line of the audit log — from a page, a REST client and
/// the command line; answered, refused by the operation, refused by the
/// guard — with who, from where and the answer; the file is its user's alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_control_is_a_line_of_the_audit_log_refused_ones_too() {
    use std::os::unix::fs::PermissionsExt;
    let (tmp, root) = common::campaign().await;
    let st = state(&root, &common::site(tmp.path()), None);
    assert_eq!(send(&st, post_json("/api/control/pause", r#"{"run_set": "nope"}"#)).await.0, StatusCode::CONFLICT);
    assert_eq!(send(&st, post_json("/sfn/tag_edit", r#"{"input": {"tag": "bad name"}}"#)).await.0.as_u16(), 422);
    assert_eq!(send(&st, post_json("/api/auto/off", "")).await.0, StatusCode::OK);
    let mut foreign = post_json("/api/control/stop", "{}");
    foreign.headers_mut().insert(header::ORIGIN, header::HeaderValue::from_static("http://evil.example"));
    assert_eq!(send(&st, foreign).await.0, StatusCode::FORBIDDEN);
    // Reads are not controls.
    assert_eq!(send(&st, get("/api/tags")).await.0, StatusCode::OK);
    // The command line's control, by its user.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_runboard"))
        .args(["tag", "paper", "--note", "for the paper", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let (status, _, body) = send(&st, get("/api/audit")).await;
    assert_eq!(status, StatusCode::OK);
    let page = body_json(body);
    let lines: Vec<(&str, &str, &str, u64)> = page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["op"].as_str().unwrap(),
                e["surface"].as_str().unwrap(),
                e["by"].as_str().unwrap(),
                e["status"].as_u64().unwrap(),
            )
        })
        .collect();
    let user = server::access::audit::cli_user();
    assert_eq!(
        lines,
        vec![
            ("tag_edit", "cli", user.as_str(), 200),
            ("stop", "rest", "anyone (no token asked)", 403),
            ("auto_mode", "rest", "anyone (no token asked)", 200),
            ("tag_edit", "page", "anyone (no token asked)", 422),
            ("pause", "rest", "anyone (no token asked)", 409),
        ],
        "newest first"
    );
    let e = &page["entries"];
    assert_eq!(
        e[0]["args"],
        serde_json::json!({"tag": "paper", "add": [], "remove": [], "note": "for the paper", "delete": false})
    );
    assert_eq!(e[0]["from"], "cli");
    assert!(e[1]["answer"].as_str().unwrap().contains("Origin http://evil.example is not this server"), "{}", e[1]);
    assert_eq!(e[2]["args"], serde_json::json!({"mode": "off"}), "the path's parameter");
    assert_eq!(e[3]["args"], serde_json::json!({"tag": "bad name"}), "a page's input");
    assert!(e[3]["answer"].as_str().unwrap().contains("bad name"), "{}", e[3]);
    assert_eq!(e[4]["args"], serde_json::json!({"run_set": "nope"}));
    let mode = std::fs::metadata(root.join(".runboard/audit.jsonl")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "readable by its user alone");
    // The same page from the command line, and `since` read.
    let cli = std::process::Command::new(env!("CARGO_BIN_EXE_runboard"))
        .args(["audit", "--since", "2000-01-01", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&cli.stdout);
    assert!(
        text.lines().count() == 5 && text.contains("auto_mode {\"mode\":\"off\"} by anyone (no token asked)"),
        "{text}"
    );
    let (status, _, body) = send(&st, get("/api/audit?since=tomorrow")).await;
    assert_eq!((status.as_u16(), body_json(body)["kind"].clone()), (422, serde_json::json!("bad_query")));
    // A link planted in the log's place, out of the root: never appended to,
    // never read through.
    let outside = tmp.path().join("outside.txt");
    std::fs::write(&outside, "not the campaign's\n").unwrap();
    let log = root.join(".runboard/audit.jsonl");
    std::fs::remove_file(&log).unwrap();
    std::os::unix::fs::symlink(&outside, &log).unwrap();
    assert_eq!(send(&st, post_json("/api/auto/off", "")).await.0, StatusCode::OK, "the control itself is done");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "not the campaign's\n");
    let (status, _, body) = send(&st, get("/api/audit")).await;
    let v = body_json(body);
    assert_eq!((status.as_u16(), v["kind"].as_str()), (422, Some("unreadable")), "{v}");
}
