//! A real `runboard serve` over a console campaign, and plain HTTP to it
//! (the console and backend tests).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

// The waits, for the tests that glob-import this module.
#[allow(unused_imports)]
pub use super::{wait_for, wait_until};

pub const BIN: &str = env!("CARGO_BIN_EXE_runboard");

pub struct Served {
    pub child: Child,
    pub addr: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        // A test that failed leaves the batch it launched running (batches
        // outlive their server by design): the server stops it first.
        if std::thread::panicking() {
            stop_quietly(&self.addr);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `POST /api/control/stop` (the shown batch), never panicking: called while
/// a failed test unwinds, where a second panic would abort the run.
fn stop_quietly(addr: &str) {
    let _ = try_http(addr, "POST", "/api/control/stop", Some("{}"), "application/json");
}

pub fn serve(root: &Path, data: &Path) -> Served {
    serve_env(root, data, &[])
}

/// `runboard serve` with more environment (a bus address, `SLURM_CONF`).
pub fn serve_env(root: &Path, data: &Path, env: &[(String, String)]) -> Served {
    serve_with(root, data, env, &[])
}

/// `runboard serve` with more environment and more flags (`--auto-tick 1`).
pub fn serve_with(root: &Path, data: &Path, env: &[(String, String)], args: &[&str]) -> Served {
    let mut cmd = serve_command(BIN, root);
    cmd.args(args).arg("--data-dir").arg(data).envs(env.iter().map(|(k, v)| (k, v)));
    served(cmd.spawn().unwrap())
}

/// `BIN serve --port 0 --root ROOT` with the console token it makes (none
/// given), its address and token to be read from stdout by [`served`]: add
/// flags, spawn. (A bench may name another
/// build of the binary.)
pub fn serve_command(bin: &str, root: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(["serve", "--port", "0", "--root"])
        .arg(root)
        .env_remove("RUNBOARD_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    cmd
}

/// A started `runboard serve` (its stdout piped), once it has printed its
/// address; its stdout is drained from then on so it never blocks on a full pipe.
pub fn served(mut child: Child) -> Served {
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line
        .split("at http://")
        .nth(1)
        .and_then(|rest| rest.trim().strip_suffix('/'))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    // The line after the address: the address to open, with the console
    // token the server made in its data folder (as a user copies it).
    let mut open = String::new();
    out.read_line(&mut open).unwrap();
    // (A server given its token prints a placeholder instead.)
    let printed = open.split("?token=").nth(1).and_then(|t| t.split_whitespace().next());
    if let Some(token) = printed.filter(|t| !t.starts_with('<')) {
        tokens().lock().unwrap().insert(addr.clone(), token.to_owned());
    }
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    Served { child, addr }
}

/// The console token each server started here printed, by address: every
/// request of [`http`] carries it, as a client of the console would.
fn tokens() -> &'static std::sync::Mutex<std::collections::HashMap<String, String>> {
    static TOKENS: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<String, String>>> =
        std::sync::OnceLock::new();
    TOKENS.get_or_init(Default::default)
}

/// The token the server at `addr` printed, if it printed one.
pub fn token_of(addr: &str) -> Option<String> {
    tokens().lock().unwrap().get(addr).cloned()
}

/// An HTTP client that sends the token of the server at `addr` with every
/// request (the benches' clients).
#[allow(dead_code)]
pub fn client(addr: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(t) = token_of(addr) {
        headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {t}").parse().unwrap());
    }
    reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(30)).default_headers(headers).build().unwrap()
}

/// The request header line that carries the token of the server at `addr`
/// (empty when it printed none).
pub fn auth_line(addr: &str) -> String {
    token_of(addr).map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default()
}

/// One HTTP/1.1 exchange: the status and the body as JSON (Null if not JSON).
pub fn http(addr: &str, method: &str, path: &str, body: Option<&str>, content_type: &str) -> (u16, Value) {
    try_http(addr, method, path, body, content_type).unwrap()
}

/// [`http`], its failure to connect, send or read returned, not a panic.
fn try_http(
    addr: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
    content_type: &str,
) -> std::io::Result<(u16, Value)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    let body = body.unwrap_or("");
    let auth = auth_line(addr);
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{auth}Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let payload = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    // Chunked bodies: the JSON is the one line that parses.
    let value = serde_json::from_str(payload.trim())
        .ok()
        .or_else(|| payload.lines().find_map(|l| serde_json::from_str::<Value>(l.trim()).ok()))
        .unwrap_or(Value::Null);
    Ok((code, value))
}

