//! The matrix's coverage (memoised by what it was computed from), its
//! cells, and the run sets' summaries.

use runboard::api::ApiError;
use runboard::console::coverage::{CellPage, CellParams, CoverageView};
use runboard::drive::records::CellStatus;
use runboard::runsets::{RunSetSummary, RUNSETS_DIR};

use super::records::{self};

use super::Campaign;

/// The matrix's and each run set's shared value (compared by pointer), and liveness.
type CoverageKey =
    (std::sync::Arc<runboard::console::matrix::Matrix>, Vec<(std::sync::Arc<records::RunSetRead>, bool)>);
type CoverageMade =
    std::sync::Arc<(std::sync::Arc<runboard::console::matrix::Matrix>, runboard::console::coverage::Coverage, usize)>;

/// The coverage as last computed, and what it was computed from.
#[derive(Default)]
pub(super) struct CoverageMemo(std::sync::Mutex<Option<(CoverageKey, CoverageMade)>>);

impl Campaign {
    /// The matrix, every planned cell's coverage and how many run sets were
    /// read. Computed again only when the matrix, a run set's records or a
    /// run set's liveness changed (the records are re-read by stamps; an
    /// unchanged one is the same shared value, compared by pointer).
    pub fn coverage(
        &self,
    ) -> std::sync::Arc<(std::sync::Arc<runboard::console::matrix::Matrix>, runboard::console::coverage::Coverage, usize)>
    {
        let matrix = self.records.matrix();
        let sets = self.records.run_sets();
        // The key holds the values it compares by pointer, so an address is
        // never reused by a newer value while it is compared.
        let key: CoverageKey = (matrix.clone(), sets.iter().map(|rs| (rs.clone(), self.records.is_live(rs))).collect());
        let same = |a: &CoverageKey, b: &CoverageKey| {
            std::sync::Arc::ptr_eq(&a.0, &b.0)
                && a.1.len() == b.1.len()
                && a.1.iter().zip(&b.1).all(|(x, y)| std::sync::Arc::ptr_eq(&x.0, &y.0) && x.1 == y.1)
        };
        let mut made = self.coverage_made.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((k, c)) = made.as_ref() {
            if same(k, &key) {
                return c.clone();
            }
        }
        let input: Vec<runboard::console::coverage::RunSetCells> = sets
            .iter()
            .zip(&key.1)
            .map(|(rs, (_, live))| runboard::console::coverage::RunSetCells {
                name: rs.name.clone(),
                live: *live,
                cells: rs.cells.clone(),
            })
            .collect();
        let cov = runboard::console::coverage::compute(&matrix, &input);
        let c = std::sync::Arc::new((matrix, cov, input.len()));
        *made = Some((key, c.clone()));
        c
    }

    /// What the records the coverage is made from could not give:
    /// `matrix.csv`'s rows not taken (or its absence), and each run set's
    /// unreadable records (`runsets/<run set>/…`). The coverage view and
    /// `runboard check` list them.
    pub fn record_problems(&self) -> (Vec<String>, Vec<String>) {
        let matrix = self.records.matrix().problems.clone();
        let run_sets = self
            .records
            .run_sets()
            .iter()
            .flat_map(|rs| rs.problems.iter().map(|p| format!("{RUNSETS_DIR}/{}/{p}", rs.name)).collect::<Vec<_>>())
            .collect();
        (matrix, run_sets)
    }

    /// Why `runsets/active_batch.json` cannot be read, if it cannot.
    pub fn marker_problem(&self) -> Option<String> {
        self.records.marker().and_then(Result::err)
    }

    pub fn coverage_view(&self, rows: Option<&str>, cols: Option<&str>) -> Result<CoverageView, ApiError> {
        let made = self.coverage();
        let (matrix, cov, run_sets) = (&made.0, &made.1, made.2);
        let (mut problems, of_run_sets) = self.record_problems();
        problems.extend(of_run_sets);
        runboard::console::coverage::view(matrix, cov, rows, cols, run_sets, problems).map_err(|e| {
            ApiError::bad_query(&runboard::runview::trials::BadQuery {
                field: "rows/cols".into(),
                value: String::new(),
                problem: e,
            })
        })
    }

    pub fn cells(&self, params: &CellParams) -> Result<CellPage, ApiError> {
        let made = self.coverage();
        let cov = &made.1;
        params.page(cov).map_err(ApiError::from)
    }

    pub fn run_sets(&self) -> Vec<RunSetSummary> {
        self.summaries(&self.records.run_sets())
    }

    /// These run sets as the Run sets page shows them (tags and committed
    /// specs read once for all).
    pub fn summaries(&self, sets: &[std::sync::Arc<records::RunSetRead>]) -> Vec<RunSetSummary> {
        let tags = self.records.tags().unwrap_or_default();
        let (index, _) = self.records.run_index();
        sets.iter()
            .map(|rs| {
                let mut s = RunSetSummary::from_outcome(&rs.name, rs.outcome_ok());
                s.live = self.records.is_live(rs);
                s.cells = rs.cells.len();
                s.done = rs.cells.iter().filter(|c| c.status == CellStatus::Done).count();
                s.failed = rs.cells.iter().filter(|c| c.status == CellStatus::Failed).count();
                s.tags = tags.of(&rs.name);
                s.spec = index.iter().rev().find(|e| e.run_set == rs.name).map(|e| e.spec.clone());
                if s.label.is_none() {
                    s.label = rs.spec.as_ref().and_then(|r| r.as_ref().ok()).map(|sp| sp.label.clone());
                }
                s.problems = rs.problems.clone();
                s
            })
            .collect()
    }
}
