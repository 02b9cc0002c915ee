//! Cohorts: named scopes (a filter over factors, tags and dates, see
//! [`super::scope`]) kept in `runsets/cohort_presets.json`, and two or more
//! of them compared side by side on the evidence and timing figures.
//! Pure: the presets file's bytes in, presets and their edits out.

use serde::{Deserialize, Serialize};

use super::scope::Scope;
use super::stats::{Interval, Proportion};
use super::timing::TimingSummary;

/// The presets file, under the campaign root.
pub const PRESETS_FILE: &str = "runsets/cohort_presets.json";

/// One named cohort.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preset {
    pub name: String,
    /// The scope's text (`task=t1,t2 tag=nightly`).
    pub scope: String,
    #[serde(default)]
    pub note: String,
    /// In a save request only (never stored): replace the preset of this
    /// name. Without it, saving under an existing name is refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replace: bool,
}

/// `cohort_presets.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Presets {
    pub schema_version: u32,
    pub presets: Vec<Preset>,
}

impl Default for Presets {
    fn default() -> Self {
        Self { schema_version: 1, presets: Vec::new() }
    }
}

/// `GET /api/cohorts`: the presets, or why the file cannot be read (then
/// no edit is made until it is fixed or removed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CohortsView {
    pub presets: Vec<Preset>,
    pub problem: Option<String>,
}

/// A preset to save (`POST /api/cohorts`).
pub type SaveRequest = Preset;

/// `POST /api/cohorts/rename`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenameRequest {
    pub from: String,
    pub to: String,
}

/// `POST /api/cohorts/delete`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeleteRequest {
    pub name: String,
}

/// Reads the file's bytes (`None`: no file, no presets). A file that is not
/// presets is an error with the reason — it is never overwritten for it.
pub fn parse(bytes: Option<&[u8]>) -> Result<Presets, String> {
    let Some(bytes) = bytes else { return Ok(Presets::default()) };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Presets::default());
    }
    let p: Presets =
        crate::basics::json::from_slice_lenient(bytes).map_err(|e| crate::basics::json::describe_error(&e))?;
    if p.schema_version != 1 {
        return Err(format!("schema_version {} is not 1", p.schema_version));
    }
    Ok(p)
}

/// A preset's name: 1–60 characters of letters, digits, spaces and `-_.`,
/// not starting or ending with a space (names are in links and lists; a
/// comma separates them in `?names=`).
pub fn name_problem(name: &str) -> Option<String> {
    let ok_chars = name.chars().all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.'));
    if name.is_empty() || name.chars().count() > 60 || !ok_chars || name.trim() != name {
        Some(format!(
            "name {:?}: 1–60 letters, digits, spaces or -_. (no space at either end)",
            name.chars().take(80).collect::<String>()
        ))
    } else {
        None
    }
}

/// Why an edit was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditError {
    /// 422: every reason.
    Refused(Vec<String>),
    /// 404: no preset by that name.
    NoSuchPreset(String),
}

impl Presets {
    pub fn get(&self, name: &str) -> Option<&Preset> {
        self.presets.iter().find(|p| p.name == name)
    }

    /// Adds a preset, or replaces the one of that name when the request says
    /// `replace` (never silently). The scope must read against the matrix's
    /// factors (`factors`); it is kept in its canonical text.
    pub fn save(&mut self, mut preset: Preset, factors: &[String]) -> Result<(), EditError> {
        let replace = std::mem::take(&mut preset.replace);
        let mut reasons: Vec<String> = name_problem(&preset.name).into_iter().collect();
        if !replace && self.get(&preset.name).is_some() {
            reasons.push(format!(
                "a preset named {:?} exists already: rename or delete it, or save with replace to overwrite it",
                preset.name
            ));
        }
        match Scope::parse(&preset.scope, factors) {
            Ok(s) => preset.scope = s.text(),
            Err(e) => reasons.extend(e.0.into_iter().map(|r| format!("scope: {r}"))),
        }
        if preset.note.chars().count() > 500 {
            reasons.push("note: at most 500 characters".into());
        }
        if !reasons.is_empty() {
            return Err(EditError::Refused(reasons));
        }
        match self.presets.iter_mut().find(|p| p.name == preset.name) {
            Some(p) => *p = preset,
            None => self.presets.push(preset),
        }
        Ok(())
    }

    pub fn rename(&mut self, from: &str, to: &str) -> Result<(), EditError> {
        if self.get(from).is_none() {
            return Err(EditError::NoSuchPreset(from.to_owned()));
        }
        let mut reasons: Vec<String> = name_problem(to).into_iter().collect();
        if from != to && self.get(to).is_some() {
            reasons.push(format!("a preset named {to:?} exists already"));
        }
        if !reasons.is_empty() {
            return Err(EditError::Refused(reasons));
        }
        if let Some(p) = self.presets.iter_mut().find(|p| p.name == from) {
            p.name = to.to_owned();
        }
        Ok(())
    }

    pub fn delete(&mut self, name: &str) -> Result<(), EditError> {
        let before = self.presets.len();
        self.presets.retain(|p| p.name != name);
        if self.presets.len() == before {
            return Err(EditError::NoSuchPreset(name.to_owned()));
        }
        Ok(())
    }
}

/// One cohort's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CohortFigures {
    pub name: String,
    pub scope: String,
    /// Ended cells counted (their latest ended record in scope).
    pub passes: Proportion,
    pub run_sets: usize,
    pub tokens: u64,
    /// Every evidence figure over the cohort's cells (by the factor asked
    /// for; per task and model; the cells that did not pass), without charts.
    pub evidence: super::Evidence,
    /// Timing over the cells in scope whose timings count.
    pub timing: TimingSummary,
    /// Which timings count, and why the others do not.
    pub validity: super::timing::Validity,
    /// Its counted outcomes in the order they ended: the verdict's input.
    #[serde(skip)]
    pub observed: Vec<super::Observed>,
}

