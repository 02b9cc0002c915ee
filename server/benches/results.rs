//! The results views at scale: 1,000 run sets × 100 cells (100,000 cell
//! records, each run set with its `events.jsonl`), in process.
//!
//! `cargo bench -p server --bench results`
//!
//! For each view's read — overview, evidence, evidence with a scope, the
//! public export, timing, the report list, one report, two cohorts compared,
//! the research state (its summary counts two cohorts) and the publication
//! status — the first answer
//! of a fresh console ("server-cold": files in the page cache, nothing
//! parsed) and the warm answer (median of 5, nothing changed), with the cost
//! per 1,000 cells. All figures come from one run; compare ratios across
//! machines, not times.

use std::time::Instant;

use serde_json::json;

#[path = "../tests/common/mod.rs"]
mod common;
use common::generate::{factors, write_run_set};

const RUN_SETS: usize = 1000;
const CELLS: usize = 100;

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(root.join("campaign.toml"), "schema_version = 1\nname = \"results\"\n").unwrap();
    let t = Instant::now();
    let mut m = String::from("condition,task,phase,seed,repetition\n");
    for i in 0..RUN_SETS * CELLS {
        let f = factors(i);
        m += &format!("{},{},p,{},0\n", f["condition"].as_str().unwrap(), f["task"].as_str().unwrap(), f["seed"]);
    }
    std::fs::write(root.join("matrix.csv"), m).unwrap();
    for rs in 0..RUN_SETS {
        let name = format!("rs-{rs:04}");
        write_run_set(root, &name, rs * CELLS..rs * CELLS + CELLS, "completed", None);
        // The events timing reads: the batch's start, each cell's start and end.
        let mut ev = String::from("{\"at\":\"2026-12-01T00:00:00.000Z\",\"event\":\"batch_start\",\"detail\":{}}\n");
        for i in rs * CELLS..rs * CELLS + CELLS {
            let map: std::collections::BTreeMap<String, serde_json::Value> =
                serde_json::from_value(factors(i)).unwrap();
            let id = runboard::console::spec::cell_id(&map);
            ev += &format!(
                "{}\n{}\n",
                json!({"at": "2026-12-01T00:00:00.000Z", "event": "cell_start", "detail": {"cell": id, "pid": 1}}),
                json!({"at": "2026-12-01T00:01:00.000Z", "event": "cell_end", "detail": {"cell": id, "status": "done"}})
            );
        }
        std::fs::write(root.join("runsets").join(&name).join("events.jsonl"), ev).unwrap();
    }
    // Two cohort presets and a research question linking them.
    std::fs::write(
        root.join("runsets/cohort_presets.json"),
        json!({"schema_version": 1, "presets": [{"name": "c0", "scope": "condition=c0"}, {"name": "c1", "scope": "condition=c1"}]})
            .to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("research")).unwrap();
    std::fs::write(
        root.join("research/state.json"),
        json!({"schema_version": 1, "questions": [{"id": "q1", "text": "c1 against c0?",
               "hypotheses": [{"id": "h1", "text": "c1 passes more", "cohorts": ["c0", "c1"]}]}]})
        .to_string(),
    )
    .unwrap();
    eprintln!("generated {RUN_SETS} run sets × {CELLS} cells (with events) in {:.1} s", t.elapsed().as_secs_f64());
    let cells = (RUN_SETS * CELLS) as f64;
    type Read<'a> = Box<dyn Fn(&server::campaign::Campaign) + 'a>;
    let views: Vec<(&str, Read)> = vec![
        ("overview", Box::new(|c| assert_eq!(c.overview().unwrap().totals.covered, RUN_SETS * CELLS))),
        ("evidence", Box::new(|c| assert_eq!(c.evidence(None, None).unwrap().n as usize, RUN_SETS * CELLS))),
        ("evidence, scope task=t1,t2", Box::new(|c| assert!(c.evidence(None, Some("task=t1,t2")).unwrap().n > 0))),
        ("export", Box::new(|c| assert_eq!(c.evidence_export(None).unwrap().rows.len(), RUN_SETS * CELLS))),
        ("timing", Box::new(|c| assert_eq!(c.timing(None, None).unwrap().validity.counted as usize, RUN_SETS * CELLS))),
        ("report list", Box::new(|c| assert_eq!(c.reports(None).unwrap().len(), RUN_SETS))),
        (
            "cohorts compared (2)",
            Box::new(|c| assert_eq!(c.cohort_compare(Some("c0,c1"), None).unwrap().cohorts.len(), 2)),
        ),
        ("research state", Box::new(|c| assert_eq!(c.research().summary.questions.len(), 1))),
        (
            "publish status",
            Box::new(|c| assert_eq!(server::publish::status(c).unwrap().current_run_sets.len(), RUN_SETS)),
        ),
        ("one report", Box::new(|c| assert_eq!(c.report("rs-0500", None, &[]).unwrap().cells.len(), CELLS))),
    ];
    println!("results views over {RUN_SETS} run sets × {CELLS} cells ({} cells):", RUN_SETS * CELLS);
    for (name, read) in &views {
        // A fresh console per view: its first answer reads every record.
        let campaign = server::campaign::Campaign::open(root);
        let t = Instant::now();
        read(&campaign);
        let cold = t.elapsed().as_secs_f64();
        let mut warm: Vec<f64> = (0..5)
            .map(|_| {
                let t = Instant::now();
                read(&campaign);
                t.elapsed().as_secs_f64()
            })
            .collect();
        warm.sort_by(f64::total_cmp);
        let w = warm[2];
        println!(
            "  {name:<28} server-cold {:>7.0} ms, warm {:>6.0} ms (median of 5; {:.2} ms per 1,000 cells); cold ÷ warm {:.1}×",
            cold * 1e3,
            w * 1e3,
            w * 1e3 / (cells / 1000.0),
            cold / w.max(1e-9)
        );
    }
}
