//! The console's one typed service boundary: every operation a page, a REST
//! client or the CLI may ask, what it takes, what it answers, and how any of
//! them is refused.
//!
//! - [`operations`] is the table: each operation declared once (name, method,
//!   path, input, output, what it is doing). The [`Console`] trait, the REST
//!   routes (`server::web::http`), the pages' server functions (`app::api`), the
//!   CLI's calls and the both-surfaces test are all made from it.
//! - This module holds what every surface shares: [`ApiError`] (one kind, one
//!   HTTP status, the reasons in words), the query and input types, and the
//!   small answers (a version, the campaign's name).
//!
//! Nothing here does I/O: the server implements [`Console`] over a campaign
//! folder; the pages only see the types.

pub mod operations;
pub mod streams;
pub mod terminal;

pub use operations::{Console, Method, Operation, OperationInfo, OPERATIONS};

use crate::runview::trials::{BadQuery, TrialParams};
use serde::{Deserialize, Serialize};

/// What the header shows of the campaign being served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CampaignInfo {
    pub name: String,
    /// Absolute path of the campaign root on the server.
    pub root: String,
    /// Whether this is the generated demo campaign.
    pub demo: bool,
}

/// Why a request was refused, as every surface answers it: the kind (which
/// fixes the HTTP status) and the reason in words. Internals (a panic, an I/O
/// error's detail) are logged on the server, never put here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{error}")]
pub struct ApiError {
    pub kind: ErrorKind,
    /// The reason, in words (for a refusal with several reasons, the first
    /// and how many more).
    pub error: String,
    /// Every reason (at least one, whatever the kind; a refusal with
    /// several — a launch's preflight, a draft's form — lists them all, so
    /// they can be fixed in one go).
    #[serde(default)]
    pub reasons: Vec<String>,
}

/// The kinds of refusal, each with its HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// 404: no run has the name.
    NoSuchRun,
    /// 404: no written round of the run holds the trial.
    NoSuchTrial,
    /// 404: no such endpoint or file.
    NotFound,
    /// 422: a query value does not parse (the field and the value are named).
    BadQuery,
    /// 422: the part asked for exists but cannot be read (the reason is given).
    Unreadable,
    /// 422: a request was understood and refused (a launch's preflight, a
    /// path outside the campaign, a spec that does not parse); `reasons` lists
    /// every reason.
    Refused,
    /// 409: another action holds the campaign (a stop in progress), or what is
    /// asked for is already happening.
    Busy,
    /// 413: a request body larger than the server reads (2 MiB).
    TooLarge,
    /// 500: the server failed; the detail is in its log.
    Internal,
}

impl ErrorKind {
    pub const fn status(self) -> u16 {
        match self {
            Self::NoSuchRun | Self::NoSuchTrial | Self::NotFound => 404,
            Self::BadQuery | Self::Unreadable | Self::Refused => 422,
            Self::Busy => 409,
            Self::TooLarge => 413,
            Self::Internal => 500,
        }
    }
}

impl ApiError {
    pub fn status(&self) -> u16 {
        self.kind.status()
    }

    /// The refusal in one line: its reasons joined when it has several, else
    /// its error (the audit log's `answer`).
    pub fn words(&self) -> String {
        if self.reasons.len() > 1 {
            self.reasons.join("; ")
        } else {
            self.error.clone()
        }
    }

    pub fn new(kind: ErrorKind, error: impl Into<String>) -> Self {
        let error = error.into();
        Self { kind, reasons: vec![error.clone()], error }
    }

    /// An answer of `kind` with every reason (at least one): `error` is the
    /// first and how many more.
    pub fn with_reasons(kind: ErrorKind, reasons: Vec<String>) -> Self {
        let error = match reasons.as_slice() {
            [] => "refused".to_owned(),
            [one] => one.clone(),
            [first, rest @ ..] => format!("{first} (and {} more)", rest.len()),
        };
        let reasons = if reasons.is_empty() { vec![error.clone()] } else { reasons };
        Self { kind, error, reasons }
    }

    /// A refusal with every reason (at least one).
    pub fn refused(reasons: Vec<String>) -> Self {
        Self::with_reasons(ErrorKind::Refused, reasons)
    }

    pub fn busy(what: impl Into<String>) -> Self {
        Self::new(ErrorKind::Busy, what)
    }

    pub fn no_such_run(name: &str) -> Self {
        Self::new(ErrorKind::NoSuchRun, format!("no run named {name}"))
    }

    pub fn no_such_trial(run: &str, trial: &str) -> Self {
        Self::new(ErrorKind::NoSuchTrial, format!("no written round of {run} holds a trial named {trial}"))
    }

