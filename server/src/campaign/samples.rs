//! The samples behind a cell (`GET /api/samples/{run_set}/{cell}`): its
//! harness's newest eval log in the cell's folder
//! (`runsets/<run set>/out/<cell>/inspect/`), read inside the root without
//! holding it — a JSON log streamed, a `.eval` log one sample file at a time
//! out of its zip (`runboard::harness::samples` says what a row is). Matched
//! with another cell's samples by id and epoch, it says which flipped.

use std::path::{Path, PathBuf};

use runboard::api::{ApiError, CellSamples, SamplesQuery};
use runboard::harness::samples::{self, LogFormat, SampleRow};
use runboard::results::paired::{CellVerdicts, SampleVerdicts};
use runboard::runsets::RUNSETS_DIR;

use super::Campaign;

/// Rows listed when the query does not say, and at most.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 1_000;

/// A cell's newest log: where it is, its format, every row, what could not be read.
struct Read {
    log: String,
    format: LogFormat,
    rows: Vec<SampleRow>,
    problems: Vec<String>,
}

impl Campaign {
    pub fn samples(&self, q: &SamplesQuery) -> Result<CellSamples, ApiError> {
        let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 || limit > MAX_LIMIT {
            let most = runboard::basics::numfmt::thousands(MAX_LIMIT as u64);
            return Err(ApiError::refused(vec![format!("limit {limit}: 1 to {most} samples")]));
        }
        let flipped_only = match q.flipped.as_deref().map(str::trim) {
            None | Some("" | "0" | "false") => false,
            Some("1" | "true") => true,
            Some(other) => return Err(ApiError::refused(vec![format!("flipped {other:?}: 1 or 0")])),
        };
        let against = match q.against.as_deref().map(str::trim).filter(|a| !a.is_empty()) {
            None if flipped_only => {
                return Err(ApiError::refused(vec!["flipped needs against=<run set>/<cell>".into()]))
            }
            None => None,
            Some(a) => match a.split_once('/') {
                Some((rs, cell)) => Some((rs.to_owned(), cell.to_owned())),
                None => return Err(ApiError::refused(vec![format!("against {a:?}: <run set>/<cell>")])),
            },
        };
        // Each row is an excerpt (300 characters a field): a cell's whole
        // list is small beside its log, and matching needs every key.
        let mine = self.read_samples(&q.run_set, &q.cell)?;
        let mut out = CellSamples {
            run_set: q.run_set.clone(),
            cell: q.cell.clone(),
            log: mine.log,
            format: mine.format,
            offset: q.offset.unwrap_or(0),
            problems: mine.problems,
            ..Default::default()
        };
        let mut rows = mine.rows;
        let mut theirs: Vec<Option<bool>> = Vec::new();
        if let Some((rs, cell)) = &against {
            let other = self.read_samples(rs, cell)?;
            out.problems.extend(other.problems.into_iter().map(|p| format!("{rs}/{cell}: {p}")));
            theirs = samples::verdicts_there(&rows, &other.rows);
            out.flipped = rows.iter().zip(&theirs).filter(|(r, t)| samples::flipped(r.passed, **t)).count();
            if flipped_only {
                (rows, theirs) = rows.into_iter().zip(theirs).filter(|(r, t)| samples::flipped(r.passed, *t)).unzip();
            }
            out.against = Some(format!("{rs}/{cell}"));
        }
        out.total = rows.len();
        out.scored = rows.iter().filter(|r| r.passed.is_some()).count();
        out.passed = rows.iter().filter(|r| r.passed == Some(true)).count();
        let end = out.offset.saturating_add(limit).min(rows.len());
        let start = out.offset.min(end);
        out.against_passed = if against.is_some() { theirs[start..end].to_vec() } else { Vec::new() };
        out.samples = rows.drain(start..end).collect();
        Ok(out)
    }

    /// Every sample row of a cell's newest log.
    fn read_samples(&self, run_set: &str, cell: &str) -> Result<Read, ApiError> {
        let rs = self
            .records
            .run_set(run_set)
            .ok_or_else(|| ApiError::not_found(format!("no run set {run_set:?} under runsets/")))?;
        if !rs.cells.iter().any(|c| c.cell == cell) {
            return Err(ApiError::not_found(format!("run set {run_set:?} has no cell {cell:?}")));
        }
        let dir = self.log_dir(run_set, cell);
        let Some((path, format)) = newest_log(&dir) else {
            let shown = dir.strip_prefix(&self.root).unwrap_or(&dir).display().to_string();
            return Err(ApiError::not_found(format!("cell {cell} keeps no samples: no Inspect log in {shown}/")));
        };
        let log = path.strip_prefix(&self.root).unwrap_or(&path).display().to_string();
        let (rows, problems) = self.read_rows(&path, format, &log)?;
        Ok(Read { log, format, rows, problems })
    }

