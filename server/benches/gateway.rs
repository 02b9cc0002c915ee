//! The batch gateway beside calling the endpoint directly.
//!
//! `cargo bench -p server --bench gateway`: a real gateway
//! (`server::drive::gateway::Gateway`, as a batch's driver starts it) in
//! front of a small OpenAI-compatible endpoint written here (a fake: no model
//! server runs on these machines; it answers a chat completion at once, with
//! usage, whole or streamed). One client (reqwest, as an SDK's HTTP pool)
//! makes the same calls directly and through the gateway, and the bench
//! reports, all from one run:
//!
//! - **added latency** of a whole answer at 1, 64 and 512 calls in flight:
//!   p50 and p99 through the gateway less the same percentile direct, and
//!   the calls per second each way — with an endpoint that answers at once
//!   (at 512 the two cores are then saturated: the latency is the queue, and
//!   the gateway's share is its CPU per call), and with one that takes
//!   250 ms a call, as a model does (its answers take longer still), where
//!   512 calls in flight leave the cores room and the added latency is the
//!   gateway's own — the calls sent together (all in the same millisecond,
//!   round after round: the worst case, each queued behind the others'
//!   handling) and spread out over the endpoint's time (as many cells'
//!   calls are);
//! - **added time to first byte** of a stream: its first event through the
//!   gateway less direct, while the endpoint holds the rest back — a gateway
//!   that buffered would not pass the first event until the stream ended;
//! - **memory per open stream**: the process's resident memory with 512
//!   streams held open through the gateway less with 512 held open directly,
//!   per stream.
//!
//! The client, the gateway and the endpoint share this process and its two
//! cores, as a batch's cells, its driver and a local engine share a machine.
//! Compare ratios across machines, not times.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::response::Response;
use runboard::gateway::purse::{Purse, Spent};
use server::drive::gateway::{Gateway, Route, Setup};
use tokio::sync::watch;

const ANSWER: &str = r#"{"id":"b","object":"chat.completion","model":"bench-m","choices":[{"index":0,"message":{"role":"assistant","content":"ANSWER: 5"},"finish_reason":"stop"}],"usage":{"prompt_tokens":15,"completion_tokens":2,"total_tokens":17}}"#;
const CHUNK: &str = "data: {\"id\":\"b\",\"object\":\"chat.completion.chunk\",\"model\":\"bench-m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ANSWER\"}}]}\n\n";
const USAGE: &str = "data: {\"id\":\"b\",\"object\":\"chat.completion.chunk\",\"model\":\"bench-m\",\"choices\":[],\"usage\":{\"prompt_tokens\":15,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n";

/// The endpoint: a whole answer at once (or after the request's
/// `x-bench-delay-ms`); a stream's first event at once and the rest when
/// `release` turns true.
async fn endpoint(release: watch::Receiver<bool>) -> String {
    let app = axum::Router::new().fallback(move |headers: axum::http::HeaderMap, body: Bytes| {
        let mut release = release.clone();
        async move {
            let delay = headers.get("x-bench-delay-ms").and_then(|v| v.to_str().ok()?.parse().ok());
            if let Some(ms) = delay {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            if !body.windows(14).any(|w| w == b"\"stream\": true") {
                return Response::builder()
                    .header("content-type", "application/json")
                    .body(Body::from(ANSWER))
                    .unwrap();
            }
            let stream = async_stream(move |tx| async move {
                let _ = tx.send(Ok::<_, std::io::Error>(Bytes::from(CHUNK))).await;
                let _ = release.wait_for(|r| *r).await;
                let _ = tx.send(Ok(Bytes::from(USAGE))).await;
            });
            Response::builder().header("content-type", "text/event-stream").body(Body::from_stream(stream)).unwrap()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // As model servers do (uvicorn, llama.cpp's): each event goes out at once.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

/// A body stream fed by a task.
fn async_stream<F, Fut>(f: F) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tokio::spawn(f(tx));
    futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) })
}

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().pool_max_idle_per_host(1024).build().unwrap()
}

const WHOLE: &str = r#"{"model":"bench-m","messages":[{"role":"user","content":"What is 2 + 3?"}]}"#;
const STREAMED: &str = r#"{"model":"bench-m","stream": true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"What is 2 + 3?"}]}"#;

/// How the calls in flight are sent.
#[derive(Clone, Copy, PartialEq)]
enum Arrivals {
    /// All at the same instant, and (the endpoint taking the same time for
    /// each) answered at the same instant, round after round: the worst
    /// case, every call queued behind the others' handling.
    Together,
    /// Spread over the endpoint's time, as the calls of many cells are:
    /// the same number in flight, not sent in the same millisecond.
    Spread,
}

/// `calls` whole answers from `base`, `in_flight` at a time, each taking the
/// endpoint `delay_ms`, sent as `arrivals` says: each one's latency (ms).
async fn latencies(
    c: &reqwest::Client,
    base: &str,
    in_flight: usize,
    calls: usize,
    delay_ms: u64,
    arrivals: Arrivals,
) -> Vec<f64> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..in_flight {
        let (c, url, next) = (c.clone(), format!("{base}/chat/completions"), next.clone());
        let offset = match arrivals {
            Arrivals::Together => Duration::ZERO,
            Arrivals::Spread => Duration::from_millis(delay_ms) * i as u32 / in_flight as u32,
        };
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(offset).await;
            let mut out = Vec::new();
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < calls {
                let t = Instant::now();
                let r = c
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("x-bench-delay-ms", delay_ms)
                    .body(WHOLE)
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success(), "{}", r.status());
                r.bytes().await.unwrap();
                out.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            out
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all
}

fn pct(xs: &mut [f64], p: f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[((xs.len() - 1) as f64 * p).round() as usize]
}