    pub fn not_found(what: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, what)
    }

    pub fn bad_query(bad: &BadQuery) -> Self {
        Self::new(ErrorKind::BadQuery, bad.to_string())
    }

    pub fn unreadable(reason: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unreadable, reason)
    }

    /// A failure of the server's own; `doing` says what it was doing. Log the
    /// detail where it happened (see `ssr::internal`).
    pub fn internal(doing: &str) -> Self {
        Self::new(ErrorKind::Internal, format!("internal error while {doing}"))
    }
}

impl From<BadQuery> for ApiError {
    fn from(b: BadQuery) -> Self {
        Self::bad_query(&b)
    }
}

#[cfg(feature = "server-fn")]
impl server_fn::error::FromServerFnError for ApiError {
    type Encoder = server_fn::codec::JsonEncoding;

    fn from_server_fn_error(e: server_fn::error::ServerFnErrorErr) -> Self {
        match e {
            // The arguments did not decode: the request was malformed.
            server_fn::error::ServerFnErrorErr::Args(why) | server_fn::error::ServerFnErrorErr::MissingArg(why) => {
                Self::new(ErrorKind::BadQuery, format!("bad arguments: {why}"))
            }
            other => Self::new(ErrorKind::Internal, other.to_string()),
        }
    }
}

/// Reads a call number as a URL gives it: `12`, `0012` or `0012.json`.
pub fn parse_call_number(text: &str) -> Result<u32, ApiError> {
    text.strip_suffix(".json").unwrap_or(text).parse().map_err(|_| {
        ApiError::bad_query(&BadQuery { field: "call".into(), value: text.into(), problem: "not a call number".into() })
    })
}

/// No input: an operation that reads (or does) one fixed thing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct Nothing {}

/// A changing token: a page re-reads when it changes (`stat` only, cheap).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Version {
    pub version: String,
}

/// A run, named by its folder name or its path under the root (`{name}` in
/// the REST path).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunName {
    pub name: String,
}

/// One call of a run: `{call}` is a call number as a URL gives it (`12`,
/// `0012` or `0012.json`; see [`parse_call_number`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunCall {
    pub name: String,
    pub call: String,
}

/// One trial of a run (`{trial}`, e.g. `r2s1`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunTrial {
    pub name: String,
    pub trial: String,
}

/// A page of a run's trials: the run, and the query as the page's URL
/// carries it (`?round=&stage=&outcome=&q=&intraday=&offset=&limit=`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunTrials {
    pub name: String,
    #[serde(flatten)]
    pub params: TrialParams,
}

/// `?rows=&cols=`: the two factors of the coverage grid.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct CoverageParams {
    /// The grid's row factor (default: the matrix's first).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub rows: Option<String>,
    /// The grid's column factor (default: the matrix's second).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub cols: Option<String>,
}

/// What the drafting form offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DraftForm {
    /// Each factor's levels, in matrix order.
    pub factors: Vec<(String, Vec<String>)>,
    pub tasks: Vec<crate::campaign::TaskEntry>,
    pub models: Vec<crate::campaign::ModelEntry>,
    pub endpoints: Vec<crate::campaign::EndpointEntry>,
    /// Why the form cannot be used yet (no matrix, a broken `campaign.toml`).
    pub problems: Vec<String>,
}

/// `{"path": …}`: a batch spec, relative to the campaign root.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecPath {
    #[serde(default)]
    pub path: String,
}

/// `?offset=&limit=`: a page of the autopilot's event log, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct AutoLogQuery {
    /// Events skipped, newest first (default 0).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub offset: Option<usize>,
    /// How many events: 1–1,000 (default 100).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub limit: Option<usize>,
}

/// `POST /api/auto/{mode}`: `on`, `off` or `finishing` (no body, or `{}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoModeRequest {
    pub mode: String,
}

impl AutoModeRequest {
    pub fn new(mode: crate::auto::Mode) -> Self {
        Self { mode: mode.word().to_owned() }
    }

    /// The mode asked for; a word that names none is answered like a path
    /// no endpoint has (404), since the mode is part of the address.
    pub fn mode(&self) -> Result<crate::auto::Mode, ApiError> {
        crate::auto::Mode::from_word(&self.mode).ok_or_else(|| {
            ApiError::not_found(format!(
                "no API endpoint POST /api/auto/{} (on, off, finishing or settings)",
                crate::console::spec::shorten(&self.mode)
            ))
        })
    }
}

/// `?by=&scope=`: the factor the evidence is grouped by (default
/// `condition`) and the cells it counts (see `runboard::results::scope`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct EvidenceQuery {
    /// The factor to group by (default: condition).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub by: Option<String>,
    /// The cells counted, e.g. `task=t1,t2 tag=nightly from=2026-11-01`.
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub scope: Option<String>,
}

