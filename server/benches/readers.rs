//! Two pages opening two different large runs at once, and many requests to one
//! unchanged run.
//!
//! `cargo bench -p server --bench readers [-- MIB]` writes two runs whose ledgers
//! are MIB mebibytes each (default 128), then reports, from one run:
//! - **independence**: each run read cold by its own thread, both at once,
//!   against the two read one after the other through one index. With a lock
//!   per run the ratio approaches 1 / cores; with one lock over all reads (the
//!   earlier design) it would be ≥ 1 (parsing is also bound by memory here);
//! - **no waiting**: a small run asked for while a large one is being read is
//!   answered in milliseconds (one lock over all reads made it wait the whole
//!   read);
//! - **the cached view**: the first view of a run (read from its files) against
//!   a later one while nothing changed (answered from the reader's cache), and
//!   a page of trials from the cached view;
//! - the reader cache's figures (runs held, evictions) with a limit of 1 run.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use runboard::runview::trials::{trial_page, TrialFilter};
use server::runview::RunIndex;

fn write_run(root: &Path, name: &str, mib: u64) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("snapshot.json"), r#"{"schema_version":1,"settings":{"model":"m"}}"#).unwrap();
    let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join("ledger.jsonl")).unwrap());
    let (mut written, mut i) = (0u64, 0u64);
    while written < mib << 20 {
        let line = format!(
            "{{\"round\":{},\"slot\":{},\"trial\":\"r{}s{}\",\"attempt\":1,\"t\":{:.3},\"max_abs_corr\":0.31,\"tokens\":5120,\"code\":\"rank(ts_mean(close, {}))\",\"outcome\":{{\"stage\":\"admission\",\"accepted\":{}}}}}\n",
            i / 64 + 1,
            i % 64,
            i / 64 + 1,
            i % 64,
            (i % 97) as f64 / 20.0,
            i % 30,
            i % 30 == 0
        );
        f.write_all(line.as_bytes()).unwrap();
        written += line.len() as u64;
        i += 1;
    }
    f.flush().unwrap();
    let rounds = i / 64 + 1;
    std::fs::write(dir.join("state.json"), format!("{{\"schema_version\":1,\"rounds_written\":{rounds}}}")).unwrap();
}

fn main() {
    let mib: u64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(128);
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path(), "one", mib);
    write_run(tmp.path(), "two", mib);

    // One after the other, through one index.
    let index = RunIndex::new(tmp.path());
    let t = Instant::now();
    index.view("one").unwrap();
    index.view("two").unwrap();
    let sequential = t.elapsed().as_secs_f64();

    // Both at once, each by its own thread, through one (fresh) index.
    let index = Arc::new(RunIndex::new(tmp.path()));
    let t = Instant::now();
    let readers: Vec<_> = ["one", "two"]
        .into_iter()
        .map(|name| {
            let index = index.clone();
            std::thread::spawn(move || index.view(name).unwrap())
        })
        .collect();
    readers.into_iter().for_each(|r| drop(r.join().unwrap()));
    let together = t.elapsed().as_secs_f64();
    println!(
        "two {mib} MiB runs read cold: one after the other {:.0} ms, both at once {:.0} ms (ratio {:.2})",
        sequential * 1e3,
        together * 1e3,
        together / sequential
    );

    // While one big run is being read, a small one is asked for: it must not
    // wait for the big one (with one lock over all reads it would).
    write_run(tmp.path(), "small", 1);
    let index = Arc::new(RunIndex::new(tmp.path()));
    index.find("small").unwrap();
    let big = {
        let index = index.clone();
        std::thread::spawn(move || {
            let t = Instant::now();
            index.view("two").unwrap();
            t.elapsed().as_secs_f64()
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(100));
    let t = Instant::now();
    index.view("small").unwrap();
    let small = t.elapsed().as_secs_f64();
    let big = big.join().unwrap();
    println!(
        "a 1 MiB run asked for while a {mib} MiB run is being read: answered in {:.1} ms (the big read took {:.0} ms)",
        small * 1e3,
        big * 1e3
    );
    assert!(small < big, "the small run waited for the big one");

    // The cached view: nothing changed, nothing read.
    index.view("one").unwrap();
    let t = Instant::now();
    let (_, v) = index.view("one").unwrap();
    let cached = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let page = trial_page(&v, &TrialFilter::default(), 0, 50);
    let paged = t.elapsed().as_secs_f64();
    assert_eq!(page.trials.len(), 50);
    let stats = index.reader_stats();
    println!(
        "a view again while unchanged: {:.3} ms (cold was {:.0} ms: {:.0}x less); a page of 50 trials from it {:.3} ms; views read {} / from the cache {}",
        cached * 1e3,
        together * 1e3,
        together / cached.max(1e-9),
        paged * 1e3,
        stats.views_read,
        stats.views_cached
    );

    // A limit of one run: reading the second drops the first.
    let small = RunIndex::new(tmp.path()).with_readers_limit(1);
    small.view("one").unwrap();
    small.view("two").unwrap();
    let s = small.reader_stats();
    println!(
        "reader cache limited to {} run: {} held ({}), {} eviction(s)",
        s.limit,
        s.held.len(),
        s.held.iter().map(|h| h.path.as_str()).collect::<Vec<_>>().join(", "),
        s.evictions
    );
    assert_eq!((s.held.len(), s.evictions), (1, 1));
}