/// Time to a stream's first event (ms), `n` streams one after another; the
/// rest of each is released after its first event came.
async fn first_bytes(c: &reqwest::Client, base: &str, release: &watch::Sender<bool>, n: usize) -> Vec<f64> {
    let mut out = Vec::new();
    for _ in 0..n {
        release.send_replace(false);
        let t = Instant::now();
        let mut r = c
            .post(format!("{base}/chat/completions"))
            .header("content-type", "application/json")
            .body(STREAMED)
            .send()
            .await
            .unwrap();
        let first = r.chunk().await.unwrap().unwrap();
        out.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(first.starts_with(b"data: "), "{first:?}");
        release.send_replace(true);
        while r.chunk().await.unwrap().is_some() {}
    }
    out
}

fn resident_kib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Resident memory (KiB) with `n` streams from `base` held open (each past
/// its first event); they are ended before it returns.
async fn held_open(c: &reqwest::Client, base: &str, release: &watch::Sender<bool>, n: usize) -> f64 {
    release.send_replace(false);
    let mut open = Vec::new();
    for _ in 0..n {
        let c = c.clone();
        let url = format!("{base}/chat/completions");
        open.push(tokio::spawn(async move {
            let mut r = c.post(url).header("content-type", "application/json").body(STREAMED).send().await.unwrap();
            r.chunk().await.unwrap().unwrap();
            r
        }));
    }
    let mut responses = Vec::new();
    for t in open {
        responses.push(t.await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss = resident_kib();
    release.send_replace(true);
    for mut r in responses {
        while r.chunk().await.unwrap().is_some() {}
    }
    rss
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let (release, rx) = watch::channel(true);
        let direct = endpoint(rx).await;
        let run_set = tempfile::tempdir().unwrap();
        let gateway = Gateway::start(Setup {
            endpoints: BTreeMap::from([("bench".to_owned(), Route { url: direct.clone(), max_concurrency: None })]),
            run_set: run_set.path().to_path_buf(),
            purse: Purse::new(&Default::default(), "USD", Spent::default(), BTreeMap::new()),
            prices: BTreeMap::new(),
            stop: tokio_util::sync::CancellationToken::new(),
        })
        .await
        .unwrap();
        let through = gateway.cell_url("c-000000000001", "bench");
        let c = client();
        // Warm both paths' connection pools.
        latencies(&c, &direct, 64, 640, 0, Arrivals::Together).await;
        latencies(&c, &through, 64, 640, 0, Arrivals::Together).await;

        println!("gateway bench: whole answers, latency in ms (direct | through the gateway | added)");
        // An endpoint that answers at once, then one that takes 250 ms.
        use Arrivals::*;
        let cases = [
            (1usize, 0, Together),
            (64, 0, Together),
            (512, 0, Together),
            (1, 250, Together),
            (64, 250, Together),
            (512, 250, Together),
            (64, 250, Spread),
            (512, 250, Spread),
        ];
        for (in_flight, delay_ms, arrivals) in cases {
            let calls = if delay_ms == 0 { (in_flight * 20).max(2_000) } else { (in_flight * 8).max(40) };
            let (mut d, mut g) = (Vec::new(), Vec::new());
            let (mut d_s, mut g_s) = (0.0, 0.0);
            // Alternated, so drift on a shared machine falls on both.
            for _ in 0..2 {
                let t = Instant::now();
                d.extend(latencies(&c, &direct, in_flight, calls / 2, delay_ms, arrivals).await);
                d_s += t.elapsed().as_secs_f64();
                let t = Instant::now();
                g.extend(latencies(&c, &through, in_flight, calls / 2, delay_ms, arrivals).await);
                g_s += t.elapsed().as_secs_f64();
            }
            let (d50, g50, d99, g99) = (pct(&mut d, 0.5), pct(&mut g, 0.5), pct(&mut d, 0.99), pct(&mut g, 0.99));
            let sent = if arrivals == Together { "sent together" } else { "spread out   " };
            println!(
                "  {in_flight:>3} in flight, {sent}, endpoint {delay_ms:>3} ms, {calls:>5} calls: p50 {d50:.3} | {g50:.3} | {:+.3}   p99 {d99:.3} | {g99:.3} | {:+.3}   \
                 ({:.0} | {:.0} calls/s)",
                g50 - d50,
                g99 - d99,
                calls as f64 / d_s,
                calls as f64 / g_s
            );
        }

        let (mut d, mut g) = (Vec::new(), Vec::new());
        for _ in 0..2 {
            d.extend(first_bytes(&c, &direct, &release, 100).await);
            g.extend(first_bytes(&c, &through, &release, 100).await);
        }
        let (d50, g50) = (pct(&mut d, 0.5), pct(&mut g, 0.5));
        println!(
            "gateway bench: a stream's first event while the endpoint holds the rest: p50 {d50:.3} ms direct, {g50:.3} ms through the gateway ({:+.3} ms; not buffered)",
            g50 - d50
        );

        let streams = 512;
        let base = resident_kib();
        let direct_rss = held_open(&c, &direct, &release, streams).await;
        let through_rss = held_open(&c, &through, &release, streams).await;
        println!(
            "gateway bench: {streams} streams held open: resident {:.0} KiB direct, {:.0} KiB through the gateway (from {base:.0} KiB): {:.1} KiB more per stream through it",
            direct_rss,
            through_rss,
            (through_rss - direct_rss) / streams as f64
        );
        // Every answered call was counted into the cell's progress file.
        let lines = std::fs::read_to_string(run_set.path().join("out/c-000000000001/progress.jsonl")).unwrap();
        println!("gateway bench: {} calls counted through the gateway", lines.lines().count());
        gateway.stop().await;
    });
}