    /// Where a cell keeps its Inspect logs: `runsets/<run set>/out/<cell>/inspect`
    /// (`runboard cell inspect` writes them there).
    fn log_dir(&self, run_set: &str, cell: &str) -> PathBuf {
        self.root.join(RUNSETS_DIR).join(run_set).join("out").join(cell).join(crate::cell::LOG_DIR)
    }

    /// Every row of one log inside the root, and what could not be read.
    fn read_rows(&self, path: &Path, format: LogFormat, log: &str) -> Result<(Vec<SampleRow>, Vec<String>), ApiError> {
        let (file, _) = self.records.within().open(path).map_err(|e| ApiError::unreadable(format!("{log}: {e}")))?;
        let mut rows = Vec::new();
        let mut problems = Vec::new();
        match format {
            LogFormat::Json => {
                if let Err(e) = samples::read_json_log(file, &mut |r| rows.push(r)) {
                    problems.push(format!("{log}: {e} (the samples before it are listed)"));
                }
            }
            LogFormat::Eval => {
                read_eval(file, &mut rows, &mut problems).map_err(|e| ApiError::unreadable(format!("{log}: {e}")))?
            }
        }
        Ok((rows, problems))
    }

    /// The samples that pair, when the campaign's rates count samples
    /// (`[results] count = "samples"`): rates that count samples pair
    /// samples too. None: cells pair.
    pub(super) fn pairing_samples(
        &self,
        cfg: &runboard::campaign::CampaignConfig,
        outcomes: &[runboard::results::Outcome],
    ) -> Option<SampleVerdicts> {
        (cfg.results.count == runboard::campaign::CountUnit::Samples).then(|| self.sample_verdicts(outcomes))
    }

    /// Each outcome's cell's scored samples (their verdicts, by id and
    /// epoch), from its newest log — what pairs samples under `[results]
    /// count = "samples"`. A cell with no log, or one that cannot be read, is
    /// left out. Each log is read again only when its size or time changes.
    fn sample_verdicts(&self, outcomes: &[runboard::results::Outcome]) -> SampleVerdicts {
        let mut out = SampleVerdicts::new();
        let mut cache = self.sample_logs.lock().unwrap_or_else(|p| p.into_inner());
        let mut kept = std::collections::HashSet::new();
        for o in outcomes {
            let Some((path, format)) = newest_log(&self.log_dir(&o.run_set, &o.cell)) else { continue };
            let Ok(md) = std::fs::metadata(&path) else { continue };
            let stamp = (md.len(), md.modified().ok());
            kept.insert(path.clone());
            let verdicts = match cache.get(&path) {
                Some((s, v)) if *s == stamp => v.clone(),
                _ => {
                    let Ok((rows, _)) = self.read_rows(&path, format, &path.display().to_string()) else { continue };
                    let v: CellVerdicts =
                        std::sync::Arc::new(rows.into_iter().filter_map(|r| Some((r.key(), r.passed?))).collect());
                    cache.insert(path, (stamp, v.clone()));
                    v
                }
            };
            out.insert(o.cell.clone(), verdicts);
        }
        // Logs no outcome names any more are forgotten.
        cache.retain(|p, _| kept.contains(p));
        out
    }
}

/// The sample-verdict cache: a log's path → (its size and time, its verdicts).
pub(super) type SampleLogs =
    std::sync::Mutex<std::collections::HashMap<PathBuf, ((u64, Option<std::time::SystemTime>), CellVerdicts)>>;

/// The newest log in `dir` by name (Inspect's names begin with the time):
/// its path and format.
fn newest_log(dir: &Path) -> Option<(PathBuf, LogFormat)> {
    let mut logs: Vec<(String, LogFormat)> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            let format = LogFormat::of_file(&name)?;
            (!name.starts_with('.')).then_some((name, format))
        })
        .collect();
    logs.sort_by(|a, b| a.0.cmp(&b.0));
    logs.pop().map(|(name, format)| (dir.join(name), format))
}

/// A `.eval` log: its header's first scorer, then each sample file in id and
/// epoch order, each decompressed as it is read. A sample that cannot be read
/// is named in `problems` and the rest read on.
fn read_eval(file: std::fs::File, rows: &mut Vec<SampleRow>, problems: &mut Vec<String>) -> Result<(), String> {
    let mut zip = zip::ZipArchive::new(file).map_err(|e| format!("not a readable .eval log (a zip archive): {e}"))?;
    let scorer = zip.by_name("header.json").ok().and_then(samples::eval_header_scorer);
    let mut entries: Vec<(_, String)> =
        zip.file_names().filter_map(|n| Some((samples::eval_entry_key(n)?, n.to_owned()))).collect();
    entries.sort();
    for (_, name) in entries {
        let read = zip
            .by_name(&name)
            .map_err(|e| e.to_string())
            .and_then(|entry| samples::read_eval_sample(entry, scorer.as_deref()));
        match read {
            Ok(row) => rows.push(row),
            Err(e) => problems.push(format!("{name}: {e}")),
        }
    }
    Ok(())
}
