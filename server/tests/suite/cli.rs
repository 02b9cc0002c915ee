//! The `runboard` binary as a user runs it: real processes, real sockets (loopback).

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::served::{served, Served, BIN};

fn serve(args: &[&str], site: &Path) -> Served {
    let child = Command::new(BIN)
        .arg("serve")
        .args(["--port", "0", "--site-root"])
        .arg(site)
        .args(args)
        .env_remove("RUNBOARD_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    served(child)
}

/// One raw HTTP/1.1 exchange; returns the status code and the whole response.
fn request(addr: &str, head: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "{head}Host: {addr}\r\nConnection: close\r\n{}\r\n", common::served::auth_line(addr)).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, text)
}

fn wait_exit(child: &mut Child, within: Duration) -> Option<std::process::ExitStatus> {
    let mut status = None;
    common::wait_until(within, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    status
}

fn run_fails(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).env_remove("RUNBOARD_TOKEN").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?} should fail with 2");
    String::from_utf8(out.stderr).unwrap()
}

#[tokio::test]
async fn idle_watchdog_exits_after_the_quiet_period() {
    let (tmp, root) = common::campaign().await;
    let site = common::site(tmp.path());
    let mut s = serve(&["--root", root.to_str().unwrap(), "--idle-minutes", "0.02"], &site);
    let status = wait_exit(&mut s.child, Duration::from_secs(15)).expect("exited when idle");
    assert!(status.success(), "{status:?}");
    let mut err = String::new();
    s.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(err.contains("no request for 0.02 min; exiting"), "{err}");
}

#[tokio::test]
async fn requests_keep_the_idle_watchdog_away_and_zero_disables_it() {
    let (tmp, root) = common::campaign().await;
    let site = common::site(tmp.path());
    let mut busy = serve(&["--root", root.to_str().unwrap(), "--idle-minutes", "0.05"], &site);
    let mut off = serve(&["--root", root.to_str().unwrap(), "--idle-minutes", "0"], &site);
    // 0.05 min = 3 s; ask every 0.5 s for 5 s.
    for _ in 0..10 {
        assert_eq!(request(&busy.addr, "GET /api/runs/version HTTP/1.1\r\n").0, 200);
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(busy.child.try_wait().unwrap().is_none(), "busy server stayed up");
    assert!(off.child.try_wait().unwrap().is_none(), "watchdog disabled by 0");
    assert!(wait_exit(&mut busy.child, Duration::from_secs(15)).is_some(), "exits once requests stop");
}

#[tokio::test]
async fn an_open_stream_keeps_the_server_alive_while_nothing_changes() {
    let (tmp, root) = common::campaign().await;
    let site = common::site(tmp.path());
    let mut s = serve(&["--root", root.to_str().unwrap(), "--idle-minutes", "0.03"], &site);
    // A page following the list: one stream, open, with nothing pushed after
    // its first version (the campaign does not change).
    let mut stream = TcpStream::connect(&s.addr).unwrap();
    let auth = common::served::auth_line(&s.addr);
    write!(
        stream,
        "GET /api/runs/version/stream HTTP/1.1\r\nHost: {}\r\n{auth}Accept: text/event-stream\r\n\r\n",
        s.addr
    )
    .unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut first = [0u8; 256];
    let n = stream.read(&mut first).unwrap();
    assert!(
        String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&first[..n])
    );
    // 0.03 min = 1.8 s: stay well past it with no request but the open stream.
    std::thread::sleep(Duration::from_secs(5));
    assert!(s.child.try_wait().unwrap().is_none(), "the server exited while a page followed the list");
    drop(stream);
    assert!(wait_exit(&mut s.child, Duration::from_secs(15)).is_some(), "exits once the stream closes");
}

#[test]
fn a_non_loopback_address_without_a_token_is_refused() {
    let err = run_fails(&["serve", "--host", "0.0.0.0", "--no-token", "--root", "."]);
    assert!(err.contains("binding 0.0.0.0") && err.contains("cannot be served with --no-token"), "{err}");
    let err = run_fails(&["serve", "--host", "not-an-ip"]);
    assert!(err.contains("is not an IP address"), "{err}");
}

