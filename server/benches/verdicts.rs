//! The verdicts under continuous looks, by simulation.
//!
//! `cargo bench -p server --bench verdicts`: simulated campaigns run batch
//! after batch, each condition's cells passing at a set rate, and after
//! every batch the whole evidence is made again by the function Evidence
//! serves (`runboard::results::evidence`, with its paired comparisons and
//! the family's correction) and read as the loop reads it: a campaign stops
//! at its first "clear". It prints, from one run:
//!
//! - **false settle** where nothing differs (two conditions at the same
//!   rate: 0.3, 0.5, 0.8; 4, 8 or 20 cells per condition per batch; up to
//!   200 per condition; half the campaigns with twins, half without): the share of campaigns ever called clear — by the
//!   verdict, and by the fixed-look interval read the same way (the rule
//!   before: "clear" when Newcombe's 95 % interval excludes 0);
//! - **family-wise error** with five conditions and a baseline all at 0.5:
//!   the share of campaigns where any comparison is ever called clear;
//! - **cells to settle a real difference** of 15 points (0.50 against
//!   0.65, 10 cells per condition per batch, up to 1,000; with twins — the
//!   paired test — and without — the unpaired one): the cells per
//!   condition by which 80 % of campaigns were settled in the right
//!   direction, against the one fixed look that has 80 % power at 5 %
//!   (`runboard::results::impact::cells_needed`).
//!
//! Every campaign's outcomes come from a seeded generator (splitmix64): the
//! run is the same every time. The figures carry their 95 % Wilson interval.

use std::collections::BTreeMap;

use runboard::results::{evidence, stats, Outcome};
use serde_json::{json, Value};

/// splitmix64: small, seeded, good enough for Bernoulli draws.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn passes(&mut self, rate: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < rate
    }
}

/// One campaign read after every batch: the cells per condition at the
/// first look the verdict said clear (and in which direction, for the first
/// level), and whether the fixed-look interval ever excluded 0.
struct Read {
    settled_at: Option<usize>,
    right_way: bool,
    fixed_look_ever: bool,
}

/// `twins`: every condition's cells on the same tasks and seeds (a crossed
/// design: the paired test decides); else each condition on seeds of its own.
fn campaign(rates: &[f64], per_batch: usize, most: usize, seed: u64, twins: bool) -> Read {
    let mut rng = Rng(seed);
    let names: Vec<String> =
        (0..rates.len()).map(|i| if i == 0 { "baseline".to_owned() } else { format!("c{i}") }).collect();
    let order = BTreeMap::from([("condition".to_owned(), names.clone())]);
    let mut outcomes: Vec<Outcome> = Vec::new();
    let mut read = Read { settled_at: None, right_way: false, fixed_look_ever: false };
    for batch in 0..most / per_batch {
        // A batch ends a second after the one before; its cells in id order.
        let ended = format!("2026-12-01T{:02}:{:02}:{:02}Z", batch / 3600, batch / 60 % 60, batch % 60);
        for (c, (name, rate)) in names.iter().zip(rates).enumerate() {
            for j in 0..per_batch {
                let seed = batch * per_batch + j + if twins { 0 } else { c * 1_000_000 };
                let factors: BTreeMap<String, Value> = [
                    ("condition".to_owned(), json!(name)),
                    ("task".to_owned(), json!(format!("t{}", seed % 3))),
                    ("seed".to_owned(), json!(seed)),
                ]
                .into();
                let passed = rng.passes(*rate);
                outcomes.push(Outcome {
                    cell: format!("{name}-{seed}"),
                    factors,
                    model: None,
                    run_set: format!("b{batch}"),
                    passed,
                    failed: false,
                    reason: None,
                    score: None,
                    tokens: None,
                    ended_at: Some(ended.clone()),
                    successes: u64::from(passed),
                    trials: 1,
                });
            }
        }
        let e = evidence(&outcomes, "condition", &order);
        let fixed = e.comparisons.iter().map(|c| c.ci95).chain(e.paired.iter().map(|p| p.ci95));
        read.fixed_look_ever |= fixed.into_iter().any(|i| i.lo > 0.0 || i.hi < 0.0);
        let clear = e
            .comparisons
            .iter()
            .find(|c| c.clear)
            .map(|c| c.difference)
            .or_else(|| e.paired.iter().find(|p| p.clear).map(|p| p.difference));
        if let Some(d) = clear {
            read.settled_at = Some((batch + 1) * per_batch);
            read.right_way = (d > 0.0) == (rates.get(1) > rates.first());
            return read;
        }
    }
    read
}

