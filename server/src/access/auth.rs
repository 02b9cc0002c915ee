//! Who may talk to the console.
//!
//! Every request must carry a token (unless the server was started with
//! `--no-token`, on purpose and said loudly): as `Authorization: Bearer
//! <token>` or in the `runboard_token` cookie, which opening `/?token=<token>`
//! sets (the token then leaves the address bar). The tokens are the console
//! token (its user's own, `server::access::tokens`) and the named tokens of the data
//! folder's book, read at each request that carries one, so a revoked token is
//! refused at once. A viewer's token is refused, in words (403), anything but
//! a read. Independently, a state-changing request (anything but
//! GET/HEAD/OPTIONS) whose `Origin` is not this server is refused with 403, so a
//! page on another site cannot drive the console through the operator's browser.
//!
//! Before either, the **Host** a request names must be one the server answers to
//! ([`AllowedHosts`]): a page on `evil.example` whose name an attacker re-points
//! at 127.0.0.1 (DNS rebinding) sends `Host: evil.example`, and gets 421 instead
//! of the campaign.

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use runboard::access::{Role, CONSOLE_TOKEN_NAME};

pub const COOKIE: &str = "runboard_token";

#[derive(Clone, Debug, Default)]
pub struct Access {
    /// The tokens asked; `None` only for a server started with `--no-token`
    /// (and the in-process tests of routing).
    pub keys: Option<Arc<Keys>>,
    /// The Host names requests may name.
    pub hosts: AllowedHosts,
}

/// The tokens a server accepts.
#[derive(Debug)]
pub struct Keys {
    /// The console token: an operator's.
    pub console: String,
    /// The data folder whose `tokens.json` holds the named tokens, when
    /// there is one.
    pub book: Option<PathBuf>,
}

/// Who sent a request, as far as the tokens say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// The server asks no token (`--no-token`).
    Anyone,
    /// A token the server accepts: its name (`console` for the console
    /// token) and what it may do.
    Token { name: String, role: Role },
    /// No token, or one the server does not accept.
    Stranger,
}

impl Caller {
    /// How the audit log names the caller.
    pub fn by(&self) -> String {
        match self {
            Self::Anyone => "anyone (no token asked)".into(),
            Self::Token { name, .. } => name.clone(),
            Self::Stranger => "no valid token".into(),
        }
    }

    /// What the caller may do, when it may do anything.
    pub fn role(&self) -> Option<Role> {
        match self {
            Self::Anyone => Some(Role::Operate),
            Self::Token { role, .. } => Some(*role),
            Self::Stranger => None,
        }
    }
}

impl Access {
    /// A server that asks no token of anyone (`--no-token`).
    pub fn open(hosts: AllowedHosts) -> Self {
        Self { keys: None, hosts }
    }

    /// A server that asks `console` or a token of `book`'s data folder.
    pub fn with_token(console: String, book: Option<PathBuf>, hosts: AllowedHosts) -> Self {
        Self { keys: Some(Arc::new(Keys { console, book })), hosts }
    }

    /// Who sent `req`: the token it carries (header, else cookie).
    pub fn caller(&self, req: &Request) -> Caller {
        let Some(keys) = &self.keys else { return Caller::Anyone };
        let carried = bearer(req).into_iter().chain(cookie(req));
        carried.map(|t| keys.named(t)).find(|c| *c != Caller::Stranger).unwrap_or(Caller::Stranger)
    }
}

impl Keys {
    /// Who `token` is: the console token, a named token of the book (read
    /// now: a token revoked a moment ago is refused), or nobody.
    fn named(&self, token: &str) -> Caller {
        if same(token, &self.console) {
            return Caller::Token { name: CONSOLE_TOKEN_NAME.into(), role: Role::Operate };
        }
        let Some(data) = &self.book else { return Caller::Stranger };
        // A book that cannot be read accepts no named token (the console
        // token still works); `runboard token list` says what is wrong.
        let Ok(book) = crate::access::tokens::book(data) else { return Caller::Stranger };
        match book.find(&crate::access::tokens::hash(token)) {
            Some(t) => Caller::Token { name: t.name.clone(), role: t.role },
            None => Caller::Stranger,
        }
    }
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

pub async fn guard(State(access): State<Access>, mut req: Request, next: Next) -> Response {
    if let Some(refusal) = misdirected(&req, &access.hosts) {
        return refusal;
    }
    if let Some(why) = foreign_origin(&req) {
        return refusal(StatusCode::FORBIDDEN, "forbidden", why);
    }
    let caller = access.caller(&req);
    let Some(role) = caller.role() else { return stranger(&access, &req) };
    if !role.may(!is_read(req.method())) {
        let what = format!("{} {}", req.method(), req.uri().path());
        return refusal(StatusCode::FORBIDDEN, "forbidden", Role::refusal(&caller.by(), &what));
    }
    // The pages render for who asks (a viewer's show no enabled control).
    req.extensions_mut().insert(role);
    next.run(req).await
}

/// GET, HEAD, OPTIONS: what a viewer may send.
pub fn is_read(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// A request without an accepted token: a GET whose address carries one is
/// traded for a cookie (and the token dropped from the address bar, history
/// and referrers); anything else is 401.
fn stranger(access: &Access, req: &Request) -> Response {
    if let (Some(keys), Some(given)) = (&access.keys, query_token(req.uri())) {
        if req.method() == Method::GET && keys.named(&given) != Caller::Stranger {
            let mut res = Redirect::to(&without_token(req.uri())).into_response();
            let cookie = format!("{COOKIE}={given}; Path=/; HttpOnly; SameSite=Strict");
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                res.headers_mut().insert(header::SET_COOKIE, v);
            }
            return res;
        }
    }
    if wants_page(req) {
        return (StatusCode::UNAUTHORIZED, axum::response::Html(SIGN_IN_PAGE)).into_response();
    }
    let why = "this runboard needs its token: open the address `runboard serve` printed (or `runboard open` prints), \
               or send Authorization: Bearer <token>";
    refusal(StatusCode::UNAUTHORIZED, "unauthorized", why.into())
}

/// A browser asking for a page (not the API, an asset or a stream).
fn wants_page(req: &Request) -> bool {
    let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    req.method() == Method::GET && accept.contains("text/html") && !req.uri().path().starts_with("/api/")
}

/// What a person whose browser has no token sees, instead of JSON.
const SIGN_IN_PAGE: &str = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>runboard: sign in</title>\
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1f2328}\
code{background:#f6f8fa;padding:.1rem .3rem;border-radius:4px}</style></head><body>\
<h1>This runboard needs its token</h1>\
<p>Open the address <code>runboard serve</code> printed when it started \
(<code>http://…/?token=…</code>); on the machine it runs on, <code>runboard open</code> prints it again.</p>\
<p>Someone else's console? Ask them for a token: <code>runboard token add NAME --view</code> makes one \
that reads every page.</p></body></html>";

/// A guard's refusal in the one documented shape: `{kind, error, reasons}`.
fn refusal(status: StatusCode, kind: &str, why: String) -> Response {
    let body = serde_json::json!({ "kind": kind, "error": why, "reasons": [why] });
    (status, axum::Json(body)).into_response()
}

/// The reason to refuse a state-changing request from another origin, if any.
fn foreign_origin(req: &Request) -> Option<String> {
    if is_read(req.method()) {
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

/// Compares without an early exit, so timing does not reveal a token prefix
/// (the console's token, the batch gateway's secret).
pub(crate) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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
}