#[test]
fn bad_limits_are_refused_before_anything_is_served_or_said() {
    for (flag, value, says) in [
        ("--header-timeout", "0", "--header-timeout 0 must be more than 0"),
        ("--max-connections", "0", "--max-connections must be at least 1"),
        ("--auto-tick", "0.1", "--auto-tick 0.1 must be 0"),
    ] {
        let out = Command::new(BIN)
            .args(["serve", "--root", ".", "--port", "0", flag, value])
            .env_remove("RUNBOARD_TOKEN")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(stderr.contains(says), "{stderr}");
        assert!(!stdout.contains("serving"), "said it serves before refusing: {stdout}");
    }
}

#[test]
fn a_missing_root_and_a_port_in_use_say_so() {
    let err = run_fails(&["serve", "--root", "/definitely/not/here"]);
    assert!(err.contains("campaign root /definitely/not/here does not exist"), "{err}");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let err = run_fails(&["serve", "--root", ".", "--port", &port]);
    assert!(err.contains(&format!("port {port} on 127.0.0.1 is already in use")), "{err}");
}

#[tokio::test]
async fn foreign_origin_posts_are_refused_and_assets_revalidate_over_http() {
    let (tmp, root) = common::campaign().await;
    let site = common::site(tmp.path());
    let s = serve(&["--root", root.to_str().unwrap()], &site);
    let (code, text) =
        request(&s.addr, "POST /sfn/runs HTTP/1.1\r\nOrigin: http://evil.example\r\nContent-Length: 0\r\n");
    assert_eq!(code, 403, "{text}");
    assert!(text.contains("is not this server"));
    let (code, text) = request(&s.addr, "GET /pkg/runboard.js HTTP/1.1\r\n");
    assert_eq!(code, 200);
    let etag = text.lines().find_map(|l| l.strip_prefix("etag: ")).expect("etag header").trim().to_owned();
    assert!(text.to_lowercase().contains("cache-control: no-cache"));
    let (code, _) = request(&s.addr, &format!("GET /pkg/runboard.js HTTP/1.1\r\nIf-None-Match: {etag}\r\n"));
    assert_eq!(code, 304);
}

/// PIDs of processes whose command line mentions `needle`.
fn pids_mentioning(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(needle))
                .unwrap_or(false)
        })
        .collect()
}

