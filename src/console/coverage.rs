//! Coverage: where each planned cell stands, from every run set's cell records
//! (`cells/<id>.json`), and the counts per factor and on a two-factor grid.
//!
//! A cell is **covered** when any run set holds a `done` record of it;
//! otherwise **running** when a run set whose batch is live holds it `pending`
//! or `running`; otherwise **failed** when some record of it `failed`;
//! otherwise a **gap** (never tried, or only stopped or interrupted — a gap
//! that was attempted says so with its attempts).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::console::matrix::{value_text, Matrix};
use crate::console::spec::Cell;
use crate::drive::records::{CellRecord, CellStatus};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellState {
    Covered,
    Running,
    Failed,
    Gap,
}

impl CellState {
    pub const ALL: [CellState; 4] = [Self::Covered, Self::Running, Self::Failed, Self::Gap];

    pub fn label(self) -> &'static str {
        match self {
            Self::Covered => "covered",
            Self::Running => "running",
            Self::Failed => "failed",
            Self::Gap => "gap",
        }
    }
}

/// One run set's cell records, and whether its batch is live (the adapter
/// decides that from the batch outcome and its driver process).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSetCells {
    pub name: String,
    pub live: bool,
    pub cells: Vec<CellRecord>,
}

/// How many cells are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateCounts {
    pub covered: usize,
    pub running: usize,
    pub failed: usize,
    pub gap: usize,
}

impl StateCounts {
    pub fn add(&mut self, s: CellState) {
        *match s {
            CellState::Covered => &mut self.covered,
            CellState::Running => &mut self.running,
            CellState::Failed => &mut self.failed,
            CellState::Gap => &mut self.gap,
        } += 1;
    }

    pub fn get(&self, s: CellState) -> usize {
        match s {
            CellState::Covered => self.covered,
            CellState::Running => self.running,
            CellState::Failed => self.failed,
            CellState::Gap => self.gap,
        }
    }

    pub fn total(&self) -> usize {
        self.covered + self.running + self.failed + self.gap
    }

    /// The counts in words: "3 covered, 1 failed, 2 gaps of 6".
    pub fn words(&self) -> String {
        let parts: Vec<String> = CellState::ALL
            .iter()
            .filter(|s| self.get(**s) > 0)
            .map(|s| {
                let n = self.get(*s);
                match (s, n) {
                    (CellState::Gap, 1) => "1 gap".to_owned(),
                    (CellState::Gap, n) => format!("{n} gaps"),
                    (s, n) => format!("{n} {}", s.label()),
                }
            })
            .collect();
        if parts.is_empty() {
            "no cells".into()
        } else {
            format!("{} of {}", parts.join(", "), self.total())
        }
    }
}

/// One planned cell and where it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellCoverage {
    pub cell: String,
    pub factors: BTreeMap<String, Value>,
    pub state: CellState,
    /// Attempts over every run set.
    pub attempts: u32,
    /// The run sets holding a record of it, in the order given.
    pub run_sets: Vec<String>,
    /// The record that decided the state (for a gap: the latest attempted one).
    pub status: Option<CellStatus>,
    pub score: Option<f64>,
    pub tokens: Option<u64>,
}

/// Every planned cell's state, and the counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    pub cells: Vec<CellCoverage>,
    pub totals: StateCounts,
    /// Per factor, per level (in matrix order): the counts.
    pub by_factor: BTreeMap<String, Vec<LevelCounts>>,
    /// Cell records of ids the matrix does not plan (an older matrix, a
    /// hand-made spec), counted so they are not silently lost.
    pub off_matrix: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelCounts {
    pub level: String,
    pub counts: StateCounts,
}

/// Where every cell of `matrix` stands, given `run_sets` (any order).
pub fn compute(matrix: &Matrix, run_sets: &[RunSetCells]) -> Coverage {
    let mut records: HashMap<&str, Vec<(&RunSetCells, &CellRecord)>> = HashMap::new();
    for rs in run_sets {
        for rec in &rs.cells {
            records.entry(rec.cell.as_str()).or_default().push((rs, rec));
        }
    }
    let mut off_matrix = 0;
    let planned: std::collections::HashSet<&str> = matrix.cells.iter().map(|c| c.id.as_str()).collect();
    for (id, recs) in &records {
        if !planned.contains(id) {
            off_matrix += recs.len();
        }
    }
    let cells: Vec<CellCoverage> = matrix
        .cells
        .iter()
        .map(|c| cell_coverage(c, records.get(c.id.as_str()).map_or(&[][..], Vec::as_slice)))
        .collect();
    let mut totals = StateCounts::default();
    let mut by_factor: BTreeMap<String, Vec<LevelCounts>> = BTreeMap::new();
    for f in &matrix.factors {
        by_factor.insert(f.clone(), Vec::new());
    }
    for c in &cells {
        totals.add(c.state);
        for (f, v) in &c.factors {
            let levels = by_factor.entry(f.clone()).or_default();
            let text = value_text(v);
            match levels.iter_mut().find(|l| l.level == text) {
                Some(l) => l.counts.add(c.state),
                None => {
                    let mut counts = StateCounts::default();
                    counts.add(c.state);
                    levels.push(LevelCounts { level: text, counts });
                }
            }
        }
    }
    Coverage { cells, totals, by_factor, off_matrix }
}

