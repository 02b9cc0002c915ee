//! Who may talk to the console.
//!
//! Bound to loopback (the default) anyone on this machine may. Bound to any other
//! address the server requires a token: every request must carry it as
//! `Authorization: Bearer <token>` or in the `runboard_token` cookie, which opening
//! `/?token=<token>` sets. Independently, a state-changing request (anything but
//! GET/HEAD/OPTIONS) whose `Origin` is not this server is refused with 403, so a
//! page on another site cannot drive the console through the operator's browser.

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};

pub const COOKIE: &str = "runboard_token";

#[derive(Clone, Debug, Default)]
pub struct Access {
    /// `Some` when the server was bound to a non-loopback address.
    pub token: Option<String>,
}

pub async fn guard(State(access): State<Access>, req: Request, next: Next) -> Response {
    if let Some(refusal) = foreign_origin(&req) {
        return (StatusCode::FORBIDDEN, refusal).into_response();
    }
    let Some(token) = access.token.as_deref() else {
        return next.run(req).await;
    };
    if bearer(&req).is_some_and(|t| same(t, token)) || cookie(&req).is_some_and(|t| same(t, token)) {
        return next.run(req).await;
    }
    if let Some(given) = query_token(req.uri()) {
        if same(&given, token) && req.method() == Method::GET {
            // Trade the token in the address for a cookie, and drop it from the
            // address bar (and from history and referrers).
            let mut res = Redirect::to(&without_token(req.uri())).into_response();
            let cookie = format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict");
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                res.headers_mut().insert(header::SET_COOKIE, v);
            }
            return res;
        }
    }
    (
        StatusCode::UNAUTHORIZED,
        "this runboard needs its token: open /?token=<token> once, or send Authorization: Bearer <token>",
    )
        .into_response()
}

/// The reason to refuse a state-changing request from another origin, if any.
fn foreign_origin(req: &Request) -> Option<String> {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return None;
    }
    let headers = req.headers();
    if headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) == Some("cross-site") {
        return Some("refused: a state-changing request from another site".to_owned());
    }
    let origin = headers.get(header::ORIGIN)?.to_str().unwrap_or("");
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    let own = [format!("http://{host}"), format!("https://{host}")];
    if host.is_empty() || !own.iter().any(|o| o == origin) {
        return Some(format!("refused: Origin {origin} is not this server (http://{host})"));
    }
    None
}

fn bearer(req: &Request) -> Option<&str> {
    req.headers().get(header::AUTHORIZATION)?.to_str().ok()?.strip_prefix("Bearer ").map(str::trim)
}

fn cookie(req: &Request) -> Option<&str> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|kv| kv.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

fn query_token(uri: &Uri) -> Option<String> {
    uri.query()?.split('&').find_map(|kv| kv.strip_prefix("token=")).map(str::to_owned)
}

fn without_token(uri: &Uri) -> String {
    let rest: Vec<&str> =
        uri.query().unwrap_or("").split('&').filter(|kv| !kv.is_empty() && !kv.starts_with("token=")).collect();
    if rest.is_empty() {
        uri.path().to_owned()
    } else {
        format!("{}?{}", uri.path(), rest.join("&"))
    }
}

/// Compares without an early exit, so timing does not reveal a token prefix.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