/// Runs `n` campaigns on both cores: seeds `base..base + n`.
fn many(n: u64, base: u64, f: impl Fn(u64) -> Read + Sync) -> Vec<Read> {
    let f = &f;
    std::thread::scope(|s| {
        let halves: Vec<_> = (0..2u64)
            .map(|h| s.spawn(move || (0..n).filter(|i| i % 2 == h).map(|i| f(base + i)).collect::<Vec<Read>>()))
            .collect();
        halves.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

fn share(k: usize, n: usize) -> String {
    let i = stats::wilson(k as u64, n as u64, stats::Z95).unwrap();
    format!("{:5.1} % [{:.1}, {:.1}]", 100.0 * k as f64 / n as f64, 100.0 * i.lo, 100.0 * i.hi)
}

fn main() {
    let started = std::time::Instant::now();
    let mut campaigns = 0usize;
    println!(
        "verdicts bench: false settle where nothing differs, read after every batch (up to 200 cells per condition)"
    );
    println!("  rate  cells/batch  campaigns   the verdict               the fixed-look interval");
    let (mut all_new, mut all_old, mut all_n) = (0, 0, 0);
    for rate in [0.3, 0.5, 0.8] {
        for per_batch in [4usize, 8, 20] {
            let n = 1_200;
            let reads = many(n, (rate * 1000.0) as u64 * 1_000_000 + per_batch as u64 * 10_000, |seed| {
                campaign(&[rate, rate], per_batch, 200, seed, seed % 2 == 0)
            });
            let new = reads.iter().filter(|r| r.settled_at.is_some()).count();
            let old = reads.iter().filter(|r| r.fixed_look_ever).count();
            println!(
                "  {rate:.1}   {per_batch:>5}      {n:>6}     {}    {}",
                share(new, reads.len()),
                share(old, reads.len())
            );
            (all_new, all_old, all_n) = (all_new + new, all_old + old, all_n + reads.len());
            campaigns += reads.len();
        }
    }
    println!("  all            {all_n:>6}     {}    {}", share(all_new, all_n), share(all_old, all_n));

    let n = 1_000;
    let reads = many(n, 7_000_000, |seed| campaign(&[0.5; 6], 4, 100, seed, seed % 2 == 0));
    let any = reads.iter().filter(|r| r.settled_at.is_some()).count();
    let old = reads.iter().filter(|r| r.fixed_look_ever).count();
    campaigns += reads.len();
    println!(
        "verdicts bench: family-wise error, 5 conditions and a baseline all at 0.5, 4 cells each per batch, up to 100, {n} campaigns: {} (the fixed-look intervals: {})",
        share(any, reads.len()),
        share(old, reads.len())
    );

    for twins in [true, false] {
        let n = 1_200;
        let reads = many(n, 9_000_000, |seed| campaign(&[0.5, 0.65], 10, 1_000, seed, twins));
        campaigns += reads.len();
        let mut at: Vec<usize> =
            reads.iter().map(|r| if r.right_way { r.settled_at.unwrap_or(usize::MAX) } else { usize::MAX }).collect();
        at.sort_unstable();
        let q = |p: f64| at[((at.len() as f64 * p).ceil() as usize).saturating_sub(1)];
        let fixed = runboard::results::impact::cells_needed(0.65, 0.5, 0.95, 0.8).unwrap();
        let words = |x: usize| if x == usize::MAX { "not by 1,000".to_owned() } else { x.to_string() };
        let settled = at.iter().filter(|x| **x != usize::MAX).count();
        println!(
            "verdicts bench: 0.50 against 0.65, 10 cells each per batch, {n} campaigns, {}: settled the right way in {} by 1,000 cells; half by {} cells per condition, 80 % by {} — one fixed look with 80 % power needs {fixed}: {}",
            if twins { "twins (the paired test)" } else { "no twins (the unpaired test)" },
            share(settled, at.len()),
            words(q(0.5)),
            words(q(0.8)),
            if q(0.8) == usize::MAX { "ratio not reached".to_owned() } else { format!("{:.2}×", q(0.8) as f64 / fixed as f64) }
        );
    }
    println!("verdicts bench: {campaigns} campaigns in {:.0} s", started.elapsed().as_secs_f64());
}