/// `?format=json|csv&scope=`: the evidence export (default JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportQuery {
    #[serde(default)]
    pub format: Option<String>,
    #[serde(default)]
    pub scope: Option<String>,
}

impl ExportQuery {
    /// Whether CSV was asked for (`json`, the default, or `csv`).
    pub fn csv(&self) -> Result<bool, BadQuery> {
        match self.format.as_deref().unwrap_or("json") {
            "json" => Ok(false),
            "csv" => Ok(true),
            other => {
                Err(BadQuery { field: "format".into(), value: other.into(), problem: "must be json or csv".into() })
            }
        }
    }
}

/// The evidence export, and whether it is sent as CSV (REST answers a CSV
/// file then; the JSON body is the export alone either way).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exported {
    #[serde(skip)]
    pub csv: bool,
    #[serde(flatten)]
    pub export: crate::results::export::Export,
}

impl Exported {
    /// The export as a CSV download when CSV was asked for (see
    /// [`ExportQuery`]); else the JSON answer stands.
    pub fn as_file(&self) -> Option<operations::FileAnswer> {
        self.csv.then(|| operations::FileAnswer {
            content_type: "text/csv; charset=utf-8",
            file_name: "evidence.csv",
            body: crate::results::export::to_csv(&self.export),
        })
    }
}

/// `?scope=&run_set=`: the cells timed, and the run set the timeline shows
/// (default: the newest in scope).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct TimingQuery {
    /// The cells timed, e.g. `model=m1 from=2026-11-01`.
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub scope: Option<String>,
    /// List this run set's cells with their phases.
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub run_set: Option<String>,
}

/// `?fresh=true`: probe the endpoints again now (else probes made in the
/// last 30 s are shown).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct CatalogueQuery {
    /// Probe the endpoints again now (else probes of the last 30 s are shown).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "true|false"))]
    pub fresh: Option<String>,
}

impl CatalogueQuery {
    /// `true`/`1`, `false`/`0` or absent; anything else is named.
    pub fn fresh(&self) -> Result<bool, BadQuery> {
        match self.fresh.as_deref().map(str::trim) {
            None | Some("" | "false" | "0") => Ok(false),
            Some("true" | "1") => Ok(true),
            Some(other) => {
                Err(BadQuery { field: "fresh".into(), value: other.into(), problem: "must be true or false".into() })
            }
        }
    }
}

/// `?scope=`: the cells a view looks at (see `runboard::results::scope`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeQuery {
    #[serde(default)]
    pub scope: Option<String>,
}

/// One run set's report (`{run_set}`), the cells in `?scope=`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportQuery {
    pub run_set: String,
    #[serde(default)]
    pub scope: Option<String>,
}

/// `GET /api/samples/{run_set}/{cell}?offset=&limit=&against=&flipped=`:
/// the samples behind one cell, from its harness's log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct SamplesQuery {
    /// The cell's run set.
    pub run_set: String,
    /// The cell's id.
    pub cell: String,
    /// The first sample listed (default 0).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub offset: Option<usize>,
    /// How many (default 100, at most 1,000).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub limit: Option<usize>,
    /// Another cell, `run_set/cell`, whose samples these are matched with by
    /// id and epoch (its twin at the baseline, say).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long, value_name = "RUN_SET/CELL"))]
    pub against: Option<String>,
    /// With `against`: only the samples whose verdicts differ (`1`/`true`).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long, num_args = 0..=1, default_missing_value = "1", value_name = "true|false"))]
    pub flipped: Option<String>,
}

/// A cell's samples: `samples` from `offset` of `total`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellSamples {
    pub run_set: String,
    pub cell: String,
    /// The log read, from the campaign root, and its format.
    pub log: String,
    pub format: crate::harness::samples::LogFormat,
    /// Samples in the log (after the `flipped` filter), those scored, those passed.
    pub total: usize,
    pub scored: usize,
    pub passed: usize,
    pub offset: usize,
    pub samples: Vec<crate::harness::samples::SampleRow>,
    /// With `against`: the other cell, and each listed sample's verdict there
    /// (in `samples`' order; none: not in its log, or no verdict).
    #[serde(default)]
    pub against: Option<String>,
    #[serde(default)]
    pub against_passed: Vec<Option<bool>>,
    /// How many samples flipped between the two (both scored, verdicts differ).
    #[serde(default)]
    pub flipped: usize,
    /// What could not be read (a log cut short: the samples before it are listed).
    #[serde(default)]
    pub problems: Vec<String>,
}

/// `?names=a,b&by=`: the cohort presets compared, the first as the
/// baseline, and the factor their evidence is grouped by (default `condition`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompareQuery {
    #[serde(default)]
    pub names: Option<String>,
    #[serde(default)]
    pub by: Option<String>,
}