/// A cohort against the first: its pass rate minus the first's, with the
/// fixed-look 95 % Newcombe interval and the verdict (as Evidence's: an
/// always-valid test, Holm across the cohorts compared).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CohortDifference {
    pub name: String,
    pub baseline: String,
    pub difference: f64,
    pub ci95: Interval,
    #[serde(default)]
    pub always_valid: super::sequential::AlwaysValid,
    #[serde(default = "super::no_evidence")]
    pub p_family: f64,
    pub clear: bool,
}

/// `GET /api/cohorts/compare`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub cohorts: Vec<CohortFigures>,
    pub differences: Vec<CohortDifference>,
    /// The family the differences' verdicts are controlled as.
    #[serde(default)]
    pub family: super::Family,
    #[serde(default)]
    pub charts: super::EvidenceCharts,
}

/// The comparison of cohorts' figures, the first as baseline.
pub fn compare(cohorts: Vec<CohortFigures>) -> Comparison {
    // Each cohort as a group of its own: the evidence's comparison and
    // charts serve it as they serve a factor's levels.
    let groups: Vec<super::Group> =
        cohorts.iter().map(|c| super::Group { level: c.name.clone(), passes: c.passes }).collect();
    let streams: Vec<Vec<super::Observed>> = cohorts.iter().map(|c| c.observed.clone()).collect();
    let mut compared = super::comparisons(&groups, &streams);
    let family = super::settle(&mut compared, &mut []);
    #[cfg_attr(not(feature = "charts"), allow(unused_mut))]
    let mut out = Comparison {
        differences: compared
            .iter()
            .map(|c| CohortDifference {
                name: c.level.clone(),
                baseline: c.baseline.clone(),
                difference: c.difference,
                ci95: c.ci95,
                always_valid: c.always_valid,
                p_family: c.p_family,
                clear: c.clear,
            })
            .collect(),
        family,
        cohorts,
        charts: Default::default(),
    };
    #[cfg(feature = "charts")]
    {
        out.charts = super::interval_charts(
            &groups,
            &compared,
            "Pass rate by cohort (95 % Wilson interval)",
            "Difference to the first cohort (fixed-look 95 % Newcombe interval)",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn factors() -> Vec<String> {
        vec!["task".into(), "condition".into()]
    }

    fn preset(name: &str, scope: &str) -> Preset {
        Preset { name: name.into(), scope: scope.into(), note: String::new(), replace: false }
    }

    #[test]
    fn presets_are_saved_renamed_and_deleted_with_every_reason_for_a_refusal() {
        let mut p = parse(None).unwrap();
        p.save(preset("base only", "condition=base  task=t2,t1"), &factors()).unwrap();
        assert_eq!(p.presets[0].scope, "condition=base task=t1,t2", "kept canonical");
        // An existing name is never overwritten silently: refused, kept.
        match p.save(preset("base only", "condition=treat"), &factors()) {
            Err(EditError::Refused(r)) => assert!(r[0].contains("exists already"), "{r:?}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(p.presets[0].scope, "condition=base task=t1,t2", "kept");
        p.save(Preset { replace: true, ..preset("base only", "condition=treat") }, &factors()).unwrap();
        assert_eq!((p.presets.len(), p.presets[0].scope.as_str()), (1, "condition=treat"), "replaced when asked");
        assert!(!p.presets[0].replace, "the request's flag is not stored");
        match p.save(preset(" bad,name", "colour=red"), &factors()) {
            Err(EditError::Refused(r)) => {
                assert_eq!(r.len(), 2, "{r:?}");
                assert!(r[0].contains("name") && r[1].contains("colour is not a factor"), "{r:?}");
            }
            other => panic!("{other:?}"),
        }
        p.save(preset("treat", "condition=treat"), &factors()).unwrap();
        assert!(
            matches!(p.rename("base only", "treat"), Err(EditError::Refused(r)) if r[0].contains("exists already"))
        );
        assert_eq!(p.rename("nope", "x"), Err(EditError::NoSuchPreset("nope".into())));
        p.rename("base only", "treated").unwrap();
        assert_eq!(p.get("treated").unwrap().scope, "condition=treat");
        p.delete("treated").unwrap();
        assert_eq!(p.delete("treated"), Err(EditError::NoSuchPreset("treated".into())));
        let again = parse(Some(serde_json::to_string(&p).unwrap().as_bytes())).unwrap();
        assert_eq!(again, p);
    }

    #[test]
    fn a_damaged_file_is_an_error_never_an_empty_list() {
        assert!(parse(Some(b"{\"schema_version\": 1, \"presets\": [")).is_err());
        assert!(parse(Some(b"[]")).is_err());
        assert!(parse(Some(b"{\"schema_version\": 2, \"presets\": []}")).unwrap_err().contains("schema_version 2"));
        assert_eq!(parse(Some(b"  \n")).unwrap(), Presets::default());
    }

    #[test]
    fn cohorts_are_compared_to_the_first() {
        let fig = |name: &str, s: u64, n: u64| CohortFigures {
            name: name.into(),
            scope: String::new(),
            passes: Proportion::new(s, n),
            run_sets: 1,
            tokens: 0,
            evidence: crate::results::evidence(&[], "condition", &Default::default()),
            timing: TimingSummary::default(),
            validity: Default::default(),
            observed: Vec::new(),
        };
        let c = compare(vec![fig("a", 2, 2), fig("b", 0, 2)]);
        assert_eq!(c.differences.len(), 1);
        assert_eq!((c.differences[0].difference, c.differences[0].baseline.as_str()), (-1.0, "a"));
    }
}
