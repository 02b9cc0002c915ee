//! The research state: what the campaign is trying to learn — questions,
//! their hypotheses with a status each, the cohorts that bear on them, the
//! decisions taken, and free-form settings — kept in `research/state.json`,
//! and its summary. Pure: bytes in, a state (repaired when it must be) out.
//!
//! Loading never fails: a missing file is the default state; an empty,
//! damaged, non-object or older-format file, or a field or entry of the
//! wrong shape, is repaired (the rest kept) and each repair named. The next
//! save writes the file whole.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::basics::timefmt::Timestamp;
use crate::results::stats::Proportion;

/// The file, under the campaign root.
pub const RESEARCH_FILE: &str = "research/state.json";
pub const SCHEMA_VERSION: u32 = 1;
/// The newest decisions the summary lists.
pub const DECISIONS_SHOWN: usize = 10;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionStatus {
    #[default]
    Open,
    Answered,
    Dropped,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HypothesisStatus {
    #[default]
    Proposed,
    Supported,
    Refuted,
    Inconclusive,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hypothesis {
    pub id: String,
    pub text: String,
    #[serde(default)]
    pub status: HypothesisStatus,
    /// Cohort presets whose figures bear on it.
    #[serde(default)]
    pub cohorts: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub id: String,
    pub text: String,
    #[serde(default)]
    pub status: QuestionStatus,
    #[serde(default)]
    pub hypotheses: Vec<Hypothesis>,
    #[serde(default)]
    pub cohorts: Vec<String>,
    /// The answer, once answered.
    #[serde(default)]
    pub answer: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    pub at: Timestamp,
    pub text: String,
    /// The question it settles or steers, by id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
}

/// `research/state.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResearchState {
    pub schema_version: u32,
    #[serde(default)]
    pub questions: Vec<Question>,
    /// Oldest first.
    #[serde(default)]
    pub decisions: Vec<Decision>,
    /// Free-form settings (merged by [`merge_settings`]).
    #[serde(default)]
    pub settings: Map<String, Value>,
    #[serde(default, with = "crate::basics::timefmt::rfc3339::option")]
    pub updated_at: Option<Timestamp>,
}

/// Why a whole new state may not replace `on_disk`, if it may not — nothing
/// recorded is lost without a word: the new state must keep every recorded
/// decision (decisions are appended, never edited away), and a state read
/// before the last save (its `updated_at` older than the file's) is refused
/// rather than written over the newer one.
pub fn replace_problems(on_disk: &ResearchState, new: &ResearchState) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(read), Some(saved)) = (new.updated_at, on_disk.updated_at) {
        if read != saved {
            out.push(format!(
                "the research state changed since this copy was read (it was saved at {}, this copy is of {}): \
                 read it again and redo the change",
                saved.to_rfc3339(),
                read.to_rfc3339()
            ));
        }
    }
    let lost: Vec<&Decision> = on_disk.decisions.iter().filter(|d| !new.decisions.contains(d)).collect();
    if let Some(first) = lost.first() {
        out.push(format!(
            "this would drop {} recorded decision{} (e.g. {:?} of {}): decisions are kept; send every recorded one",
            lost.len(),
            if lost.len() == 1 { "" } else { "s" },
            crate::console::spec::shorten(&first.text),
            first.at.to_rfc3339()
        ));
    }
    out
}

pub fn default_state() -> ResearchState {
    ResearchState {
        schema_version: SCHEMA_VERSION,
        questions: Vec::new(),
        decisions: Vec::new(),
        settings: Map::new(),
        updated_at: None,
    }
}

impl Default for ResearchState {
    fn default() -> Self {
        default_state()
    }
}

/// A state as loaded, with what was repaired.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Loaded {
    pub state: ResearchState,
    pub repaired: Vec<String>,
}

/// Each entry of a list that reads, the others dropped and named.
fn entries<T: DeserializeOwned>(v: Option<&Value>, field: &str, repaired: &mut Vec<String>) -> Vec<T> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| match serde_json::from_value::<T>(item.clone()) {
                Ok(t) => Some(t),
                Err(e) => {
                    repaired.push(format!("{field}[{i}]: {e}; dropped"));
                    None
                }
            })
            .collect(),
        Some(_) => {
            repaired.push(format!("{field}: not a list; emptied"));
            Vec::new()
        }
    }
}