pub fn get(addr: &str, path: &str) -> (u16, Value) {
    http(addr, "GET", path, None, "application/json")
}

pub fn post(addr: &str, path: &str, body: Value) -> (u16, Value) {
    http(addr, "POST", path, Some(&body.to_string()), "application/json")
}

pub fn live_state(addr: &str) -> (String, Value) {
    let (code, v) = get(addr, "/api/live");
    assert_eq!(code, 200, "{v}");
    (v["state"]["state"].as_str().unwrap_or("").to_owned(), v)
}

/// The Live view as a page holds it: fetched again only when the version it
/// follows moved (`GET /api/live/version`), as the page does, so a view
/// served under a version that names a later change than it shows is kept
/// here as it would be on the page. `states` is each state it showed, in
/// order.
#[derive(Default)]
pub struct LivePage {
    pub view: Value,
    pub states: Vec<String>,
}

impl LivePage {
    /// One look: the state the page shows now.
    pub fn look(&mut self, addr: &str) -> String {
        let (code, v) = get(addr, "/api/live/version");
        assert_eq!(code, 200, "{v}");
        if self.view.is_null() || v["version"] != self.view["version"] {
            let (state, view) = live_state(addr);
            if self.states.last() != Some(&state) {
                self.states.push(state);
            }
            self.view = view;
        }
        self.states.last().cloned().unwrap_or_default()
    }
}

/// What Live said of its quiet cells over a run's looks: the latest words
/// for a call in flight longer than `long_s`, and for calls held waiting.
#[derive(Default)]
pub struct QuietSeen {
    pub in_flight: Option<String>,
    pub waiting: Option<String>,
}

impl QuietSeen {
    /// Reads one live view's cells.
    pub fn look(&mut self, live: &Value, long_s: f64) {
        for c in live["cells"].as_array().into_iter().flatten() {
            let words = c["quiet"]["words"].as_str().map(str::to_owned);
            match c["quiet"]["kind"].as_str() {
                Some("in_flight") if c["quiet"]["for_s"].as_f64() > Some(long_s) => self.in_flight = words,
                Some("waiting") => self.waiting = words,
                _ => {}
            }
        }
    }
}

/// The console test campaign (`server::demo::fixture`, the one the end-to-end
/// suite uses too): cells that each sleep `cell_s` and report tokens, and a
/// paid model `paid-m` with a daily cap of 1.
pub fn campaign(tmp: &Path, cell_s: f64) -> PathBuf {
    let root = tmp.join("campaign");
    let f = server::demo::fixture::ConsoleFixture {
        name: "console test".into(),
        command: vec![
            "sh".into(),
            "-c".into(),
            format!("sleep {cell_s}; printf '{{{{\"tokens\": 100, \"score\": 0.5}}}}' > {{out}}/result.json"),
        ],
        parallel: 1,
        models: "[[models]]\nname = \"paid-m\"\nkind = \"paid\"\ndaily_cap = 1\nprice_per_1k_tokens = 2.0\n".into(),
        default_graces: false,
    };
    server::demo::fixture::write_console_campaign(&root, &f).unwrap();
    root
}

pub fn draft(addr: &str, body: Value) -> String {
    let (code, saved) = post(addr, "/api/drafts", body);
    assert_eq!(code, 200, "{saved}");
    saved["path"].as_str().unwrap().to_owned()
}

pub fn is_zombie(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
        .unwrap_or(true)
}

/// A page's status and HTML.
pub fn get_text(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{}\r\n", auth_line(addr)).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default())
}
