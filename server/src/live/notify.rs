//! Notifications: every batch event (launched, ended, failed to launch —
//! found by `runboard::live::notice` from the unit records — stalled, paused by
//! the budget) and the autopilot's notable events, given to `[hooks] notify`
//! on its standard input and POSTed to `[hooks] webhook`, each bounded in
//! time. A failure is logged (the event log's `notify_failed`, shown on the
//! Auto page and the Overview) and changes nothing else.
//!
//! The server delivers from one thread of its own, in order, so a slow hook
//! never holds the guard or a batch; the CLI delivers after its command.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use runboard::auto::AutoEvent;
use runboard::campaign::CampaignConfig;
use serde_json::Value;

use crate::auto::auto_state;
use crate::campaign::Campaign;

/// How long the notification hook may run.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a webhook POST may take, connection to answer.
pub const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// Gives `body` (one notification object; its `event` names its kind) to
/// the hook and the webhook, each bounded; each failure is logged as
/// `notify_failed` and returned.
pub fn deliver(root: &Path, cfg: &CampaignConfig, body: &Value) -> Vec<String> {
    let kind = body["event"].as_str().unwrap_or("").to_owned();
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut failed = Vec::new();
    if let Some((program, args)) = cfg.hooks.notify.as_ref().and_then(|n| n.split_first()) {
        match crate::system::command::run_bounded_with_input(program, args, Some(root), &bytes, HOOK_TIMEOUT) {
            Ok(out) if out.status.success() => {}
            Ok(out) => failed.push(format!("the hook: {}", crate::system::command::why(program, &out))),
            Err(why) => failed.push(format!("the hook: {why}")),
        }
    }
    if let Some(url) = &cfg.hooks.webhook {
        if let Err(why) = post(url, &cfg.hooks.webhook_hosts, &bytes) {
            failed.push(format!("the webhook {}: {why}", runboard::campaign::webhook_shown(url)));
        }
    }
    for why in &failed {
        tracing::warn!("notifying {kind} failed: {why}");
        let _ = auto_state::log_now(root, AutoEvent::NotifyFailed { event: kind.clone(), why: why.clone() });
    }
    // The last delivery, for the Overview: a failure stays shown until one
    // succeeds.
    let last = LastDelivery { at: crate::system::clock::now(), event: kind, failed: failed.clone() };
    if let Err(e) = crate::files::atomic::write_json(&root.join(LAST_FILE), &last) {
        tracing::warn!("writing {LAST_FILE}: {e}");
    }
    failed
}

/// Where the last delivery's result is kept, relative to the root.
pub const LAST_FILE: &str = ".runboard/notify_last.json";

/// The last delivery: when, of what, and each part that failed.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LastDelivery {
    #[serde(with = "runboard::basics::timefmt::rfc3339")]
    pub at: runboard::Timestamp,
    pub event: String,
    pub failed: Vec<String>,
}

/// The last delivery, if it failed.
pub fn last_failure(root: &Path) -> Option<LastDelivery> {
    let bytes = crate::files::fsread::read_regular(&root.join(LAST_FILE)).ok()?;
    serde_json::from_slice::<LastDelivery>(&bytes).ok().filter(|l| !l.failed.is_empty())
}

type Queued = (PathBuf, CampaignConfig, Value);

/// Queues `body` for the server's delivery thread (started on first use):
/// returns at once; events are delivered in the order queued.
pub fn queue(root: &Path, cfg: &CampaignConfig, body: Value) {
    static OUTBOX: OnceLock<Mutex<mpsc::Sender<Queued>>> = OnceLock::new();
    let outbox = OUTBOX.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Queued>();
        std::thread::Builder::new()
            .name("runboard-notify".into())
            .spawn(move || {
                for (root, cfg, body) in rx {
                    deliver(&root, &cfg, &body);
                }
            })
            .expect("starting the notification thread");
        Mutex::new(tx)
    });
    let sent = outbox.lock().unwrap_or_else(|p| p.into_inner()).send((root.to_path_buf(), cfg.clone(), body));
    if sent.is_err() {
        tracing::error!("the notification thread is gone; an event was not said");
    }
}

/// POSTs `body` as JSON to `url` (checked again here: `http://`, loopback or
/// a named host), over a plain socket, within `WEBHOOK_TIMEOUT`; any 2xx
/// answer is success.
fn post(url: &str, hosts: &[String], body: &[u8]) -> Result<(), String> {
    if let Some(why) = runboard::campaign::webhook_refusal(url, hosts) {
        return Err(why);
    }
    let rest = url.trim_start_matches("http://");
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest[i..].starts_with('/') => (&rest[..i], &rest[i..]),
        Some(i) => (&rest[..i], "/"),
        None => (rest, "/"),
    };
    let path = path.split('#').next().unwrap_or("/");
    let target = if authority.rsplit_once(':').is_some_and(|(_, p)| p.chars().all(|c| c.is_ascii_digit()))
        && !authority.ends_with(']')
    {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let deadline = Instant::now() + WEBHOOK_TIMEOUT;
    let addr = target
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {authority}: {e}"))?
        .next()
        .ok_or_else(|| format!("{authority} resolves to no address"))?;
    let mut stream = TcpStream::connect_timeout(&addr, WEBHOOK_TIMEOUT).map_err(|e| format!("connecting: {e}"))?;
    let left = || deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    stream.set_write_timeout(Some(left())).map_err(|e| e.to_string())?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         User-Agent: runboard/{}\r\nConnection: close\r\n\r\n",
        body.len(),
        env!("CARGO_PKG_VERSION")
    );
    stream.write_all(head.as_bytes()).and_then(|_| stream.write_all(body)).map_err(|e| format!("sending: {e}"))?;
    // The status line is all that is read (at most 1 KiB).
    let mut answer = Vec::with_capacity(128);
    let mut buf = [0u8; 256];
    while !answer.windows(2).any(|w| w == b"\r\n") && answer.len() < 1024 {
        if Instant::now() >= deadline {
            return Err(format!("no answer within {} s", WEBHOOK_TIMEOUT.as_secs()));
        }
        stream.set_read_timeout(Some(left())).map_err(|e| e.to_string())?;
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return Err(format!("no answer within {} s", WEBHOOK_TIMEOUT.as_secs()))
            }
            Err(e) => return Err(format!("reading its answer: {e}")),
        }
    }
    let line = String::from_utf8_lossy(&answer);
    let status = line.lines().next().unwrap_or("").to_owned();
    match status.split_whitespace().nth(1) {
        Some(code) if code.starts_with('2') && code.len() == 3 => Ok(()),
        Some(code) => Err(format!("answered HTTP {code}")),
        None => Err(format!("not an HTTP answer: {:?}", runboard::console::spec::shorten(&status))),
    }
}

/// Says the batch events not yet said, now (the CLI, after a command that
/// launches or ends a batch): bounded by the hook's and webhook's limits.
pub fn say_now(campaign: &Campaign) {
    let Ok(cfg) = campaign.config() else { return };
    for body in campaign.batch_notices() {
        deliver(campaign.root(), &cfg, &body);
    }
}

/// Queues the batch events not yet said for the delivery thread (the
/// server's guard, every pass).
pub fn say_queued(campaign: &Campaign) {
    let Ok(cfg) = campaign.config() else { return };
    for body in campaign.batch_notices() {
        tracing::info!("{}", body["words"].as_str().unwrap_or_default());
        queue(campaign.root(), &cfg, body);
    }
}