/// What regenerating a demo, or launching another batch in it, would
/// change: the identity (inode) of its config, its specs and its finished
/// runs' files, and the names of its run sets. (The running batch and the
/// live run grow and replace files of their own as they go.)
fn demo_fingerprint(demo: &Path) -> (Vec<(String, u64)>, Vec<String>) {
    use std::os::unix::fs::MetadataExt;
    let mut files = Vec::new();
    let mut todo: Vec<_> =
        ["campaign.toml", "specs", "runs/batch-a", "runs/batch-b"].iter().map(|p| demo.join(p)).collect();
    while let Some(p) = todo.pop() {
        let m = std::fs::metadata(&p).unwrap();
        files.push((p.strip_prefix(demo).unwrap().display().to_string(), m.ino()));
        if m.is_dir() {
            todo.extend(std::fs::read_dir(&p).unwrap().flatten().map(|e| e.path()));
        }
    }
    files.sort();
    let mut run_sets: Vec<String> = std::fs::read_dir(demo.join("runsets"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    run_sets.sort();
    (files, run_sets)
}

#[test]
fn the_demo_serves_a_live_run_and_sigterm_stops_server_and_writer() {
    let tmp = tempfile::tempdir().unwrap();
    let site = common::site(tmp.path());
    let data = tmp.path().join("data");
    let mut s = serve(&["--data-dir", data.to_str().unwrap()], &site);
    let (code, body) = request(&s.addr, "GET /api/runs HTTP/1.1\r\n");
    assert_eq!(code, 200);
    for want in ["runs/live/explore-qwen", "runs/batch-b/broken-snapshot", "\"interrupted\""] {
        assert!(body.contains(want), "demo lacks {want}");
    }
    let live = data.join("demo/runs/live/explore-qwen");
    let writers = pids_mentioning(live.to_str().unwrap());
    assert_eq!(writers.len(), 1, "one live writer: {writers:?}");

    // A second server of the same demo — on the first one's port, or on a
    // port of its own — is refused before it writes anything: the first
    // demo's files, batches and writer are as they were.
    let demo = data.join("demo");
    let before = demo_fingerprint(&demo);
    let port = s.addr.rsplit(':').next().unwrap().to_owned();
    let err = run_fails(&["serve", "--data-dir", data.to_str().unwrap(), "--port", &port]);
    assert!(err.contains(&format!("port {port} on 127.0.0.1 is already in use")), "{err}");
    let err = run_fails(&["serve", "--data-dir", data.to_str().unwrap(), "--port", "0"]);
    assert!(err.contains("is served by another runboard"), "{err}");
    assert!(err.contains(&format!("PID {}", s.child.id())), "names the server holding it: {err}");
    assert_eq!(demo_fingerprint(&demo), before, "the running demo was left as it is");
    assert_eq!(pids_mentioning(live.to_str().unwrap()), writers, "its live writer runs on");
    // The live run writes: the list's version changes (asked until it does, bounded).
    let version = || request(&s.addr, "GET /api/runs/version HTTP/1.1\r\n").1.lines().last().map(str::to_owned);
    let v1 = version();
    common::wait_for("the live run to write (its list version to change)", Duration::from_secs(30), || version() != v1);

    // A page following the live run holds a version stream open: SIGTERM still
    // ends the server promptly.
    let mut follower = std::net::TcpStream::connect(&s.addr).unwrap();
    std::io::Write::write_all(
        &mut follower,
        format!(
            "GET /api/runs/explore-qwen/version/stream HTTP/1.1\r\nHost: {}\r\n{}\r\n",
            s.addr,
            common::served::auth_line(&s.addr)
        )
        .as_bytes(),
    )
    .unwrap();
    let mut first = [0u8; 512];
    let n = std::io::Read::read(&mut follower, &mut first).unwrap();
    assert!(String::from_utf8_lossy(&first[..n]).contains("text/event-stream"), "the stream is open");

    nix::sys::signal::kill(nix::unistd::Pid::from_raw(s.child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = wait_exit(&mut s.child, Duration::from_secs(10)).expect("server exits on SIGTERM");
    assert!(status.success(), "{status:?}");
    assert!(pids_mentioning(live.to_str().unwrap()).is_empty(), "the writer is gone too");
    let events = std::fs::read_to_string(live.join("events.jsonl")).unwrap();
    assert!(events.lines().last().unwrap().contains("\"event\":\"stop\""), "the writer recorded its stop");
    drop(follower);
}

#[tokio::test]
async fn runs_list_prints_every_run() {
    let (_tmp, root) = common::campaign().await;
    let out = Command::new(BIN).args(["runs", "list", "--root"]).arg(&root).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.contains("unreadable   runs/broken  unreadable: snapshot.json: line 1 column"), "{text}");
    let out = Command::new(BIN).args(["runs", "list", "--root", "/no/such/root"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
}

#[test]
fn an_empty_or_padded_token_is_refused_at_start() {
    for (token, why) in
        [("", "the token is empty"), ("   ", "the token is empty"), (" s3cret\n", "spaces or line breaks")]
    {
        let out = Command::new(BIN)
            .args(["serve", "--root", ".", "--port", "0", "--token", token])
            .env_remove("RUNBOARD_TOKEN")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{token:?} is refused");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{token:?}: {err}");
    }
    // The same from the environment.
    let out =
        Command::new(BIN).args(["serve", "--root", ".", "--port", "0"]).env("RUNBOARD_TOKEN", " ").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test]
async fn a_foreign_host_is_refused_over_http() {
    let (tmp, root) = common::campaign().await;
    let site = common::site(tmp.path());
    let s = serve(&["--root", root.to_str().unwrap()], &site);
    let mut c = TcpStream::connect(&s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(c, "GET /api/runs HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    c.read_to_string(&mut text).unwrap();
    assert!(text.starts_with("HTTP/1.1 421"), "{text}");
    assert!(!text.contains(root.to_str().unwrap()), "no root path for a foreign Host");
}

/// Whether the server closed `c` (EOF or reset) within `within`.
fn closed_within(c: &mut TcpStream, within: Duration) -> bool {
    c.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue, // a response (408/400) before the close is fine
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true,
        }
    }
}

#[tokio::test]
async fn idle_and_half_sent_connections_are_closed_after_the_header_timeout() {
    let (tmp, root) = common::campaign().await;
    let site = common::site(tmp.path());
    let s = serve(&["--root", root.to_str().unwrap(), "--header-timeout", "1"], &site);
    let started = Instant::now();
    let mut idle = TcpStream::connect(&s.addr).unwrap();
    let mut half = TcpStream::connect(&s.addr).unwrap();
    write!(half, "GET /api/runs HTTP/1.1\r\nHost: {}\r\n", s.addr).unwrap();
    // A kept-alive connection idle after its first response.
    let mut kept = TcpStream::connect(&s.addr).unwrap();
    write!(kept, "GET /api/runs/version HTTP/1.1\r\nHost: {}\r\n\r\n", s.addr).unwrap();
    let mut first = [0u8; 1024];
    assert!(kept.read(&mut first).unwrap() > 0, "first response on the kept connection");
    for (name, c) in [("idle", &mut idle), ("half-sent", &mut half), ("kept-alive", &mut kept)] {
        assert!(closed_within(c, Duration::from_secs(6)), "{name} connection still open");
    }
    assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
}

#[tokio::test]
async fn three_hundred_idle_connections_do_not_starve_a_server_with_256_descriptors() {
    let (tmp, root) = common::campaign().await;
    let site = common::site(tmp.path());
    // `ulimit -n 256` for the server only; `exec` keeps the PID ours.
    let s = served(
        Command::new("sh")
            .args([
                "-c",
                "ulimit -n 256 && exec \"$0\" serve --port 0 --header-timeout 2 --root \"$1\" --site-root \"$2\"",
            ])
            .arg(BIN)
            .arg(&root)
            .arg(&site)
            .env_remove("RUNBOARD_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let idle: Vec<TcpStream> = (0..300).filter_map(|_| TcpStream::connect(&s.addr).ok()).collect();
    assert!(idle.len() >= 250, "only {} connections opened", idle.len());
    // A real request still gets its answer, bounded by the header timeout's
    // rounds through the idle ones (each round frees up to the connection cap).
    let started = Instant::now();
    let (code, _) = request(&s.addr, "GET /api/runs HTTP/1.1\r\n");
    assert_eq!(code, 200);
    assert!(started.elapsed() < Duration::from_secs(20), "answered after {:?}", started.elapsed());
    drop(idle);
    assert_eq!(request(&s.addr, "GET /api/runs/version HTTP/1.1\r\n").0, 200, "and it serves on");
}

#[tokio::test]
async fn shutdown_does_not_wait_for_a_half_sent_request() {
    let (tmp, root) = common::campaign().await;
    let site = common::site(tmp.path());
    for how in ["SIGTERM", "idle watchdog"] {
        let args: Vec<&str> = match how {
            "SIGTERM" => vec!["--root", root.to_str().unwrap()],
            _ => vec!["--root", root.to_str().unwrap(), "--idle-minutes", "0.02"],
        };
        let mut s = serve(&args, &site);
        let mut half = TcpStream::connect(&s.addr).unwrap();
        write!(half, "POST /sfn/runs HTTP/1.1\r\nHost: {}\r\nContent-Length: 100\r\n\r\nonly a part", s.addr).unwrap();
        let mut idle = TcpStream::connect(&s.addr).unwrap();
        write!(idle, "GET /api/r").unwrap();
        let started = Instant::now();
        if how == "SIGTERM" {
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(s.child.id() as i32), nix::sys::signal::Signal::SIGTERM)
                .unwrap();
        }
        let status = wait_exit(&mut s.child, Duration::from_secs(30)).unwrap_or_else(|| panic!("{how}: still running"));
        assert!(status.success(), "{how}: {status:?}");
        // A liveness bound (before the fix it never ended), generous for a busy machine:
        // the server itself gives open connections 3 s.
        let bound = 20;
        assert!(started.elapsed() < Duration::from_secs(bound), "{how}: took {:?}", started.elapsed());
        drop((half, idle));
    }
}

#[test]
fn every_results_view_answers_over_the_demo() {
    let tmp = tempfile::tempdir().unwrap();
    let site = common::site(tmp.path());
    let data = tmp.path().join("data");
    let s = serve(&["--data-dir", data.to_str().unwrap()], &site);
    for (path, want) in [
        ("/api/overview", "\"latest\":[{"),
        ("/api/evidence", "\"overall\":"),
        ("/api/evidence?scope=phase%3Dwarmup", "\"scope\":\"phase=warmup\""),
        ("/api/evidence/export?format=csv", "# content_hash: "),
        ("/api/timing", "\"run_sets\":[\""),
        ("/api/reports", "\"name\":\""),
        ("/api/cohorts", "\"presets\":[]"),
        ("/api/research", "\"questions\":[]"),
        ("/api/publish/status", "Publishing is not set up"),
        ("/api/catalogue", "\"name\":\"qwen3-32b\""),
    ] {
        let (code, body) = request(&s.addr, &format!("GET {path} HTTP/1.1\r\n"));
        assert_eq!(code, 200, "{path}: {body}");
        assert!(body.contains(want), "{path} lacks {want}: {body}");
    }
    // The demo's earlier batch is counted, and its report reads.
    let (_, body) = request(&s.addr, "GET /api/evidence HTTP/1.1\r\n");
    assert!(!body.contains("\"n\":0,"), "the demo's ended cells are counted: {body}");
    let (_, list) = request(&s.addr, "GET /api/reports HTTP/1.1\r\n");
    let name = list.split("\"name\":\"").nth(1).and_then(|r| r.split('"').next()).unwrap().to_owned();
    let (code, report) = request(&s.addr, &format!("GET /api/reports/{name} HTTP/1.1\r\n"));
    assert!(code == 200 && report.contains("\"cells\":[{"), "{report}");
}

/// The demo's outcomes differ by condition and task (the simulated agent's
/// verdicts, `simulate::PASS_RATES`), so Evidence has a settled difference
/// (reversal) and an open one (momentum); the proposal guide ranks the open
/// one first over REST and the CLI alike, and `--save` drafts it.
#[test]
fn the_proposal_guide_ranks_the_demos_open_question_first_and_drafts_it() {
    let tmp = tempfile::tempdir().unwrap();
    let site = common::site(tmp.path());
    let data = tmp.path().join("data");
    let s = serve(&["--data-dir", data.to_str().unwrap()], &site);
    let root = data.join("demo");
    // The demo's batch paused first, so nothing ends while REST and the CLI
    // are compared.
    let paused = Command::new(BIN).args(["pause", "--root"]).arg(&root).output().unwrap();
    assert!(paused.status.success(), "{}", String::from_utf8_lossy(&paused.stderr));
    let (code, body) = request(&s.addr, "GET /api/evidence HTTP/1.1\r\n");
    assert_eq!(code, 200, "{body}");
    let json =
        |text: &str| -> serde_json::Value { serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap() };
    let e = json(&body);
    // History: baseline 3/4 momentum + 1/4 reversal, memory 4/4 + 4/4.
    assert_eq!(
        (e["groups"][0]["level"].as_str(), e["groups"][0]["passes"]["successes"].as_u64()),
        (Some("baseline"), Some(4))
    );
    assert_eq!(e["groups"][1]["passes"]["successes"].as_u64(), Some(8));
    // Paired (the same task, phase, seed and repetition): memory passed
    // where the baseline failed in 4 of the 8 pairs, never the other way;
    // reversal drives it (3 of the 4).
    let paired = &e["paired"][0];
    assert_eq!(paired["table"], serde_json::json!({"a": 4, "b": 4, "c": 0, "d": 0}), "{paired}");
    assert_eq!(
        (paired["by_task"][0]["task"].as_str(), paired["by_task"][0]["table"]["b"].as_u64()),
        (Some("reversal"), Some(3))
    );
    // The verdict's test over the 4 discordant pairs, all memory's: the
    // mixture against ½ peaks at the last — the Beta(6, 6) mixture's
    // 2⁴·(6·7·8·9)/(12·13·14·15), times the share of weight the band near ½
    // keeps after over before (SciPy: 1.712340067655358 in all); four pairs
    // settle nothing under repeated looks.
    let e4 = 1.712_340_067_655_358;
    let p = paired["always_valid"]["p_value"].as_f64().unwrap();
    assert!((p - 1.0 / e4).abs() < 1e-9, "{paired}");
    assert_eq!(paired["clear"], false, "{paired}");
    assert!(paired["interval"]["lo"].as_f64() < Some(0.0), "its interval holds 0: {paired}");
    // One verdict per level: memory's cells have twins, so the paired test
    // gives it, on the comparison as on the paired row.
    assert_eq!(e["family"]["comparisons"], 1, "{e}");
    assert_eq!(
        (e["comparisons"][0]["test"].as_str(), &e["comparisons"][0]["clear"]),
        (Some("paired"), &paired["clear"])
    );
    assert_eq!(e["comparisons"][0]["p_family"], paired["p_family"]);
    assert_eq!(paired["discordant"].as_array().unwrap().len(), 4);
    let reasons = e["not_passed_by_reason"].to_string();
    assert!(reasons.contains("no factor cleared the admission threshold in time"), "{reasons}");
    // The demo's cells that did not pass ran to the end: none failed, as
    // the Overview's "Failed 0" says.
    assert!(e["not_passed_by_reason"].as_array().unwrap().iter().all(|r| r["failed"] == 0), "{reasons}");

    let (code, body) = request(&s.addr, "GET /api/propose HTTP/1.1\r\n");
    assert_eq!(code, 200, "{body}");
    let rest = json(&body);
    let first = &rest["proposals"][0];
    assert_eq!((first["task"].as_str(), first["level"].as_str()), (Some("momentum"), Some("memory")), "{body}");
    assert_eq!(first["settled"], false);
    assert!(first["words"].as_str().unwrap().contains("the difference to baseline, now +25 pp"), "{first}");
    assert!(
        first["prediction"]["range"]["high"]["tokens"].as_u64()
            >= first["prediction"]["range"]["low"]["tokens"].as_u64()
    );
    let proposals = rest["proposals"].as_array().unwrap();
    let settled: Vec<bool> = proposals.iter().map(|p| p["settled"].as_bool().unwrap()).collect();
    assert!(settled.windows(2).all(|w| !w[0] || w[1]), "open before settled: {settled:?}");
    // Reversal (memory 4 of 4 against 1 of 4): its fixed-look interval
    // excludes 0, but four cells a side settle nothing under repeated looks.
    let reversal = proposals.iter().find(|p| p["task"] == "reversal").unwrap();
    assert_eq!(reversal["settled"], false, "{reversal}");
    assert!(reversal["words"].as_str().unwrap().contains("now +75 pp [+9, +95]"), "{reversal}");

    // The CLI answers the same, and its words say it.
    let cli = Command::new(BIN).args(["propose", "--json", "--root"]).arg(&root).output().unwrap();
    assert!(cli.status.success(), "{}", String::from_utf8_lossy(&cli.stderr));
    let answered: serde_json::Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(answered["proposals"], rest["proposals"]);
    let text = Command::new(BIN).args(["propose", "--root"]).arg(&root).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!("1. {}", first["words"].as_str().unwrap())), "{text}");
    assert!(text.contains("draft it: this command again with --save 1"), "{text}");

    // --save 1 saves that draft, ready for the usual launch.
    let saved = Command::new(BIN).args(["propose", "--save", "1", "--json", "--root"]).arg(&root).output().unwrap();
    assert!(saved.status.success(), "{}", String::from_utf8_lossy(&saved.stderr));
    let saved: serde_json::Value = serde_json::from_slice(&saved.stdout).unwrap();
    let spec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join(saved["path"].as_str().unwrap())).unwrap()).unwrap();
    let cells = spec["cells"].as_array().unwrap();
    assert_eq!(cells.len() as u64, first["cells"].as_u64().unwrap());
    assert!(cells.iter().all(|c| c["factors"]["condition"] == "memory" && c["factors"]["task"] == "momentum"));
    assert_eq!(spec["model"], "qwen3-32b", "the newest batch's route");

    // Refusals: a bad query names its field; a proposal that is not there.
    let bad = Command::new(BIN).args(["propose", "--by", "task", "--root"]).arg(&root).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("by=\"task\": the guide compares levels within a task"));
    let none = Command::new(BIN).args(["propose", "--save", "99", "--root"]).arg(&root).output().unwrap();
    assert_eq!(none.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("--save 99: there are"),
        "{}",
        String::from_utf8_lossy(&none.stderr)
    );
}