/// Loads the file's bytes (`None`: no file). Never fails.
pub fn load(bytes: Option<&[u8]>) -> Loaded {
    let mut repaired = Vec::new();
    let Some(bytes) = bytes else { return Loaded::default() };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        repaired.push("the file is empty; the default state is used".into());
        return Loaded { state: default_state(), repaired };
    }
    let value: Value = match crate::basics::json::from_slice_lenient(bytes) {
        Ok(v) => v,
        Err(e) => {
            repaired.push(format!("not JSON ({}); the default state is used", crate::basics::json::describe_error(&e)));
            return Loaded { state: default_state(), repaired };
        }
    };
    let Value::Object(obj) = value else {
        repaired.push("not a JSON object; the default state is used".into());
        return Loaded { state: default_state(), repaired };
    };
    match obj.get("schema_version").and_then(Value::as_u64) {
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
        Some(v) if v > u64::from(SCHEMA_VERSION) => repaired.push(format!(
            "schema_version {v} is newer than this runboard reads ({SCHEMA_VERSION}); fields it does not know are dropped"
        )),
        other => repaired.push(format!(
            "schema_version {} is an older format; read as version {SCHEMA_VERSION}",
            other.map_or("missing".to_owned(), |v| v.to_string())
        )),
    }
    let settings = match obj.get("settings") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => {
            repaired.push("settings: not an object; emptied".into());
            Map::new()
        }
    };
    let updated_at = match obj.get("updated_at") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            let t = Timestamp::parse_rfc3339(s);
            if t.is_none() {
                repaired.push(format!("updated_at {s:?}: not a timestamp; dropped"));
            }
            t
        }
        Some(_) => {
            repaired.push("updated_at: not a timestamp; dropped".into());
            None
        }
    };
    let state = ResearchState {
        schema_version: SCHEMA_VERSION,
        questions: entries(obj.get("questions"), "questions", &mut repaired),
        decisions: entries(obj.get("decisions"), "decisions", &mut repaired),
        settings,
        updated_at,
    };
    Loaded { state, repaired }
}

/// Why a state cannot be saved: every reason. `cohorts` are the preset names.
pub fn problems(s: &ResearchState, cohorts: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut ids = std::collections::BTreeSet::new();
    let mut check_id = |id: &str, what: &str, out: &mut Vec<String>| {
        let ok = !id.is_empty()
            && id.len() <= 40
            && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !ok {
            out.push(format!("{what} id {id:?}: 1–40 of A-Za-z0-9-_."));
        } else if !ids.insert(id.to_owned()) {
            out.push(format!("{what} id {id:?} is used twice"));
        }
    };
    let check_cohorts = |list: &[String], whose: &str, out: &mut Vec<String>| {
        for c in list.iter().filter(|c| !cohorts.contains(c)) {
            out.push(format!("{whose}: no cohort preset named {c:?}"));
        }
    };
    for q in &s.questions {
        check_id(&q.id, "question", &mut out);
        if q.text.trim().is_empty() {
            out.push(format!("question {:?}: its text is empty", q.id));
        }
        if q.status == QuestionStatus::Answered && q.answer.trim().is_empty() {
            out.push(format!("question {:?}: it is answered but its answer is empty", q.id));
        }
        check_cohorts(&q.cohorts, &format!("question {:?}", q.id), &mut out);
        for h in &q.hypotheses {
            check_id(&h.id, "hypothesis", &mut out);
            if h.text.trim().is_empty() {
                out.push(format!("hypothesis {:?}: its text is empty", h.id));
            }
            check_cohorts(&h.cohorts, &format!("hypothesis {:?}", h.id), &mut out);
        }
    }
    for (i, d) in s.decisions.iter().enumerate() {
        if d.text.trim().is_empty() {
            out.push(format!("decisions[{i}]: its text is empty"));
        }
        if let Some(q) = &d.question {
            if !s.questions.iter().any(|x| &x.id == q) {
                out.push(format!("decisions[{i}]: no question {q:?}"));
            }
        }
    }
    out
}

/// One change the Research page's forms make: the page applies it to the
/// state it read and saves the whole state, so the usual checks
/// ([`problems`], [`replace_problems`]) answer for it — a form never needs
/// JSON, and an edit made on a stale copy is refused, not lost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "edit", rename_all = "snake_case")]
pub enum ResearchEdit {
    AddQuestion {
        id: String,
        text: String,
        cohorts: Vec<String>,
    },
    AddHypothesis {
        question: String,
        id: String,
        text: String,
        cohorts: Vec<String>,
    },
    /// A question's status and answer ([`problems`]: an answered question needs one).
    SetQuestion {
        id: String,
        status: QuestionStatus,
        answer: String,
    },
    SetHypothesis {
        id: String,
        status: HypothesisStatus,
    },
}

