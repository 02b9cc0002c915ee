//! Live spend and stall detection at scale.
//!
//! `cargo bench -p server --bench spend`: a 1,000-cell batch, every cell
//! running and appending to its progress file. One poll is what the spend
//! guard (and a live view's remake) does: `Campaign::live_spend` over the
//! batch — a `stat` of each cell's files, the bytes appended since the last
//! poll, the spend, the caps and the stalls. It reports the time of a poll
//! that finds one new call per cell (1,000 new calls) when 1,000 calls were
//! written before and when 100,000 were, and their ratio (flat: ≈ 1), and a
//! poll that finds nothing new. Pages never poll this directly: every open
//! page is answered from the one live view made per change (`--bench
//! console` measures `/api/live` under 200 pollers).
//!
//! All figures come from one run; compare ratios across machines, not times.

use std::io::Write;
use std::time::Instant;

#[path = "../tests/common/mod.rs"]
mod common;
use common::generate::{cell_record, write_run_set};

const CELLS: usize = 1_000;
const LINE: &str = "{\"model\":\"paid-m\",\"input_tokens\":1000,\"output_tokens\":200,\"cached_tokens\":300}\n";

fn append(root: &std::path::Path, ids: &[String], lines: usize) {
    let chunk = LINE.repeat(lines);
    for id in ids {
        let dir = root.join("runsets/live/out").join(id);
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("progress.jsonl")).unwrap();
        f.write_all(chunk.as_bytes()).unwrap();
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(
        root.join("campaign.toml"),
        "schema_version = 1\nname = \"spend\"\n[[models]]\nname = \"paid-m\"\nkind = \"paid\"\n\
         price_input_per_1k = 0.001\nprice_output_per_1k = 0.004\nprice_cached_per_1k = 0.0005\n\
         [budget]\nmax_cost = 1000000.0\ndaily_max_cost = 1000000.0\n",
    )
    .unwrap();
    write_run_set(root, "live", 0..CELLS, "running", Some(std::process::id()));
    let mut ids = Vec::new();
    for i in 0..CELLS {
        let mut rec = cell_record(i, "running");
        rec["ended_at"] = serde_json::Value::Null;
        rec["tokens"] = serde_json::Value::Null;
        let id = rec["cell"].as_str().unwrap().to_owned();
        std::fs::write(root.join("runsets/live/cells").join(format!("{id}.json")), rec.to_string()).unwrap();
        std::fs::create_dir_all(root.join("runsets/live/out").join(&id)).unwrap();
        ids.push(id);
    }
    let campaign = server::campaign::Campaign::open(root);
    let cfg = campaign.config().unwrap();
    let rs = campaign.records().run_set("live").unwrap();
    let spec = rs.spec.as_ref().and_then(|s| s.as_ref().ok()).cloned();
    let poll = || {
        let t = Instant::now();
        let made = campaign.live_spend(&cfg, &rs, spec.as_ref(), true, Some(600.0), server::system::clock::now());
        (t.elapsed().as_secs_f64() * 1000.0, made.batch.calls)
    };
    // 1,000 calls written (one per cell), read once.
    append(root, &ids, 1);
    let (first, calls) = poll();
    assert_eq!(calls, 1_000);
    let mut at_1k = Vec::new();
    let mut written = 1_000u64;
    for _ in 0..5 {
        append(root, &ids, 1);
        written += 1_000;
        let (ms, calls) = poll();
        assert_eq!(calls, written);
        at_1k.push(ms);
    }
    let (idle_1k, _) = poll();
    // Up to 100,000 calls written; the catch-up poll reads them all once.
    let more = 100 - (written as usize / CELLS);
    append(root, &ids, more);
    written += (more * CELLS) as u64;
    let (catch_up, calls) = poll();
    assert_eq!(calls, written);
    let mut at_100k = Vec::new();
    for _ in 0..5 {
        append(root, &ids, 1);
        written += 1_000;
        let (ms, calls) = poll();
        assert_eq!(calls, written);
        at_100k.push(ms);
    }
    let (idle_100k, _) = poll();
    let (a, b) = (median(at_1k), median(at_100k));
    println!("live spend over a {CELLS}-cell running batch (one poll = Campaign::live_spend; median of 5):");
    println!("  first read of 1,000 calls:              {first:8.2} ms");
    println!("  poll, 1,000 new calls, ~1k written:     {a:8.2} ms");
    println!("  poll, nothing new, ~1k written:         {idle_1k:8.2} ms");
    println!("  catch-up read of {more} calls per cell:     {catch_up:8.2} ms");
    println!("  poll, 1,000 new calls, ~100k written:   {b:8.2} ms");
    println!("  poll, nothing new, ~100k written:       {idle_100k:8.2} ms");
    println!("  ratio 100k ÷ 1k (new calls):            {:8.2}", b / a);
    println!("  ratio 100k ÷ 1k (nothing new):          {:8.2}", idle_100k / idle_1k);
}