/// Tags edited after launch, over REST and the CLI alike: checked as at
/// launch, a scope at once, and a damaged tags file is refused, never
/// overwritten.
#[test]
fn run_set_tags_are_edited_checked_and_scope_the_results() {
    let tmp = tempfile::tempdir().unwrap();
    let site = common::site(tmp.path());
    let data = tmp.path().join("data");
    let s = serve(&["--data-dir", data.to_str().unwrap()], &site);
    let root = data.join("demo");
    let json =
        |text: &str| -> serde_json::Value { serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap() };
    let reports = json(&request(&s.addr, "GET /api/reports HTTP/1.1\r\n").1);
    let demo_a = reports
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .find(|n| n.starts_with("demo-a"))
        .unwrap();
    let tag = |args: &[&str]| Command::new(BIN).arg("tag").args(args).arg("--root").arg(&root).output().unwrap();
    let out = tag(&["paper", "--add", &demo_a, "--note", "the baseline for §4"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("made tag paper\ntagged {demo_a} paper\nset the note of paper\n")), "{said}");
    // REST sees it, with its note; the scope counts only its cells.
    let tags = json(&request(&s.addr, "GET /api/tags HTTP/1.1\r\n").1);
    let paper = tags["tags"].as_array().unwrap().iter().find(|t| t["name"] == "paper").unwrap().clone();
    assert_eq!(paper["note"], "the baseline for §4");
    assert_eq!(paper["run_sets"], serde_json::json!([demo_a]));
    let scoped = json(&request(&s.addr, "GET /api/evidence?scope=tag%3Dpaper HTTP/1.1\r\n").1);
    assert_eq!(scoped["n"], 8, "demo-a's eight cells");
    // Refused with every reason (REST alike: the both-surfaces test in http.rs).
    let bad = tag(&["paper", "--add", "nope", "--remove", "nope"]);
    assert_eq!(bad.status.code(), Some(2));
    let why = String::from_utf8_lossy(&bad.stderr);
    assert!(
        why.contains("add \"nope\": no such run set")
            && why.contains("remove \"nope\": tag \"paper\" does not hold it"),
        "{why}"
    );
    // Removing and deleting.
    assert!(tag(&["paper", "--remove", &demo_a]).status.success());
    let listed = Command::new(BIN).args(["tags", "--root"]).arg(&root).output().unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains("paper — the baseline for §4: (no run set)"));
    assert!(tag(&["paper", "--delete"]).status.success());
    // A damaged tags file: refused, left byte for byte.
    let file = root.join("runsets/run_tags.json");
    std::fs::write(&file, b"{\"schema_version\": 1, \"tags\": {").unwrap();
    let damaged = tag(&["paper", "--add", &demo_a]);
    assert_eq!(damaged.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&damaged.stderr).contains("it is not overwritten"),
        "{}",
        String::from_utf8_lossy(&damaged.stderr)
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"{\"schema_version\": 1, \"tags\": {");
}

/// Issue 40 (item 16): an Inspect cell whose interpreter cannot be started
/// fails with that reason in its report, not only in its log.
#[test]
fn an_inspect_cell_without_its_interpreter_reports_why() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["cell", "inspect", "suite.py@t1", "--model", "openai/m", "--python", ".venv/bin/python", "--out"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(tmp.path().join("result.json")).unwrap()).unwrap();
    let reason = result["reason"].as_str().unwrap();
    assert!(reason.starts_with(".venv/bin/python could not be started:"), "{reason}");
    assert!(reason.contains("python3 -m venv .venv"), "{reason}");
}