/// Cohort names as typed in a form: comma- or space-separated, blanks dropped.
pub fn cohort_list(typed: &str) -> Vec<String> {
    typed.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

impl ResearchEdit {
    /// Applies the edit, or says in words why it cannot be (nothing changed
    /// then). Ids and cohorts are checked by [`problems`] when saved.
    pub fn apply(&self, s: &mut ResearchState) -> Result<(), Vec<String>> {
        let known = |id: &str| s.questions.iter().any(|q| q.id == id || q.hypotheses.iter().any(|h| h.id == id));
        match self {
            Self::AddQuestion { id, text, cohorts } => {
                let id = id.trim();
                if known(id) {
                    return Err(vec![format!("the id {id:?} is already taken: pick another")]);
                }
                s.questions.push(Question {
                    id: id.to_owned(),
                    text: text.trim().to_owned(),
                    cohorts: cohorts.clone(),
                    ..Question::default()
                });
            }
            Self::AddHypothesis { question, id, text, cohorts } => {
                let id = id.trim();
                if known(id) {
                    return Err(vec![format!("the id {id:?} is already taken: pick another")]);
                }
                let Some(q) = s.questions.iter_mut().find(|q| &q.id == question) else {
                    return Err(vec![format!("no question {question:?}: add the question first")]);
                };
                q.hypotheses.push(Hypothesis {
                    id: id.to_owned(),
                    text: text.trim().to_owned(),
                    status: HypothesisStatus::Proposed,
                    cohorts: cohorts.clone(),
                });
            }
            Self::SetQuestion { id, status, answer } => {
                let Some(q) = s.questions.iter_mut().find(|q| &q.id == id) else {
                    return Err(vec![format!("no question {id:?}")]);
                };
                q.status = *status;
                q.answer = answer.trim().to_owned();
            }
            Self::SetHypothesis { id, status } => {
                let Some(h) = s.questions.iter_mut().flat_map(|q| q.hypotheses.iter_mut()).find(|h| &h.id == id) else {
                    return Err(vec![format!("no hypothesis {id:?}")]);
                };
                h.status = *status;
            }
        }
        Ok(())
    }
}

/// Merges `patch` into the settings: objects merge key by key, `null`
/// removes a key, anything else replaces.
pub fn merge_settings(settings: &mut Map<String, Value>, patch: &Map<String, Value>) {
    for (k, v) in patch {
        match (settings.get_mut(k), v) {
            (_, Value::Null) => {
                settings.remove(k);
            }
            (Some(Value::Object(old)), Value::Object(new)) => merge_settings(old, new),
            _ => {
                settings.insert(k.clone(), v.clone());
            }
        }
    }
}

/// `GET /api/research`: the state, what loading it repaired, its summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResearchView {
    pub state: ResearchState,
    pub repaired: Vec<String>,
    pub summary: Summary,
}

/// `POST /api/research/decisions`: a decision, recorded now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionRequest {
    pub text: String,
    #[serde(default)]
    pub question: Option<String>,
}

/// A hypothesis with its cohorts' current pass rates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HypothesisSummary {
    pub id: String,
    pub text: String,
    pub status: HypothesisStatus,
    /// Each linked cohort and its pass rate now (none: no such preset).
    pub cohorts: Vec<(String, Option<Proportion>)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionSummary {
    pub id: String,
    pub text: String,
    pub status: QuestionStatus,
    pub answer: String,
    pub hypotheses: Vec<HypothesisSummary>,
    pub cohorts: Vec<(String, Option<Proportion>)>,
}

/// `GET /api/research`'s summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub questions_by_status: BTreeMap<String, u64>,
    pub hypotheses_by_status: BTreeMap<String, u64>,
    /// Open questions first, then answered, then dropped.
    pub questions: Vec<QuestionSummary>,
    /// The newest first.
    pub latest_decisions: Vec<Decision>,
    pub settings_keys: Vec<String>,
}