fn cell_coverage(cell: &Cell, recs: &[(&RunSetCells, &CellRecord)]) -> CellCoverage {
    let attempts = recs.iter().map(|(_, r)| r.attempts).sum();
    let run_sets = recs.iter().map(|(rs, _)| rs.name.clone()).collect();
    let done = recs.iter().find(|(_, r)| r.status == CellStatus::Done);
    let running = recs.iter().find(|(rs, r)| rs.live && matches!(r.status, CellStatus::Running | CellStatus::Pending));
    let failed = recs.iter().rev().find(|(_, r)| r.status == CellStatus::Failed);
    let (state, decided) = match (done, running, failed) {
        (Some(d), _, _) => (CellState::Covered, Some(d)),
        (None, Some(r), _) => (CellState::Running, Some(r)),
        (None, None, Some(f)) => (CellState::Failed, Some(f)),
        (None, None, None) => (CellState::Gap, recs.last()),
    };
    CellCoverage {
        cell: cell.id.clone(),
        factors: cell.factors.clone(),
        state,
        attempts,
        run_sets,
        status: decided.map(|(_, r)| r.status),
        score: decided.and_then(|(_, r)| r.score),
        tokens: decided.and_then(|(_, r)| r.tokens),
    }
}

/// `GET /api/coverage`: the counts, per factor, and the grid of the two
/// factors asked for (by default the first two of the matrix).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CoverageView {
    pub factors: Vec<String>,
    pub totals: StateCounts,
    /// The totals in words.
    pub words: String,
    pub by_factor: BTreeMap<String, Vec<LevelCounts>>,
    pub grid: Option<Grid>,
    pub off_matrix: usize,
    pub run_sets: usize,
    /// The matrix's rows not taken, and run set records not read, with why.
    pub problems: Vec<String>,
}

/// `GET /api/cells`: a page of the planned cells and where each stands.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellPage {
    pub total: usize,
    pub matching: usize,
    pub offset: usize,
    pub cells: Vec<CellCoverage>,
}

/// `?state=&q=&offset=&limit=` for `GET /api/cells`, as raw text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellParams {
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub q: Option<String>,
    #[serde(default)]
    pub offset: Option<String>,
    #[serde(default)]
    pub limit: Option<String>,
}

/// The most cells one page holds, and the default.
pub const MAX_CELL_PAGE: usize = 5_000;
pub const DEFAULT_CELL_PAGE: usize = 500;

impl CellParams {
    /// Filters and pages `coverage`'s cells; a bad value is named.
    pub fn page(&self, coverage: &Coverage) -> Result<CellPage, crate::runview::trials::BadQuery> {
        use crate::runview::trials::value::{bad, given, whole};
        let state = match given(&self.state) {
            None => None,
            Some(s) => Some(
                CellState::ALL
                    .into_iter()
                    .find(|c| c.label() == s)
                    .ok_or_else(|| bad("state", s, "not one of covered, running, failed, gap"))?,
            ),
        };
        let limit = whole::<usize>("limit", &self.limit)?.unwrap_or(DEFAULT_CELL_PAGE);
        if !(1..=MAX_CELL_PAGE).contains(&limit) {
            return Err(bad("limit", &limit.to_string(), &format!("must be between 1 and {MAX_CELL_PAGE}")));
        }
        let offset = whole::<usize>("offset", &self.offset)?.unwrap_or(0);
        let q = given(&self.q).map(str::to_lowercase);
        let keeps = |c: &&CellCoverage| {
            state.is_none_or(|s| c.state == s)
                && q.as_deref().is_none_or(|q| {
                    c.cell.contains(q)
                        || c.factors.iter().any(|(k, v)| format!("{k}={}", value_text(v)).to_lowercase().contains(q))
                })
        };
        let kept: Vec<&CellCoverage> = coverage.cells.iter().filter(keeps).collect();
        Ok(CellPage {
            total: coverage.cells.len(),
            matching: kept.len(),
            offset,
            cells: kept.into_iter().skip(offset).take(limit).cloned().collect(),
        })
    }
}

/// The coverage view of `coverage`, with the grid of `rows` × `cols` (by
/// default the matrix's first two factors); a factor the matrix lacks is named.
pub fn view(
    matrix: &Matrix,
    coverage: &Coverage,
    rows: Option<&str>,
    cols: Option<&str>,
    run_sets: usize,
    problems: Vec<String>,
) -> Result<CoverageView, String> {
    let (rows, cols) = (rows.filter(|r| !r.is_empty()), cols.filter(|c| !c.is_empty()));
    for f in [rows, cols].into_iter().flatten() {
        if !matrix.factors.iter().any(|m| m == f) {
            return Err(format!("{f:?} is not a factor of the matrix (factors: {})", matrix.factors.join(", ")));
        }
    }
    let rows = rows.or(matrix.factors.first().map(String::as_str));
    let cols = cols.or(matrix.factors.get(1).map(String::as_str));
    let grid = match (rows, cols) {
        (Some(r), Some(c)) => Some(grid(matrix, coverage, r, c)?),
        _ => None,
    };
    Ok(CoverageView {
        factors: matrix.factors.clone(),
        totals: coverage.totals,
        words: coverage.totals.words(),
        by_factor: coverage.by_factor.clone(),
        grid,
        off_matrix: coverage.off_matrix,
        run_sets,
        problems,
    })
}

