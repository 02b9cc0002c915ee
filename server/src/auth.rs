//! Who may talk to the console.
//!
//! Bound to loopback (the default) anyone on this machine may. Bound to any other
//! address the server requires a token: every request must carry it as
//! `Authorization: Bearer <token>` or in the `runboard_token` cookie, which opening
//! `/?token=<token>` sets. Independently, a state-changing request (anything but
//! GET/HEAD/OPTIONS) whose `Origin` is not this server is refused with 403, so a
//! page on another site cannot drive the console through the operator's browser.
//!
//! Before either, the **Host** a request names must be one the server answers to
//! ([`AllowedHosts`]): a page on `evil.example` whose name an attacker re-points
//! at 127.0.0.1 (DNS rebinding) sends `Host: evil.example`, and gets 421 instead
//! of the campaign.

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};

pub const COOKIE: &str = "runboard_token";

#[derive(Clone, Debug, Default)]
pub struct Access {
    /// `Some` when the server was bound to a non-loopback address.
    pub token: Option<String>,
    /// The Host names requests may name.
    pub hosts: AllowedHosts,
}

/// The names a request's `Host` may give: the loopback names (`localhost`,
/// `127.0.0.1` and the rest of 127/8, `::1`), the address the server is bound
/// to, and the names the operator allows (`--allow-host`). Bound to every
/// address (`0.0.0.0`, `::`), any IP address is also answered: DNS rebinding
/// needs a name, never an address. The port is not compared.
#[derive(Clone, Debug)]
pub struct AllowedHosts {
    /// Lower-case names and addresses (IPv6 without brackets).
    names: Vec<String>,
    any_ip: bool,
}

impl Default for AllowedHosts {
    /// Loopback only.
    fn default() -> Self {
        Self { names: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()], any_ip: false }
    }
}

impl AllowedHosts {
    /// For a server bound to `bound`, also answering to `extra` names.
    pub fn new(bound: std::net::IpAddr, extra: &[String]) -> Self {
        let mut hosts = Self { any_ip: bound.is_unspecified(), ..Self::default() };
        hosts.names.push(bound.to_string());
        hosts.names.extend(extra.iter().map(|n| normalise(n)));
        hosts
    }

    /// Whether a request naming `host` (a `Host` header value, port included or
    /// not) is answered.
    pub fn allows(&self, host: &str) -> bool {
        let name = normalise(host_name(host));
        if let Ok(ip) = name.parse::<std::net::IpAddr>() {
            if ip.is_loopback() || self.any_ip {
                return true;
            }
        }
        !name.is_empty() && self.names.contains(&name)
    }

    fn describe(&self) -> String {
        let mut names: Vec<&str> = Vec::new();
        for n in &self.names {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        }
        let mut text = names.join(", ");
        if self.any_ip {
            text.push_str(", any IP address");
        }
        text
    }
}

/// `host` without its port: `[::1]:8850` → `::1`, `box:8850` → `box`.
fn host_name(host: &str) -> &str {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

fn normalise(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// The refusal for a request whose Host is not one the server answers to.
fn misdirected(req: &Request, hosts: &AllowedHosts) -> Option<Response> {
    let host = req.headers().get(header::HOST).and_then(|v| v.to_str().ok());
    // HTTP/2 and absolute-form requests carry the host in the URI instead.
    let host = host.or_else(|| req.uri().authority().map(|a| a.as_str()));
    match host {
        Some(h) if hosts.allows(h) => None,
        Some(h) => Some(refusal(
            StatusCode::MISDIRECTED_REQUEST,
            "misdirected",
            format!(
                "refused: this runboard answers to {}, not to Host {h:?} (allow a name with --allow-host)",
                hosts.describe()
            ),
        )),
        None => Some(refusal(StatusCode::BAD_REQUEST, "misdirected", "refused: the request names no Host".into())),
    }
}

pub async fn guard(State(access): State<Access>, req: Request, next: Next) -> Response {
    if let Some(refusal) = misdirected(&req, &access.hosts) {
        return refusal;
    }
    if let Some(why) = foreign_origin(&req) {
        return refusal(StatusCode::FORBIDDEN, "forbidden", why);
    }
    let Some(token) = access.token.as_deref() else {
        return next.run(req).await;
    };
    if carries(&req, token) {
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
    refusal(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "this runboard needs its token: open /?token=<token> once, or send Authorization: Bearer <token>".into(),
    )
}

/// A guard's refusal in the one documented shape: `{kind, error, reasons}`.
fn refusal(status: StatusCode, kind: &str, why: String) -> Response {
    let body = serde_json::json!({ "kind": kind, "error": why, "reasons": [why] });
    (status, axum::Json(body)).into_response()
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

/// Whether `req` carries `token` (its header or its cookie).
pub(crate) fn carries(req: &Request, token: &str) -> bool {
    bearer(req).is_some_and(|t| same(t, token)) || cookie(req).is_some_and(|t| same(t, token))
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

/// Compares without an early exit, so timing does not reveal a token prefix
/// (the console's token, the batch gateway's secret).
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Why `token` cannot be used, if it cannot: empty, or with whitespace around it
/// (a copy-paste accident that would lock everyone out, since browsers and
/// clients send the token as typed).
pub fn token_problem(token: &str) -> Option<&'static str> {
    if token.trim().is_empty() {
        Some("the token is empty")
    } else if token.trim() != token {
        Some("the token has spaces or line breaks around it")
    } else if !token.bytes().all(|b| b.is_ascii_graphic()) {
        Some("the token has spaces inside or characters other than printable ASCII (it travels in a header and a cookie)")
    } else if token.contains(';') || token.contains(',') {
        Some("the token contains ';' or ',', which a cookie cannot carry")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_answered() {
        let loopback = AllowedHosts::default();
        for ok in ["127.0.0.1:8850", "localhost:8850", "LOCALHOST", "[::1]:8850", "127.0.0.2", "localhost."] {
            assert!(loopback.allows(ok), "{ok}");
        }
        for no in ["evil.example", "evil.example:8850", "10.0.0.5:8850", "", "localhost.evil.example"] {
            assert!(!loopback.allows(no), "{no}");
        }
        let lan = AllowedHosts::new("10.0.0.5".parse().unwrap(), &["Box.Lab".into()]);
        assert!(lan.allows("10.0.0.5:8850") && lan.allows("box.lab:8850") && !lan.allows("10.0.0.6"));
        let any = AllowedHosts::new("0.0.0.0".parse().unwrap(), &[]);
        assert!(any.allows("192.168.1.9:8850") && any.allows("[fe80::1]") && !any.allows("evil.example"));
    }

    #[test]
    fn unusable_tokens_are_named() {
        assert_eq!(token_problem(""), Some("the token is empty"));
        assert_eq!(token_problem("   "), Some("the token is empty"));
        assert_eq!(token_problem(" s3cret"), Some("the token has spaces or line breaks around it"));
        assert_eq!(token_problem("s3cret\n"), Some("the token has spaces or line breaks around it"));
        assert!(token_problem("a;b").is_some());
        assert_eq!(token_problem("s3cret-Token_1"), None);
    }
}