fn word<T: Serialize>(t: &T) -> String {
    serde_json::to_value(t).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// The summary; `rates` are the cohorts' pass rates now, by preset name.
pub fn summary(s: &ResearchState, rates: &BTreeMap<String, Proportion>) -> Summary {
    let linked = |names: &[String]| names.iter().map(|n| (n.clone(), rates.get(n).cloned())).collect();
    let mut out = Summary::default();
    for q in &s.questions {
        *out.questions_by_status.entry(word(&q.status)).or_default() += 1;
        for h in &q.hypotheses {
            *out.hypotheses_by_status.entry(word(&h.status)).or_default() += 1;
        }
    }
    let mut qs: Vec<&Question> = s.questions.iter().collect();
    qs.sort_by_key(|q| q.status);
    out.questions = qs
        .into_iter()
        .map(|q| QuestionSummary {
            id: q.id.clone(),
            text: q.text.clone(),
            status: q.status,
            answer: q.answer.clone(),
            hypotheses: q
                .hypotheses
                .iter()
                .map(|h| HypothesisSummary {
                    id: h.id.clone(),
                    text: h.text.clone(),
                    status: h.status,
                    cohorts: linked(&h.cohorts),
                })
                .collect(),
            cohorts: linked(&q.cohorts),
        })
        .collect();
    out.latest_decisions = s.decisions.iter().rev().take(DECISIONS_SHOWN).cloned().collect();
    out.settings_keys = s.settings.keys().cloned().collect();
    out
}

/// Every cohort any question or hypothesis links.
pub fn linked_cohorts(s: &ResearchState) -> Vec<String> {
    let mut v: Vec<String> = s
        .questions
        .iter()
        .flat_map(|q| q.cohorts.iter().chain(q.hypotheses.iter().flat_map(|h| h.cohorts.iter())))
        .cloned()
        .collect();
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_whole_save_keeps_every_decision_and_never_overwrites_a_newer_save() {
        let at = |s: &str| Timestamp::parse_rfc3339(s).unwrap();
        let d = |text: &str| Decision { at: at("2026-12-01T10:00:00Z"), text: text.into(), question: None };
        let mut disk = default_state();
        disk.decisions = vec![d("run 3 more seeds"), d("drop task t9")];
        disk.updated_at = Some(at("2026-12-01T11:00:00Z"));
        // A copy read before the last decision was recorded: refused, saying so.
        let mut stale = disk.clone();
        stale.decisions.pop();
        stale.updated_at = Some(at("2026-12-01T10:30:00Z"));
        let why = replace_problems(&disk, &stale);
        assert_eq!(why.len(), 2, "{why:?}");
        assert!(why[0].starts_with("the research state changed since this copy was read"), "{why:?}");
        assert!(why[1].starts_with("this would drop 1 recorded decision (e.g. \"drop task t9\""), "{why:?}");
        // The current copy, edited and with every decision: accepted.
        let mut fresh = disk.clone();
        fresh.settings.insert("alpha".into(), serde_json::json!(0.01));
        assert!(replace_problems(&disk, &fresh).is_empty());
        // A client that sends no updated_at is checked for decisions only.
        fresh.updated_at = None;
        assert!(replace_problems(&disk, &fresh).is_empty());
    }

    #[test]
    fn whatever_the_file_holds_loads_and_each_repair_is_named() {
        assert_eq!(load(None), Loaded::default());
        for bad in [&b""[..], b"  ", b"{not json", b"[1,2]", b"42"] {
            let l = load(Some(bad));
            assert_eq!(l.state, default_state());
            assert_eq!(l.repaired.len(), 1, "{:?}: {:?}", String::from_utf8_lossy(bad), l.repaired);
        }
        let l = load(Some(
            json!({"questions": [{"id": "q1", "text": "Does retry feedback help?"}, {"id": 3}],
                   "decisions": "none", "settings": [1], "updated_at": "yesterday"})
            .to_string()
            .as_bytes(),
        ));
        assert_eq!(l.state.questions.len(), 1, "the good question kept");
        assert_eq!(l.state.questions[0].status, QuestionStatus::Open);
        let r = l.repaired.join(" | ");
        for want in ["older format", "questions[1]", "decisions: not a list", "settings: not an object", "updated_at"] {
            assert!(r.contains(want), "{want} in {r}");
        }
    }

    #[test]
    fn a_state_is_checked_with_every_reason() {
        let s: ResearchState = serde_json::from_value(json!({"schema_version": 1,
            "questions": [{"id": "q1", "text": "", "cohorts": ["ghost"],
                           "hypotheses": [{"id": "q1", "text": "h"}]}],
            "decisions": [{"at": "2026-12-01T00:00:00Z", "text": "stop", "question": "q9"}]}))
        .unwrap();
        let p = problems(&s, &["base".into()]);
        assert_eq!(p.len(), 4, "{p:?}");
        assert!(p.iter().any(|x| x.contains("its text is empty")));
        assert!(p.iter().any(|x| x.contains("no cohort preset named \"ghost\"")));
        assert!(p.iter().any(|x| x.contains("used twice")));
        assert!(p.iter().any(|x| x.contains("no question \"q9\"")));
    }

    #[test]
    fn the_forms_edits_add_and_set_in_words_and_an_answer_is_needed() {
        let mut s = default_state();
        let add_q = ResearchEdit::AddQuestion {
            id: " q1 ".into(),
            text: "Does memory help?".into(),
            cohorts: cohort_list("mem, base"),
        };
        add_q.apply(&mut s).unwrap();
        assert_eq!(s.questions[0].id, "q1");
        assert_eq!(s.questions[0].cohorts, ["mem", "base"]);
        // The same id again, for a question or a hypothesis: refused, nothing changed.
        assert_eq!(add_q.apply(&mut s).unwrap_err(), ["the id \"q1\" is already taken: pick another"]);
        let add_h = |question: &str, id: &str| ResearchEdit::AddHypothesis {
            question: question.into(),
            id: id.into(),
            text: "memory helps on reversal".into(),
            cohorts: Vec::new(),
        };
        assert_eq!(add_h("q9", "h1").apply(&mut s).unwrap_err(), ["no question \"q9\": add the question first"]);
        assert!(add_h("q1", "q1").apply(&mut s).is_err());
        add_h("q1", "h1").apply(&mut s).unwrap();
        assert_eq!(s.questions[0].hypotheses[0].status, HypothesisStatus::Proposed);
        ResearchEdit::SetHypothesis { id: "h1".into(), status: HypothesisStatus::Supported }.apply(&mut s).unwrap();
        assert_eq!(s.questions[0].hypotheses[0].status, HypothesisStatus::Supported);
        assert_eq!(
            ResearchEdit::SetHypothesis { id: "h9".into(), status: HypothesisStatus::Refuted }
                .apply(&mut s)
                .unwrap_err(),
            ["no hypothesis \"h9\""]
        );
        // Answered with no answer: the save's check says so.
        let answered = |answer: &str| ResearchEdit::SetQuestion {
            id: "q1".into(),
            status: QuestionStatus::Answered,
            answer: answer.into(),
        };
        answered("  ").apply(&mut s).unwrap();
        let cohorts = ["mem".to_owned(), "base".to_owned()];
        assert_eq!(problems(&s, &cohorts), ["question \"q1\": it is answered but its answer is empty"]);
        answered("yes, by 12 pp").apply(&mut s).unwrap();
        assert!(problems(&s, &cohorts).is_empty());
        assert_eq!(s.questions[0].answer, "yes, by 12 pp");
    }

    #[test]
    fn settings_merge_key_by_key_and_null_removes() {
        let mut s = json!({"a": 1, "b": {"x": 1, "y": 2}}).as_object().unwrap().clone();
        merge_settings(&mut s, json!({"a": null, "b": {"y": 3}, "c": true}).as_object().unwrap());
        assert_eq!(Value::Object(s), json!({"b": {"x": 1, "y": 3}, "c": true}));
    }

    #[test]
    fn the_summary_counts_by_status_and_links_cohort_rates() {
        let s: ResearchState = serde_json::from_value(json!({"schema_version": 1,
            "questions": [
                {"id": "q2", "text": "done?", "status": "answered"},
                {"id": "q1", "text": "why?", "hypotheses": [
                    {"id": "h1", "text": "because", "status": "supported", "cohorts": ["base", "gone"]}]}],
            "decisions": [{"at": "2026-12-01T00:00:00Z", "text": "first"}, {"at": "2026-12-01T01:00:00Z", "text": "second"}],
            "settings": {"alpha": 0.05}}))
        .unwrap();
        let rates: BTreeMap<String, Proportion> = [("base".to_string(), Proportion::new(3, 4))].into();
        let sum = summary(&s, &rates);
        assert_eq!(sum.questions_by_status, [("answered".to_string(), 1), ("open".to_string(), 1)].into());
        assert_eq!(sum.questions[0].id, "q1", "open first");
        assert_eq!(sum.questions[0].hypotheses[0].cohorts[0].1.as_ref().map(|p| p.successes), Some(3));
        assert_eq!(sum.questions[0].hypotheses[0].cohorts[1].1, None);
        assert_eq!(sum.latest_decisions[0].text, "second");
        assert_eq!(sum.settings_keys, vec!["alpha".to_string()]);
        assert_eq!(linked_cohorts(&s), vec!["base".to_string(), "gone".to_string()]);
    }
}