/// Two factors crossed: a row per level of `rows`, a column per level of
/// `cols`, each square the counts of the cells at both levels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grid {
    pub rows_factor: String,
    pub cols_factor: String,
    pub rows: Vec<String>,
    pub cols: Vec<String>,
    /// `squares[r][c]`.
    pub squares: Vec<Vec<StateCounts>>,
}

/// The grid of `rows` × `cols`; `Err` names a factor the matrix lacks.
pub fn grid(matrix: &Matrix, coverage: &Coverage, rows: &str, cols: &str) -> Result<Grid, String> {
    for f in [rows, cols] {
        if !matrix.factors.iter().any(|m| m == f) {
            return Err(format!("{f:?} is not a factor of the matrix (factors: {})", matrix.factors.join(", ")));
        }
    }
    let levels =
        |f: &str| coverage.by_factor.get(f).map(|l| l.iter().map(|l| l.level.clone()).collect()).unwrap_or_default();
    let (row_levels, col_levels): (Vec<String>, Vec<String>) = (levels(rows), levels(cols));
    let mut squares = vec![vec![StateCounts::default(); col_levels.len()]; row_levels.len()];
    for c in &coverage.cells {
        let (Some(r), Some(k)) = (c.factors.get(rows), c.factors.get(cols)) else { continue };
        let (r, k) = (value_text(r), value_text(k));
        if let (Some(ri), Some(ci)) = (row_levels.iter().position(|l| *l == r), col_levels.iter().position(|l| *l == k))
        {
            squares[ri][ci].add(c.state);
        }
    }
    Ok(Grid { rows_factor: rows.into(), cols_factor: cols.into(), rows: row_levels, cols: col_levels, squares })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::matrix;

    fn rec(cell: &Cell, status: CellStatus, attempts: u32) -> CellRecord {
        CellRecord { attempts, ..CellRecord::new(cell, status) }
    }

    fn demo() -> Matrix {
        matrix::parse(
            b"condition,task,phase,seed,repetition\n\
              a,t1,p1,1,0\na,t1,p2,1,0\nb,t1,p1,1,0\nb,t2,p1,1,0\nb,t2,p1,2,0\n",
        )
    }

    #[test]
    fn each_cell_takes_the_strongest_evidence_across_run_sets() {
        let m = demo();
        let c = &m.cells;
        let stray = Cell { id: "c-ffffffffffff".into(), factors: BTreeMap::new() };
        let old = RunSetCells {
            name: "old".into(),
            live: false,
            cells: vec![
                rec(&c[0], CellStatus::Failed, 1),
                rec(&c[1], CellStatus::Failed, 2),
                rec(&c[2], CellStatus::Running, 1), // a killed batch: not running
                rec(&stray, CellStatus::Done, 1),
            ],
        };
        let new = RunSetCells {
            name: "new".into(),
            live: true,
            cells: vec![rec(&c[0], CellStatus::Done, 1), rec(&c[3], CellStatus::Pending, 0)],
        };
        let cov = compute(&m, &[old, new]);
        let states: Vec<CellState> = cov.cells.iter().map(|c| c.state).collect();
        use CellState::*;
        assert_eq!(states, [Covered, Failed, Gap, Running, Gap]);
        assert_eq!(cov.cells[0].attempts, 2);
        assert_eq!(cov.cells[0].run_sets, ["old", "new"]);
        assert_eq!(cov.cells[2].status, Some(CellStatus::Running), "an attempted gap says how it was left");
        assert_eq!(cov.off_matrix, 1);
        assert_eq!(cov.totals, StateCounts { covered: 1, running: 1, failed: 1, gap: 2 });
        assert_eq!(cov.totals.words(), "1 covered, 1 running, 1 failed, 2 gaps of 5");
        let cond = &cov.by_factor["condition"];
        assert_eq!(cond[0].level, "a");
        assert_eq!(cond[0].counts, StateCounts { covered: 1, failed: 1, ..Default::default() });
        let g = grid(&m, &cov, "condition", "task").unwrap();
        assert_eq!(
            (g.rows.clone(), g.cols.clone()),
            (vec!["a".to_owned(), "b".into()], vec!["t1".to_owned(), "t2".into()])
        );
        assert_eq!(g.squares[1][1], StateCounts { running: 1, gap: 1, ..Default::default() });
        assert_eq!(g.squares[0][1].total(), 0);
        assert!(grid(&m, &cov, "condition", "colour").unwrap_err().contains("not a factor"));
    }
}
