//! The sample view over logs of hundreds of MB, in bounded memory.
//!
//! `cargo bench -p server --bench samples`: two cells of a served campaign
//! each keep one Inspect eval log of 1,000 samples whose transcripts
//! (`events`, as Inspect keeps every model call) are 300 KB each — a 300 MB
//! JSON log and the same samples as a `.eval` zip (zstd, as Inspect writes
//! it). Each is read through the real server (`GET /api/samples/...`, a page
//! of 100, every sample read to count them) and the server's peak resident
//! memory during the read is taken from `/proc/<pid>/status` (`VmHWM`, reset
//! before each read through `/proc/<pid>/clear_refs`). It prints the time and
//! the peak above the server's resident size before the read, against the
//! log's size: bounded means the peak does not follow the log.
//!
//! All figures come from one run; compare ratios across machines, not times.

use std::io::Write;
use std::time::Instant;

#[path = "../tests/common/mod.rs"]
mod common;
use common::generate::{cell_record, write_run_set};
use serde_json::json;

const SAMPLES: u32 = 1_000;
const TRANSCRIPT: usize = 300_000;

/// A transcript's stand-in: hex digits from a seeded generator, so a
/// compressed `.eval` is as large as a real one (text compresses, noise
/// hardly: half of it here).
fn transcript(id: u32) -> String {
    let mut z = u64::from(id).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..TRANSCRIPT / 16)
        .map(|_| {
            z ^= z << 13;
            z ^= z >> 7;
            z ^= z << 17;
            format!("{z:016x}")
        })
        .collect()
}

fn sample(id: u32) -> serde_json::Value {
    let filler = transcript(id);
    json!({"id": id, "epoch": 1, "input": format!("Question {id}: what is {id} + {id}?"), "target": (2 * id).to_string(),
           "messages": [{"role": "user", "content": format!("What is {id} + {id}?")}],
           "output": {"model": "m", "completion": format!("ANSWER: {}", 2 * id + id % 3)},
           "scores": {"match": {"value": if id.is_multiple_of(3) { "C" } else { "I" }}},
           "events": [{"event": "model", "output": filler}], "error": null})
}

/// The server's resident memory now and its peak since the last reset, KiB.
fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()).unwrap()
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let root = common::served::campaign(tmp.path(), 0.1);
    write_run_set(&root, "rs-big", 0..2, "completed", None);
    let cell = |i: usize| cell_record(i, "done")["cell"].as_str().unwrap().to_owned();
    let dir = |c: &str| {
        let d = root.join("runsets/rs-big/out").join(c).join("inspect");
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    // The JSON log, written sample by sample.
    let json_path = dir(&cell(0)).join("2026-12-06T00-00-00-00-00_big.json");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&json_path).unwrap());
        write!(f, "{{\"version\": 2, \"status\": \"success\", \"results\": {{\"scores\": [{{\"name\": \"match\"}}]}}, \"samples\": [").unwrap();
        for id in 1..=SAMPLES {
            if id > 1 {
                f.write_all(b",").unwrap();
            }
            serde_json::to_writer(&mut f, &sample(id)).unwrap();
        }
        f.write_all(b"]}").unwrap();
    }
    // The same samples as a .eval zip, zstd-compressed.
    let eval_path = dir(&cell(1)).join("2026-12-06T00-00-00-00-00_big.eval");
    {
        let mut z = zip::ZipWriter::new(std::fs::File::create(&eval_path).unwrap());
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Zstd);
        z.start_file("header.json", opts).unwrap();
        z.write_all(br#"{"version": 2, "status": "success", "results": {"scores": [{"name": "match"}]}}"#).unwrap();
        for id in 1..=SAMPLES {
            z.start_file(format!("samples/{id}_epoch_1.json"), opts).unwrap();
            serde_json::to_writer(&mut z, &sample(id)).unwrap();
        }
        z.finish().unwrap();
    }
    let s = common::served::serve(&root, &tmp.path().join("data"));
    let pid = s.child.id();
    println!(
        "samples bench: {SAMPLES} samples of {} KB transcripts each, read through the server (a page of 100)",
        TRANSCRIPT / 1000
    );
    for (c, path) in [(cell(0), &json_path), (cell(1), &eval_path)] {
        let size = std::fs::metadata(path).unwrap().len();
        std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
        let (before, _) = memory(pid);
        let t = Instant::now();
        let (code, v) = common::served::get(&s.addr, &format!("/api/samples/rs-big/{c}?limit=100"));
        let took = t.elapsed().as_secs_f64();
        assert_eq!((code, v["total"].as_u64()), (200, Some(u64::from(SAMPLES))), "{v}");
        let (_, peak) = memory(pid);
        let above = peak.saturating_sub(before);
        println!(
            "  {:>5} log {:>7.1} MB: {took:.2} s, peak resident +{:.1} MiB above the {:.1} MiB before ({:.0}× smaller than the log)",
            v["format"].as_str().unwrap(),
            size as f64 / 1e6,
            above as f64 / 1024.0,
            before as f64 / 1024.0,
            size as f64 / (above.max(1) * 1024) as f64
        );
    }
}
